"""The stream loop's rules without a broker: retries stay alive, waits for a slow target do not
stop the mirror, a stop is bounded and says when its final commit was not made.

The clients are stand-ins here: these tests are about the loop's decisions. Copying itself is
tested against the real clusters (tests/integration).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from prometheus_client import CollectorRegistry

from kmirror.config.model import ClusterConfig, MirrorConfig, TopicSelection
from kmirror.config.topicmap import TopicMapping
from kmirror.errors import ClusterError, CommitError
from kmirror.metrics.worker import WorkerMetrics
from kmirror.mirror.contract import CopierContext
from kmirror.mirror.engine import Plan
from kmirror.mirror.guarantee import AtLeastOnce
from kmirror.mirror.latch import FailureLatch
from kmirror.mirror.record_copier import RecordCopier
from kmirror.mirror.stream import Stream, Tuning
from kmirror.mirror.subscription import Start, StreamState, Subscription
from kmirror.mirror.topics import PartitionsOfflineError
from kmirror.progress.book import PartitionBook

pytestmark = pytest.mark.unit

Key = tuple[str, int]


def config(**kw: Any) -> MirrorConfig:
    return MirrorConfig(
        source=ClusterConfig("source", "127.0.0.1:1"),
        target=ClusterConfig("target", "127.0.0.1:2"),
        group_id="g",
        **kw,
    )


class FakeConsumer:
    def __init__(self, block_close: threading.Event | None = None) -> None:
        self.block_close = block_close
        self.paused: list[Key] = []
        self.resumed: list[Key] = []
        self.assigned: list[TopicPartition] = []

    def close(self) -> None:
        if self.block_close is not None:
            self.block_close.wait()  # a cluster that never answers

    def committed(self, partitions: list[TopicPartition], timeout: float) -> list[TopicPartition]:
        return [TopicPartition(tp.topic, tp.partition, 5) for tp in partitions]

    def assign(self, partitions: list[TopicPartition]) -> None:
        self.assigned = partitions

    def pause(self, partitions: list[TopicPartition]) -> None:
        self.paused += [(tp.topic, tp.partition) for tp in partitions]

    def resume(self, partitions: list[TopicPartition]) -> None:
        self.resumed += [(tp.topic, tp.partition) for tp in partitions]


class FakeCopier:
    """flush() reports a failed send for the first `failing` calls (a target still down)."""

    def __init__(self, latch: FailureLatch, failing: int = 0) -> None:
        self.latch = latch
        self.guarantee = AtLeastOnce(latch)
        self.failing = failing
        self.rewound: dict[Key, int] = {}

    def flush(self, timeout: float) -> int:
        if self.failing:
            self.failing -= 1
            self.latch.send_failed("t", 0, KafkaError(KafkaError.NOT_ENOUGH_REPLICAS))
        return 0

    def hold_back(self, on: bool) -> None:
        pass

    def rewind(self, positions: Mapping[Key, int]) -> None:
        self.rewound = dict(positions)

    def close(self, timeout: float) -> None:
        pass


class FakeSubs:
    def __init__(self, assignment: set[Key], commit_ok: bool = True) -> None:
        self.assignment = assignment
        self.commit_ok = commit_ok
        self.commits: list[dict[Key, int]] = []

    def commit(self, offsets: Mapping[Key, int]) -> bool:
        self.commits.append(dict(offsets))
        return self.commit_ok


class FakeStore:
    topic = "progress"

    def write(self, book: object, keys: object, timeout: float) -> None:
        return None

    def close(self, timeout: float) -> None:
        pass


def stream(cfg: MirrorConfig, ticks: list[object], **parts: Any) -> Stream:
    s = Stream(
        cfg,
        WorkerMetrics(CollectorRegistry()),
        threading.Event(),
        0,
        lambda ctx: FakeCopier(ctx.latch),  # type: ignore[arg-type,return-value]
        on_tick=ticks.append,
        tuning=Tuning(retry_backoff_s=0.01, shutdown_timeout_s=0.5),
    )
    s._consumer = parts.get("consumer", FakeConsumer())  # type: ignore[assignment]
    s._subs = parts.get("subs", FakeSubs({("t", 0)}))  # type: ignore[assignment]
    s._copier = parts.get("copier") or FakeCopier(s._latch)  # type: ignore[assignment]
    s._store = FakeStore()  # type: ignore[assignment]
    return s


def test_retrying_failed_sends_reports_liveness_and_rewinds_to_the_last_commit() -> None:
    ticks: list[object] = []
    s = stream(config(abort_on_send_failure=False), ticks)
    copier = FakeCopier(s._latch, failing=2)
    s._copier = copier  # type: ignore[assignment]
    s._book.open("t", 0, 5).committed = 5
    s._committer.restart[("t", 0)] = 5
    book = s._book["t", 0]
    book.acknowledge(5, 0, 10, 15)  # acknowledged, but the failed record may lie before it
    s._latch.send_failed("t", 0, KafkaError(KafkaError.REQUEST_TIMED_OUT))
    s._check()
    assert len(ticks) >= 3  # the supervisor's /healthz sees a live stream while it retries
    assert copier.rewound == {("t", 0): 5}
    assert book.acked == 5  # nothing past the last commit counts until re-sent
    assert not s._latch.failures


class SettlingCopier(FakeCopier):
    """Like the record copier: a flush with no failure recorded settles everything handed into
    the book, up to the consumer's position (here 20, past the failed records)."""

    def __init__(self, latch: FailureLatch, book: PartitionBook) -> None:
        super().__init__(latch)
        self.book = book
        self.settled_past_failure = False

    def flush(self, timeout: float) -> int:
        if not self.latch.failures:
            self.book.skip(20)
            self.settled_past_failure = True
        return 0


def test_a_retry_never_settles_the_failed_records_as_acknowledged() -> None:
    s = stream(config(abort_on_send_failure=False), [])
    book = s._book.open("t", 0, 5)
    book.committed = 5
    s._committer.restart[("t", 0)] = 5
    copier = SettlingCopier(s._latch, book)
    s._copier = copier  # type: ignore[assignment]
    s._latch.send_failed("t", 0, KafkaError(KafkaError._MSG_TIMED_OUT))
    s._check()
    # A commit in between (a revocation, a stop) would otherwise have covered what failed.
    assert not copier.settled_past_failure
    assert copier.rewound == {("t", 0): 5}
    assert book.acked == 5


def test_a_stop_whose_final_commit_fails_is_reported() -> None:
    s = stream(config(), [], subs=FakeSubs({("t", 0)}, commit_ok=False))
    s._book.open("t", 0, 5).skip(9)
    with pytest.raises(CommitError, match="final commit could not be made"):
        s._shutdown(clean=True)


def test_a_clean_stop_commits_what_was_acknowledged() -> None:
    subs = FakeSubs({("t", 0)})
    s = stream(config(), [], subs=subs)
    s._book.open("t", 0, 5).skip(9)
    s._shutdown(clean=True)
    assert subs.commits == [{("t", 0): 9}]


def test_a_stop_is_bounded_when_the_clusters_are_gone() -> None:
    gone = threading.Event()
    s = stream(config(), [], consumer=FakeConsumer(block_close=gone))
    try:
        with pytest.raises(CommitError, match="did not stop within 0s"):
            s._shutdown(clean=True)
    finally:
        gone.set()


def test_a_stop_while_retrying_is_reported() -> None:
    s = stream(config(abort_on_send_failure=False), [])
    s._committer.restart[("t", 0)] = 5
    s._stop.set()
    s._latch.send_failed("t", 0, KafkaError(KafkaError.REQUEST_TIMED_OUT))
    s._check()
    with pytest.raises(CommitError, match="re-sending records the target had refused"):
        s._shutdown(clean=True)


def test_a_leaderless_progress_topic_at_start_up_is_waited_out() -> None:
    ticks: list[object] = []
    s = stream(config(), ticks)
    calls: list[float | None] = []

    class SlowTarget(FakeStore):
        def ensure(self, online_timeout: float | None = None) -> None:
            calls.append(online_timeout)
            if len(calls) < 3:
                raise PartitionsOfflineError("new target partitions not online after 30s")

    s._store = SlowTarget()  # type: ignore[assignment]
    s._ensure_store()
    assert len(calls) == 3 and ticks
    assert s._metrics.registry.get_sample_value("kmirror_mirror_target_waits_total") == 2


class Offline:
    """TopicManager stand-in whose ensure() finds the target partitions leaderless `times`."""

    def __init__(self, times: int) -> None:
        self.times = times
        self.source = self

    def list_topics(self, timeout: float) -> Any:
        return type("Md", (), {"topics": {}})()

    def ensure(self, partitions: Mapping[str, int], online_timeout: float = 30) -> None:
        if self.times:
            self.times -= 1
            raise PartitionsOfflineError("new target partitions not online after 30s: t[0]")


class Listener:
    def assigned(self, starts: Mapping[Key, Start]) -> Mapping[Key, Start]:
        return starts

    def revoking(self, keys: list[Key]) -> None:
        pass

    def dropped(self, keys: list[Key]) -> None:
        pass


def subscription(topics: Offline, started: bool) -> tuple[Subscription, FakeConsumer, FailureLatch]:
    consumer = FakeConsumer()
    latch = FailureLatch()
    subs = Subscription(
        config(),
        consumer,  # type: ignore[arg-type]
        topics,  # type: ignore[arg-type]
        WorkerMetrics(CollectorRegistry()),
        latch,
        Listener(),
        StreamState(),
    )
    subs.started = started
    return subs, consumer, latch


class Subscribing(FakeConsumer):
    """A consumer over a source holding `topics` (one partition each) that keeps what it was
    subscribed to."""

    def __init__(self, topics: list[str]) -> None:
        super().__init__()
        one = type("Topic", (), {"partitions": {0: None}, "error": None})
        self.metadata = type("Md", (), {"topics": {t: one() for t in topics}})()
        self.subscribed: list[list[str]] = []

    def list_topics(self, timeout: float) -> Any:
        return self.metadata

    def subscribe(self, topics: list[str], **callbacks: Any) -> None:
        self.subscribed.append(list(topics))


def test_a_reloaded_selection_subscribes_at_once_with_new_names_for_new_topics() -> None:
    consumer = Subscribing(["a", "b"])
    running = config(topics=TopicSelection(include=("a",)))
    subs = Subscription(
        running,
        consumer,  # type: ignore[arg-type]
        Offline(times=0),  # type: ignore[arg-type]
        WorkerMetrics(CollectorRegistry()),
        FailureLatch(),
        Listener(),
        StreamState(),
    )
    targets = subs.targets  # the copier's live map (CopierContext.targets)
    subs.refresh()
    assert consumer.subscribed == [["a"]] and targets == {"a": "a"}
    assert not subs.refresh_due()
    mapping = TopicMapping(explicit=(("b", "b.v2"),))
    subs.reconfigure(
        config(
            topics=TopicSelection(include=("a", "b")),
            rename=dataclasses.replace(running.rename, mapping=mapping),
        )
    )
    assert subs.refresh_due()  # not a refresh interval later
    subs.refresh()
    assert consumer.subscribed == [["a"], ["a", "b"]]
    assert subs.targets is targets and targets == {"a": "a", "b": "b.v2"}


def test_leaderless_target_partitions_after_start_up_are_waited_out() -> None:
    subs, consumer, latch = subscription(Offline(times=2), started=True)
    subs._on_assign(consumer, [TopicPartition("t", 0)])  # type: ignore[arg-type]
    assert latch.fatal is None  # the mirror keeps running
    assert consumer.paused == [("t", 0)] and subs.state.waiting == 1
    subs._next_wait_retry = 0
    subs.retry_waiting()  # still leaderless: keep waiting
    assert consumer.resumed == [] and subs.waiting == {("t", 0)}
    subs._next_wait_retry = 0
    subs.retry_waiting()
    assert consumer.resumed == [("t", 0)] and subs.state.waiting == 0
    reg = subs._metrics.registry
    assert reg.get_sample_value("kmirror_mirror_target_waits_total") == 2


def test_leaderless_target_partitions_at_start_up_are_an_error() -> None:
    subs, consumer, latch = subscription(Offline(times=1), started=False)
    subs._on_assign(consumer, [TopicPartition("t", 0)])  # type: ignore[arg-type]
    assert isinstance(latch.fatal, ClusterError)


def test_the_engine_is_a_constructor_choice() -> None:
    made: list[object] = []

    def engine(ctx: CopierContext) -> FakeCopier:
        made.append(ctx)
        return FakeCopier(ctx.latch)

    s = Stream(
        config(),
        WorkerMetrics(CollectorRegistry()),
        threading.Event(),
        0,
        engine,  # type: ignore[arg-type]
        tuning=Tuning(consume_batch=7),
    )
    consumer, _, copier = s._build()
    try:
        assert isinstance(copier, FakeCopier)
        ctx = made[0]
        assert isinstance(ctx, CopierContext)
        assert ctx.book is s._book and ctx.latch is s._latch and ctx.consume_batch == 7
    finally:
        consumer.close()


def test_the_stream_builds_the_copier_it_is_given_and_decides_nothing_again() -> None:
    """The supervisor's plan (kmirror.mirror.engine) is the one engine decision: a stream given
    the at-least-once record path under exactly-once builds exactly that (it used to swap in the
    transactional one itself)."""
    s = Stream(config(exactly_once=True), WorkerMetrics(CollectorRegistry()), threading.Event(), 0,
               Plan("record", exactly_once=False).copier)  # fmt: skip
    consumer, _, copier = s._build()
    try:
        assert type(copier) is RecordCopier
        assert type(copier.guarantee) is AtLeastOnce and not copier.guarantee.transactional
    finally:
        copier.close(0)
        consumer.close()


def test_leaderless_new_target_topics_do_not_stop_the_first_refresh() -> None:
    subs, consumer, _ = subscription(Offline(times=1), started=False)
    topic = type("T", (), {"partitions": {0: None}, "error": None})()
    consumer.list_topics = lambda timeout: type("Md", (), {"topics": {"t": topic}})()  # type: ignore[attr-defined]
    subscribed: list[object] = []
    consumer.subscribe = lambda topics, **kw: subscribed.append(topics)  # type: ignore[attr-defined]
    subs.refresh()  # the target's new partitions have no leader yet: no exception, no exit 3
    assert subscribed == [] and not subs.started
    subs._next_refresh = 0
    subs.refresh()
    assert subscribed == [["t"]] and subs.started


class Member(FakeConsumer):
    """A consumer whose group generation is over once `evicted` (commits are refused then)."""

    def __init__(self) -> None:
        super().__init__()
        self.evicted = False
        self.commits: list[list[tuple[str, int, int]]] = []
        self.seeks: list[tuple[str, int, int]] = []

    def commit(self, offsets: list[TopicPartition], asynchronous: bool) -> None:
        assert not asynchronous
        if self.evicted:
            raise KafkaException(KafkaError(KafkaError.UNKNOWN_MEMBER_ID))
        self.commits.append([(tp.topic, tp.partition, tp.offset) for tp in offsets])

    def seek(self, tp: TopicPartition) -> None:
        self.seeks.append((tp.topic, tp.partition, tp.offset))


class Progress(Listener):
    """Exactly-once's listener: a partition starts at its committed progress record (9)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[Key]]] = []

    def assigned(self, starts: Mapping[Key, Start]) -> Mapping[Key, Start]:
        self.calls.append(("assigned", sorted(starts)))
        return {k: Start(9, committed=True) for k in starts}

    def dropped(self, keys: list[Key]) -> None:
        self.calls.append(("dropped", list(keys)))


def taking_back() -> tuple[Subscription, Member, Progress]:
    consumer, listener = Member(), Progress()
    subs = Subscription(
        config(),
        consumer,  # type: ignore[arg-type]
        Offline(times=0),  # type: ignore[arg-type]
        WorkerMetrics(CollectorRegistry()),
        FailureLatch(),
        listener,
        StreamState(),
    )
    subs.assignment = {("t", 0), ("t", 1)}
    return subs, consumer, listener


def test_a_fenced_partition_the_group_still_gives_is_taken_back_from_its_progress() -> None:
    """A transaction the target timed out is refused like a fencing: the partition, dropped,
    is opened again as on an assignment and the consumer moves to its committed progress."""
    subs, consumer, listener = taking_back()
    assert subs.take_back([("t", 1)])
    # Membership asked first, with the offsets already committed (nothing moves).
    assert consumer.commits == [[("t", 0, 5), ("t", 1, 5)]]
    assert listener.calls == [("dropped", [("t", 1)]), ("assigned", [("t", 1)])]
    assert consumer.seeks == [("t", 1, 9)] and consumer.resumed == [("t", 1)]
    assert subs.assignment == {("t", 0), ("t", 1)}


def test_a_zombie_takes_nothing_back_and_tries_again_later() -> None:
    """Out of the group's generation (its commit refused): the partition may be another
    stream's now; nothing is opened (that would fence the new owner)."""
    subs, consumer, listener = taking_back()
    consumer.evicted = True
    assert not subs.take_back([("t", 1)])
    assert listener.calls == [] and consumer.seeks == [] and consumer.resumed == []


def test_a_partition_the_group_took_away_is_not_taken_back() -> None:
    subs, consumer, listener = taking_back()
    assert subs.take_back([("t", 7)])
    assert consumer.commits == [] and listener.calls == []


class HoldingCopier(FakeCopier):
    """Records whether each flush ran held back (a commit point covering what was sent)."""

    def __init__(self, latch: FailureLatch) -> None:
        super().__init__(latch)
        self.held = False
        self.calls: list[str] = []

    def hold_back(self, on: bool) -> None:
        self.held = on
        self.calls.append(f"hold {on}")

    def flush(self, timeout: float) -> int:
        self.calls.append(f"flush held={self.held}")
        return super().flush(timeout)


@pytest.mark.parametrize("fails", [False, True])
def test_only_a_periodic_commit_holds_back_what_is_not_sent(fails: bool) -> None:
    s = stream(config(), [])
    copier = HoldingCopier(s._latch)
    copier.failing = int(fails)  # a failed send: nothing committed, the hold still released
    s._copier = copier  # type: ignore[assignment]
    s._book.open("t", 0, 5).acknowledge(5, 0, 10, 15)
    s._commit("interval")
    assert copier.calls == ["hold True", "flush held=True", "hold False"]
    copier.calls.clear()
    s._latch.clear_failures()
    for why in ("drain", "revoke", "shutdown"):  # these cover everything read
        s._commit(why)
    assert copier.calls == ["flush held=False"] * 3
