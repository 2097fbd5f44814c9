"""The control state folded from its topic's records, and the decisions taken from it."""

from __future__ import annotations

import pytest

from kmirror.config.throttle import parse_throttle
from kmirror.control.state import (
    ControlState,
    Drain,
    DrainReport,
    drain_record,
    drained,
    fold,
    pause_record,
    resume_record,
    throttle_record,
)

pytestmark = pytest.mark.unit


def test_pause_and_resume_fold_to_the_newest_record() -> None:
    state = fold([pause_record("a", 1.0, "ops"), pause_record("b", 2.0, "ops")], ControlState())
    assert state.paused == {"a", "b"} and state.paused_at == {"a": 1.0, "b": 2.0}
    assert state.limit(("a", 0)) == 0 and state.limit(("c", 0)) is None
    state = fold([resume_record("a")], state)
    assert state.paused == {"b"} and state.limit(("a", 3)) is None
    # A restart folds the same records into the same state.
    again = fold(
        [pause_record("a", 1.0, "x"), pause_record("b", 2.0, "x"), resume_record("a")],
        ControlState(),
    )
    assert again == state


def test_a_drain_limits_every_partition_to_its_captured_end() -> None:
    drain = Drain("d1", 5.0, {("t", 0): 10, ("t", 1): 0})
    state = fold([drain_record(drain)], ControlState())
    assert state.drain == drain
    assert state.limit(("t", 0)) == 10 and state.limit(("t", 1)) == 0
    assert state.limit(("new", 0)) == 0  # created after the drain: not copied
    # A paused topic stays at 0 whatever its end.
    paused = fold([pause_record("t", 1.0, "x")], state)
    assert paused.limit(("t", 0)) == 0
    assert fold([drain_record(None)], state).drain is None
    assert state.limits([("t", 0), ("t", 1)]) == {("t", 0): 10, ("t", 1): 0}


def test_throttles_set_at_run_time_win_until_cleared() -> None:
    configured = parse_throttle("backlog.bytes=100", "x")
    set_live = parse_throttle("tail.records=5,t:backlog.bytes=7", "y")
    state = fold([throttle_record(set_live)], ControlState())
    assert state.throttle_for(configured) == set_live
    assert fold([throttle_record(None)], state).throttle_for(configured) == configured


def test_unknown_keys_are_ignored() -> None:
    assert fold([(b"from-a-newer-kmirror", b"{}")], ControlState()) == ControlState()


def test_drain_report_judges_by_commits() -> None:
    ends = {("t", 0): 10, ("t", 1): 0, ("t", 2): 5}
    report = DrainReport("d", ends, {("t", 0): 7})
    assert not report.complete and report.remaining == {("t", 0): 3, ("t", 2): 5}
    doc = report.to_json()
    assert doc["records_left"] == 8 and [p["done"] for p in doc["partitions"]] == [
        False,
        True,
        False,
    ]
    assert DrainReport("d", ends, {("t", 0): 10, ("t", 2): 5}).complete


def test_a_streams_part_is_drained_when_acknowledged_to_the_ends() -> None:
    assert drained({("t", 0): 10}, {("t", 0): 10})
    assert not drained({("t", 0): 10}, {("t", 0): 9})
    assert not drained({("t", 0): 10}, {})
