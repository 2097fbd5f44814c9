"""Record batches built by kafka-python's own record-batch builder, for broker-free tests."""

from __future__ import annotations

import struct
from typing import Any

from kafka.future import Future
from kafka.protocol.producer.transaction import InitProducerIdRequest
from kafka.record.default_records import DefaultRecordBatchBuilder

Header = tuple[str, bytes]


def build(
    offsets: list[int],
    *,
    base_offset: int = 0,
    codec: int = 0,
    producer_id: int = -1,
    transactional: bool = False,
    headers: list[Header] | None = None,
) -> bytes:
    """A v2 batch with one record per offset delta (gaps allowed, as compaction leaves them)."""
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=transactional,
        producer_id=producer_id,
        producer_epoch=0 if producer_id >= 0 else -1,
        base_sequence=0 if producer_id >= 0 else -1,
        batch_size=1 << 20,
    )
    for delta in offsets:
        builder.append(
            delta,
            timestamp=1_700_000_000_000 + delta,
            key=b"k%d" % delta,
            value=b"value-%d" % delta * 3,
            headers=headers if headers is not None else [("h", b"%d" % delta)],
        )
    data = bytearray(builder.build())
    struct.pack_into(">q", data, 0, base_offset)
    return bytes(data)


def marker(base_offset: int, producer_id: int, *, abort: bool) -> bytes:
    """A transaction marker (control batch) as a broker writes it."""
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=True,
        producer_id=producer_id,
        producer_epoch=0,
        base_sequence=-1,
        batch_size=1 << 20,
    )
    builder.append(
        0,
        timestamp=1_700_000_000_000,
        key=struct.pack(">hh", 0, 0 if abort else 1),
        value=struct.pack(">hi", 0, 0),
        headers=[],
    )
    data = bytearray(builder.build())
    struct.pack_into(">q", data, 0, base_offset)
    attributes = struct.unpack_from(">h", data, 21)[0] | 0x20
    struct.pack_into(">h", data, 21, attributes)
    return bytes(data)


# -- any codec, for the merge kernel (kmirror_batches) ----------------------------------------

Record = tuple[int, bytes | None, bytes | None, list[Header]]  # timestamp, key, value, headers
CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
# Snappy in both framings Kafka's clients write: xerial's (the Java client) and raw (librdkafka).
CODEC_CASES = ["none", "gzip", "snappy", "snappy-raw", "lz4", "zstd"]


def build_any(records: list[Record], *, base_offset: int = 0, codec: str = "none") -> bytes:
    """A v2 batch of these records with any codec, built by aiokafka's record-batch builder
    (its codecs are cramjam's). ``snappy-raw``: the records section re-compressed as raw
    snappy, as librdkafka writes it (the builder writes xerial's framing)."""
    import cramjam
    import crc32c
    from aiokafka.record.default_records import DefaultRecordBatchBuilder

    raw = codec == "snappy-raw"
    builder = DefaultRecordBatchBuilder(2, 0 if raw else CODECS[codec], 0, -1, -1, -1, 1 << 24)
    for i, (ts, key, value, headers) in enumerate(records):
        builder.append(i, ts, key, value, headers)
    data = bytearray(builder.build())
    if raw:
        data[61:] = bytes(cramjam.snappy.compress_raw(bytes(data[61:])))
        struct.pack_into(">i", data, 8, len(data) - 12)
        struct.pack_into(">h", data, 21, struct.unpack_from(">h", data, 21)[0] | CODECS["snappy"])
        struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    struct.pack_into(">q", data, 0, base_offset)
    return bytes(data)


def run_of(
    batches: list[list[Record]], *, first_offset: int = 0, codec: str = "none"
) -> list[bytes]:
    """Contiguous batches of these records, the first at ``first_offset``."""
    out, offset = [], first_offset
    for records in batches:
        out.append(build_any(records, base_offset=offset, codec=codec))
        offset += len(records)
    return out


ReadBack = tuple[int, int, bytes | None, bytes | None, list[Header]]


def read_any(data: bytes) -> tuple[Any, list[ReadBack]]:
    """A batch read back by aiokafka's (Cython) reader, an implementation independent of the
    kernel: the batch (its CRC checked), and (offset, timestamp, key, value, headers) of each
    record."""
    from aiokafka.record.default_records import DefaultRecordBatch

    batch = DefaultRecordBatch(data)
    assert batch.validate_crc(), "the batch's CRC32C does not match its contents"
    records = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch]
    return batch, records


# -- the producer session's surroundings, without a broker ------------------------------------


class Link:
    """Node 1 leads everything; every request waits in `sent` for the test to answer it."""

    def __init__(self) -> None:
        self.sent: list[tuple[Any, Future]] = []

    def any_node(self) -> int:
        return 1

    def leader(self, topic: str, partition: int) -> int:
        return 1

    def in_flight(self, node: int) -> int:
        return sum(1 for _, f in self.sent if not f.is_done)

    def refresh(self) -> None:
        pass

    def send(self, node: int, request: Any) -> Future:
        future = Future()
        self.sent.append((request, future))
        return future

    def grant(self, producer_id: int) -> None:
        """Answer the open InitProducerId request."""
        from types import SimpleNamespace

        request, future = self.sent[-1]
        assert isinstance(request, InitProducerIdRequest)
        future.success(SimpleNamespace(error_code=0, producer_id=producer_id, producer_epoch=0))


class Limits:
    """Every target topic takes batches up to `size` bytes (None: not known yet)."""

    def __init__(self, size: int | None = 1_000_000) -> None:
        self.size = size
        self.forgotten: list[str] = []

    def bound(self, topic: str) -> int | None:
        return self.size

    def forget(self, topic: str) -> None:
        self.forgotten.append(topic)
