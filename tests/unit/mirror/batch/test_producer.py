"""The producer session's bookkeeping after a failed send, without a broker: requests go to an
in-memory link whose futures the test completes (the wire is covered by the integration and
fault tiers)."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pytest
from kafka.future import Future
from kafka.protocol.producer.transaction import InitProducerIdRequest
from kafka.record.default_records import DefaultRecordBatch

from kmirror.errors import SendError
from kmirror.mirror.batch.producer import RETRY_BACKOFF_S, BatchSendError, Pending, ProducerSession
from kmirror.mirror.batch.records import split
from kmirror.mirror.batch.transactions import TxnSession
from tests.unit.mirror.batch.helpers import build

pytestmark = pytest.mark.unit

TARGET = ("t", 0)


class Link:
    """Node 1 leads everything; every request waits in `sent` for the test to answer it."""

    def __init__(self) -> None:
        self.sent: list[tuple[Any, Future]] = []

    def any_node(self) -> int:
        return 1

    def leader(self, topic: str, partition: int) -> int:
        return 1

    def in_flight(self, node: int) -> int:
        return sum(1 for _, f in self.sent if not f.is_done)

    def refresh(self) -> None:
        pass

    def send(self, node: int, request: Any) -> Future:
        future = Future()
        self.sent.append((request, future))
        return future

    def grant(self, producer_id: int) -> None:
        """Answer the open InitProducerId request."""
        request, future = self.sent[-1]
        assert isinstance(request, InitProducerIdRequest)
        future.success(SimpleNamespace(error_code=0, producer_id=producer_id, producer_epoch=0))


def pending(count: int) -> Pending:
    (batch,), _ = split(build(list(range(count)), base_offset=100))
    return Pending(("s", 0), batch, batch.next_offset)


def session(link: Link, delivery_timeout_s: float = 60.0) -> ProducerSession:
    return ProducerSession(
        link,  # type: ignore[arg-type]
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
    assert [(b.producer_id, b.base_sequence) for b in sent] == [(7, 0), (7, 3)]

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


def answer(future: Future, code: int, base_offset: int = 0) -> None:
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
    s = TxnSession(link, "tx", max_in_flight=5, request_timeout_ms=30_000, delivery_timeout_s=60.0)  # type: ignore[arg-type]
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
    s.enqueue(TARGET, pending(3))
    s.enqueue(TARGET, pending(2))
    s.send()
    (_, first), (_, second) = link.sent
    answer(first, 6)
    answer(second, 45)
    assert s.take() == []
    s.check()
    assert resent_after_backoff(s, link, 2) == [(7, 0), (7, 3)]


def test_out_of_order_before_the_batch_ahead_answered_keeps_the_producer_id() -> None:
    """The same race with the answers the other way round (two connections: the old
    leader's answer comes later). At least once, a new producer id here re-sent the first
    batch under it: a duplicate if the old leader had written it after all."""
    link = Link()
    s = session(link)
    s.ready()
    link.grant(7)
    s.enqueue(TARGET, pending(3))
    s.enqueue(TARGET, pending(2))
    s.send()
    (_, first), (_, second) = link.sent[1:]
    answer(second, 45)
    assert s.take() == []
    answer(first, 6)
    assert s.take() == []
    assert s.ready()  # no new producer id
    assert resent_after_backoff(s, link, 3) == [(7, 0), (7, 3)]


def test_out_of_order_of_the_next_batch_itself_still_ends_the_transaction() -> None:
    """Nothing ahead of it unresolved: the broker really lost our sequence, and a
    transaction cannot carry on past that."""
    link = Link()
    s = txn_session(link)
    s.enqueue(TARGET, pending(3))
    s.send()
    answer(link.sent[0][1], 45)
    with pytest.raises(SendError, match=r"refused a transactional batch .* \(error code 45\)"):
        s.take()
        s.check()
