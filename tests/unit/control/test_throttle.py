"""Token buckets, the two classes (backlog, tail) and sharing among streams, on a fake clock."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from kmirror.config.throttle import Rate, parse_throttle
from kmirror.control.gate import Gate
from kmirror.control.state import ControlState, Drain
from kmirror.control.throttle import TAIL_S, Throttle, TokenBucket, share

pytestmark = pytest.mark.unit


def test_a_bucket_holds_one_second_and_pays_its_debt() -> None:
    bucket = TokenBucket(100.0, now=0.0)
    assert bucket.open(0.0)
    bucket.take(250, 0.0)  # a fetch larger than the bucket: allowed once, then debt
    assert not bucket.open(0.0) and not bucket.open(1.4)
    assert bucket.open(1.51)  # 150 of debt paid at 100/s
    bucket.take(10_000, 2.0)
    assert bucket.open(200.0)
    assert bucket.tokens == 100.0  # never more than a second's worth


def test_the_rate_holds_over_a_minute_of_fetches() -> None:
    """A copier that fetches whenever the bucket is open, 64 KiB a time, against 1 MB/s."""
    bucket, now, copied = TokenBucket(1_000_000.0, 0.0), 0.0, 0
    while now < 60.0:
        if bucket.open(now):
            bucket.take(65_536, now)
            copied += 65_536
        now += 0.001
    assert 0.98 < copied / 60.0 / 1_000_000 < 1.04


def test_retune_keeps_the_debt() -> None:
    bucket = TokenBucket(100.0, 0.0)
    bucket.take(300, 0.0)
    bucket.retune(1000.0, 0.0)
    assert not bucket.open(0.15) and bucket.open(0.25)


def test_flow_and_topic_limits_both_apply_per_class() -> None:
    settings = parse_throttle("backlog.bytes=1000,t:backlog.records=10", "x")
    th = Throttle(settings, 0.0)
    th.charge("t", "backlog", 11, 10, 0.0)
    assert not th.open("t", "backlog", 0.0)  # the topic's records
    assert th.open("u", "backlog", 0.0)  # another topic: only the flow's bytes
    th.charge("u", "backlog", 1, 2000, 0.0)
    assert not th.open("u", "backlog", 0.0)
    assert th.open("u", "tail", 0.0) and th.open("t", "tail", 0.0)  # the tail: no limit
    th.update(parse_throttle("", "x"), 0.0)
    assert th.open("t", "backlog", 0.0) and not th.limited


def test_a_partition_is_in_the_tail_while_it_keeps_reaching_its_end() -> None:
    now = [0.0]
    seconds: list[tuple[str, str, float]] = []
    gate = Gate(clock=lambda: now[0], on_throttled=lambda t, k, s: seconds.append((t, k, s)))
    gate.update(ControlState(), parse_throttle("backlog.bytes=100,tail.bytes=1000000", "x"))
    key = ("t", 0)
    assert gate.kind(key) == "backlog"
    gate.at_end(key)
    assert gate.kind(key) == "tail"
    gate.charge(key, 1, 500)  # the tail's bucket: plenty of room
    assert gate.open(key)
    now[0] = TAIL_S + 1
    assert gate.kind(key) == "backlog"  # not at the end for a while: catching up
    gate.charge(key, 1, 250)
    assert not gate.open(key)
    now[0] += 2.0
    assert gate.open(key)
    assert seconds == [("t", "backlog", 2.0)]  # the time it was held back, by class
    assert gate.classes([key, ("u", 1)]) == (("t", "u"), ())


def test_limits_come_from_the_control_state() -> None:
    gate = Gate()
    version = gate.version
    gate.update(ControlState(paused=frozenset({"t"})), parse_throttle("", "x"))
    assert gate.version == version + 1 and gate.limit(("t", 0)) == 0
    gate.update(ControlState(drain=Drain("d", 0.0, {("u", 0): 5})), parse_throttle("", "x"))
    assert gate.limit(("u", 0)) == 5 and gate.limit(("t", 0)) == 0
    assert gate.draining({("u", 0): 4}) and not gate.draining({("u", 0): 5})


@dataclass
class Seen:
    backlog: tuple[str, ...] = ()
    tail: tuple[str, ...] = ()


def test_streams_share_a_limit_among_those_that_need_it() -> None:
    settings = parse_throttle("backlog.bytes=900,tail.records=90,t:backlog.bytes=60", "x")
    assert share(settings, 0, {}, 1) == settings
    # Nobody reported yet: every stream takes a third.
    first = share(settings, 0, {}, 3)
    assert first.flow.backlog == Rate(bytes_per_s=300.0)
    reports = {0: Seen(backlog=("t",)), 1: Seen(backlog=("t", "u"), tail=("v",)), 2: Seen()}
    mine = share(settings, 0, reports, 3)
    assert mine.flow.backlog == Rate(bytes_per_s=450.0)  # two streams catch up
    assert mine.flow.tail == Rate(records_per_s=90.0)  # one keeps up
    assert mine.topic("t") is not None and mine.topic("t").backlog == Rate(bytes_per_s=30.0)  # type: ignore[union-attr]


def test_a_record_copier_consumes_a_tenth_of_a_second_of_the_smallest_limit() -> None:
    gate = Gate()
    assert gate.batch(5000, 1000.0) == 5000  # no throttle: the whole batch
    gate.update(ControlState(), parse_throttle("backlog.records=4000,t:tail.bytes=2000000", "x"))
    # The smallest: 4,000 records/s, or 2 MB/s of 1 kB records = 2,000/s.
    assert gate.batch(5000, 1000.0) == 200
    assert gate.batch(5000, 10_000.0) == 50  # 2 MB/s of 10 kB: 200/s, 20; but never below 50
    assert gate.batch(10, 1000.0) == 10
