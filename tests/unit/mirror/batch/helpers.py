"""Record batches built by kafka-python's own record-batch builder, for broker-free tests."""

from __future__ import annotations

import struct

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
