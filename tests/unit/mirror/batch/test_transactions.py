"""The batch path's transactional pieces that need no broker: the transactional header
rewrite, the progress record's batch, AddPartitionsToTxn outcomes, what a session sends, and
how coordinator round trips retry (a scripted cluster: no Kafka is mocked for mirroring)."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pytest
from kafka.future import Future
from kafka.record.default_records import DefaultRecordBatch

from kmirror.mirror.batch.merger import Merger, Staged
from kmirror.mirror.batch.producer import BatchSendError
from kmirror.mirror.batch.records import rewrite, split
from kmirror.mirror.batch.sessions import Sessions
from kmirror.mirror.batch.transactions import (
    Coordinators,
    TxnSession,
    add_error,
    init_request,
    progress_record,
)
from tests.unit.mirror.batch.helpers import Limits, Link, build

pytestmark = pytest.mark.unit


def test_transactional_rewrite_sets_the_bit_under_our_producer_and_keeps_the_records() -> None:
    source = build([0, 1, 2], base_offset=500, producer_id=9)
    (batch,), _ = split(source)
    out = DefaultRecordBatch(bytes(rewrite(batch, 4242, 7, 30, transactional=True)))
    assert out.validate_crc()
    assert out.is_transactional and not out.is_control_batch
    assert (out.producer_id, out.producer_epoch, out.base_sequence) == (4242, 7, 30)
    assert bytes(rewrite(batch, 4242, 7, 30, transactional=True))[61:] == source[61:]


def test_progress_record_is_one_record_with_the_key_and_value_sent_alone() -> None:
    staged = progress_record(
        ("t", 3), b'{"topic":"t","partition":3}', b'{"format":1,"acked":42}', 42
    )
    assert staged.progress and staged.next_source == 42
    batch = staged.batch
    assert (batch.magic, batch.record_count, batch.dense) == (2, 1, True)
    out = DefaultRecordBatch(bytes(rewrite(batch, 5, 1, 0, transactional=True)))
    assert out.validate_crc() and out.is_transactional
    (record,) = list(out)
    assert record.key == b'{"topic":"t","partition":3}'
    assert record.value == b'{"format":1,"acked":42}'


def _add_response(*codes: int) -> Any:
    parts = [
        SimpleNamespace(partition_index=i, partition_error_code=c) for i, c in enumerate(codes)
    ]
    return SimpleNamespace(
        results_by_topic_v3_and_below=[SimpleNamespace(name="t", results_by_partition=parts)]
    )


@pytest.mark.parametrize(
    ("codes", "expected"),
    [
        ((0, 0), 0),
        ((55, 90), 90),  # the real cause, not "not attempted because another failed"
        ((90, 55), 90),
        ((55, 55), 55),
        ((51,), 51),
    ],
)
def test_add_partitions_outcome_is_the_real_partition_error(
    codes: tuple[int, ...], expected: int
) -> None:
    assert add_error(_add_response(*codes)) == expected


class _NoLink:
    """A session that is only asked what it would send: it must not touch the network."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"network used: {name}")


def _session(link: Any = None) -> TxnSession:
    return TxnSession(
        link or _NoLink(),
        Merger(Limits()),
        "kmirror-g-t-0",
        max_in_flight=5,
        request_timeout_ms=1000,
        delivery_timeout_s=60,
    )


def test_a_session_sends_only_into_partitions_its_transaction_holds() -> None:
    s = _session()
    assert not s.ready()  # no producer id yet
    s.start(17, 2)
    assert s.ready() and not s.open  # nothing queued: nothing to add
    (batch,), _ = split(build([0, 1]))
    s.enqueue(("t", 0), Staged(("t", 0), batch, 2))
    assert s.to_add() == [("t", 0)] and not s.ready()
    s.added.add(("t", 0))
    assert s.ready() and s.open
    s.enqueue(("progress", 0), progress_record(("t", 0), b"k", b"v", 2))
    assert s.to_add() == [("progress", 0)] and not s.ready()
    s.fenced = True
    s.added.add(("progress", 0))
    assert not s.ready()  # fenced: never sends again


def test_a_session_sequences_each_target_partition_from_zero() -> None:
    link = Link()
    s = _session(link)
    s.start(17, 2)
    (batch,), _ = split(build([0, 1, 2]))
    later = split(build([0, 1, 2], base_offset=3))[0][0]
    s.enqueue(("t", 0), Staged(("t", 0), batch, 3))
    s.enqueue(("t", 0), Staged(("t", 0), later, 6))
    s.enqueue(("progress", 0), progress_record(("t", 0), b"k", b"v", 6))
    s.added.update({("t", 0), ("progress", 0)})
    s.send()
    sent = {
        pd.index if td.name == "t" else -1: DefaultRecordBatch(pd.records)
        for request, _ in link.sent
        for td in request.topic_data
        for pd in td.partition_data
    }
    # The two source batches went out merged; the progress record alone, in its own partition.
    assert (sent[0].base_sequence, sent[-1].base_sequence) == (0, 0)
    assert sent[0].producer_id == sent[-1].producer_id == 17
    assert sent[0].is_transactional and sent[-1].is_transactional
    assert len(list(sent[0])) == 6 and len(list(sent[-1])) == 1


def test_the_progress_partition_joins_the_transaction_with_its_first_partitions() -> None:
    s = _session()
    s.start(17, 2)
    s.progress = ("progress", 0)
    assert s.to_add() == []  # nothing queued: no transaction to open
    (batch,), _ = split(build([0, 1]))
    s.enqueue(("t", 0), Staged(("t", 0), batch, 2))
    assert s.to_add() == [("progress", 0), ("t", 0)]  # one AddPartitionsToTxn for both
    s.added.update(s.to_add())
    s.enqueue(("progress", 0), progress_record(("t", 0), b"k", b"v", 2))
    assert s.to_add() == [] and s.ready()  # the commit point sends its record at once


def test_a_held_session_adds_and_sends_only_the_progress_record() -> None:
    """A commit point held back: the staged source batches wait for the next transaction, so
    the transaction being committed holds exactly what its progress record covers."""
    link = Link()
    s = _session(link)
    s.start(17, 2)
    s.added.add(("t", 0))  # the open transaction: its batches are acknowledged
    s.hold(True)
    (batch,), _ = split(build([0, 1], base_offset=5))
    s.enqueue(("t", 0), Staged(("t", 0), batch, 7))  # fetched during the commit point
    s.enqueue(("progress", 0), progress_record(("t", 0), b"k", b"v", 5))
    assert s.to_add() == [("progress", 0)]
    s.added.add(("progress", 0))
    assert s.unacknowledged == 1  # the progress record; the staged batch waits
    s.send()
    sent = [(td.name, pd.index) for request, _ in link.sent for td in request.topic_data
            for pd in td.partition_data]  # fmt: skip
    assert sent == [("progress", 0)]
    part = SimpleNamespace(index=0, error_code=0, base_offset=40, error_message=None,
                           record_errors=[])  # fmt: skip
    link.sent[0][1].success(
        SimpleNamespace(responses=[SimpleNamespace(name="progress", partition_responses=[part])])
    )
    assert [p.progress for p in s.take()] == [True] and s.unacknowledged == 0
    s.added.clear()  # EndTxn(commit)
    s.hold(False)
    assert s.to_add() == [("t", 0)] and s.unacknowledged == 1


class _Coordinator:
    """A scripted cluster: FindCoordinator answers, then per request the next error code."""

    def __init__(self, find: list[tuple[int, int]], answers: list[int]) -> None:
        self.find = find  # (error code, node id) per FindCoordinator
        self.answers = answers  # error code per InitProducerId
        self.sent: list[tuple[int, str]] = []  # (node, request name)

    def any_node(self) -> int:
        return 0

    def send(self, node: int, request: Any) -> Any:
        name = type(request).__name__
        self.sent.append((node, name))
        if name == "FindCoordinatorRequest":
            code, coordinator = self.find.pop(0)
            return Future().success(SimpleNamespace(error_code=code, node_id=coordinator))
        code = self.answers.pop(0)
        return Future().success(SimpleNamespace(error_code=code, producer_id=7, producer_epoch=1))


def _init(link: _Coordinator) -> tuple[int, Any]:
    coordinators = Coordinators(link, lambda seconds: None)  # type: ignore[arg-type]
    results = coordinators.calls(
        {"tx": init_request("tx", 60_000)}, lambda r: int(r.error_code), time.monotonic() + 5
    )
    return results["tx"]


def test_a_busy_coordinator_is_asked_again_until_it_answers() -> None:
    link = _Coordinator(find=[(0, 3)], answers=[51, 51, 0])  # CONCURRENT_TRANSACTIONS twice
    code, response = _init(link)
    assert (code, response.producer_id) == (0, 7)
    assert [n for n, name in link.sent if name == "InitProducerIdRequest"] == [3, 3, 3]


def test_a_moved_coordinator_is_looked_up_again() -> None:
    link = _Coordinator(find=[(0, 3), (0, 5)], answers=[16, 0])  # NOT_COORDINATOR, then ok
    code, _ = _init(link)
    assert code == 0
    assert [n for n, name in link.sent if name == "InitProducerIdRequest"] == [3, 5]


def test_a_refused_transactional_id_is_final_at_once() -> None:
    link = _Coordinator(find=[(53, -1)], answers=[])  # TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert _init(link) == (53, None)
    assert [name for _, name in link.sent] == ["FindCoordinatorRequest"]


class _Away:
    """Coordinators whose every AddPartitionsToTxn gets `code` back (NO_ANSWER: the broker
    restarting; 15: COORDINATOR_NOT_AVAILABLE after the request's deadline)."""

    def __init__(self, code: int) -> None:
        self.code = code
        self.asked = 0

    def calls(self, requests: dict[str, Any], error_of: Any, deadline: float) -> Any:
        self.asked += 1
        return {tid: (self.code, None) for tid in requests}


def _waiting(code: int, delivery_timeout_s: float) -> tuple[Sessions, TxnSession, _Away]:
    away = _Away(code)
    sessions = Sessions(
        _NoLink(),  # type: ignore[arg-type]
        Merger(Limits()),
        away,  # type: ignore[arg-type]
        max_in_flight=5,
        request_timeout_ms=1000,
        delivery_timeout_s=delivery_timeout_s,
    )
    session = _session()
    session.start(17, 2)
    (batch,), _ = split(build([0, 1]))
    session.enqueue(("t", 0), Staged(("t", 0), batch, 2))
    sessions.by_source[("src", 0)] = session
    return sessions, session, away


@pytest.mark.parametrize("code", [-1, 15])  # -1: NO_ANSWER
def test_an_unanswered_add_is_asked_again_at_the_next_send(code: int) -> None:
    """A target broker restarting under an exactly-once batch copy: the add goes unanswered
    for longer than a request. The batches wait (nothing sent outside the transaction) and
    the next send asks again; the mirror does not stop (it did, found by the fault suite's
    target broker restarts)."""
    sessions, session, away = _waiting(code, delivery_timeout_s=60)
    sessions.send()
    sessions.send()
    assert away.asked == 2
    assert session.to_add() == [("t", 0)] and not session.added
    assert session.unacknowledged == 1


def test_an_add_unanswered_past_the_delivery_timeout_is_a_failed_send() -> None:
    """Like a batch not acknowledged in time: the loop stops (abort.on.send.failure=true) or
    gives the transaction up and takes the partition back; not an error of its own kind."""
    sessions, session, _ = _waiting(-1, delivery_timeout_s=0.0)
    time.sleep(0.01)
    with pytest.raises(BatchSendError, match="did not add") as failed:
        sessions.send()
    assert not failed.value.permanent and failed.value.target == ("t", 0)
    # Given up (exactly-once, riding it out): the session holding the batch is marked for
    # the fencing clean-up; the partition is taken back from its committed progress.
    assert sessions.abandon() and session.fenced
    assert not sessions.abandon()  # nothing left to give up
