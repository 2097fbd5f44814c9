"""The batch path's fetcher, without a broker: how many fetches go to a source leader at once
and which partitions each carries (kmirror.mirror.batch.fetcher.groups)."""

from __future__ import annotations

from typing import Any, cast

import pytest
from kafka.future import Future

from kmirror.kafka.wire import Link
from kmirror.mirror.batch.fetcher import PER_LEADER, Fetcher, groups
from kmirror.partitions import SourcePartition

pytestmark = pytest.mark.unit

P = [("t", i) for i in range(6)]


def test_a_caught_up_leader_gets_one_fetch_with_every_partition() -> None:
    """Nothing waits: a second fetch would park behind the first on the broker's connection
    and delay tail records by up to max_wait_ms."""
    assert groups(P, lambda k: False, []) == [P]
    assert groups(P, lambda k: k == P[3], []) == [P]  # one waiting: nothing to split


def test_a_leader_with_records_waiting_gets_two_fetches_each_answered_at_once() -> None:
    waiting = {P[0], P[2], P[3], P[5]}
    first, second = groups(P, waiting.__contains__, [])
    assert sorted(first + second) == P  # every partition asked for, once
    assert set(first) & waiting and set(second) <= waiting  # neither can park
    assert len(groups(P, waiting.__contains__, [])) == PER_LEADER


def test_a_second_fetch_only_beside_one_that_cannot_park_and_only_if_it_cannot() -> None:
    some = P[:3]
    assert groups(some, lambda k: True, [False]) == [some]
    assert groups(some, lambda k: True, [True]) == []  # the one in flight may park
    assert groups(some, lambda k: False, [False]) == []  # this one could park
    assert groups(some, lambda k: True, [False, False]) == []  # no slot
    assert groups([], lambda k: True, []) == []


class _Link:
    """What the fetcher uses of the source link; every partition's leader is node 1."""

    def __init__(self) -> None:
        self.sent: list[list[SourcePartition]] = []

    def want(self, topics: set[str]) -> None:
        pass

    def leader(self, topic: str, partition: int) -> int:
        return 1

    def leader_epoch(self, topic: str, partition: int) -> int:
        return -1

    def refresh(self) -> None:
        pass

    def send(self, node: int, request: Any) -> Future:
        self.sent.append([(t.topic, p.partition) for t in request.topics for p in t.partitions])
        return Future()


def test_the_fetcher_splits_only_while_the_last_responses_said_records_wait() -> None:
    link = _Link()
    fetcher = Fetcher(
        cast(Link, link), "g", max_wait_ms=100, max_bytes=1 << 20, partition_max_bytes=1 << 10
    )
    for key in P[:4]:
        fetcher.add(key, 0)
    fetcher.send(lambda k: True)
    assert link.sent == [P[:4]]  # nothing known yet: one fetch
    fetcher._in_flight.clear()
    for key in P[:4]:
        fetcher._positions[key].last_stable = 10  # records past position 0
    fetcher.send(lambda k: True)
    assert sorted(link.sent[1] + link.sent[2]) == P[:4] and len(link.sent) == 3
    fetcher.send(lambda k: True)  # both slots busy, every partition in flight
    assert len(link.sent) == 3
