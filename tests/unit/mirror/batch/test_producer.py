"""The producer session's bookkeeping after a failed send, without a broker: requests go to an
in-memory link whose futures the test completes (the wire is covered by the integration and
fault tiers)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from kafka.future import Future
from kafka.protocol.producer.transaction import InitProducerIdRequest
from kafka.record.default_records import DefaultRecordBatch

from kmirror.mirror.batch.producer import BatchSendError, Pending, ProducerSession
from kmirror.mirror.batch.records import split
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
