"""The producer session's bookkeeping after a failed send, without a broker: requests go to an
in-memory link whose futures the test completes (the wire is covered by the integration and
fault tiers)."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pytest
from kafka.future import Future
from kafka.record.default_records import DefaultRecordBatch

from kmirror.errors import SendError
from kmirror.mirror.batch import producer
from kmirror.mirror.batch.merger import Merger, Staged
from kmirror.mirror.batch.producer import RETRY_BACKOFF_S, BatchSendError, ProducerSession
from kmirror.mirror.batch.records import split
from kmirror.mirror.batch.transactions import TxnSession
from tests.unit.mirror.batch.helpers import Limits, Link, build

pytestmark = pytest.mark.unit

TARGET = ("t", 0)


def pending(count: int) -> Staged:
    (batch,), _ = split(build(list(range(count)), base_offset=100))
    return Staged(("s", 0), batch, batch.next_offset)


def session(link: Link, delivery_timeout_s: float = 60.0) -> ProducerSession:
    return ProducerSession(
        link,  # type: ignore[arg-type]
        Merger(Limits()),
        max_in_flight=5,
        request_timeout_ms=30_000,
        delivery_timeout_s=delivery_timeout_s,
    )


def produced(request: Any) -> DefaultRecordBatch:
    data = request.topic_data[0].partition_data[0].records
    return DefaultRecordBatch(data)


def test_abandon_forgets_the_unacknowledged_and_starts_a_new_producer_id() -> None:
    link = Link()
    s = session(link)
    assert not s.ready()
    link.grant(7)
    s.enqueue(TARGET, pending(3))
    s.enqueue(TARGET, pending(2))
    s.send()
    sent = [produced(r) for r, _ in link.sent[1:]]
    assert [(b.producer_id, b.base_sequence) for b in sent] == [(7, 0)]  # the first goes alone

    s.abandon()
    assert s.unacknowledged == 0
    # A late answer to a dropped batch is ignored, not reported as acknowledged.
    link.sent[1][1].success(SimpleNamespace(responses=[]))
    assert s.take() == []

    # Re-sent from the last commit: a new producer id, sequences from 0 (the broker cannot know
    # which of the dropped batches it wrote, so the old sequence cannot go on).
    s.enqueue(TARGET, pending(4))
    s.send()
    link.grant(8)
    s.send()
    request, _ = link.sent[-1]
    again = produced(request)
    assert (again.producer_id, again.base_sequence) == (8, 0)


def test_a_batch_nobody_acknowledges_is_a_send_failure_the_loop_may_retry() -> None:
    link = Link()
    s = session(link, delivery_timeout_s=0.0)
    s.ready()
    link.grant(7)
    s.enqueue(TARGET, pending(1))
    with pytest.raises(BatchSendError, match=r"did not acknowledge a batch") as err:
        s.send()
    assert err.value.target == TARGET
    assert not err.value.permanent


# -- re-batching: what a free slot sends ------------------------------------------------------


def contiguous(counts: list[int], first: int = 0) -> list[Staged]:
    """Source batches of these record counts, back to back from offset `first`."""
    out, offset = [], first
    for n in counts:
        (batch,), _ = split(build(list(range(n)), base_offset=offset))
        out.append(Staged(("s", 0), batch, batch.next_offset))
        offset += n
    return out


def answer(link: Link, index: int, base_offset: int, code: int = 0) -> None:
    request, future = link.sent[index]
    parts = [
        SimpleNamespace(index=pd.index, error_code=code, base_offset=base_offset,
                        error_message=None, record_errors=[])
        for td in request.topic_data for pd in td.partition_data
    ]  # fmt: skip
    name = request.topic_data[0].name
    future.success(
        SimpleNamespace(responses=[SimpleNamespace(name=name, partition_responses=parts)])
    )


def confirm(s: ProducerSession, link: Link, first: int = 1000) -> None:
    """One record acknowledged: the broker holds the producer's state for TARGET, so more
    than one batch may be in flight from now on (its sequence takes 0, the next ones 1 on)."""
    (staged,) = contiguous([1], first=first)
    s.enqueue(TARGET, staged)
    s.send()
    answer(link, len(link.sent) - 1, base_offset=0)
    assert [p.records for p in s.take()] == [1]


def started(link: Link, limits: Limits | None = None) -> ProducerSession:
    s = ProducerSession(
        link,  # type: ignore[arg-type]
        Merger(limits or Limits()),
        max_in_flight=5,
        request_timeout_ms=30_000,
        delivery_timeout_s=60.0,
    )
    s.ready()
    link.grant(7)
    return s


def test_what_is_staged_when_a_slot_is_free_goes_out_at_once_as_one_batch() -> None:
    link = Link()
    s = started(link)
    for staged in contiguous([3, 1, 5, 2]):
        s.enqueue(TARGET, staged)
    s.send()
    ((request, _),) = link.sent[1:]
    batch = produced(request)
    assert [r.offset for r in batch] == list(range(11))  # one batch, offsets renumbered
    assert (batch.producer_id, batch.base_sequence) == (7, 0)
    answer(link, 1, base_offset=500)
    (acked,) = s.take()
    # What the book is told: source offsets 0..10 landed at target offsets 500..510.
    assert (acked.first, acked.records, acked.next_source, acked.target_offset) == (0, 11, 11, 500)
    assert acked.batches == 4 and s.unacknowledged == 0


def test_while_every_slot_is_taken_batches_wait_and_the_next_slot_takes_them_all() -> None:
    link = Link()
    s = started(link)
    confirm(s, link)
    batches = contiguous([2] * 10)
    for staged in batches[:5]:
        s.enqueue(TARGET, staged)
        s.send()  # a free slot each time: one batch each, as it came
    assert len(link.sent) == 7 and s.queued(TARGET) == 5
    for staged in batches[5:]:
        s.enqueue(TARGET, staged)
    s.send()
    assert len(link.sent) == 7  # five in flight: they wait
    answer(link, 2, base_offset=0)
    assert [p.records for p in s.take()] == [2]
    s.send()
    merged = produced(link.sent[-1][0])
    assert (len(link.sent), len(list(merged)), merged.base_sequence) == (8, 10, 11)


def test_a_gap_in_source_offsets_starts_a_new_batch() -> None:
    link = Link()
    s = started(link)
    confirm(s, link)
    for staged in contiguous([3, 3]) + contiguous([2], first=7):  # offset 6 is missing
        s.enqueue(TARGET, staged)
    s.send()
    sent = [produced(r) for r, _ in link.sent[2:]]
    assert [(len(list(b)), b.base_sequence) for b in sent] == [(6, 1), (2, 7)]


def test_batches_go_one_by_one_until_the_target_topics_limit_is_known() -> None:
    link = Link()
    s = started(link, Limits(None))
    confirm(s, link)
    for staged in contiguous([2, 2, 2]):
        s.enqueue(TARGET, staged)
    s.send()
    assert [len(list(produced(r))) for r, _ in link.sent[2:]] == [2, 2, 2]


def test_a_new_producer_session_sends_the_merged_batches_again_under_its_id() -> None:
    link = Link()
    s = started(link)
    for staged in contiguous([3, 3]):
        s.enqueue(TARGET, staged)
    s.send()
    answer(link, 1, base_offset=-1, code=45)  # OUT_OF_ORDER_SEQUENCE_NUMBER: the id is lost
    assert s.take() == []
    s.send()
    link.grant(8)
    time.sleep(RETRY_BACKOFF_S)  # a failed partition waits this long before sending again
    s.send()
    again = produced(link.sent[-1][0])
    assert again.validate_crc()
    assert (again.producer_id, again.base_sequence, len(list(again))) == (8, 0, 6)


def in_flight(s: ProducerSession, link: Link, since: int, *counts: int) -> list[tuple[int, int]]:
    """Stage source batches of these record counts one by one, trying to send each at once;
    (producer id, base sequence) of what went out from link.sent[since] on."""
    first = 0
    for n in counts:
        (staged,) = contiguous([n], first=first)
        first += n
        s.enqueue(TARGET, staged)
        s.send()
    return [(b.producer_id, b.base_sequence) for b in (produced(r) for r, _ in link.sent[since:])]


def test_the_first_batch_under_a_producer_id_goes_alone_until_acknowledged() -> None:
    """Found by CI (test_a_missing_target_topic_is_waited_for_never_created_by_the_copier):
    a target topic just created answered the first batch UNKNOWN_TOPIC_OR_PARTITION and wrote
    the pipelined second one, since a broker with no state for a producer takes any sequence
    as its first. The retry then wrote the first, and the second again: 468 records out of
    order and twice. One batch in flight until one is acknowledged cannot overtake."""
    link = Link()
    s = started(link)
    assert in_flight(s, link, 1, 3, 2, 4) == [(7, 0)]  # the others wait
    answer(link, 1, base_offset=-1, code=3)  # UNKNOWN_TOPIC_OR_PARTITION
    assert s.take() == []
    assert resent_after_backoff(s, link, 2) == [(7, 0)]  # alone again
    answer(link, 2, base_offset=0)
    assert [p.records for p in s.take()] == [3]
    s.send()  # now the broker holds our sequence: the rest may be pipelined
    merged = produced(link.sent[3][0])  # (what waited, as one batch)
    assert (merged.base_sequence, len(list(merged))) == (3, 6)
    assert in_flight(s, link, 4, 1, 1) == [(7, 9), (7, 10)]


def test_a_new_producer_id_or_a_long_silence_sends_one_batch_first_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    link = Link()
    s = started(link)
    confirm(s, link)
    assert len(in_flight(s, link, 2, 2, 2)) == 2  # pipelined under id 7
    answer(link, 2, base_offset=-1, code=59)  # UNKNOWN_PRODUCER_ID: a new session
    answer(link, 3, base_offset=-1, code=59)
    s.take()
    s.send()
    link.grant(8)
    assert resent_after_backoff(s, link, 5) == [(8, 0)]  # under id 8: the first alone

    # The broker forgets an idle producer (producer.id.expiration.ms): after a silence the
    # partition starts again with one batch.
    answer(link, 5, base_offset=0)
    s.take()
    s.send()
    answer(link, len(link.sent) - 1, base_offset=2)
    s.take()
    monkeypatch.setattr(producer, "STATE_KEPT_S", 0.0)
    since = len(link.sent)
    assert len(in_flight(s, link, since, 1, 1)) == 1


def test_a_merged_batch_refused_as_too_large_asks_for_the_limit_again() -> None:
    link = Link()
    limits = Limits()
    s = started(link, limits)
    for staged in contiguous([3, 3]):
        s.enqueue(TARGET, staged)
    s.send()
    answer(link, 1, base_offset=-1, code=10)  # MESSAGE_TOO_LARGE
    s.take()
    with pytest.raises(BatchSendError, match=r"max\.message\.bytes is lower") as err:
        s.check()
    assert not err.value.permanent and limits.forgotten == ["t"]


def answer_future(future: Future, code: int, base_offset: int = 0) -> None:
    """The target's answer for partition TARGET of one Produce request."""
    part = SimpleNamespace(
        index=TARGET[1], error_code=code, base_offset=base_offset, error_message=None,
        record_errors=[],
    )  # fmt: skip
    future.success(
        SimpleNamespace(responses=[SimpleNamespace(name=TARGET[0], partition_responses=[part])])
    )


def resent_after_backoff(s: ProducerSession, link: Link, since: int) -> list[tuple[int, int]]:
    time.sleep(RETRY_BACKOFF_S + 0.02)
    s.send()
    return [(b.producer_id, b.base_sequence) for b in (produced(r) for r, _ in link.sent[since:])]


def txn_session(link: Link) -> TxnSession:
    s = TxnSession(
        link,  # type: ignore[arg-type]
        Merger(Limits()),
        "tx",
        max_in_flight=5,
        request_timeout_ms=30_000,
        delivery_timeout_s=60.0,
    )
    s.start(7, 0)
    s.added.add(TARGET)
    return s


def test_out_of_order_behind_a_failed_batch_is_retried_under_a_transaction() -> None:
    """A leader change with batches in flight (found by the 3-broker rolling restart,
    --engine batch --exactly-once): the old leader refuses the first batch
    (NOT_LEADER_OR_FOLLOWER), the new leader gets the pipelined second one before the first
    and answers OUT_OF_ORDER_SEQUENCE_NUMBER. That is the first one's fault, not a broken
    sequence: both go again, in order, with their sequences, as the Java producer does. It
    was a fatal SendError (the stream stopped, exit 1)."""
    link = Link()
    s = txn_session(link)
    confirm(s, link)
    s.enqueue(TARGET, pending(3))
    s.enqueue(TARGET, pending(2))
    s.send()
    (_, first), (_, second) = link.sent[1:]
    answer_future(first, 6)
    answer_future(second, 45)
    assert s.take() == []
    s.check()
    assert resent_after_backoff(s, link, 3) == [(7, 1), (7, 4)]


def test_out_of_order_before_the_batch_ahead_answered_keeps_the_producer_id() -> None:
    """The same race with the answers the other way round (two connections: the old
    leader's answer comes later). At least once, a new producer id here re-sent the first
    batch under it: a duplicate if the old leader had written it after all."""
    link = Link()
    s = session(link)
    s.ready()
    link.grant(7)
    confirm(s, link)
    s.enqueue(TARGET, pending(3))
    s.enqueue(TARGET, pending(2))
    s.send()
    (_, first), (_, second) = link.sent[2:]
    answer_future(second, 45)
    assert s.take() == []
    answer_future(first, 6)
    assert s.take() == []
    assert s.ready()  # no new producer id
    assert resent_after_backoff(s, link, 4) == [(7, 1), (7, 4)]


def test_out_of_order_of_the_next_batch_itself_still_ends_the_transaction() -> None:
    """Nothing ahead of it unresolved: the broker really lost our sequence, and a
    transaction cannot carry on past that."""
    link = Link()
    s = txn_session(link)
    s.enqueue(TARGET, pending(3))
    s.send()
    answer_future(link.sent[0][1], 45)
    with pytest.raises(SendError, match=r"refused a transactional batch .* \(error code 45\)"):
        s.take()
        s.check()


# -- a commit point held back: what is staged waits -------------------------------------------


def test_held_back_only_what_was_sent_counts_and_the_stage_goes_out_after() -> None:
    link = Link()
    s = started(link)
    first, second, third = contiguous([3, 2, 4])
    s.enqueue(TARGET, first)
    s.send()  # in flight
    s.hold(True)
    s.enqueue(TARGET, second)
    s.enqueue(TARGET, third)
    s.send()
    assert len(link.sent) == 2  # nothing built from the stage while held
    assert s.unacknowledged == 1 and s.queued(TARGET) == 3
    answer(link, 1, base_offset=0)
    (acked,) = s.take()
    # The commit point sees everything sent acknowledged, up to the first batch only.
    assert (acked.records, acked.next_source, s.unacknowledged) == (3, 3, 0)
    s.hold(False)
    assert s.unacknowledged == 2
    s.send()
    merged = produced(link.sent[-1][0])
    assert [r.offset for r in merged] == list(range(6)) and merged.base_sequence == 3
