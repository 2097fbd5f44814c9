"""What a free send slot takes off a partition's stage (kmirror.mirror.batch.merger), without a
broker: which source batches make one run, the batch built from it (read back by aiokafka's
reader), and schema IDs resolved before a batch is built."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping

import pytest

from kmirror.errors import MirrorError
from kmirror.mirror.batch.merger import Merger, Pending, Staged
from kmirror.mirror.batch.records import split
from tests.unit.mirror.batch.helpers import Limits, Record, build_any, read_any, run_of

pytestmark = pytest.mark.unit

T0 = 1_760_000_000_000
SOURCE = ("s", 0)


def stage(buffers: list[bytes]) -> deque[Staged]:
    out: deque[Staged] = deque()
    for data in buffers:
        (batch,), _ = split(data)
        out.append(Staged(SOURCE, batch, batch.next_offset))
    return out


def records(n: int, start: int = 0) -> list[Record]:
    return [(T0 + start + i, b"k%d" % i, b"v%d" % (start + i), []) for i in range(n)]


def build(merger: Merger, staged: deque[Staged]) -> Pending:
    return merger.build(staged, "t", 7, 1, 40, transactional=False)


class Translator:
    """Source IDs map to themselves + 1000 once resolved; `known` are resolvable."""

    def __init__(self, known: set[int]) -> None:
        self.known = known
        self.ids: dict[int, int] = {}
        self.resolved: list[tuple[int, str]] = []
        self.plain: list[tuple[str, int]] = []

    @property
    def rewrite_map(self) -> Mapping[int, int]:
        return self.ids

    def resolve(self, sid: int, topic: str, where: str) -> None:
        assert sid in self.known, sid
        self.resolved.append((sid, where))
        self.ids = {**self.ids, sid: sid + 1000}  # a new map, as the translator's

    def count_plain(self, topic: str, records: int) -> None:
        self.plain.append((topic, records))


def wire(sid: int) -> bytes:
    return b"\x00" + sid.to_bytes(4, "big") + b"payload"


def test_a_run_of_consecutive_batches_becomes_one_batch_and_the_stage_empties() -> None:
    staged = stage(run_of([records(3), records(2, 3), records(4, 5)], first_offset=100))
    p = build(Merger(Limits()), staged)
    batch, got = read_any(bytes(p.data))
    assert [v for _, _, _, v, _ in got] == [b"v%d" % i for i in range(9)]
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (7, 1, 40)
    assert (p.first, p.records, p.next_source, p.batches, p.first_timestamp) == (100, 9, 109, 3, T0)
    assert not staged


def test_a_trailing_gap_is_carried_by_the_batch_before_it() -> None:
    """A transaction marker after the run: the book moves past it with the batch's ack."""
    staged = stage(run_of([records(2), records(2, 2)]))
    staged[-1].next_source = 5  # offset 4 holds a marker that is not copied
    assert build(Merger(Limits()), staged).next_source == 5


def test_a_gap_another_codec_or_the_size_bound_ends_a_run() -> None:
    gap = stage(run_of([records(2)]) + run_of([records(2)], first_offset=5))
    assert [build(Merger(Limits()), gap).records for _ in range(2)] == [2, 2]
    codecs = stage([build_any(records(2)), build_any(records(2), base_offset=2, codec="lz4")])
    assert [build(Merger(Limits()), codecs).records for _ in range(2)] == [2, 2]
    big = [(T0, b"k", b"x" * 400, []) for _ in range(2)]
    sized = stage(run_of([big] * 6))
    merger = Merger(Limits(2000))
    built = [build(merger, sized) for _ in range(3)]
    assert [p.records for p in built] == [4, 4, 4]
    assert all(len(p.data) <= 2000 for p in built)


def test_the_progress_record_and_a_batch_the_kernel_cannot_take_go_alone() -> None:
    staged = stage(run_of([records(2), records(2, 2)]))
    staged[0].progress = True
    merger = Merger(Limits())
    first = build(merger, staged)
    assert (first.records, first.progress, first.batches) == (2, True, 1)
    assert build(merger, staged).records == 2


def test_a_corrupt_batch_in_a_run_is_not_merged_the_first_goes_as_it_came() -> None:
    buffers = run_of([records(2), records(2, 2), records(2, 4)])
    damaged = bytearray(buffers[1])
    damaged[-1] ^= 0xFF  # its CRC no longer matches
    staged = stage([buffers[0], bytes(damaged), buffers[2]])
    merger = Merger(Limits())
    first = build(merger, staged)
    assert (first.records, first.batches) == (2, 1)
    assert bytes(first.data)[61:] == buffers[0][61:]  # its records' bytes as they came


def test_unmapped_schema_ids_are_resolved_before_the_batch_is_built() -> None:
    batches = [
        [(T0, None, wire(5), []), (T0, b"key", b"plain", [])],
        [(T0, wire(6), wire(5), [])],
    ]
    translator = Translator(known={5, 6})
    staged = stage(run_of(batches, first_offset=20))
    p = build(Merger(Limits(), translator), staged)
    assert [sid for sid, _ in translator.resolved] == [5, 6]
    assert translator.resolved[0][1] == "s[0] offset 20"
    _, got = read_any(bytes(p.data))
    assert [(k, v) for _, _, k, v, _ in got] == [
        (None, wire(1005)),
        (b"key", b"plain"),
        (wire(1006), wire(1005)),
    ]
    assert translator.plain == [("s", 1)]  # the record with neither key nor value in it


def test_with_schema_ids_even_a_single_batch_goes_through_the_kernel() -> None:
    translator = Translator(known={9})
    staged = stage(run_of([[(T0, None, wire(9), [])]]))
    p = build(Merger(Limits(None), translator), staged)
    assert read_any(bytes(p.data))[1][0][3] == wire(1009)


def test_a_batch_that_cannot_be_translated_stops_the_copy_naming_it() -> None:
    data = bytearray(run_of([[(T0, None, wire(9), [])]], first_offset=33)[0])
    data[-1] ^= 0xFF
    with pytest.raises(MirrorError, match=r"s\[0\] batch at offset 33 cannot be copied"):
        build(Merger(Limits(), Translator(known={9})), stage([bytes(data)]))
