"""Subscription: which source topics a stream follows, and which partitions the group gave it.

Owns the source consumer's group membership: the periodic topic refresh (select, create the
targets, subscribe), the assignment callbacks and where each assigned partition starts. What a
new or revoked partition means for copying and commits is the stream's business: it is told
through an `AssignmentListener`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

from kmirror.config.model import MirrorConfig
from kmirror.errors import ClusterError, ConfigError, KmirrorError, MirrorError
from kmirror.metrics.worker import WorkerMetrics
from kmirror.mirror.latch import FailureLatch
from kmirror.mirror.topics import PartitionsOfflineError, TopicManager
from kmirror.partitions import SourcePartition

log = logging.getLogger(__name__)

OFFSETS_TIMEOUT_S = 30
# Partitions whose target has no leader yet: how long one retry waits, and the backoff between.
RETRY_ONLINE_S = 2.0
MAX_WAIT_BACKOFF_S = 30.0


@dataclass
class StreamState:
    """What the supervisor needs to know about a stream (health and readiness)."""

    heartbeat: float = field(default_factory=time.time)
    connected: bool = False
    # Source topics the selection matches, counted before their target topics are prepared:
    # a stream still waiting for those (a slow or stopped target) has work and is not ready.
    selected: int = 0
    assigned: int = 0
    # The group gave this stream an assignment (possibly empty): it is a member (/readyz).
    joined: bool = False

    @property
    def ready(self) -> bool:
        # A stream the group gave nothing (streams x replicas > partitions) is an idle member
        # of a working group: ready; so is one whose selection matches no topic yet. Not ready
        # is waiting for the first assignment, or for the target topics it must subscribe to.
        return self.connected and (self.assigned > 0 or self.selected == 0 or self.joined)

    # Assigned partitions paused because their target partitions have no leader yet.
    waiting: int = 0


@dataclass(frozen=True, slots=True)
class Start:
    """Where an assigned partition starts: a real offset, or OFFSET_BEGINNING for a group with
    no committed offset under auto.offset.reset=earliest."""

    offset: int
    committed: bool  # the group's committed offset (else the reset policy's choice)


class AssignmentListener(Protocol):
    def assigned(self, starts: Mapping[SourcePartition, Start]) -> Mapping[SourcePartition, Start]:
        """New partitions, before the consumer fetches them; returns where they start (the
        listener may know better than the group: exactly-once). May raise KmirrorError."""

    def revoking(self, keys: list[SourcePartition]) -> None:
        """Partitions leave in good order (commit what was acknowledged)."""

    def dropped(self, keys: list[SourcePartition]) -> None:
        """Partitions are gone (after revoking, or lost: no commit allowed)."""


class Subscription:
    def __init__(
        self,
        config: MirrorConfig,
        consumer: Consumer,
        topics: TopicManager,
        metrics: WorkerMetrics,
        latch: FailureLatch,
        listener: AssignmentListener,
        state: StreamState,
        stream_id: int = 0,
    ) -> None:
        self._config = config
        self._consumer = consumer
        self._topics = topics
        self._metrics = metrics
        self._latch = latch
        self._listener = listener
        self.state = state
        self._id = stream_id
        self.assignment: set[SourcePartition] = set()
        # Assigned and paused until their target partitions are online (see retry_waiting).
        self.waiting: set[SourcePartition] = set()
        self._waiting_since = 0.0
        self._next_wait_retry = 0.0
        self._wait_backoff = 1.0
        self.targets: dict[str, str] = {}  # source topic -> target topic
        self._subscribed: list[str] = []
        self._source_counts: dict[str, int] = {}
        # A first topic refresh succeeded: later metadata failures are transient (a broker
        # restart) and are retried instead of stopping the mirror.
        self.started = False
        self._next_refresh = 0.0
        # Cooperative assignors (and KIP-848's consumer protocol) hand partitions out and take
        # them back incrementally; assign() is refused there.
        cconf = config.consumer_conf()
        self._incremental = (
            cconf.get("partition.assignment.strategy", "").startswith("cooperative")
            or cconf.get("group.protocol", "classic") == "consumer"
        )

    # -- topics --------------------------------------------------------------------------------

    def reconfigure(self, config: MirrorConfig) -> None:
        """A reloaded configuration (kmirror.config.live: only what may change live differs):
        its topic selection and names apply at the refresh this makes due now. The consumer
        stays in its group; a new subscription starts each partition at its committed offset."""
        self._config = config
        self._next_refresh = 0.0

    def refresh_due(self) -> bool:
        return time.monotonic() >= self._next_refresh

    def refresh(self) -> None:
        try:
            self._refresh()
        except PartitionsOfflineError as exc:
            # The target answered; its new partitions have no leader yet (a starved or
            # restarting target). Not a reason to stop, also not at start-up: retry.
            self._metrics.target_waits.inc()
            log.warning("target not ready stream=%d, retrying: %s", self._id, exc)
            self._next_refresh = time.monotonic() + self._config.refresh_topics_interval_s
        except ClusterError as exc:
            if not self.started:
                raise  # start-up: a cluster we cannot reach is an error (exit 3)
            log.warning("topic refresh failed stream=%d, retrying: %s", self._id, exc)
            self._next_refresh = time.monotonic() + self._config.refresh_topics_interval_s

    def _refresh(self) -> None:
        try:
            md = self._consumer.list_topics(timeout=30)
        except KafkaException as exc:
            raise ClusterError(f"could not read source cluster metadata: {exc.args[0]}") from exc
        self.state.connected = True
        source = {n: len(t.partitions) for n, t in md.topics.items() if t.error is None}
        selected = self._config.topics.select(set(source))
        self.state.selected = len(selected)
        if selected != self._subscribed:
            # The one mapping; refuses two topics onto one target and loops before creating.
            targets = self._config.target_names(selected)
            self._topics.ensure({t: source[t] for t in selected})
            if selected:
                self._consumer.subscribe(
                    selected,
                    on_assign=self._on_assign,
                    on_revoke=self._on_revoke,
                    on_lost=self._on_lost,
                )
                log.info("subscribed stream=%d topics=%s", self._id, ",".join(selected))
            elif self._subscribed:
                self._consumer.unsubscribe()
            if not selected:
                log.warning(
                    "no source topic matches the selection; waiting for one to appear "
                    "(include=%s exclude=%s)",
                    self._config.topics.include,
                    self._config.topics.exclude,
                )
            self._subscribed = selected
            # In place: the copier holds this map (CopierContext.targets).
            self.targets.clear()
            self.targets.update(targets)
        elif {t: source[t] for t in selected} != self._source_counts:
            # Partition growth on the source: create the target partitions before the group
            # hands the new ones to anybody. Only on a change: the target is not asked every
            # refresh, so a target outage cannot stop the refresh.
            self._topics.ensure({t: source[t] for t in selected})
        self._source_counts = {t: source[t] for t in selected}
        self.started = True
        self._next_refresh = time.monotonic() + self._config.refresh_topics_interval_s

    def _source_partitions(self, wanted: dict[str, int]) -> dict[str, int]:
        # Runs in the assignment callback: not the consumer's own list_topics(), which there
        # breaks confluent-kafka's callback state (2.16: the next callback served by the same
        # consume() aborts the process). The admin client is a separate handle.
        md = self._topics.source.list_topics(timeout=30)
        out = {}
        for name, need in wanted.items():
            t = md.topics.get(name)
            out[name] = max(len(t.partitions) if t is not None else 0, need)
        return out

    # -- assignment callbacks: never raise, record in the latch -----------------------------

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._metrics.rebalances.labels("assign").inc()
        self.state.joined = True
        try:
            offline = self._ensure_targets(partitions)
            starts = self._start_offsets(partitions)
            starts = dict(self._listener.assigned(starts))
        except KmirrorError as exc:
            self._refuse(partitions, exc)
            return
        except KafkaException as exc:
            self._refuse(
                partitions, ClusterError(f"could not read committed offsets: {exc.args[0]}")
            )
            return
        self._take([TopicPartition(t, p, s.offset) for (t, p), s in starts.items()])
        keys = set(starts)
        self.assignment = self.assignment | keys if self._incremental else keys
        if not self._incremental:
            self.waiting &= keys
        if offline is not None:
            self._metrics.target_waits.inc()
            self._consumer.pause(partitions)
            if not self.waiting:
                self._waiting_since = time.monotonic()
                self._wait_backoff = 1.0
            self.waiting |= keys
            self._next_wait_retry = time.monotonic() + self._wait_backoff
            log.warning(
                "target partitions not online yet stream=%d; waiting before copying %s: %s",
                self._id,
                _fmt(partitions),
                offline,
            )
        self._count()
        log.info("assigned stream=%d partitions=%s", self._id, _fmt(partitions))

    def _ensure_targets(
        self, partitions: list[TopicPartition], online_timeout: float | None = None
    ) -> PartitionsOfflineError | None:
        """Create or grow the targets of these source partitions. Once the mirror runs, target
        partitions without a leader are a transient condition: returned, not raised."""
        counts: dict[str, int] = {}
        for tp in partitions:
            counts[tp.topic] = max(counts.get(tp.topic, 0), tp.partition + 1)
        try:
            if online_timeout is None:
                self._topics.ensure(self._source_partitions(counts))
            else:
                self._topics.ensure(self._source_partitions(counts), online_timeout)
        except PartitionsOfflineError as exc:
            if not self.started:
                raise
            return exc
        return None

    def retry_waiting(self) -> None:
        """From the loop: resume waiting partitions whose targets are online now (backoff)."""
        if not self.waiting or time.monotonic() < self._next_wait_retry:
            return
        partitions = [TopicPartition(t, p) for t, p in sorted(self.waiting)]
        try:
            offline = self._ensure_targets(partitions, RETRY_ONLINE_S)
        except (ClusterError, KafkaException) as exc:
            offline = PartitionsOfflineError(str(exc))
        if offline is not None:
            self._metrics.target_waits.inc()
            self._wait_backoff = min(self._wait_backoff * 2, MAX_WAIT_BACKOFF_S)
            self._next_wait_retry = time.monotonic() + self._wait_backoff
            log.warning(
                "still waiting %.0fs for target partitions stream=%d (retry in %.0fs): %s",
                time.monotonic() - self._waiting_since,
                self._id,
                self._wait_backoff,
                offline,
            )
            return
        self._consumer.resume(partitions)
        log.info(
            "target partitions online after %.0fs stream=%d, copying %s",
            time.monotonic() - self._waiting_since,
            self._id,
            _fmt(partitions),
        )
        self.waiting.clear()
        self._count()

    def _refuse(self, partitions: list[TopicPartition], exc: KmirrorError) -> None:
        # Take them (the protocol expects it) but fetch nothing; the loop stops on the latch.
        self._latch.stop(exc)
        self._take(partitions)
        self._consumer.pause(partitions)

    def _take(self, partitions: list[TopicPartition]) -> None:
        if self._incremental:
            self._consumer.incremental_assign(partitions)
        else:
            self._consumer.assign(partitions)

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._metrics.rebalances.labels("revoke").inc()
        keys = [(tp.topic, tp.partition) for tp in partitions]
        self._listener.revoking(keys)
        self._drop(keys)

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        # Another stream may own these already: committing now could rewind its progress.
        self._metrics.rebalances.labels("lost").inc()
        self._drop([(tp.topic, tp.partition) for tp in partitions])

    def _drop(self, keys: list[SourcePartition]) -> None:
        self.assignment.difference_update(keys)
        self.waiting.difference_update(keys)
        self._listener.dropped(keys)
        self._count()

    # -- partitions taken back (exactly-once) -------------------------------------------------

    def take_back(self, keys: Iterable[SourcePartition]) -> bool:
        """Exactly-once: partitions the guarantee dropped as fenced although the group still
        gives them to this stream. The coordinator refuses a transaction it timed out (the
        target did not answer for transaction.timeout.ms) with the answer a new owner's
        fencing gets, and without this the partition stayed uncopied until the next rebalance.
        Taken back as on an assignment: the listener hears it was dropped, then assigned (a
        new producer epoch, the committed progress record), and the consumer moves to where it
        starts. Only while this stream is still in the group's generation (`_still_member`): a
        zombie's next poll loses them instead. True when done (or nothing is left to take
        back); False to try again later."""
        keys = sorted(k for k in keys if k in self.assignment)
        if not keys:
            return True
        tps = [TopicPartition(t, p) for t, p in keys]
        try:
            self._still_member()
            starts = self._start_offsets(tps)
            self._listener.dropped(keys)
            starts = dict(self._listener.assigned(starts))
        except ConfigError as exc:
            self._latch.stop(exc)  # the target refuses transactions now: stop, say why
            return True
        except (KmirrorError, KafkaException) as exc:
            log.warning("not taking back %s yet stream=%d: %s", _fmt(tps), self._id, exc)
            return False
        for (topic, partition), start in starts.items():
            self._consumer.seek(TopicPartition(topic, partition, start.offset))
        self._consumer.resume(tps)
        log.warning(
            "exactly-once: taken back stream=%d partitions=%s (the group still gives them to "
            "this stream); copying again from the committed progress",
            self._id,
            _fmt(tps),
        )
        return True

    def _still_member(self) -> None:
        """Raises KafkaException when this stream's group generation is over: a synchronous
        commit of the offsets already committed (nothing moves) is refused then
        (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS). A group with no
        committed offset for these partitions yet cannot be asked: its next poll decides."""
        assigned = [TopicPartition(t, p) for t, p in sorted(self.assignment)]
        committed = self._consumer.committed(assigned, timeout=OFFSETS_TIMEOUT_S)
        known = [TopicPartition(tp.topic, tp.partition, tp.offset) for tp in committed]
        known = [tp for tp in known if tp.offset >= 0]
        if known:
            self._consumer.commit(offsets=known, asynchronous=False)

    def _count(self) -> None:
        self.state.assigned = len(self.assignment)
        self.state.waiting = len(self.waiting)
        self._metrics.assigned.set(len(self.assignment))
        self._metrics.waiting.set(len(self.waiting))

    # -- start positions -----------------------------------------------------------------------

    def _start_offsets(self, partitions: list[TopicPartition]) -> dict[SourcePartition, Start]:
        committed = self._consumer.committed(partitions, timeout=OFFSETS_TIMEOUT_S)
        policy = self._config.auto_offset_reset
        starts: dict[SourcePartition, Start] = {}
        for tp in committed:
            key = (tp.topic, tp.partition)
            if tp.offset >= 0:
                starts[key] = Start(tp.offset, committed=True)
            elif policy == "none":
                raise MirrorError(
                    f"no committed offset for {tp.topic}[{tp.partition}] in group "
                    f"'{self._config.group_id}' and auto.offset.reset=none: set it to earliest "
                    "or latest to choose where a new mirror starts"
                )
            elif policy == "earliest":
                starts[key] = Start(OFFSET_BEGINNING, committed=False)
            else:
                # "latest" as a real offset, now: a retry after a failed send rewinds to the
                # start, and seeking to the logical end then would skip what failed.
                _, high = self._consumer.get_watermark_offsets(
                    TopicPartition(tp.topic, tp.partition), timeout=30, cached=False
                )
                starts[key] = Start(high, committed=False)
        return starts

    # -- commits -------------------------------------------------------------------------------

    def commit(self, offsets: Mapping[SourcePartition, int]) -> bool:
        """Commit source offsets synchronously; False when the group moved on (rebalance)."""
        try:
            self._consumer.commit(
                offsets=[TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())],
                asynchronous=False,
            )
        except KafkaException as exc:
            # The new owner re-copies from the last commit.
            log.warning("commit failed stream=%d: %s", self._id, exc.args[0])
            return False
        return True


def _fmt(partitions: list[TopicPartition]) -> str:
    return ",".join(f"{tp.topic}[{tp.partition}]" for tp in partitions) or "-"
