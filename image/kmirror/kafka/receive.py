"""kafka-python's receive path with all but one copy of most received bytes left out.

The batch path reads everything it copies through kafka-python (``kmirror.kafka.wire``), and
kafka-python 3.0 copies each byte of a response four times after the socket gave it:

1. ``KafkaProtocol.receive_bytes`` slices each chunk it is handed (``data[i:i+n]``, a new
   ``bytes``) before writing the slice into the response's buffer;
2. that write copies it into the buffer (needed: a response spans many chunks);
3. ``KafkaBytes.read``, which the response decoder calls for each bytes field (a fetch's
   records: nearly all of a fetch response), slices the buffer (a new ``bytearray``)
4. and copies that slice again into ``bytes``.

Copies 1 and 3 serve nothing: a memoryview slice is enough for the write, and ``bytes`` can be
taken from a memoryview slice directly. Without them, a stream copying the ``mixed`` workload
(16 partitions, records of 100 B-2 KB) spent 15 % less CPU per record (py-spy put 38 % of the
stream's Python time in kafka-python's receive path; docs/benchmarks.md, Session 15). The
decoded values are the same bytes (tests/unit/kafka/test_receive.py).

Before all of these, the socket itself: kafka-python's transports read it 4,096 bytes per
``recv`` call, so a stream copying 100 MB/s makes 25,000 calls a second, each handing a 4 KB
chunk through the parser into the response's buffer (step 2 above, once per chunk). py-spy on
one stream copying ``mixed`` (session 23) put 19 % of its samples in those ``recv`` calls and
another 13 % in the per-chunk writes and buffer handling behind them. ``_recv`` reads up to
``RECV_CHUNK`` per call into a buffer the transport keeps: the same bytes in the same order, in
far fewer pieces.

Session 23's ``_recv`` read until the socket was empty and handed on one ``bytes`` of it all;
two copies remained (session 24's profile of the same copy: 11 % of the stream's samples): each
read copied out of that buffer into a ``bytes`` and the pieces joined (a second copy whenever
a call took several reads, as a large response does), then the parser's copy into the
response's buffer. Now ``_recv`` hands on a view of its buffer (the parser copies it at once,
before the next read) after one read (a plain socket: what is left waits for the next call,
the socket stays readable), and while the parser is in the middle of a large response
(``DIRECT_MIN`` or more still to come) the socket is read straight into that response's buffer:
most bytes of a fetch response are copied once, by the kernel. A response completed that way
is taken by ``_receive_bytes`` before the bytes handed with it, which come after it on the
connection.

``install()`` replaces ``KafkaBytes.read`` with ``_read`` below (same contract: read up to
``nbytes`` from the position, all that is left without it), wraps ``receive_bytes`` so that
it is handed a memoryview and takes a response ``_recv`` completed, and replaces both
transports' (plain and TLS) ``_sock_recv`` with ``_recv`` (same contract: ``(bytes read,
None)``, or what came before an error and the error, except that bytes read into the parser's
response buffer are not in the returned data; a TLS socket hands out at most one TLS record
per call and may hold more than the socket shows, so there ``_recv`` reads until the socket
says nothing is waiting, as kafka-python's loop does).
It is called where the batch path makes its event loop (``wire``), before any connection
exists, and is idempotent. The pinned kafka-python (requirements/runtime.in) is the version
these names were checked against; the unit test fails if they move.
"""

from __future__ import annotations

import logging
import ssl
from typing import Any

import kafka.errors as kerrors
from kafka.net.transport import KafkaSSLTransport, KafkaTCPTransport
from kafka.protocol.frame import KafkaBytes
from kafka.protocol.parser import KafkaProtocol

log = logging.getLogger(__name__)

_INSTALLED = "_kmirror_receive_installed"
# Bytes asked of the socket per recv call. A loopback or LAN socket often holds megabytes when
# a fetch response arrives; 1 MiB keeps the calls few without a buffer that matters per
# connection (one per transport, allocated on its first read).
RECV_CHUNK = 1 << 20
# A response with at least this much still to come is read straight into its buffer. Below
# it (produce responses, metadata, the tail of a fetch) one read into our buffer takes it and
# whatever follows it in one call, where a read into the response would need a second call.
DIRECT_MIN = 64 << 10
# Nothing more to read now: the plain socket's and the TLS layer's ways of saying it.
_DRAINED = (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError)


def _read(self: Any, nbytes: int | None = None) -> bytes:
    start = self._idx
    end = len(self) if nbytes is None else min(start + nbytes, len(self))
    self._idx = end
    with memoryview(self) as view:
        return bytes(view[start:end])


def _open_response(transport: Any) -> KafkaBytes | None:
    """The response the transport's parser is filling, when DIRECT_MIN or more of it is still
    to come (kafka-python's KafkaProtocol: ``_receiving``, ``_rbuffer``)."""
    parser = getattr(getattr(transport, "_protocol", None), "parser", None)
    if parser is None or not parser._receiving:
        return None
    response: KafkaBytes = parser._rbuffer
    return response if len(response) - response.tell() >= DIRECT_MIN else None


def _recv_into(self: Any, into: memoryview) -> tuple[int, Exception | None]:
    """One read of the transport's socket into `into` (released after): the bytes read, 0
    when nothing is waiting, or 0 and the error kafka-python expects."""
    try:
        n: int = self._sock.recv_into(into)
    except _DRAINED:
        return 0, None
    except Exception as exc:  # what kafka-python's own loop does: name it, close
        log.exception("%s: error receiving network data, closing the socket", self)
        return 0, kerrors.KafkaConnectionError(exc)
    finally:
        into.release()
    if not n:
        log.error("%s: socket disconnected", self)
        return 0, kerrors.KafkaConnectionError("socket disconnected")
    return n, None


def _recv(self: Any) -> tuple[bytes | memoryview, Exception | None]:
    buffer = getattr(self, "_kmirror_recv_buffer", None)
    if buffer is None:
        buffer = self._kmirror_recv_buffer = bytearray(RECV_CHUNK)
    view = memoryview(buffer)
    filled = 0  # bytes in our buffer, waiting to be handed on
    spilled: list[bytes] = []  # earlier fillings of it, when one call reads more than it holds
    err: Exception | None = None
    # A TLS socket can hold decrypted bytes the socket no longer shows as readable: it is read
    # until it says nothing is waiting, the rest through our buffer.
    plain = not isinstance(self._sock, ssl.SSLSocket)
    while True:
        # Straight into the response only while nothing read before waits to be handed on:
        # those bytes come first on the connection.
        response = None if filled or spilled else _open_response(self)
        if response is not None:
            into = memoryview(response)[response.tell() :]
        elif filled == len(buffer):
            spilled.append(bytes(view))
            filled = 0
            continue
        else:
            into = view[filled:]
        n, err = _recv_into(self, into)
        if not n:
            break
        if response is not None:
            response.seek(response.tell() + n)
        else:
            filled += n
            if plain:
                # What is still waiting is read in the next call (the socket stays readable),
                # when the parser knows the response it belongs to: straight into it.
                break
    if spilled:
        return b"".join([*spilled, bytes(view[:filled])]), err
    # A view of our buffer: the parser copies what it is handed before the next read.
    return view[:filled], err


def _receive_bytes(self: Any, data: Any, receive: Any) -> list[Any]:
    """kafka-python's ``receive_bytes``, handed a memoryview, after the response ``_recv``
    completed by reading straight into it (it comes before `data` on the connection)."""
    responses = []
    response = self._rbuffer if self._receiving else None
    if response is not None and response.tell() == len(response):
        self._receiving = False
        response.seek(0)
        responses.append(self._process_response(response))
        self._reset_buffer()
    if len(data):
        responses += receive(self, memoryview(data))
    return responses


def install() -> None:
    """Patch kafka-python's receive path (see the module's text). Safe to call again."""
    if getattr(KafkaProtocol, _INSTALLED, False):
        return
    receive = KafkaProtocol.receive_bytes

    def receive_bytes(self: Any, data: Any) -> list[Any]:
        return _receive_bytes(self, data, receive)

    KafkaBytes.read = _read
    KafkaProtocol.receive_bytes = receive_bytes
    KafkaTCPTransport._sock_recv = _recv
    KafkaSSLTransport._sock_recv = _recv
    setattr(KafkaProtocol, _INSTALLED, True)
