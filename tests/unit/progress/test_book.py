"""The progress book: runs, acknowledgements, exact translation, the persisted record."""

from __future__ import annotations

import pytest

from kmirror.errors import MirrorError
from kmirror.progress.book import (
    MAX_RUNS,
    PartitionBook,
    ProgressBook,
    Run,
    translate,
    translate_back,
)
from kmirror.progress.codec import decode_record, encode_record

pytestmark = pytest.mark.unit


def test_contiguous_acknowledgements_make_one_run() -> None:
    book = PartitionBook(acked=0)
    book.acknowledge(0, 100, 10, 10)
    book.acknowledge(10, 110, 5, 15)
    assert book.runs == [Run(0, 100, 15)]
    assert book.acked == 15
    assert book.target_end == 115


def test_gap_in_source_starts_a_new_run() -> None:
    book = PartitionBook(acked=0)
    book.acknowledge(0, 0, 10, 10)
    book.acknowledge(20, 10, 5, 26)  # 10..19 compacted away, 25 is a transaction marker
    assert book.runs == [Run(0, 0, 10), Run(20, 10, 5)]
    assert book.acked == 26


def test_translation_is_exact_inside_runs_and_gaps() -> None:
    book = PartitionBook(acked=0)
    book.acknowledge(0, 0, 10, 10)
    book.acknowledge(20, 10, 5, 26)
    assert book.translate(0) == 0
    assert book.translate(7) == 7
    assert book.translate(10) == 10  # in the gap: the next copied record (source 20)
    assert book.translate(19) == 10
    assert book.translate(22) == 12
    assert book.translate(25) == 15  # trailing marker: where the next copy lands
    assert book.translate(26) == 15
    assert book.translate(27) is None  # not acknowledged yet: cannot say


def test_translation_before_oldest_run_rereads() -> None:
    assert translate([Run(50, 500, 10)], 10, 60) == 500
    assert translate([], 0, 0) is None


def test_translation_back_is_exact_and_the_inverse_of_translate() -> None:
    book = PartitionBook(acked=0)
    book.acknowledge(0, 0, 10, 10)
    book.acknowledge(20, 10, 5, 26)  # source 10..19 never copied, 25 a marker
    assert [book.translate_back(t) for t in (0, 7, 10, 12, 14)] == [0, 7, 20, 22, 24]
    assert book.translate_back(15) == 26  # read every copy: the first record not copied
    assert book.translate_back(99) == 26  # past the copies (records written on the target)
    for source in (0, 7, 20, 22, 24):
        assert book.translate_back(book.translate(source) or 0) == source


def test_translation_back_over_a_recopy_and_before_the_oldest_run() -> None:
    book = PartitionBook(acked=0)
    book.acknowledge(0, 0, 10, 10)
    book.rewind(5)
    book.acknowledge(5, 20, 5, 10)  # 5..9 copied again at 20..24; 5..9 at 10..14 superseded
    assert book.translate_back(3) == 3
    assert book.translate_back(7) == 5  # in the superseded copies: from the re-copy's start
    assert book.translate_back(22) == 7
    assert translate_back([Run(50, 500, 10)], 499, 60) is None  # copies the book forgot
    assert translate_back([], 0, 0) is None


def test_next_source_inside_run_is_a_bug() -> None:
    with pytest.raises(MirrorError, match="copier bug"):
        PartitionBook(acked=0).acknowledge(0, 0, 10, 5)


def test_recopy_after_rewind_supersedes_older_runs() -> None:
    book = PartitionBook(acked=0)
    book.acknowledge(0, 0, 10, 10)
    book.acknowledge(10, 10, 10, 20)
    book.rewind(5)
    assert (book.sent, book.acked) == (5, 5)  # nothing past the rewind counts until re-sent
    book.acknowledge(5, 20, 15, 20)  # re-sent 5..19, landed again at 20..34
    assert book.runs == [Run(0, 0, 5), Run(5, 20, 15)]
    assert book.translate(7) == 22
    assert book.acked == 20


def test_runs_are_bounded() -> None:
    book = PartitionBook(acked=0)
    for i in range(MAX_RUNS + 10):
        book.acknowledge(2 * i, i, 1, 2 * i + 2)
    assert len(book.runs) == MAX_RUNS
    assert book.runs[0].source_start == 20


def test_skip_moves_acked_without_runs() -> None:
    book = PartitionBook(acked=3)
    book.skip(9)
    assert (book.acked, book.sent, book.runs) == (9, 9, [])


def test_book_commit_cycle() -> None:
    pb = ProgressBook()
    a = pb.open("t", 0, 5)
    pb.open("t", 1, 0)
    a.acknowledge(5, 0, 3, 8)
    assert pb.to_commit() == {("t", 0): 8, ("t", 1): 0}
    pb.committed({("t", 0): 8, ("t", 1): 0})
    assert pb.to_commit() == {}
    assert a.lag(10) == (2, 2)
    pb.close("t", 1)
    assert ("t", 1) not in pb


def test_record_round_trip() -> None:
    book = PartitionBook(acked=26, runs=[Run(0, 0, 10), Run(20, 10, 5)])
    key, value = encode_record("orders", 3, book)
    topic, partition, back = decode_record(key, value)
    assert (topic, partition) == ("orders", 3)
    assert back is not None
    assert (back.acked, back.runs) == (26, book.runs)
    assert decode_record(key, None)[2] is None


def test_unreadable_record_names_the_fix() -> None:
    with pytest.raises(MirrorError, match="progress topic"):
        decode_record(b"nope", b"{}")
