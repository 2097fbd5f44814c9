"""The hybrid copier: the batch path and the record path behind one `Copier`
(kmirror.mirror.contract), per partition. Which mirrors run it: kmirror.mirror.engine.

Every assigned partition starts on the batch path (kmirror.mirror.batch): the group consumer
keeps it paused, the batch copier fetches and produces it (small source batches merged into
larger ones). A partition moves to the record path (RecordCopier, the same consumer and a
confluent-kafka producer) when the batch path cannot copy a batch byte for byte (a *fallback*:
compacted batches, old message formats, LogAppendTime, a position inside a batch). The batch
copier stops the partition at that batch once everything before it is acknowledged; the record
path continues at exactly that offset (seek, resume): no gap, no duplicate, and the progress
book keeps the partition.

A partition on the record path tries the batch path again after a backoff (a compacted stretch
may be behind), only at a clean point, so the book's acknowledged offset is the exact position
where the batch path starts.

A batch the target did not acknowledge (a timeout, an unexpected refusal) goes into the failure
latch like a record path failure: the stream stops (abort.on.send.failure=true) or rewinds every
partition to its last commit and sends again. The batch copier forgets what was unacknowledged
and starts a new producer session first. A permanent refusal (too large, not authorized) stops
the mirror in both modes.

The delivery guarantee is a constructor argument (kmirror.mirror.guarantee), handed to both
paths' copiers. Under exactly-once a partition moving to the record path is handed over
(`Guarantee.hand_over`: the batch path's transaction committed up to the fallback offset, then
the record path's producer takes the transactional id over), and it stays on the record path
until it is assigned again: moving back would need the same commit-then-hand-over at a clean
point, which is not built.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from confluent_kafka import KafkaException, TopicPartition

from kmirror.mirror.batch.copier import BatchCopier
from kmirror.mirror.batch.gating import BatchGate
from kmirror.mirror.batch.producer import BatchSendError
from kmirror.mirror.contract import CopierContext, Guarantee
from kmirror.mirror.record_copier import RecordCopier
from kmirror.partitions import SourcePartition

log = logging.getLogger(__name__)

PROBE_BACKOFF_S = 30.0  # first wait before a record-path partition tries the batch path again
MAX_PROBE_BACKOFF_S = 600.0
# Batches a partition copies on the batch path before a later move back starts its backoff
# afresh: it was not just one batch between two compacted stretches.
PAID_OFF_BATCHES = 64
# The batch step's wait while the record path also has partitions. Records the consumer fetched
# for the record path wait in its queue until the loop comes round, so while the record path is
# busy (it copied something in the last BUSY_S) the wait is short: with 20 ms throughout, the
# loop read the record path every ~21 ms and its records waited ~10 ms more than on the record
# path alone (p50 latency 51 against 35 ms at 2,000 records/s, docs/benchmarks.md). Idle, it
# stays long: a 2 ms loop costs CPU for nothing.
BOTH_WAIT_S = 0.02
BOTH_BUSY_WAIT_S = 0.002
BUSY_S = 0.1
OFFSETS_TIMEOUT_S = 30


@dataclass
class Route:
    batch: bool = True
    probe_at: float = 0.0  # record path: when to try the batch path again
    backoff: float = PROBE_BACKOFF_S


@dataclass
class Router:
    """Which path each partition takes, and when it moves (no broker: unit-tested)."""

    routes: dict[SourcePartition, Route] = field(default_factory=dict)
    batched: set[SourcePartition] = field(
        default_factory=set
    )  # the keys on the batch path (per step)
    probe: bool = True  # record-path partitions try the batch path again after a backoff

    def add(self, key: SourcePartition) -> None:
        self.routes[key] = Route()
        self.batched.add(key)

    def remove(self, key: SourcePartition) -> None:
        self.routes.pop(key, None)
        self.batched.discard(key)

    def on_batch(self, key: SourcePartition) -> bool:
        route = self.routes.get(key)
        return route is not None and route.batch

    def paid_off(self, key: SourcePartition) -> None:
        """Its batches pay off on the batch path: a later move back starts the backoff afresh."""
        route = self.routes.get(key)
        if route is not None and route.batch:
            route.backoff = PROBE_BACKOFF_S

    def to_record(self, key: SourcePartition, now: float) -> None:
        route = self.routes.setdefault(key, Route())
        route.batch = False
        self.batched.discard(key)
        route.probe_at = now + route.backoff
        route.backoff = min(route.backoff * 2, MAX_PROBE_BACKOFF_S)

    def to_batch(self, key: SourcePartition) -> None:
        route = self.routes.setdefault(key, Route())
        route.batch = True
        self.batched.add(key)

    def due(self, now: float) -> list[SourcePartition]:
        """Record-path partitions whose next try of the batch path is due."""
        if not self.probe:
            return []
        return sorted(k for k, r in self.routes.items() if not r.batch and r.probe_at <= now)

    def batch_keys(self) -> list[SourcePartition]:
        return sorted(self.batched)


class HybridCopier:
    def __init__(self, ctx: CopierContext, guarantee: Guarantee) -> None:
        self._ctx = ctx
        self._consumer = ctx.consumer
        self._book = ctx.book
        self.guarantee = guarantee
        self._record = RecordCopier(ctx, guarantee)
        self._record.only = set()
        self._batch = BatchCopier(
            ctx.config, ctx.book, ctx.metrics, schemas=ctx.schemas, guarantee=guarantee.batch
        )
        self._batch.gating = BatchGate(ctx.gate)  # paused topics, drains, throttles
        # Exactly-once: a partition on the record path stays there (no hand-over back).
        self.router = Router(probe=not guarantee.transactional)
        self._wait_s = ctx.consume_timeout_s
        self._pause: set[SourcePartition] = (
            set()
        )  # batch-path partitions the consumer must hold still
        self._seek: dict[SourcePartition, int] = {}  # record-path partitions waiting for their seek
        self._clean = False  # the last flush found nothing outstanding, nothing sent since
        self._record_busy_until = 0.0  # the record path copied something: short waits till then
        ctx.metrics.stats.elsewhere = self._batch_lag

    # -- the Copier shape ----------------------------------------------------------------------

    def connect(self, deadline: float) -> None:
        self._record.connect(deadline)

    def assign(self, starts: Mapping[SourcePartition, int]) -> None:
        positions = {k: self._resolve(k, o) for k, o in starts.items()}
        for key in positions:
            self.router.add(key)
        self._to_batch(positions)

    def revoke(self, keys: Iterable[SourcePartition]) -> None:
        keys = list(keys)
        self._revoke_batch(keys)
        self._record.revoke(keys)
        assert self._record.only is not None
        for key in keys:
            self._record.only.discard(key)
            self._pause.discard(key)
            self._seek.pop(key, None)
            self.router.remove(key)

    def step(self) -> None:
        if self._clean:
            self._reroute()
        self._clean = False
        self._hold()
        if self.router.batched:
            wait = self._wait_s
            if self._record.only:
                busy = time.monotonic() < self._record_busy_until
                wait = BOTH_BUSY_WAIT_S if busy else BOTH_WAIT_S
            try:
                self._batch.step(wait)
            except BatchSendError as exc:
                self._failed(exc)
            for key, fallback in self._batch.take_fallbacks().items():
                self._fall_back(key, fallback.offset)
            # The consumer still serves the group (callbacks) and the record path: no wait.
            self._record.consume_timeout_s = 0.0
        else:
            self._record.consume_timeout_s = self._wait_s
        self._record.step()
        if self._record.consumed:
            self._record_busy_until = time.monotonic() + BUSY_S
        self._clean = False

    def flush(self, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        try:
            batch_done = self._batch.flush(timeout)
        except BatchSendError as exc:
            self._failed(exc)
            batch_done = True  # nothing outstanding any more: the latch holds the failure
        remaining = self._record.flush(max(deadline - time.monotonic(), 0.0))
        if not batch_done:
            remaining += max(self._batch.unacknowledged, 1)
        self._clean = not remaining and not self._ctx.latch.failures and not self._seek
        return remaining

    def hold_back(self, on: bool) -> None:
        self._batch.hold_back(on)  # the record path has nothing staged: it hands as it reads

    def rewind(self, positions: Mapping[SourcePartition, int]) -> None:
        on_batch = {k: o for k, o in positions.items() if self.router.on_batch(k)}
        on_record = {k: o for k, o in positions.items() if k not in on_batch}
        if on_record:
            self._record.rewind(on_record)
        self._restart_batch({k: self._resolve(k, o) for k, o in on_batch.items()})

    def close(self, timeout: float) -> None:
        try:
            self._record.close(timeout)
        finally:
            self._batch.close()

    def _failed(self, exc: BatchSendError) -> None:
        """A batch the target did not acknowledge: the latch decides (stop, or rewind from the
        last commit) as for a record. Permanent refusals stop the mirror here."""
        if exc.permanent:
            raise exc
        latch = self._ctx.latch
        if not self.guarantee.transactional:
            self._batch.abandon()  # a new producer session; the rewind re-sends
        elif not latch.abort_on_send_failure and self._batch.abandon():
            # Riding failures out under exactly-once: the transactions holding what was not
            # acknowledged are given up and taken back (Sessions.abandon), not rewound.
            log.warning("exactly-once: %s; its transactions are given up and taken back", exc)
            return
        latch.send_failed(exc.target[0], exc.target[1], exc.kafka_error(), batch=True)

    def _revoke_batch(self, keys: Iterable[SourcePartition]) -> None:
        keys = list(keys)
        try:
            self._batch.revoke(keys)
        except BatchSendError as exc:  # while waiting for their in-flight batches
            self._failed(exc)
            self._batch.revoke(keys)  # nothing is queued now: only forgets them

    def _batch_lag(self) -> dict[SourcePartition, tuple[int, int]]:
        """(source end, copied up to) of the batch-path partitions, for the lag metrics."""
        out = {}
        for key in self.router.batched:
            hi, book = self._batch.high_watermark(key), self._book.get(*key)
            if hi is not None and book is not None:
                out[key] = (hi, book.acked)
        return out

    # -- moving partitions ---------------------------------------------------------------------

    def _to_batch(self, positions: Mapping[SourcePartition, int]) -> None:
        """The batch path copies these partitions from these source offsets."""
        if not positions:
            return
        committed = {k: b.committed for k in positions if (b := self._book.get(*k)) is not None}
        self._record.revoke(positions)  # nothing in flight: only forgets its runs
        assert self._record.only is not None
        for key in positions:
            self._record.only.discard(key)
            self._seek.pop(key, None)
            self.router.to_batch(key)
        self._batch.assign({k: (self._target(k[0]), o) for k, o in positions.items()})
        for key, offset in committed.items():
            self._book[key].committed = offset  # assign() opened the book afresh
        self._pause.update(positions)

    def _fall_back(self, key: SourcePartition, offset: int) -> None:
        """The batch path let this partition go at `offset`: the record path continues."""
        if not self.guarantee.hand_over(key, offset):
            return  # fenced meanwhile: another stream owns it, it was dropped
        self.router.to_record(key, time.monotonic())
        self._to_record(key, offset)

    def _to_record(self, key: SourcePartition, offset: int) -> None:
        """The record path copies this partition from `offset` (the batch path let it go)."""
        self._pause.discard(key)
        self._seek[key] = offset
        self._hold()

    def _restart_batch(self, positions: Mapping[SourcePartition, int]) -> None:
        """Batch-path partitions start again at these offsets (a rewind, a move to the record
        path). Nothing is in flight; the book keeps its runs and committed offset."""
        books = {k: b for k in positions if (b := self._book.get(*k)) is not None}
        self._revoke_batch(positions)  # closes their books
        for (topic, partition), book in books.items():
            fresh = self._book.open(topic, partition, positions[(topic, partition)], book.runs)
            fresh.committed = book.committed
        self._to_batch(positions)

    def _reroute(self) -> None:
        """At a clean point: record-path partitions whose backoff is over try the batch path."""
        now = time.monotonic()
        for key in self.router.batch_keys():
            if self._batch.copied_batches(key) >= PAID_OFF_BATCHES:
                self.router.paid_off(key)
        due = {k: b.acked for k in self.router.due(now) if (b := self._book.get(*k)) is not None}
        if due:
            log.info("trying the batch path again for %d partition(s)", len(due))
            self._to_batch(due)
        # Re-pause them all: the subscription resumes partitions whose targets came online.
        self._pause.update(self.router.batch_keys())
        self._hold()

    def _hold(self) -> None:
        """Pause batch-path partitions in the consumer; seek and resume record-path ones.
        A partition the consumer has not taken yet (inside its assignment callback) is tried
        again at the next step."""
        if self._pause:
            tps = [TopicPartition(t, p) for t, p in sorted(self._pause)]
            try:
                self._consumer.pause(tps)
                self._pause.clear()
            except KafkaException as exc:
                log.debug("pause deferred: %s", exc)
        for key, offset in list(self._seek.items()):
            tp = TopicPartition(key[0], key[1], offset)
            try:
                self._consumer.seek(tp)
                self._consumer.resume([TopicPartition(key[0], key[1])])
            except KafkaException as exc:
                log.debug("seek %s[%d] deferred: %s", key[0], key[1], exc)
                continue
            del self._seek[key]
            assert self._record.only is not None
            self._record.only.add(key)  # only now: what it delivers is from `offset` on

    def _resolve(self, key: SourcePartition, offset: int) -> int:
        """A logical start (OFFSET_BEGINNING) as the real offset the batch path fetches."""
        if offset >= 0:
            return offset
        low, _ = self._consumer.get_watermark_offsets(
            TopicPartition(*key), timeout=OFFSETS_TIMEOUT_S, cached=False
        )
        return int(low)

    def _target(self, topic: str) -> str:
        return self._ctx.targets.get(topic) or self._ctx.config.target_topic(topic)
