"""Bounded ranges without a broker: --since parsing, range starts from the mirror's progress
record, --last and --to copied."""

from __future__ import annotations

import pytest

from kmirror.errors import ConfigError
from kmirror.progress.book import PartitionBook, Run
from kmirror_validate import ranges

pytestmark = pytest.mark.unit

NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("15m", int((NOW - 900) * 1000)),
        ("2h", int((NOW - 7200) * 1000)),
        ("1700000000000", 1_700_000_000_000),
        ("2026-11-26T10:00:00Z", 1_795_687_200_000),
        ("2026-11-26T11:00:00+01:00", 1_795_687_200_000),
    ],
)
def test_parse_since(text: str, ms: int) -> None:
    assert ranges.parse_since(text, now=NOW) == ms


@pytest.mark.parametrize("text", ["yesterday", "2026-11-26T10:00:00", "5w"])
def test_parse_since_refuses_what_it_cannot_place(text: str) -> None:
    with pytest.raises(ConfigError, match="--since"):
        ranges.parse_since(text, now=NOW)


BOOK = PartitionBook(acked=100, runs=[Run(40, 7, 30), Run(75, 37, 25)])  # a gap at 70..74


def test_range_starts_where_the_mirror_started() -> None:
    notes: list[str] = []
    wm = {("t", 0): (0, 100), ("t", 1): (0, 50)}
    lows = ranges.source_lows(ranges.Bounds(), wm, {("t", 0): BOOK}, {}, notes)
    assert lows == {("t", 0): 40, ("t", 1): 0}  # no progress record for t/1: earliest
    assert notes == []
    assert ranges.target_start(BOOK, 40) == 7
    assert ranges.target_start(BOOK, 72) == 37  # in the gap: the next copied record
    lows = ranges.source_lows(ranges.Bounds(start="mirror", last=10), wm, {("t", 0): BOOK}, {},
                              notes)  # fmt: skip
    assert lows == {("t", 0): 90, ("t", 1): 40}
    assert notes == ["t/1: no progress record of the mirror's start: compared from the "
                     "earliest offset"]  # fmt: skip
    assert ranges.source_lows(ranges.Bounds(start="earliest"), wm, {("t", 0): BOOK}, {},
                              []) == {("t", 0): 0, ("t", 1): 0}  # fmt: skip


def test_to_copied_ends_where_the_mirror_copied_to() -> None:
    out = ranges.Bounded()
    wm = {("t", 0): (0, 500), ("t", 1): (0, 50), ("t", 2): (10, 20)}
    ends = ranges.copied_ends(wm, {("t", 0): BOOK}, {("t", 1): 30}, out)
    assert ends == {("t", 0): (0, 100), ("t", 1): (0, 30), ("t", 2): (10, 10)}
    assert out.notes == ["t/2: the mirror has not committed anything yet: nothing to compare"]
    assert ranges.merge_high({("t", 0): (5, 500)}, {("t", 0): 100}) == {("t", 0): (5, 100)}
    assert ranges.merge_low({("t", 0): (5, 500)}, {("t", 0): 900}) == {("t", 0): (500, 500)}
