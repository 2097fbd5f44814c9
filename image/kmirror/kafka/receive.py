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

``install()`` replaces ``KafkaBytes.read`` with ``_read`` below (same contract: read up to
``nbytes`` from the position, all that is left without it) and wraps ``receive_bytes`` so that
it is handed a memoryview. It is called where the batch path makes its event loop (``wire``),
before any connection exists, and is idempotent. The pinned kafka-python
(requirements/runtime.in) is the version these names were checked against; the unit test fails
if they move.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.frame import KafkaBytes
from kafka.protocol.parser import KafkaProtocol

_INSTALLED = "_kmirror_receive_installed"


def _read(self: Any, nbytes: int | None = None) -> bytes:
    start = self._idx
    end = len(self) if nbytes is None else min(start + nbytes, len(self))
    self._idx = end
    with memoryview(self) as view:
        return bytes(view[start:end])


def install() -> None:
    """Patch kafka-python's receive path (see the module's text). Safe to call again."""
    if getattr(KafkaProtocol, _INSTALLED, False):
        return
    receive = KafkaProtocol.receive_bytes

    def receive_bytes(self: Any, data: Any) -> Any:
        return receive(self, memoryview(data))

    KafkaBytes.read = _read
    KafkaProtocol.receive_bytes = receive_bytes
    setattr(KafkaProtocol, _INSTALLED, True)
