"""kafka-python's receive path with two copies of every received byte fewer.

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
``RECV_CHUNK`` per call into a buffer the transport keeps, and hands on one ``bytes`` of all that
was waiting: the same bytes in the same order, in far fewer pieces.

``install()`` replaces ``KafkaBytes.read`` with ``_read`` below (same contract: read up to
``nbytes`` from the position, all that is left without it), wraps ``receive_bytes`` so that
it is handed a memoryview, and replaces both transports' (plain and TLS) ``_sock_recv`` with
``_recv`` (same contract: ``(all bytes waiting, None)``, or what came before an error and the
error; a TLS socket hands out at most one TLS record per call, which the loop takes care of).
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
# Nothing more to read now: the plain socket's and the TLS layer's ways of saying it.
_DRAINED = (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError)


def _read(self: Any, nbytes: int | None = None) -> bytes:
    start = self._idx
    end = len(self) if nbytes is None else min(start + nbytes, len(self))
    self._idx = end
    with memoryview(self) as view:
        return bytes(view[start:end])


def _recv(self: Any) -> tuple[bytes, Exception | None]:
    buffer = getattr(self, "_kmirror_recv_buffer", None)
    if buffer is None:
        buffer = self._kmirror_recv_buffer = bytearray(RECV_CHUNK)
    chunks: list[bytes] = []
    err: Exception | None = None
    with memoryview(buffer) as view:
        while True:
            try:
                n = self._sock.recv_into(view)
            except _DRAINED:
                break
            except Exception as exc:  # what kafka-python's own loop does: name it, close
                log.exception("%s: error receiving network data, closing the socket", self)
                err = kerrors.KafkaConnectionError(exc)
                break
            if not n:
                log.error("%s: socket disconnected", self)
                err = kerrors.KafkaConnectionError("socket disconnected")
                break
            chunks.append(bytes(view[:n]))
    return (chunks[0] if len(chunks) == 1 else b"".join(chunks)), err


def install() -> None:
    """Patch kafka-python's receive path (see the module's text). Safe to call again."""
    if getattr(KafkaProtocol, _INSTALLED, False):
        return
    receive = KafkaProtocol.receive_bytes

    def receive_bytes(self: Any, data: Any) -> Any:
        return receive(self, memoryview(data))

    KafkaBytes.read = _read
    KafkaProtocol.receive_bytes = receive_bytes
    KafkaTCPTransport._sock_recv = _recv
    KafkaSSLTransport._sock_recv = _recv
    setattr(KafkaProtocol, _INSTALLED, True)
