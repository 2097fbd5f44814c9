"""Where a group on the target resumes on the source: which progress book answers, and the
refusals that name what is missing. Pure: the books are made here."""

from __future__ import annotations

import pytest

from kmirror.config.model import ClusterConfig, MirrorConfig
from kmirror.dr.failback import resume_at
from kmirror.progress.book import PartitionBook, Run

pytestmark = pytest.mark.unit

REVERSE = MirrorConfig(ClusterConfig("B", "b:1"), ClusterConfig("A", "a:1"), group_id="rev")
# A->B copied source 0..9 to 0..9 and (after a marker at 10) 11..19 to 10..18.
FORWARD = PartitionBook(acked=20, runs=[Run(0, 0, 10), Run(11, 10, 9)])
# B->A copied B's own records 19..28 (produced after the failover) to A's 20..29.
BACKWARD = PartitionBook(acked=29, runs=[Run(19, 20, 10)])


def test_within_the_copies_the_forward_book_answers() -> None:
    assert resume_at(4, FORWARD, BACKWARD, REVERSE) == (4, "A->B progress", "")
    assert resume_at(12, FORWARD, BACKWARD, REVERSE) == (13, "A->B progress", "")
    # Every copy read: the first A record not copied (the group never saw it).
    assert resume_at(19, FORWARD, None, None) == (20, "A->B progress", "")


def test_past_the_copies_the_reverse_book_answers() -> None:
    assert resume_at(23, FORWARD, BACKWARD, REVERSE) == (24, "B->A progress", "")


def test_what_cannot_be_placed_says_what_is_missing() -> None:
    after, via, why = resume_at(23, FORWARD, None, None)
    assert after is None and via == ""
    assert "give the reverse flow (--reverse-flow or --reverse-group-id)" in why
    after, _, why = resume_at(35, FORWARD, BACKWARD, REVERSE)
    assert after is None and "group rev) has not copied up to target offset 35" in why
    forgot = PartitionBook(acked=60, runs=[Run(50, 500, 10)])
    after, _, why = resume_at(400, forgot, None, None)
    assert after is None and "older than the oldest copy" in why
