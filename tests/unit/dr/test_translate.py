"""Checkpoints from the progress book, and what group offset sync may write."""

from __future__ import annotations

import pytest

from kmirror.dr.formats import Checkpoint
from kmirror.dr.translate import checkpoints_for, latest_checkpoints, marker, sync_plan
from kmirror.progress.book import PartitionBook, Run

pytestmark = pytest.mark.unit


def prefix(topic: str) -> str:
    return f"A.{topic}"


BOOKS = {
    ("t", 0): PartitionBook(acked=20, runs=[Run(0, 0, 10), Run(12, 10, 8)]),
    ("t", 1): PartitionBook(acked=5, runs=[Run(0, 100, 5)]),
    ("t", 2): PartitionBook(acked=0),  # nothing copied yet
}


def test_exact_inside_runs_and_at_gaps() -> None:
    got = checkpoints_for("g", {("t", 0): 11, ("t", 1): 3, ("u", 0): 4}, BOOKS, prefix)
    assert got == [Checkpoint("g", "A.t", 0, 11, 10), Checkpoint("g", "A.t", 1, 3, 103)]


def test_group_ahead_of_the_mirror_rereads_never_skips() -> None:
    # Source offsets 5.. are not on the target yet: the group resumes at the next copied one.
    got = checkpoints_for("g", {("t", 1): 9, ("t", 2): 4}, BOOKS, prefix)
    assert got == [Checkpoint("g", "A.t", 1, 9, 105)]


def test_sync_moves_forward_only_and_leaves_target_groups_alone() -> None:
    cps = [Checkpoint("g", "A.t", 0, 11, 10), Checkpoint("g", "A.t", 1, 3, 103)]
    ours = marker("A")
    assert sync_plan(cps, {}) == {("A.t", 0): 10, ("A.t", 1): 103}
    assert sync_plan(cps, {("A.t", 0): (12, ours), ("A.t", 1): (100, ours)}) == {("A.t", 1): 103}
    assert sync_plan(cps, {("A.t", 0): (3, "")}) is None  # a consumer on the target committed


def test_latest_checkpoint_wins_per_partition() -> None:
    old, new = Checkpoint("g", "A.t", 0, 1, 1), Checkpoint("g", "A.t", 0, 5, 5)
    other = Checkpoint("h", "A.t", 0, 9, 9)
    assert latest_checkpoints([old, other, new], "g") == {("g", "A.t", 0): new}
