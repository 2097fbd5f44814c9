"""The merge kernel (kmirror_batches, native/kmirror-batches): small batches of one partition
into one target batch. Inputs are built by aiokafka's and kafka-python's record-batch builders;
every output is read back by a reader independent of the kernel (aiokafka's, kafka-python's)
and must hold the same records, byte for byte, in order, with contiguous offsets and a valid
CRC, for every codec."""

from __future__ import annotations

import random
import struct

import crc32c
import pytest
from aiokafka.record.default_records import DefaultRecordBatch as AiokafkaReader
from kafka.record.default_records import DefaultRecordBatch as KafkaPythonReader
from kmirror_batches import IdMap, MergeError, merge

from tests.unit.mirror.batch.helpers import (
    CODEC_CASES,
    CODECS,
    Record,
    build,
    build_any,
    read_any,
    run_of,
)

pytestmark = pytest.mark.unit

T0 = 1_760_000_000_000
XERIAL_MAGIC = b"\x82SNAPPY\x00"


def varied() -> list[list[Record]]:
    """Batches of 1-4 records: null keys, tombstones (null values), empty keys and values, no /
    one / repeated headers (a null header value too), and timestamps that go backwards inside
    a batch and from one batch to the next (negative deltas against the merged base)."""
    return [
        [(T0, b"k0", b"v" * 100, [("h", b"1")])],
        [
            (T0 + 5, None, b"no key", []),
            (T0 + 2, b"tomb", None, [("h", b"a"), ("h", b"b"), ("n", None)]),
            (T0 - 40, b"", b"", [("empty", b"")]),
        ],
        [(T0 - 1_000_000, b"k-old", b"x" * 3000, [("trace", b"t")])],
        [(T0 + i, b"k%d" % i, bytes(range(256)) * 2, [("i", b"%d" % i)]) for i in range(4)],
    ]


def flat(batches: list[list[Record]]) -> list[Record]:
    return [r for b in batches for r in b]


@pytest.mark.parametrize("codec", CODEC_CASES)
def test_merged_batch_holds_every_record_byte_for_byte_with_contiguous_offsets(codec: str) -> None:
    batches = varied()
    run = run_of(batches, first_offset=1000, codec=codec)
    merged = merge(run, producer_id=4242, producer_epoch=3, base_sequence=77)
    batch, records = read_any(merged.data)
    want = flat(batches)
    assert [(ts, k, v, h) for _, ts, k, v, h in records] == want
    assert [r[0] for r in records] == list(range(len(want)))
    assert (batch.base_offset, batch.last_offset_delta) == (0, len(want) - 1)
    assert batch.compression_type == CODECS[codec.removesuffix("-raw")]
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (4242, 3, 77)
    assert not batch.is_transactional and batch.timestamp_type == 0
    assert batch.first_timestamp == T0
    assert batch.max_timestamp == max(r[0] for r in want) == merged.max_timestamp
    assert (merged.batches, merged.records) == (len(batches), len(want))
    assert (merged.first_offset, merged.next_offset) == (1000, 1000 + len(want))
    assert struct.unpack_from(">i", merged.data, 8)[0] == len(merged.data) - 12


@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_batches_built_by_kafka_python_read_back_by_kafka_python(codec: str) -> None:
    """A second builder and a second reader: kafka-python's pure-Python ones."""
    run = [
        build([0, 1, 2], base_offset=10, codec=CODECS[codec]),
        build([0, 1], base_offset=13, codec=CODECS[codec]),
        build([0, 1, 2], base_offset=15, codec=CODECS[codec], headers=[]),
    ]
    assert {KafkaPythonReader(data).compression_type for data in run} == {CODECS[codec]}
    merged = merge(run)
    out = KafkaPythonReader(merged.data)
    assert out.validate_crc()
    want = [
        (r.timestamp, r.key, r.value, r.headers) for data in run for r in KafkaPythonReader(data)
    ]
    got = [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in out]
    assert [g[1:] for g in got] == want
    assert [g[0] for g in got] == list(range(8))


def test_one_uncompressed_batch_keeps_its_records_section_byte_for_byte() -> None:
    (data,) = run_of(varied()[1:2], first_offset=55)
    merged = merge([data], producer_id=9, producer_epoch=0, base_sequence=0, transactional=True)
    assert merged.data[61:] == data[61:]
    batch, _ = read_any(merged.data)
    assert batch.is_transactional


def test_several_batches_in_one_buffer_count_as_several() -> None:
    run = run_of(varied(), first_offset=7)
    merged = merge([b"".join(run[:3]), memoryview(run[3])])
    assert merged.batches == 4
    assert [r[1:] for r in read_any(merged.data)[1]] == [tuple(r) for r in flat(varied())]


@pytest.mark.parametrize("codec", ["none", "snappy", "lz4", "zstd"])
def test_max_bytes_takes_the_longest_prefix_that_fits_and_the_rest_follows(codec: str) -> None:
    batches = [
        [(T0 + b * 10 + i, b"k", b"%d-%d" % (b, i) * 40, []) for i in range(5)] for b in range(40)
    ]
    run = run_of(batches, first_offset=0, codec=codec)
    limit = 4000
    got: list[tuple[object, ...]] = []
    rest, offset = run, 0
    while rest:
        merged = merge(rest, max_bytes=limit)
        assert len(merged.data) <= limit
        assert 1 <= merged.batches < len(run)
        assert merged.first_offset == offset
        offset = merged.next_offset
        got += [r[1:] for r in read_any(merged.data)[1]]
        rest = rest[merged.batches :]
    assert got == [tuple(r) for r in flat(batches)]
    assert offset == 200


def test_a_first_batch_over_max_bytes_is_merged_alone() -> None:
    run = run_of([[(T0, None, b"x" * 5000, [])], [(T0, None, b"y", [])]])
    merged = merge(run, max_bytes=1000)
    assert (merged.batches, merged.records, merged.next_offset) == (1, 1, 1)


def test_snappy_keeps_the_framing_of_the_run() -> None:
    batches = varied()
    xerial = merge(run_of(batches, codec="snappy")).data
    raw = merge(run_of(batches, codec="snappy-raw")).data
    assert xerial[61:69] == XERIAL_MAGIC
    assert raw[61:69] != XERIAL_MAGIC


def test_lz4_is_written_with_independent_blocks_as_kafka_requires() -> None:
    data = merge(run_of(varied(), codec="lz4")).data
    assert data[61:65] == b"\x04\x22\x4d\x18"  # the LZ4 frame magic
    flags = data[65]
    assert flags & 0x20, "block independence: Kafka's readers refuse linked blocks"
    assert not flags & 0x10 and not flags & 0x04  # no block or content checksum (as Java)


# -- runs the kernel refuses -------------------------------------------------------------------


def _patched(data: bytes, offset: int, fmt: str, value: int) -> bytes:
    """The batch with one field changed and its CRC32C made to match again."""
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, value)
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[21:])))
    return bytes(out)


def test_a_gap_in_source_offsets_is_refused() -> None:
    a, b = run_of(varied()[:2])
    with pytest.raises(MergeError, match="gap"):
        merge([a, _patched(b, 0, ">q", 2)])


def test_codecs_may_not_mix_in_a_run() -> None:
    a = build_any(varied()[0], codec="lz4")
    b = build_any(varied()[1], base_offset=1, codec="zstd")
    with pytest.raises(MergeError, match="one codec per run"):
        merge([a, b])


@pytest.mark.parametrize(
    ("patch", "why"),
    [
        ((16, ">b", 1), "message format v1"),
        ((21, ">h", 0x20), "control batch"),
        ((21, ">h", 0x08), "LogAppendTime"),
        ((23, ">i", 3), "not dense"),
    ],
)
def test_batches_a_producer_may_not_send_as_they_are_are_refused(
    patch: tuple[int, str, int], why: str
) -> None:
    (data,) = run_of(varied()[1:2])
    with pytest.raises(MergeError, match=why):
        merge([_patched(data, *patch)])


def test_a_corrupt_batch_is_refused_not_passed_on_under_a_new_crc() -> None:
    (data,) = run_of(varied()[1:2], codec="lz4")
    flipped = bytearray(data)
    flipped[-3] ^= 0x01
    with pytest.raises(MergeError, match="CRC32C does not match"):
        merge([bytes(flipped)])


def test_malformed_input_is_an_error_not_a_crash() -> None:
    (data,) = run_of(varied()[1:2])
    with pytest.raises(MergeError, match="cut batch"):
        merge([data[:40]])
    with pytest.raises(MergeError, match=r"bytes, \d+ are there"):
        merge([data[:-1]])
    with pytest.raises(MergeError, match="runs past"):
        merge([_patched(data, 61, ">b", 0x7E)])  # first record's length: 63 > the batch
    # The first record's value length 6 -> 5: its last byte is read as a header count.
    assert data[61 + 5] == 0x0C
    with pytest.raises(MergeError, match="record 0: a record says it has -61 headers"):
        merge([_patched(data, 61 + 5, ">b", 0x0A)])
    (lz4,) = run_of(varied()[1:2], codec="lz4")
    with pytest.raises(MergeError, match="lz4"):
        merge([_patched(lz4[:65] + b"\xff" * (len(lz4) - 65), 65, ">b", 0x60)])
    with pytest.raises(MergeError, match="no batches"):
        merge([])


# -- schema IDs (Confluent wire format: magic 0, 4-byte big-endian ID) -------------------------


def wire(schema_id: int, payload: bytes = b"payload") -> bytes:
    return b"\x00" + schema_id.to_bytes(4, "big") + payload


@pytest.mark.parametrize("codec", CODEC_CASES)
def test_schema_ids_of_keys_and_values_are_translated_and_nothing_else_changes(
    codec: str,
) -> None:
    batches = [
        [(T0, wire(1, b"k"), wire(2), [("h", wire(1))]), (T0 + 1, None, None, [])],
        [(T0 + 2, b"plain key", wire(1, b""), []), (T0 + 3, b"\x00abc", b"\x01" + wire(2), [])],
    ]
    merged = merge(run_of(batches, codec=codec), ids=IdMap({1: 101, 2: 70000}))
    _, records = read_any(merged.data)
    assert [(k, v, h) for _, _, k, v, h in records] == [
        (wire(101, b"k"), wire(70000), [("h", wire(1))]),  # headers are never translated
        (None, None, []),
        (b"plain key", wire(101, b""), []),
        (b"\x00abc", b"\x01" + wire(2), []),  # too short / no magic: not the wire format
    ]
    assert (merged.rewritten_ids, merged.plain_keys, merged.plain_values) == (3, 2, 1)
    # Records with neither key nor value in the wire format (the metric of plain records):
    # the one with both null, and the last (too short a key, no magic in the value).
    assert merged.plain_records == 2
    assert merged.unmapped == []


def test_unmapped_ids_are_reported_and_no_batch_is_built() -> None:
    batches = [[(T0, None, wire(5), []), (T0, None, wire(6), [])], [(T0, wire(5), wire(1), [])]]
    ids = IdMap({1: 11})
    merged = merge(run_of(batches), ids=ids)
    assert merged.unmapped == [5, 6]
    assert merged.data == b""
    ids.set(5, 55)
    ids.set(6, 66)
    assert len(ids) == 3 and ids.get(6) == 66 and ids.get(7) is None
    merged = merge(run_of(batches), ids=ids)
    assert [(k, v) for _, _, k, v, _ in read_any(merged.data)[1]] == [
        (None, wire(55)),
        (None, wire(66)),
        (wire(55), wire(11)),
    ]


def test_one_batch_translated_without_merging_keeps_its_layout() -> None:
    (data,) = run_of([[(T0, None, wire(3), []), (T0 + 1, None, wire(4), [])]], first_offset=9)
    merged = merge([data], ids=IdMap({3: 30, 4: 40}))
    assert len(merged.data) == len(data)
    assert merged.data[61:] == data[61:].replace(wire(3), wire(30)).replace(wire(4), wire(40))


@pytest.mark.parametrize("codec", ["none", "lz4", "zstd", "snappy", "gzip"])
def test_damaged_records_are_a_merge_error_never_a_crash(codec: str) -> None:
    """Bytes of the records section changed at random (the CRC made to match, as if the
    source had stored them so): every outcome is a MergeError or a whole batch with a valid
    CRC holding every record. (Not read back record by record: kafka-python's and aiokafka's
    readers take a record's attributes for a varint, and a damaged attributes byte of 0x80 or
    more, which Kafka reads as the int8 it is, trips them.)"""
    rng = random.Random(21)
    run = run_of(varied(), codec=codec)
    outcomes = set()
    for _ in range(300):
        i = rng.randrange(len(run))
        data = bytearray(run[i])
        for _ in range(rng.randint(1, 3)):
            data[rng.randrange(61, len(data))] = rng.randrange(256)
        damaged = [*run[:i], _patched(bytes(data), 21, ">h", data[22]), *run[i + 1 :]]
        try:
            merged = merge(damaged)
        except MergeError:
            outcomes.add("refused")
            continue
        outcomes.add("merged")
        batch = AiokafkaReader(merged.data)
        assert batch.validate_crc()
        assert struct.unpack_from(">i", merged.data, 57)[0] == merged.records == 9
    assert outcomes == {"refused", "merged"} if codec == "none" else "refused" in outcomes
