"""One mirror stream: the loop that ties a subscription, a copier, the progress book and the
failure latch together.

Delivery guarantee (at-least-once): records are produced asynchronously and the copier reports
every acknowledgement into the progress book. Every offset.commit.interval.ms, on revocation and
on shutdown the copier is flushed, and only if every record sent so far was acknowledged are
the book's acknowledged source offsets committed. A commit can never run ahead of the target.
Any send failure means: commit nothing more; abort (exit 1) or rewind and retry.
--exactly-once: the copier writes transactions and the commit is theirs. Either way the stream
asks the copier's delivery guarantee (kmirror.mirror.guarantee): to open new partitions before
their progress records are read, and to commit at commit points.

    Stream.run ── Subscription (group membership, topics, start offsets)
               ├─ Copier (the one the supervisor's plan names: kmirror.mirror.engine)
               ├─ ProgressBook (per partition: acknowledged, committed, source->target runs)
               │   └─ ProgressStore (the book persisted on the target, written before commits)
               ├─ Committer (a commit point: progress records, then the source group)
               └─ FailureLatch (what callbacks recorded; stop, rewind or go on)
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping

from confluent_kafka import Consumer, KafkaError, KafkaException

from kmirror.config.model import MirrorConfig
from kmirror.control.gate import Gate
from kmirror.errors import CommitError
from kmirror.kafka import clients
from kmirror.kafka.connect import CONNECT_TIMEOUT_S, await_metadata
from kmirror.metrics.worker import WorkerMetrics
from kmirror.mirror import latch as rules
from kmirror.mirror.bounded import run_bounded
from kmirror.mirror.commit import Committer
from kmirror.mirror.contract import (
    DEFAULT_TUNING,
    Copier,
    CopierContext,
    CopierFactory,
    Tuning,
)
from kmirror.mirror.latch import FailureLatch
from kmirror.mirror.progress_store import ProgressStore
from kmirror.mirror.subscription import Start, StreamState, Subscription
from kmirror.mirror.topics import PartitionsOfflineError, TopicManager
from kmirror.partitions import SourcePartition
from kmirror.progress.book import ProgressBook
from kmirror.schemas import translator_for

log = logging.getLogger(__name__)

MAX_RETRY_BACKOFF_S = 30.0
RETRY_ONLINE_S = 5.0
DRAIN_COMMIT_S = 1.0
TAKE_BACK_RETRY_S = 5.0


class Stream:
    def __init__(
        self,
        config: MirrorConfig,
        metrics: WorkerMetrics,
        stop: threading.Event,
        stream_id: int,
        engine: CopierFactory,
        on_tick: Callable[[StreamState], None] | None = None,
        tuning: Tuning = DEFAULT_TUNING,
        gate: Gate | None = None,
    ) -> None:
        self._config = config
        self._metrics = metrics
        self._stop = stop
        self._id = stream_id
        self._on_tick = on_tick
        self._tuning = tuning
        self._engine = engine
        self.state = StreamState()
        # Paused topics, a drain, throttles (kmirror.control.gate): the stream process feeds it.
        self.gate = gate or Gate()
        self._latch = FailureLatch(config.abort_on_send_failure)
        self._book = ProgressBook()
        self._topics = TopicManager(config)
        self._store = ProgressStore(config, self._topics)
        # Schema IDs in keys and values, for both paths (None when schemas are not mirrored).
        self._schemas = translator_for(config, metrics.registry, self._compacted_topic)
        self._committer = Committer(self._book, metrics, stream_id)
        self._client_errors: list[KafkaError] = []  # for the start-up check (connect.py)
        self._consumer: Consumer | None = None
        self._subs: Subscription | None = None
        self._copier: Copier | None = None
        self._last_commit = time.monotonic()
        # The loop was stopped while re-sending failed records (they are not all on the target).
        self._stopped_retrying = False
        self._uncommitted = False  # the last commit attempt failed
        # Exactly-once: partitions dropped as fenced, to take back (see _take_back).
        self._fenced: set[SourcePartition] = set()
        self._next_take_back = 0.0
        self._flush_timeout = int(config.producer_conf().get("message.timeout.ms", "60000")) / 1e3

    # -- parts ---------------------------------------------------------------------------------

    def _build(self) -> tuple[Consumer, Subscription, Copier]:
        if self._consumer is None or self._subs is None or self._copier is None:
            self._consumer = clients.consumer(
                self._config,
                {"error_cb": self._on_client_error, "stats_cb": self._metrics.stats.update},
            )
            self._subs = Subscription(
                self._config,
                self._consumer,
                self._topics,
                self._metrics,
                self._latch,
                self,
                self.state,
                self._id,
            )
            self._copier = self._engine(
                CopierContext(
                    self._config,
                    self._consumer,
                    self._metrics,
                    self._latch,
                    self._book,
                    self._stop,
                    self._subs.targets,
                    error_cb=self._on_client_error,
                    client_errors=self._client_errors,
                    schemas=self._schemas,
                    consume_batch=self._tuning.consume_batch,
                    consume_timeout_s=self._tuning.consume_timeout_s,
                    gate=self.gate,
                )
            )
            self._copier.guarantee.on_fenced(self._fenced.add)
        return self._consumer, self._subs, self._copier

    # -- the loop ------------------------------------------------------------------------------

    def run(self) -> None:
        """Copy until stopped. Raises a KmirrorError when continuing could lose records."""
        consumer, subs, copier = self._build()
        interval = self._config.offset_commit_interval_ms / 1000.0
        clean = False
        try:
            self._connect(consumer, copier)
            self._ensure_store()
            while not self._stop.is_set():
                if subs.refresh_due():
                    subs.refresh()
                subs.retry_waiting()
                self._tick()
                copier.step()
                self._check()
                self._take_back()
                if time.monotonic() - self._last_commit >= interval:
                    self._commit("interval")
                elif self._drain_due():
                    self._commit("drain")
            clean = True
        finally:
            self._shutdown(clean)

    def _take_back(self) -> None:
        """Exactly-once: partitions dropped as fenced go back to copying while the group still
        gives them to this stream (Subscription.take_back); retried every TAKE_BACK_RETRY_S
        until done or the group takes them away."""
        if not self._fenced or time.monotonic() < self._next_take_back:
            return
        assert self._subs is not None
        keys, self._fenced = self._fenced, set()
        if not self._subs.take_back(keys):
            self._fenced |= {k for k in keys if k in self._subs.assignment}
            self._next_take_back = time.monotonic() + TAKE_BACK_RETRY_S

    def _drain_due(self) -> bool:
        """A drain (kmirror.control.gate) waits for this stream's partitions to be committed
        up to their ends: commit every DRAIN_COMMIT_S until they are."""
        if time.monotonic() - self._last_commit < DRAIN_COMMIT_S:
            return False
        return self.gate.draining({k: b.committed for k, b in self._book.items()})

    def _connect(self, consumer: Consumer, copier: Copier) -> None:
        """Start-up: both clusters answer, or a clear ClusterError (exit 3) in bounded time.
        (consumer.poll(0) is safe here: nothing is subscribed yet.)"""
        deadline = time.monotonic() + CONNECT_TIMEOUT_S
        await_metadata(
            consumer,
            lambda: consumer.poll(0),
            self._client_errors,
            deadline,
            "source",
            self._config.source.bootstrap_servers,
        )
        copier.connect(deadline)
        self._client_errors.clear()
        if self._schemas is not None:
            self._schemas.start()  # the persisted ID map, before any record is copied

    def _compacted_topic(self, topic: str) -> None:
        self._topics.ensure_internal(topic, 1, {"cleanup.policy": "compact"})

    def _ensure_store(self) -> None:
        """The progress topic answers. A leaderless partition is waited out (a starved or
        restarting target); anything else (refused, unreachable) stops the start."""
        backoff = self._tuning.retry_backoff_s
        timeout: float | None = None
        while not self._stop.is_set():
            try:
                if timeout is None:
                    self._store.ensure()
                else:
                    self._store.ensure(timeout)
                return
            except PartitionsOfflineError as exc:
                log.warning("progress topic not online yet, retrying in %.0fs: %s", backoff, exc)
                self._metrics.target_waits.inc()
            self._wait(backoff)
            backoff = min(backoff * 2, MAX_RETRY_BACKOFF_S)
            timeout = RETRY_ONLINE_S

    def _wait(self, seconds: float) -> None:
        """Wait (a stop ends it early), reporting liveness every second: waiting is alive."""
        deadline = time.monotonic() + seconds
        while not self._stop.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self._tick()
            self._stop.wait(min(left, 1.0))

    def _drain(self, copier: Copier, timeout: float, stoppable: bool = False) -> int:
        """copier.flush(timeout) in one-second steps, reporting liveness in between; a
        stoppable drain (a retry) also ends when the stream is asked to stop."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = copier.flush(min(1.0, max(deadline - time.monotonic(), 0.0)))
            self._tick()
            if not remaining or time.monotonic() >= deadline:
                return remaining
            if stoppable and self._stop.is_set():
                return remaining

    def _tick(self) -> None:
        self.state.heartbeat = time.time()
        if self._on_tick is not None:
            self._on_tick(self.state)

    def _check(self) -> None:
        """Act on what callbacks recorded: raise, or rewind and retry."""
        detail = self._latch.decide()
        if detail is not None:
            self._rewind(detail)

    def _rewind(self, detail: str) -> None:
        """abort.on.send.failure=false: wait, then re-send everything since the last commit."""
        _, subs, copier = self._build()
        backoff = self._tuning.retry_backoff_s
        while True:
            if self._stop.is_set():
                self._stopped_retrying = True
                break
            log.warning("send failed, retrying in %.0fs: %s", backoff, detail)
            self._wait(backoff)
            seen = len(self._latch.failures)
            # Until nothing is in flight: a late report must not meet the re-sent records. The
            # failures stay recorded meanwhile, so the flush settles nothing into the book:
            # what failed never counts as acknowledged, not even until the rewind below.
            remaining = self._drain(copier, self._flush_timeout, stoppable=True)
            more = self._latch.failures[seen:]
            if not remaining and not more:
                break
            backoff = min(backoff * 2, MAX_RETRY_BACKOFF_S)
            if more:
                detail = f"{len(more)} more record(s) failed: {more[0].error.str()}"
                self._latch.raise_permanent()
            else:
                detail = f"{remaining} record(s) still unacknowledged"
        restart = self._committer.restart
        positions = {k: restart[k] for k in subs.assignment if k in restart}
        copier.rewind(positions)
        for (topic, partition), offset in positions.items():
            book = self._book.get(topic, partition)
            if book is not None:
                book.rewind(offset)
        self._latch.clear_failures()

    def _commit(self, why: str, flush_timeout: float | None = None) -> bool:
        # A periodic commit covers what was sent: what is read but not sent yet waits for the
        # next one (the copy does not stall). The others (a drain, revocation, shutdown) are
        # meant to cover everything read.
        held = self._copier if why == "interval" else None
        if held is not None:
            held.hold_back(True)
        try:
            self._uncommitted = not self._try_commit(why, flush_timeout)
        finally:
            if held is not None:
                held.hold_back(False)
        return not self._uncommitted

    def _try_commit(self, why: str, flush_timeout: float | None) -> bool:
        """Flush, then commit what the book says was acknowledged, but only if everything sent
        so far was acknowledged."""
        self._last_commit = time.monotonic()
        if self._consumer is None or self._copier is None or self._subs is None:
            return True  # nothing started, nothing to commit
        if not self._subs.assignment:
            return True
        if self._latch.blocks_commit:
            return False
        timeout = self._flush_timeout if flush_timeout is None else flush_timeout
        remaining = self._drain(self._copier, timeout)
        if remaining or self._latch.failures:
            log.warning(
                "not committing (%s): %d record(s) unacknowledged, %d refused",
                why,
                remaining,
                len(self._latch.failures),
            )
            return False
        guarantee = self._copier.guarantee
        return self._committer.commit(why, self._subs, self._store, guarantee, timeout)

    def _shutdown(self, clean: bool) -> None:
        """Final commit (when clean), leave the group, release the clients; bounded by
        tuning.shutdown_timeout_s even when the clusters are gone. Raises CommitError when a
        clean stop could not make its final commit."""
        if not clean:
            self._latch.no_commit = True  # close() below revokes, and revocation commits
        if self._consumer is None:
            return
        budget = self._tuning.shutdown_timeout_s
        try:
            # librdkafka's close() and commit() have no timeout and wait for brokers that may
            # never answer: bounded, in a thread that keeps the clients from being destroyed
            # (which would block too) when the process exits without it.
            committed = run_bounded(lambda: self._finish(clean, budget * 0.75), budget)
        except TimeoutError:
            message = (
                f"the stream did not stop within {budget:.0f}s (a cluster unreachable?): the "
                "final commit was not made; records since the last commit will be copied again "
                "at the next start"
            )
            if not clean:
                log.error("%s", message)  # the error that stopped the loop is the one to report
                return
            raise CommitError(message) from None
        if clean and self._stopped_retrying:
            raise CommitError(
                "stopped while re-sending records the target had refused: they are not all "
                "on the target and the final commit covers only what was acknowledged; the "
                "next start copies the rest again"
            )
        if clean and not committed:
            raise CommitError(
                "stopped, but the final commit could not be made (see the warnings above): "
                "records since the last commit will be copied again at the next start"
            )

    def _finish(self, clean: bool, flush_timeout: float) -> bool:
        assert self._consumer is not None
        try:
            if clean:
                self._commit("shutdown", flush_timeout)
        finally:
            try:
                # close() leaves the group promptly so the partitions move at once.
                self._consumer.close()
            except (KafkaException, RuntimeError) as exc:
                log.warning("closing the consumer failed: %s", exc)
            if self._copier is not None:
                self._copier.close(0 if not clean else 5)
            self._store.close(0 if not clean else 5)
            if self._schemas is not None:
                self._schemas.close()
        # The last attempt counts: close() revokes, and the revocation commits again.
        return not self._uncommitted

    def reconfigure(self, config: MirrorConfig) -> None:
        """A reloaded configuration (kmirror.app.reload; kmirror.config.live says what may
        differ): the topic selection and the names of topics not mirrored yet, from the next
        topic refresh. Throttles and paused topics come through the gate; the copier keeps
        what it was built with (nothing it reads may change live)."""
        self._config = config
        self._topics.reconfigure(config)
        if self._subs is not None:
            self._subs.reconfigure(config)

    def positions(self) -> dict[SourcePartition, tuple[int, int]]:
        """Per owned partition (acknowledged, committed) source offsets: the live status."""
        return {k: (b.acked, b.committed) for k, b in self._book.items()}

    # -- the subscription's listener -----------------------------------------------------------

    def assigned(self, starts: Mapping[SourcePartition, Start]) -> Mapping[SourcePartition, Start]:
        assert self._copier is not None
        guarantee = self._copier.guarantee
        # Exactly-once: fence the previous owners first, their open transactions are aborted,
        # so the committed progress records read next are final.
        guarantee.open(starts)
        persisted = self._store.load(starts)
        if guarantee.transactional:
            # The progress record committed with the records is the truth, not the group.
            starts = {
                k: Start(persisted[k].acked, committed=True) if k in persisted else s
                for k, s in starts.items()
            }
        for (topic, partition), start in starts.items():
            # The runs survive; the start stays the group's committed offset (a persisted
            # record may be ahead of it when a commit failed after the write).
            old = persisted.get((topic, partition))
            book = self._book.open(topic, partition, start.offset, old.runs if old else ())
            if start.committed:
                book.committed = start.offset
            self._committer.restart[(topic, partition)] = start.offset
        self._copier.assign({k: s.offset for k, s in starts.items()})
        return starts

    def revoking(self, keys: list[SourcePartition]) -> None:
        self._commit("revoke")

    def dropped(self, keys: list[SourcePartition]) -> None:
        self._fenced.difference_update(keys)
        for topic, partition in keys:
            self._book.close(topic, partition)
            self._committer.restart.pop((topic, partition), None)
        if self._copier is not None:
            self._copier.revoke(keys)

    # -- the clients' error callback: never raises --------------------------------------------

    def _on_client_error(self, err: KafkaError) -> None:
        started = self._subs is not None and self._subs.started
        if not started:
            self._client_errors.append(err)
        stop = rules.client_error(err)
        if stop is not None:
            self._latch.stop(stop)
        elif not started:
            # Start-up: the connection check (connect.py) reports what matters, once.
            log.debug("client error stream=%d: %s", self._id, err.str())
        elif err.code() == KafkaError._ALL_BROKERS_DOWN:
            self.state.connected = False
            log.warning("all brokers down stream=%d: %s", self._id, err.str())
        else:
            log.warning("client error stream=%d: %s", self._id, err.str())


__all__ = ["DEFAULT_TUNING", "Stream", "StreamState", "Tuning"]
