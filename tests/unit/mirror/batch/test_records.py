"""The v2 header rewrite, checked with kafka-python's own record-batch reader."""

from __future__ import annotations

import pytest
from kafka.record.default_records import DefaultRecordBatch
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from kmirror.mirror.batch.records import control_type, rewrite, split
from tests.unit.mirror.batch.helpers import build, marker

pytestmark = pytest.mark.unit

# None and gzip: kafka-python builds them without extra codec packages. Batches compressed with
# snappy, lz4 and zstd (by librdkafka) go through the integration tests.
CODECS = [0, 1]


def _records(batch: DefaultRecordBatch) -> list[tuple[object, ...]]:
    return [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in batch]


@pytest.mark.parametrize("codec", CODECS)
def test_rewrite_sets_producer_fields_and_a_valid_crc_and_keeps_the_records(codec: int) -> None:
    source = build([0, 1, 2, 3], base_offset=1234, codec=codec, producer_id=77, transactional=True)
    (batch,), cut = split(source)
    assert cut == 0
    out = DefaultRecordBatch(bytes(rewrite(batch, 4242, 3, 100)))
    assert out.validate_crc()
    assert (out.base_offset, out.producer_id, out.producer_epoch, out.base_sequence) == (
        0,
        4242,
        3,
        100,
    )
    assert not out.is_transactional
    assert out.compression_type == codec
    assert out.timestamp_type == 0
    assert out.records_count == 4
    # Same records, same bytes after the header: only offsets are relative to the new base.
    original = DefaultRecordBatch(source)
    assert [r[1:] for r in _records(out)] == [r[1:] for r in _records(original)]
    assert bytes(rewrite(batch, 4242, 3, 100))[61:] == source[61:]


def test_split_reads_header_fields_and_reports_a_cut_batch() -> None:
    first = build([0, 1, 2], base_offset=10, codec=1)
    second = build([0, 1], base_offset=13)
    (a, b), cut = split(first + second)
    assert (a.base_offset, a.last_offset, a.next_offset, a.record_count) == (10, 12, 13, 3)
    assert (a.codec, b.codec) == ("gzip", "none")
    assert a.dense and b.dense
    batches, cut = split(first + second[:30])
    assert [x.base_offset for x in batches] == [10]
    assert cut == len(second)


def test_compacted_batch_is_not_dense() -> None:
    (batch,), _ = split(build([0, 2, 5]))
    assert (batch.record_count, batch.last_offset_delta, batch.dense) == (3, 5, False)


def test_legacy_message_sets_are_recognised() -> None:
    builder = LegacyRecordBatchBuilder(magic=1, compression_type=0, batch_size=1 << 16)
    builder.append(0, timestamp=1_700_000_000_000, key=b"k", value=b"v")
    (batch,), _ = split(bytes(builder.build()))
    assert batch.magic == 1


def test_control_type_reads_abort_and_commit_markers() -> None:
    (abort,), _ = split(marker(5, 9, abort=True))
    (commit,), _ = split(marker(6, 9, abort=False))
    (data,), _ = split(build([0]))
    assert abort.is_control and control_type(abort) == 0
    assert control_type(commit) == 1
    assert control_type(data) is None
