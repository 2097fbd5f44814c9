"""One mirror stream: a source consumer in the shared group and a target producer.

Delivery guarantee (at-least-once), the MirrorMaker 1 way: records are produced asynchronously;
every offset.commit.interval.ms, on revocation and on shutdown the producer is flushed, and
only if every record sent so far was acknowledged are the consumer's positions committed.
So no per-record bookkeeping is needed in Python, and a commit can never run ahead of the
target. Any send failure means: commit nothing more; abort (exit 1) or rewind and retry.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_INVALID,
    TIMESTAMP_NOT_AVAILABLE,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)

from kmirror.config.model import MirrorConfig
from kmirror.errors import (
    ClusterError,
    KmirrorError,
    MirrorError,
    SendError,
    SourceTrimmedError,
    TopicError,
)
from kmirror.metrics.worker import WorkerMetrics
from kmirror.mirror.connect import CONNECT_TIMEOUT_S, await_metadata
from kmirror.mirror.topics import TopicManager

log = logging.getLogger(__name__)

CONSUME_BATCH = 5000
CONSUME_TIMEOUT_S = 0.2
LATENCY_SAMPLE_MASK = 0xF  # observe one acknowledged record in 16
MAX_RETRY_BACKOFF_S = 30.0
Key = tuple[str, int]
# The target refuses these records whatever we do: retrying (abort.on.send.failure=false)
# would loop forever, skipping them would lose them. They stop the mirror in both modes.
PERMANENT_SEND_ERRORS = frozenset(
    {
        KafkaError.MSG_SIZE_TOO_LARGE,
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.CLUSTER_AUTHORIZATION_FAILED,
    }
)


@dataclass
class StreamState:
    """What the supervisor needs to know about a stream (health and readiness)."""

    heartbeat: float = field(default_factory=time.time)
    connected: bool = False
    subscribed: int = 0
    assigned: int = 0
    # The group gave this stream an assignment (possibly empty): it is a member (/readyz).
    joined: bool = False

    @property
    def ready(self) -> bool:
        # A stream the group gave nothing (streams x replicas > partitions) is an idle member
        # of a working group: ready. Not ready is waiting for the first assignment.
        return self.connected and (self.assigned > 0 or self.subscribed == 0 or self.joined)


class Stream:
    def __init__(
        self,
        config: MirrorConfig,
        metrics: WorkerMetrics,
        stop: threading.Event,
        stream_id: int = 0,
        on_tick: Callable[[StreamState], None] | None = None,
    ) -> None:
        self._config = config
        self._metrics = metrics
        self._stop = stop
        self._id = stream_id
        self._on_tick = on_tick
        self.state = StreamState()
        self._topics = TopicManager(config)
        self._consumer: Consumer | None = None
        self._producer: Producer | None = None
        self._targets: dict[str, str] = {}
        self._subscribed: list[str] = []
        self._assignment: set[Key] = set()
        # Where a partition restarts after a failed send: the last commit, or the start point.
        self._restart: dict[Key, int] = {}
        self._committed: dict[Key, int] = {}
        self._failures: list[tuple[str, int, KafkaError, int]] = []
        self._fatal: KmirrorError | None = None
        # Set once the loop stops on an error: a commit from then on (e.g. the revocation
        # callback inside consumer.close()) could cover records that were consumed but never
        # produced or acknowledged.
        self._no_commit = False
        # A first topic refresh succeeded: later metadata failures are transient (a broker
        # restart) and are retried instead of stopping the mirror.
        self._started = False
        self._source_counts: dict[str, int] = {}
        self._client_errors: list[KafkaError] = []  # for the start-up check (connect.py)
        self._acked = 0
        self._next_refresh = 0.0
        self._last_commit = time.monotonic()
        self._flush_timeout = int(config.producer_conf().get("message.timeout.ms", "60000")) / 1e3
        # Cooperative assignors (and KIP-848's consumer protocol) hand partitions out and take
        # them back incrementally; assign() is refused there.
        cconf = config.consumer_conf()
        self._incremental = (
            cconf.get("partition.assignment.strategy", "").startswith("cooperative")
            or cconf.get("group.protocol", "classic") == "consumer"
        )

    # -- clients -------------------------------------------------------------------------------

    def _clients(self) -> tuple[Consumer, Producer]:
        if self._consumer is None or self._producer is None:
            clog = logging.getLogger("kmirror.librdkafka")
            cconf: dict[str, Any] = {
                **self._config.consumer_conf(),
                "error_cb": self._on_client_error,
                "stats_cb": self._metrics.stats.update,
                "logger": clog,
            }
            pconf: dict[str, Any] = {
                **self._config.producer_conf(),
                "on_delivery": self._on_delivery,
                "error_cb": self._on_client_error,
                "logger": clog,
            }
            pconf.pop("statistics.interval.ms", None)
            self._producer = Producer(pconf)
            self._consumer = Consumer(cconf)
        return self._consumer, self._producer

    # -- callbacks: never raise, record and let the main loop act -------------------------------

    def _on_delivery(self, err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            size = len(msg.key() or b"") + len(msg.value() or b"")
            self._failures.append((str(msg.topic()), int(msg.partition() or 0), err, size))
            self._metrics.send_errors.labels(err.name()).inc()
            return
        self._acked += 1
        if not self._acked & LATENCY_SAMPLE_MASK:
            ts_type, ts = msg.timestamp()
            if ts_type != TIMESTAMP_NOT_AVAILABLE and ts > 0:
                self._metrics.latency.observe(max(time.time() - ts / 1000.0, 0.0))

    def _on_client_error(self, err: KafkaError) -> None:
        if not self._started:
            self._client_errors.append(err)
        if err.fatal():
            self._fatal = MirrorError(f"fatal client error: {err}")
        elif err.code() in (KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED):
            self._fatal = ClusterError(
                f"authentication failed: {err.str()}. Check the SASL user, password file and "
                "mechanism for this cluster"
            )
        elif not self._started:
            # Start-up: the connection check (connect.py) reports what matters, once.
            log.debug("client error stream=%d: %s", self._id, err.str())
        elif err.code() == KafkaError._ALL_BROKERS_DOWN:
            self.state.connected = False
            log.warning("all brokers down stream=%d: %s", self._id, err.str())
        else:
            log.warning("client error stream=%d: %s", self._id, err.str())

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._metrics.rebalances.labels("assign").inc()
        self.state.joined = True
        try:
            counts: dict[str, int] = {}
            for tp in partitions:
                counts[tp.topic] = max(counts.get(tp.topic, 0), tp.partition + 1)
            self._topics.ensure(self._source_partitions(counts))
            start = self._start_offsets(consumer, partitions)
        except KmirrorError as exc:
            self._fatal = exc
            self._take(consumer, partitions)
            consumer.pause(partitions)
            return
        except KafkaException as exc:
            self._fatal = ClusterError(f"could not read committed offsets: {exc.args[0]}")
            self._take(consumer, partitions)
            consumer.pause(partitions)
            return
        self._take(consumer, start)
        keys = {(tp.topic, tp.partition) for tp in partitions}
        self._assignment = self._assignment | keys if self._incremental else keys
        self.state.assigned = len(self._assignment)
        self._metrics.assigned.set(len(self._assignment))
        log.info("assigned stream=%d partitions=%s", self._id, _fmt(partitions))

    def _take(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        if self._incremental:
            consumer.incremental_assign(partitions)
        else:
            consumer.assign(partitions)

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._metrics.rebalances.labels("revoke").inc()
        self._commit("revoke")
        self._drop(partitions)

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        # Another stream may own these already: committing now could rewind its progress.
        self._metrics.rebalances.labels("lost").inc()
        self._drop(partitions)

    def _drop(self, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            self._assignment.discard((tp.topic, tp.partition))
            self._restart.pop((tp.topic, tp.partition), None)
            self._committed.pop((tp.topic, tp.partition), None)
        self.state.assigned = len(self._assignment)
        self._metrics.assigned.set(len(self._assignment))

    # -- start positions -----------------------------------------------------------------------

    def _start_offsets(
        self, consumer: Consumer, partitions: list[TopicPartition]
    ) -> list[TopicPartition]:
        committed = consumer.committed(partitions, timeout=30)
        policy = self._config.auto_offset_reset
        start: list[TopicPartition] = []
        for tp in committed:
            key = (tp.topic, tp.partition)
            if tp.offset >= 0:
                self._committed[key] = tp.offset
                offset = tp.offset
            elif policy == "none":
                raise MirrorError(
                    f"no committed offset for {tp.topic}[{tp.partition}] in group "
                    f"'{self._config.group_id}' and auto.offset.reset=none: set it to earliest "
                    "or latest to choose where a new mirror starts"
                )
            elif policy == "earliest":
                offset = OFFSET_BEGINNING
            else:
                # "latest" as a real offset, now: a retry after a failed send rewinds to
                # _restart, and seeking to the logical end then would skip what failed.
                _, offset = consumer.get_watermark_offsets(
                    TopicPartition(tp.topic, tp.partition), timeout=30, cached=False
                )
            self._restart[key] = offset
            start.append(TopicPartition(tp.topic, tp.partition, offset))
        return start

    # -- topics --------------------------------------------------------------------------------

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

    def _refresh_topics(self) -> None:
        try:
            self._refresh()
        except ClusterError as exc:
            if not self._started:
                raise  # start-up: a cluster we cannot reach is an error (exit 3)
            log.warning("topic refresh failed stream=%d, retrying: %s", self._id, exc)
            self._next_refresh = time.monotonic() + self._config.refresh_topics_interval_s

    def _refresh(self) -> None:
        consumer, _ = self._clients()
        try:
            md = consumer.list_topics(timeout=30)
        except KafkaException as exc:
            raise ClusterError(f"could not read source cluster metadata: {exc.args[0]}") from exc
        self.state.connected = True
        source = {n: len(t.partitions) for n, t in md.topics.items() if t.error is None}
        selected = self._config.topics.select(set(source))
        if selected != self._subscribed:
            self._topics.ensure({t: source[t] for t in selected})
            if selected:
                consumer.subscribe(
                    selected,
                    on_assign=self._on_assign,
                    on_revoke=self._on_revoke,
                    on_lost=self._on_lost,
                )
                log.info("subscribed stream=%d topics=%s", self._id, ",".join(selected))
            elif self._subscribed:
                consumer.unsubscribe()
            if not selected:
                log.warning(
                    "no source topic matches the selection; waiting for one to appear "
                    "(include=%s exclude=%s)",
                    self._config.topics.include,
                    self._config.topics.exclude,
                )
            self._subscribed = selected
            self.state.subscribed = len(selected)
            self._targets = {t: self._config.target_topic(t) for t in selected}
        elif {t: source[t] for t in selected} != self._source_counts:
            # Partition growth on the source: create the target partitions before the group
            # hands the new ones to anybody. Only on a change: the target is not asked every
            # refresh, so a target outage cannot stop the refresh.
            self._topics.ensure({t: source[t] for t in selected})
        self._source_counts = {t: source[t] for t in selected}
        self._started = True
        self._next_refresh = time.monotonic() + self._config.refresh_topics_interval_s

    # -- the loop ------------------------------------------------------------------------------

    def _connect(self, consumer: Consumer, producer: Producer) -> None:
        """Start-up: both clusters answer, or a clear ClusterError (exit 3) in bounded time.
        (consumer.poll(0) is safe here: nothing is subscribed yet.)"""
        deadline = time.monotonic() + CONNECT_TIMEOUT_S
        for side, client, cluster in (
            ("source", consumer, self._config.source),
            ("target", producer, self._config.target),
        ):
            await_metadata(
                client,
                lambda c=client: c.poll(0),  # type: ignore[misc]
                self._client_errors,
                deadline,
                side,
                cluster.bootstrap_servers,
            )
        self._client_errors.clear()

    def run(self) -> None:
        """Copy until stopped. Raises a KmirrorError when continuing could lose records."""
        consumer, producer = self._clients()
        interval = self._config.offset_commit_interval_ms / 1000.0
        clean = False
        try:
            self._connect(consumer, producer)
            while not self._stop.is_set():
                if time.monotonic() >= self._next_refresh:
                    self._refresh_topics()
                self._tick()
                msgs = self._next_batch(consumer)
                self._check()
                if msgs:
                    self._copy(msgs, producer)
                producer.poll(0)
                self._check()
                if time.monotonic() - self._last_commit >= interval:
                    self._commit("interval")
            clean = True
        finally:
            self._shutdown(clean)

    @staticmethod
    def _next_batch(consumer: Consumer) -> list[Message]:
        """What is buffered, up to a full batch; when nothing is, wait for one record only.
        consume() returns early only once the whole batch is there, so asking for a batch
        with a timeout would hold a trickle of records back for up to the timeout."""
        msgs = consumer.consume(CONSUME_BATCH, 0)
        return msgs or consumer.consume(1, CONSUME_TIMEOUT_S)

    def _tick(self) -> None:
        self.state.heartbeat = time.time()
        if self._on_tick is not None:
            self._on_tick(self.state)

    def _copy(self, msgs: list[Message], producer: Producer) -> None:
        produce = producer.produce
        targets = self._targets
        counts: dict[str, list[int]] = {}
        same = self._config.partitioning == "same"
        for m in msgs:
            err = m.error()
            if err is not None:
                self._consume_error(err)
                continue
            topic: str = m.topic()  # type: ignore[assignment]  # set on every fetched record
            dst = targets.get(topic) or self._config.target_topic(topic)
            key, value = m.key(), m.value()
            ts_type, ts = m.timestamp()
            kwargs: dict[str, Any] = {
                "key": key,
                "value": value,
                "headers": m.headers(),
                "timestamp": ts if ts_type != TIMESTAMP_NOT_AVAILABLE else 0,
            }
            if same:
                kwargs["partition"] = m.partition()
            while True:
                try:
                    produce(dst, **kwargs)
                    break
                except BufferError:
                    # Local queue full: serve acknowledgements until there is room.
                    producer.poll(0.05)
                    self._check()
                except KafkaException as exc:
                    code = exc.args[0].code()
                    if code == KafkaError.MSG_SIZE_TOO_LARGE:
                        raise self._too_large(m, exc) from exc
                    if code != KafkaError._UNKNOWN_PARTITION:
                        raise
                    self._await_partition(producer, dst, m.partition())
            c = counts.get(dst)
            if c is None:
                c = counts[dst] = [0, 0]
            c[0] += 1
            c[1] += (len(key) if key else 0) + (len(value) if value else 0)
        for dst, (n, nbytes) in counts.items():
            self._metrics.records.labels(dst).inc(n)
            self._metrics.bytes.labels(dst).inc(nbytes)

    def _too_large(self, m: Message, exc: KafkaException) -> SendError:
        size = len(m.key() or b"") + len(m.value() or b"")
        limit = self._config.producer_conf().get("message.max.bytes", "1000000")
        return SendError(
            f"record {m.topic()}[{m.partition()}] offset {m.offset()} ({size} bytes of key and "
            f"value) is larger than the producer's message.max.bytes ({limit}): {exc.args[0]}. "
            "Raise message.max.bytes (Java: max.request.size) in the producer config and "
            "max.message.bytes of the target topic. Nothing past it was committed"
        )

    def _await_partition(self, producer: Producer, topic: str, partition: int | None) -> None:
        """The producer's metadata predates a partition we just added: refresh it (bounded)."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not self._stop.is_set():
            md = producer.list_topics(topic, timeout=10)
            t = md.topics.get(topic)
            if t is not None and partition is not None and partition in t.partitions:
                return
            self._stop.wait(0.5)
        raise TopicError(
            f"target topic '{topic}' has no partition {partition} after 30 s: add partitions "
            "on the target or run with --partitioning hash"
        )

    def _consume_error(self, err: KafkaError) -> None:
        if err.code() == KafkaError._AUTO_OFFSET_RESET:
            self._fatal = SourceTrimmedError(
                f"source records were deleted before they were mirrored ({err.str()}). "
                "Refusing to skip them silently. If the loss is accepted, reset the group's "
                f"offsets: kafka-consumer-groups --group {self._config.group_id} "
                "--reset-offsets --to-earliest --execute --topic <topic>"
            )
        elif err.fatal():
            self._fatal = MirrorError(f"fatal consumer error: {err.str()}")
        elif err.code() in (
            KafkaError.TOPIC_AUTHORIZATION_FAILED,
            KafkaError.GROUP_AUTHORIZATION_FAILED,
        ):
            self._fatal = ClusterError(f"not authorized on the source: {err.str()}")
        else:
            log.warning("consume error stream=%d: %s", self._id, err.str())

    def _check(self) -> None:
        """Act on what callbacks recorded."""
        if self._fatal is not None:
            raise self._fatal
        if not self._failures:
            return
        topic, partition, err, _ = self._failures[0]
        detail = (
            f"{len(self._failures)} record(s) not acknowledged, first "
            f"{topic}[{partition}]: {err.str()}"
        )
        permanent = [f for f in self._failures if f[2].code() in PERMANENT_SEND_ERRORS]
        if permanent:
            topic, partition, err, size = permanent[0]
            hint = ""
            if err.code() == KafkaError.MSG_SIZE_TOO_LARGE:
                hint = (
                    f" The record ({size} bytes of key and value) is larger than the target "
                    f"accepts: raise max.message.bytes of the target topic '{topic}' (or the "
                    "target broker's message.max.bytes)."
                )
            raise SendError(
                f"target refused a record for good, {topic}[{partition}]: {err.str()}.{hint} "
                "Retrying cannot help and skipping it would lose it; no offset past it was "
                "committed"
            )
        if self._config.abort_on_send_failure:
            raise SendError(
                f"target refused records: {detail}. No offset past them was committed; a restart "
                "resumes from the last commit (abort.on.send.failure=true)"
            )
        self._rewind(detail)

    def _rewind(self, detail: str) -> None:
        """abort.on.send.failure=false: wait, then re-send everything since the last commit."""
        consumer, producer = self._clients()
        backoff = 1.0
        while not self._stop.is_set():
            log.warning("send failed, retrying in %.0fs: %s", backoff, detail)
            self._stop.wait(backoff)
            self._failures.clear()
            producer.flush(self._flush_timeout)
            if not self._failures:
                break
            backoff = min(backoff * 2, MAX_RETRY_BACKOFF_S)
            detail = f"{len(self._failures)} more record(s) failed: {self._failures[0][2].str()}"
            if any(f[2].code() in PERMANENT_SEND_ERRORS for f in self._failures):
                self._check()  # raises
        for topic, partition in self._assignment:
            offset = self._restart.get((topic, partition))
            if offset is not None:
                consumer.seek(TopicPartition(topic, partition, offset))
        self._failures.clear()

    def _commit(self, why: str) -> bool:
        """Flush, then commit positions, but only if everything sent so far was acknowledged."""
        self._last_commit = time.monotonic()
        if self._consumer is None or self._producer is None or not self._assignment:
            return False
        if self._failures or self._fatal is not None or self._no_commit:
            return False
        remaining = self._producer.flush(self._flush_timeout)
        if remaining or self._failures:
            log.warning("not committing (%s): %d record(s) unacknowledged", why, remaining)
            return False
        positions = self._consumer.position(
            [TopicPartition(t, p) for t, p in sorted(self._assignment)]
        )
        todo = [
            tp
            for tp in positions
            if tp.offset >= 0 and self._committed.get((tp.topic, tp.partition)) != tp.offset
        ]
        if not todo:
            return True
        try:
            self._consumer.commit(offsets=todo, asynchronous=False)
        except KafkaException as exc:
            # The group moved on (rebalance): the new owner re-copies from the last commit.
            log.warning("commit failed (%s) stream=%d: %s", why, self._id, exc.args[0])
            return False
        for tp in todo:
            self._committed[(tp.topic, tp.partition)] = tp.offset
            self._restart[(tp.topic, tp.partition)] = tp.offset
        self._metrics.committed()
        log.debug("committed (%s) stream=%d partitions=%d", why, self._id, len(todo))
        return True

    def _shutdown(self, clean: bool) -> None:
        if not clean:
            self._no_commit = True  # close() below revokes, and revocation commits
        if self._consumer is None:
            return
        try:
            if clean:
                self._commit("shutdown")
        finally:
            try:
                # close() leaves the group promptly so the partitions move at once.
                self._consumer.close()
            except (KafkaException, RuntimeError) as exc:
                log.warning("closing the consumer failed: %s", exc)
            if self._producer is not None:
                self._producer.flush(0 if not clean else 5)


def _fmt(partitions: list[TopicPartition]) -> str:
    return ",".join(f"{tp.topic}[{tp.partition}]" for tp in partitions) or "-"


__all__ = ["OFFSET_INVALID", "Stream", "StreamState"]
