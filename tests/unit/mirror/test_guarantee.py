"""The delivery guarantee (kmirror.mirror.guarantee) without a broker: what at-least-once and
exactly-once do on open, commit, fencing and the clean-up after it, on both paths.

The clients are stand-ins: librdkafka's transactional producers are fakes that record the calls
made on them, and the batch path's target is a scripted cluster that answers every request at
once. Copying itself is tested against real brokers (tests/integration/test_exactly_once.py,
test_batch_exactly_once.py)."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from kafka.future import Future
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kafka.protocol.producer.produce import ProduceRequest
from kafka.protocol.producer.transaction import (
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    InitProducerIdRequest,
)
from prometheus_client import CollectorRegistry

from kmirror.config.model import ClusterConfig, MirrorConfig
from kmirror.errors import ClusterError, ConfigError, MirrorError
from kmirror.kafka import clients
from kmirror.metrics.worker import WorkerMetrics
from kmirror.mirror import record_transactions
from kmirror.mirror.batch.fencing import Fenced
from kmirror.mirror.batch.guarantee import BatchExactlyOnce, Wire
from kmirror.mirror.batch.merger import Merger
from kmirror.mirror.contract import CopierContext
from kmirror.mirror.guarantee import AtLeastOnce, ExactlyOnce
from kmirror.mirror.latch import FailureLatch
from kmirror.mirror.record_transactions import RecordExactlyOnce
from kmirror.partitions import SourcePartition
from kmirror.progress.book import ProgressBook
from tests.unit.mirror.batch.helpers import Limits, Link

pytestmark = pytest.mark.unit

KEY: SourcePartition = ("t", 0)
OTHER: SourcePartition = ("t", 1)
CONFIG = MirrorConfig(
    source=ClusterConfig("source", "127.0.0.1:1"),
    target=ClusterConfig("target", "127.0.0.1:2"),
    group_id="g",
    exactly_once=True,
)


# -- stand-ins ------------------------------------------------------------------------------------


class FakeProducer:
    """A librdkafka producer that records what it was asked; `fail` maps a call to the
    error code it raises."""

    def __init__(self, conf: Any = None) -> None:
        self.calls: list[Any] = []
        self.fail: dict[str, int] = {}
        self.fatal = False  # its failures are fatal (librdkafka: the producer is done)

    def _call(self, name: str, *detail: Any) -> None:
        self.calls.append((name, *detail) if detail else name)
        if name in self.fail:
            raise KafkaException(KafkaError(self.fail[name], fatal=self.fatal))

    def init_transactions(self, timeout: float) -> None:
        self._call("init")

    def begin_transaction(self) -> None:
        self._call("begin")

    def produce(self, topic: str, value: Any = None, key: Any = None, **kw: Any) -> None:
        self._call("produce", topic)

    def commit_transaction(self, timeout: float) -> None:
        self._call("commit")

    def abort_transaction(self, timeout: float) -> None:
        self._call("abort")

    def purge(self) -> None:
        self._call("purge")

    def flush(self, timeout: float = 0) -> int:
        return 0

    def poll(self, timeout: float = 0) -> int:
        return 0


class FakeConsumer:
    def __init__(self) -> None:
        self.paused: list[SourcePartition] = []

    def pause(self, partitions: list[TopicPartition]) -> None:
        self.paused += [(tp.topic, tp.partition) for tp in partitions]


class FakeStore:
    topic = "progress"

    def __init__(self, failed: KafkaError | None = None) -> None:
        self.failed = failed
        self.written: list[dict[SourcePartition, int]] = []

    def write(self, book: ProgressBook, keys: dict[SourcePartition, int], timeout: float) -> Any:
        self.written.append(dict(keys))
        return self.failed


class FakeGroup:
    def __init__(self, ok: bool = True) -> None:
        self.ok = ok
        self.commits: list[dict[SourcePartition, int]] = []

    def commit(self, offsets: Any) -> bool:
        self.commits.append(dict(offsets))
        return self.ok


def context(book: ProgressBook, latch: FailureLatch | None = None) -> CopierContext:
    return CopierContext(
        CONFIG,
        FakeConsumer(),  # type: ignore[arg-type]
        WorkerMetrics(CollectorRegistry()),
        latch or FailureLatch(),
        book,
        threading.Event(),
        {},
        error_cb=lambda err: None,
        client_errors=[],
    )


def copied() -> ProgressBook:
    """A book in which KEY's records 0..9 are acknowledged (at target offsets 100..109)."""
    book = ProgressBook()
    book.open(*KEY, 0).acknowledge(0, 100, 10, 10)
    return book


@pytest.fixture
def producers(monkeypatch: pytest.MonkeyPatch) -> dict[SourcePartition, FakeProducer]:
    """Every transactional producer the record path makes, by source partition."""
    made: dict[SourcePartition, FakeProducer] = {}

    def transactional(config: MirrorConfig, key: SourcePartition, overrides: Any) -> Any:
        made[key] = FakeProducer()
        return made[key]

    monkeypatch.setattr(clients, "transactional_producer", transactional)
    monkeypatch.setattr(clients, "producer", lambda config, overrides=None: FakeProducer())
    return made


# -- at-least-once -----------------------------------------------------------------------------


def test_at_least_once_writes_the_progress_records_before_the_source_group() -> None:
    book = ProgressBook()
    store, group = FakeStore(), FakeGroup()
    guarantee = AtLeastOnce(FailureLatch())
    guarantee.open([KEY])  # nothing to fence
    assert guarantee.commit(book, {KEY: 9}, 1.0, store, group) == ({KEY: 9}, True)  # type: ignore[arg-type]
    assert store.written == [{KEY: 9}] and group.commits == [{KEY: 9}]
    assert not guarantee.transactional and guarantee.hand_over(KEY, 9)


def test_at_least_once_commits_nothing_when_the_progress_record_was_not_written() -> None:
    latch = FailureLatch()
    store, group = FakeStore(failed=KafkaError(KafkaError.REQUEST_TIMED_OUT)), FakeGroup()
    done = AtLeastOnce(latch).commit(ProgressBook(), {KEY: 9}, 1.0, store, group)  # type: ignore[arg-type]
    assert done == ({}, False)
    assert group.commits == []  # a source commit never runs ahead of the progress records
    assert latch.failures and latch.failures[0].topic == "progress"


def test_at_least_once_counts_a_refused_group_commit_as_not_committed() -> None:
    done = AtLeastOnce(FailureLatch()).commit(
        ProgressBook(),
        {KEY: 9},
        1.0,
        FakeStore(),
        FakeGroup(ok=False),  # type: ignore[arg-type]
    )
    assert done == ({}, False)


def test_at_least_once_with_nothing_to_commit_writes_nothing() -> None:
    store, group = FakeStore(), FakeGroup()
    assert AtLeastOnce(FailureLatch()).commit(ProgressBook(), {}, 1.0, store, group) == ({}, True)  # type: ignore[arg-type]
    assert store.written == [] and group.commits == []


# -- the clean-up after a fencing, once for both paths -----------------------------------------


def test_a_fenced_partition_is_forgotten_by_every_part_and_its_book_closed() -> None:
    book = ProgressBook()
    book.open(*KEY, 0)
    book.open(*OTHER, 0)
    fenced = Fenced(book)
    forgotten: list[tuple[str, SourcePartition]] = []
    fenced.listen(lambda k: forgotten.append(("record", k)))
    fenced.listen(lambda k: forgotten.append(("batch", k)))
    fenced.mark(KEY)
    assert KEY in fenced
    assert fenced.drop() == [KEY]
    assert forgotten == [("record", KEY), ("batch", KEY)]
    assert book.get(*KEY) is None and book.get(*OTHER) is not None
    assert fenced.drop() == []  # once


# -- exactly-once on the record path ------------------------------------------------------------


def record_part(book: ProgressBook, latch: FailureLatch | None = None) -> tuple[
    RecordExactlyOnce, CopierContext, list[list[SourcePartition]]
]:  # fmt: skip
    ctx = context(book, latch)
    forgotten: list[list[SourcePartition]] = []
    part = RecordExactlyOnce(Fenced(book))
    part.attach(ctx, lambda err, msg: None, forgotten.append)
    return part, ctx, forgotten


def test_record_path_open_initialises_one_transactional_producer_per_new_partition(
    producers: dict[SourcePartition, FakeProducer],
) -> None:
    part, _, _ = record_part(ProgressBook())
    part.open([KEY, OTHER])
    part.open([KEY])  # already open: not initialised again (that would fence ourselves)
    assert producers[KEY].calls == ["init"] and producers[OTHER].calls == ["init"]
    assert part.owns(KEY) and part.owns(OTHER)


@pytest.mark.parametrize(
    ("code", "error"),
    [
        (KafkaError.INVALID_TRANSACTION_TIMEOUT, ConfigError),
        (KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, ClusterError),
    ],
)
def test_record_path_open_refused_names_the_fix(
    monkeypatch: pytest.MonkeyPatch, code: int, error: type[Exception]
) -> None:
    def refusing(config: MirrorConfig, key: SourcePartition, overrides: Any) -> Any:
        producer = FakeProducer()
        producer.fail["init"] = code
        return producer

    monkeypatch.setattr(clients, "transactional_producer", refusing)
    monkeypatch.setattr(clients, "producer", lambda config, overrides=None: FakeProducer())
    part, _, _ = record_part(ProgressBook())
    with pytest.raises(error, match="Nothing was committed"):
        part.open([KEY])


def test_record_path_commits_the_progress_record_inside_the_partitions_transaction(
    producers: dict[SourcePartition, FakeProducer],
) -> None:
    book = copied()
    part, _, _ = record_part(book)
    part.open([KEY])
    assert part.producer_for(KEY) is producers[KEY]
    assert part.producer_for(KEY) is producers[KEY]  # one transaction until the commit
    assert part.commit(book, [KEY], 5.0) == {KEY: 10}
    assert producers[KEY].calls == ["init", "begin", ("produce", CONFIG.progress_topic), "commit"]


def test_record_path_fenced_commit_drops_the_partition_everywhere(
    producers: dict[SourcePartition, FakeProducer],
) -> None:
    book = copied()
    part, ctx, forgotten = record_part(book)
    part.open([KEY])
    part.producer_for(KEY)
    producers[KEY].fail["commit"] = KafkaError.PRODUCER_FENCED
    assert part.commit(book, [KEY], 5.0) == {}  # nothing of it is committed
    assert book.get(*KEY) is None
    assert forgotten == [[KEY]]  # the copier let it go
    assert ctx.consumer.paused == [KEY]  # type: ignore[attr-defined]
    assert "purge" in producers[KEY].calls and not part.owns(KEY)
    assert part.producer_for(KEY) is None  # not ours to copy any more


def test_record_path_fencing_seen_while_sending_is_dropped_at_the_next_clean_up(
    producers: dict[SourcePartition, FakeProducer],
) -> None:
    book = ProgressBook()
    book.open(*KEY, 0)
    part, _, forgotten = record_part(book)
    part.open([KEY, OTHER])
    assert part.fencing(KEY, KafkaError(KafkaError.INVALID_PRODUCER_EPOCH))
    assert not part.fencing(OTHER, KafkaError(KafkaError._MSG_TIMED_OUT))
    assert part.producer_for(KEY) is None
    part.drop_fenced()
    assert forgotten == [[KEY]] and part.owns(OTHER) and book.get(*KEY) is None


def test_record_path_aborts_open_transactions_before_a_rewind_and_on_release(
    producers: dict[SourcePartition, FakeProducer],
) -> None:
    part, _, _ = record_part(ProgressBook())
    part.open([KEY, OTHER])
    part.producer_for(KEY)  # KEY has an open transaction, OTHER none
    part.abort()
    assert producers[KEY].calls[-1] == "abort" and "abort" not in producers[OTHER].calls
    part.producer_for(OTHER)
    part.release([OTHER])
    assert producers[OTHER].calls[-3:] == ["begin", "abort", "purge"]
    assert not part.owns(OTHER)


def test_record_path_a_fatal_abort_drops_the_partition_instead_of_stopping(
    producers: dict[SourcePartition, FakeProducer],
) -> None:
    """The coordinator timed the transaction out during an outage: the rewind's abort is refused
    INVALID_TXN_STATE, which librdkafka makes fatal. Nothing of the transaction can commit: the
    partition is dropped like a fenced one (the stream takes it back), the mirror runs on."""
    book = ProgressBook()
    book.open(*KEY, 0)
    part, _, forgotten = record_part(book)
    part.open([KEY, OTHER])
    part.producer_for(KEY)
    producers[KEY].fail["abort"] = KafkaError.INVALID_TXN_STATE
    producers[KEY].fatal = True
    part.abort()  # before: MirrorError, "could not abort the transaction"
    assert forgotten == [[KEY]] and not part.owns(KEY) and part.owns(OTHER)
    producers[OTHER].fail["abort"] = KafkaError.INVALID_TXN_STATE  # not fatal: unexplained
    part.producer_for(OTHER)
    with pytest.raises(MirrorError, match="could not abort"):
        part.abort()


def test_record_path_a_commit_pending_at_its_deadline_waits_for_its_outcome(
    producers: dict[SourcePartition, FakeProducer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The target does not answer (a half-open connection to the progress partition's leader):
    the commit's deadline and its progress record's delivery timeout fall together, so the
    commit is still pending (retriable) at the deadline and fails as a whole just after. It goes
    to the latch like any failed send (the loop rewinds or stops), instead of an unknown
    outcome that stopped the stream."""
    monkeypatch.setattr(record_transactions, "SETTLE_S", 0.3)
    book = copied()
    latch = FailureLatch(abort_on_send_failure=False)
    part, _, _ = record_part(book, latch)
    part.open([KEY])
    part.producer_for(KEY)
    settled_at = time.monotonic() + 0.1  # after the commit's own deadline (0.01 s)

    def commit(timeout: float) -> None:
        producers[KEY].calls.append("commit")
        if time.monotonic() < settled_at:
            time.sleep(0.02)
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, retriable=True))
        raise KafkaException(KafkaError(KafkaError._MSG_TIMED_OUT, txn_requires_abort=True))

    producers[KEY].commit_transaction = commit  # type: ignore[method-assign]
    assert part.commit(book, [KEY], 0.01) == {}  # before: MirrorError, "committing ... failed"
    assert [(f.topic, f.partition) for f in latch.failures] == [KEY]
    assert part.owns(KEY)  # not fenced: the rewind aborts it and copies again


# -- exactly-once on the batch path -------------------------------------------------------------


class Cluster(Link):
    """A target that answers every request at once: coordinators found, producer ids given,
    partitions added, batches written; EndTxn answered with `end_code`."""

    def __init__(self) -> None:
        super().__init__()
        self.end_code = 0
        self.offset = 0

    def want(self, topics: set[str]) -> None:
        pass

    def send(self, node: int, request: Any) -> Future:
        future = super().send(node, request)
        future.success(self._answer(request))
        return future

    def of(self, kind: type) -> list[Any]:
        return [r for r, _ in self.sent if isinstance(r, kind)]

    def _answer(self, request: Any) -> Any:
        if isinstance(request, FindCoordinatorRequest):
            return SimpleNamespace(error_code=0, node_id=1)
        if isinstance(request, InitProducerIdRequest):
            return SimpleNamespace(error_code=0, producer_id=7, producer_epoch=0)
        if isinstance(request, AddPartitionsToTxnRequest):
            results = [
                SimpleNamespace(
                    name=t.name,
                    results_by_partition=[
                        SimpleNamespace(partition_index=p, partition_error_code=0)
                        for p in t.partitions
                    ],
                )
                for t in request.v3_and_below_topics
            ]
            return SimpleNamespace(results_by_topic_v3_and_below=results)
        if isinstance(request, EndTxnRequest):
            return SimpleNamespace(error_code=self.end_code)
        assert isinstance(request, ProduceRequest)
        responses = []
        for t in request.topic_data:
            parts = []
            for p in t.partition_data:
                parts.append(SimpleNamespace(index=p.index, error_code=0, base_offset=self.offset))
                self.offset += 1
            responses.append(SimpleNamespace(name=t.name, partition_responses=parts))
        return SimpleNamespace(responses=responses)


def wire(cluster: Cluster, pump: Any, forget: Any) -> Wire:
    """What a batch copier lends its guarantee, on the scripted cluster."""
    return Wire(
        cluster,  # type: ignore[arg-type]
        Merger(Limits()),  # type: ignore[arg-type]
        {"max_in_flight": 5, "request_timeout_ms": 1000, "delivery_timeout_s": 5.0},
        lambda: None,
        pump,
        lambda seconds: None,
        forget,
    )


def batch_part(book: ProgressBook) -> tuple[BatchExactlyOnce, Cluster, list[SourcePartition]]:
    cluster = Cluster()
    forgotten: list[SourcePartition] = []
    part = BatchExactlyOnce(CONFIG, Fenced(book))
    holder: dict[str, Any] = {}

    def pump(seconds: float) -> None:
        # The copier's turn without fetching: send what may go, take the answers.
        holder["session"].send()
        holder["session"].take()

    holder["session"] = part.bind(wire(cluster, pump, forgotten.append))
    return part, cluster, forgotten


def test_batch_path_open_initialises_each_partitions_transactional_id() -> None:
    part, cluster, _ = batch_part(ProgressBook())
    part.open([KEY])
    part.open([KEY])  # already open: not initialised again
    (init,) = cluster.of(InitProducerIdRequest)
    assert init.transactional_id == CONFIG.transactional_id(*KEY)
    assert init.transaction_timeout_ms == CONFIG.transaction_timeout_ms()
    assert part.owns(KEY) and not part.owns(OTHER)


def test_batch_path_refuses_a_partition_assigned_without_its_transaction() -> None:
    part, _, _ = batch_part(ProgressBook())
    with pytest.raises(MirrorError, match="assigned without its transaction"):
        part.assign({KEY: ("t", 0)})


def test_batch_path_commits_the_progress_record_inside_the_transaction_once() -> None:
    book = copied()
    part, cluster, _ = batch_part(book)
    part.open([KEY])
    part.assign({KEY: ("t", 0)})
    assert part.commit(book, [KEY], 5.0) == {KEY: 10}
    (add,) = cluster.of(AddPartitionsToTxnRequest)
    assert [(t.name, t.partitions) for t in add.v3_and_below_topics] == [
        (CONFIG.progress_topic, [0])
    ]
    (produce,) = cluster.of(ProduceRequest)
    assert produce.transactional_id == CONFIG.transactional_id(*KEY)
    (end,) = cluster.of(EndTxnRequest)
    assert end.committed
    # Nothing new since: not committed again, the position stands.
    assert part.commit(book, [KEY], 5.0) == {KEY: 10}
    assert len(cluster.of(EndTxnRequest)) == 1


def test_batch_path_fenced_commit_drops_the_partition_everywhere() -> None:
    book = copied()
    part, cluster, forgotten = batch_part(book)
    part.open([KEY])
    part.assign({KEY: ("t", 0)})
    cluster.end_code = 90  # PRODUCER_FENCED: another owner initialised the id
    assert part.commit(book, [KEY], 5.0) == {}
    assert forgotten == [KEY] and book.get(*KEY) is None and not part.owns(KEY)


def test_batch_path_revoke_aborts_only_what_is_open() -> None:
    book = copied()
    part, cluster, _ = batch_part(book)
    part.open([KEY, OTHER])
    part.assign({KEY: ("t", 0), OTHER: ("t", 1)})
    part.revoke([OTHER])  # nothing open: no EndTxn
    assert cluster.of(EndTxnRequest) == [] and not part.owns(OTHER)
    part.commit(book, [KEY], 5.0)
    assert part.handover(book, KEY, 5.0)  # nothing new: the id is free for the record path
    assert not part.owns(KEY)


# -- exactly-once: one strategy over both parts ------------------------------------------------


def test_exactly_once_opens_on_the_batch_path_when_a_batch_copier_is_bound(
    producers: dict[SourcePartition, FakeProducer],
) -> None:
    book = ProgressBook()
    guarantee = ExactlyOnce(context(book))
    guarantee.record.attach(context(book), lambda err, msg: None, lambda keys: None)
    guarantee.open([KEY])  # no batch copier: the record path fences
    assert producers[KEY].calls == ["init"]
    bound = ExactlyOnce(context(book))
    cluster = Cluster()
    bound.batch.bind(wire(cluster, lambda seconds: None, lambda key: None))
    bound.open([OTHER])  # every partition starts on the batch path: fenced there
    assert len(cluster.of(InitProducerIdRequest)) == 1 and OTHER not in producers
    assert bound.transactional


class FakePart:
    def __init__(self, commits: dict[SourcePartition, int], handover: bool = True) -> None:
        self.commits = commits
        self.handover_ok = handover
        self.opened: list[SourcePartition] = []

    def commit(self, book: ProgressBook, keys: Any, timeout: float) -> dict[SourcePartition, int]:
        return {k: o for k, o in self.commits.items() if k in set(keys)}

    def handover(self, book: ProgressBook, key: SourcePartition, timeout: float) -> bool:
        return self.handover_ok

    def open(self, keys: Any) -> None:
        self.opened += list(keys)


def test_exactly_once_commits_each_partition_where_its_transaction_is() -> None:
    book = ProgressBook()
    book.open(*KEY, 0)
    book.open(*OTHER, 0)
    guarantee = ExactlyOnce(context(book))
    guarantee.batch = FakePart({KEY: 5})  # type: ignore[assignment]
    guarantee.record = FakePart({OTHER: 7})  # type: ignore[assignment]
    group = FakeGroup(ok=False)  # monitoring only: a refused group commit changes nothing
    done = guarantee.commit(book, {KEY: 5, OTHER: 7}, 1.0, FakeStore(), group)  # type: ignore[arg-type]
    assert done == ({KEY: 5, OTHER: 7}, True)
    assert group.commits == [{KEY: 5, OTHER: 7}]


def test_exactly_once_a_partition_not_committed_makes_the_commit_point_incomplete() -> None:
    book = ProgressBook()
    book.open(*KEY, 0)
    book.open(*OTHER, 0)
    guarantee = ExactlyOnce(context(book))
    guarantee.batch = FakePart({KEY: 5})  # type: ignore[assignment]
    guarantee.record = FakePart({})  # type: ignore[assignment]
    assert guarantee.commit(book, {KEY: 5, OTHER: 7}, 1.0, FakeStore(), FakeGroup()) == (  # type: ignore[arg-type]
        {KEY: 5},
        False,
    )
    book.close(*OTHER)  # fenced meanwhile: it is not ours, the commit point is complete
    assert guarantee.commit(book, {KEY: 5, OTHER: 7}, 1.0, FakeStore(), FakeGroup()) == (  # type: ignore[arg-type]
        {KEY: 5},
        True,
    )


def test_exactly_once_hands_a_partition_to_the_record_path_only_after_the_batch_commit() -> None:
    guarantee = ExactlyOnce(context(ProgressBook()))
    record = FakePart({})
    guarantee.record = record  # type: ignore[assignment]
    guarantee.batch = FakePart({}, handover=False)  # type: ignore[assignment]
    assert not guarantee.hand_over(KEY, 42)  # fenced meanwhile: dropped, not reopened
    assert record.opened == []
    guarantee.batch = FakePart({}, handover=True)  # type: ignore[assignment]
    assert guarantee.hand_over(KEY, 42)
    assert record.opened == [KEY]


# -- the record copier's step reports through the latch ----------------------------------------


class FullQueue(FakeProducer):
    """A producer whose local queue is full; serving acknowledgements reports a failed send
    (what the delivery callback records while the target is down)."""

    def __init__(self, latch: FailureLatch) -> None:
        super().__init__()
        self.latch = latch

    def produce(self, topic: str, value: Any = None, key: Any = None, **kw: Any) -> None:
        self.calls.append(("produce", topic))
        raise BufferError("queue full")

    def poll(self, timeout: float = 0) -> int:
        self.latch.send_failed("t", 0, KafkaError(KafkaError._MSG_TIMED_OUT))
        return 1


class Record:
    def __init__(self, offset: int) -> None:
        self._offset = offset

    def error(self) -> None:
        return None

    def topic(self) -> str:
        return "t"

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return self._offset

    def key(self) -> bytes:
        return b"k"

    def value(self) -> bytes:
        return b"v"

    def timestamp(self) -> tuple[int, int]:
        return (1, 1_700_000_000_000)

    def headers(self) -> None:
        return None


def test_a_full_queue_with_a_failed_send_stops_the_batch_and_leaves_the_decision_to_the_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kmirror.mirror.record_copier import RecordCopier

    book = ProgressBook()
    book.open(*KEY, 0)
    latch = FailureLatch(abort_on_send_failure=False)
    queue = FullQueue(latch)
    monkeypatch.setattr(clients, "producer", lambda config, overrides=None: queue)
    copier = RecordCopier(context(book, latch), AtLeastOnce(latch))
    copier._copy([Record(0), Record(1), Record(2)])  # type: ignore[list-item]
    # One attempt, then the failure is in the latch: nothing more is handed over, nothing is
    # in flight for the book, and the copier did not rewind or raise itself.
    assert queue.calls == [("produce", "t")]
    assert latch.recorded and book["t", 0].acked == 0


class FailedTransaction(FakeProducer):
    """A transactional producer whose transaction failed (its sends timed out while the target
    was below min.insync.replicas): librdkafka refuses every produce with _STATE until the
    transaction is aborted."""

    def produce(self, topic: str, value: Any = None, key: Any = None, **kw: Any) -> None:
        self.calls.append(("produce", topic))
        raise KafkaException(KafkaError(KafkaError._STATE))


def test_a_failed_transaction_stops_the_batch_and_leaves_the_rewind_to_the_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Found by the full tier's target-below-min-ISR scenario (record path, exactly-once,
    abort.on.send.failure=false): the next step's produce raised _STATE and crashed the
    stream before the loop could rewind."""
    from kmirror.mirror.record_copier import RecordCopier

    book = ProgressBook()
    book.open(*KEY, 0)
    latch = FailureLatch(abort_on_send_failure=False)
    latch.send_failed("t", 0, KafkaError(KafkaError._MSG_TIMED_OUT))
    failed = FailedTransaction()
    monkeypatch.setattr(clients, "producer", lambda config, overrides=None: failed)
    copier = RecordCopier(context(book, latch), AtLeastOnce(latch))
    copier._copy([Record(0), Record(1), Record(2)])  # type: ignore[list-item]
    assert failed.calls == [("produce", "t")]
    assert latch.recorded and book["t", 0].acked == 0


def test_a_failed_transaction_whose_reports_are_not_served_yet_is_a_failed_send(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Found by the full tier's half-open scenario (record path, exactly-once, session 11):
    the transaction failed as a whole (its sends to a silent leader timed out) before the
    copier had served those sends' reports, so the latch was still empty when the next
    produce was refused with _STATE, and the stream crashed. The refusal is now this record's
    failed send: the loop rewinds (or stops with abort.on.send.failure=true)."""
    from kmirror.mirror.record_copier import RecordCopier

    book = ProgressBook()
    book.open(*KEY, 0)
    latch = FailureLatch(abort_on_send_failure=False)
    failed = FailedTransaction()
    monkeypatch.setattr(clients, "producer", lambda config, overrides=None: failed)
    copier = RecordCopier(context(book, latch), AtLeastOnce(latch))
    copier._copy([Record(0), Record(1), Record(2)])  # type: ignore[list-item]  # before: raised
    assert failed.calls == [("produce", "t")]
    assert [f.error.code() for f in latch.failures] == [KafkaError._STATE]
    assert book["t", 0].acked == 0
