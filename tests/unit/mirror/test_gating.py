"""The copiers' side of the control gate without a broker: which batches and records a paused
topic or a drain lets through, where the copy goes on from, and what is charged."""

from __future__ import annotations

from typing import cast

import pytest
from confluent_kafka import Consumer, Message, TopicPartition

from kmirror.config.throttle import parse_throttle
from kmirror.control.gate import Gate
from kmirror.control.state import ControlState, Drain
from kmirror.mirror.batch.fetcher import Fetched, Fetcher
from kmirror.mirror.batch.gating import BatchGate
from kmirror.mirror.batch.records import Batch
from kmirror.mirror.gating import RecordGate

pytestmark = pytest.mark.unit

NO_THROTTLE = parse_throttle("", "x")


def gate(state: ControlState, throttle: str = "") -> Gate:
    g = Gate(clock=lambda: 0.0)
    g.update(state, parse_throttle(throttle, "x"))
    return g


class SeekLog:
    """The fetcher's seek, recorded (the only call `cut` makes)."""

    def __init__(self) -> None:
        self.seeks: list[tuple[tuple[str, int], int]] = []

    def seek(self, key: tuple[str, int], offset: int) -> None:
        self.seeks.append((key, offset))


def batch(base: int, count: int) -> tuple[Batch, bool]:
    data = memoryview(b"x" * (100 * count))
    return Batch(data, base, 2, last_offset_delta=count - 1, record_count=count), True


def test_a_paused_topic_is_not_fetched_and_what_a_fetch_brought_goes_back() -> None:
    g = BatchGate(gate(ControlState(paused=frozenset({"t"}))))
    assert not g.room(("t", 0), 40) and g.room(("u", 0), 40)
    log = SeekLog()
    fetched = Fetched(("t", 0), 40, [batch(38, 5), batch(43, 5)])  # began before the position
    kept = g.cut(fetched, cast(Fetcher, log))
    assert kept.batches == [] and log.seeks == [(("t", 0), 40)]  # from the position, not 38


def test_a_drain_copies_up_to_its_end_and_no_further() -> None:
    g = BatchGate(gate(ControlState(drain=Drain("d", 0.0, {("t", 0): 50}))))
    assert g.room(("t", 0), 49) and not g.room(("t", 0), 50)
    assert not g.room(("t", 1), 0)  # not there when the drain was captured: not copied
    log = SeekLog()
    kept = g.cut(Fetched(("t", 0), 40, [batch(40, 10), batch(50, 10)]), cast(Fetcher, log))
    assert [b.base_offset for b, _ in kept.batches] == [40]
    assert log.seeks == [(("t", 0), 50)]


def test_what_the_batch_path_copies_is_charged_to_the_throttle() -> None:
    g = BatchGate(gate(ControlState(), "backlog.bytes=1000"))
    assert g.room(("t", 0), 0)
    g.cut(Fetched(("t", 0), 0, [batch(0, 20)]), cast(Fetcher, SeekLog()))  # 2,000 bytes
    assert not g.room(("t", 0), 20)  # in debt: fetched again once it is paid


def message(offset: int, topic: str = "t", partition: int = 0) -> Message:
    return Message(topic=topic, partition=partition, offset=offset, key=b"k", value=b"v")


class ConsumerCalls:
    """The consumer calls the record gate makes (pause, resume, seek), recorded."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[tuple[str, int, int]]]] = []

    def _log(self, name: str, tps: list[TopicPartition]) -> None:
        self.calls.append((name, [(tp.topic, tp.partition, tp.offset) for tp in tps]))

    def pause(self, tps: list[TopicPartition]) -> None:
        self._log("pause", tps)

    def resume(self, tps: list[TopicPartition]) -> None:
        self._log("resume", tps)

    def seek(self, tp: TopicPartition) -> None:
        self._log("seek", [tp])


def test_records_past_the_limit_are_held_and_the_copy_goes_on_from_the_first() -> None:
    key = ("t", 0)
    g = gate(ControlState(drain=Drain("d", 0.0, {key: 12})))
    consumer = ConsumerCalls()
    rg = RecordGate(g, cast(Consumer, consumer))
    rg.regate({key})
    assert consumer.calls == []  # below its limit: fetched on
    out = rg.admit([message(o) for o in range(10, 15)])  # one consume ran past the end
    assert [m.offset() for m in out] == [10, 11]
    assert rg.held == {key: 12}
    assert rg.clamp(key, 15) == 12 and rg.clamp(("u", 0), 15) == 15  # the book stops there
    rg.regate({key})
    assert consumer.calls == [("pause", [("t", 0, -1001)])]
    g.update(ControlState(), NO_THROTTLE)  # the drain cancelled
    rg.regate({key})
    assert consumer.calls[1:] == [("seek", [("t", 0, 12)]), ("resume", [("t", 0, -1001)])]
    assert rg.held == {} and rg.clamp(key, 15) == 15


def test_a_partition_that_leaves_the_record_path_leaves_nothing_held() -> None:
    """(The hybrid copier moves partitions to the batch path, which goes on from the book.)"""
    key = ("t", 0)
    g = gate(ControlState(paused=frozenset({"t"})))
    consumer = ConsumerCalls()
    rg = RecordGate(g, cast(Consumer, consumer))
    rg.regate({key})  # paused at once
    assert rg.admit([message(7)]) == []  # consumed before the pause took hold
    assert rg.held == {key: 7} and consumer.calls == [("pause", [("t", 0, -1001)])]
    rg.regate(set())
    assert rg.held == {}
    g.update(ControlState(), NO_THROTTLE)
    rg.regate({key})  # back, and resumed: the hybrid copier seeks it, not the gate
    assert consumer.calls[1:] == [] and rg.clamp(key, 9) == 9
