"""The batch copier: source record batches to the same target partition, as they are or
merged (a run of small ones becomes one target batch: merger.py).

Ties the fetcher (source positions, read_committed), the producer session (producer id,
sequences, in-flight batches, the batches staged for the next free slot), the merger and the
progress book (what the target acknowledged and where it landed). One thread drives it through
``step``; nothing runs in the background.

Where a batch cannot be copied byte for byte, the copier stops that partition at the batch and
hands it back through ``take_fallbacks`` once everything before it is acknowledged; the loop
copies on from ``Fallback.offset`` with the record path (which reports into the same book).
Those batches (checked by experiment against Kafka 4.1, see docs/architecture.md):

- magic 0/1 message sets (old message formats): no v2 header to rewrite;
- LogAppendTime batches: the broker accepts them from a producer but stores them as CreateTime
  with the producers' original timestamps, not the append time the source's readers see;
- compacted batches (fewer records than the batch's offset range): refused (INVALID_RECORD);
- a position inside a batch (a commit made by the record path): copying the whole batch would
  copy the records before the position again;
- with schema IDs translated, a batch the merge kernel cannot read (a delete horizon written
  by the log cleaner): its IDs cannot be rewritten.

Small source batches are no reason to leave: they are merged (merger.py).

The delivery guarantee is a constructor argument (guarantee.py): at-least-once, one idempotent
producer session; exactly-once, a transaction per source partition. The copier works the same
either way and asks its guarantee for the session, at assignment, revocation and after each
step (partitions another owner fenced are dropped there).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import kafka.errors as kerrors

from kmirror.config.model import MirrorConfig
from kmirror.errors import ConfigError, MirrorError
from kmirror.kafka import clients
from kmirror.kafka.connect import CONNECT_TIMEOUT_S
from kmirror.kafka.wire import selector
from kmirror.metrics.worker import WorkerMetrics
from kmirror.mirror.batch.fetcher import Fetched, Fetcher
from kmirror.mirror.batch.gating import BatchGate
from kmirror.mirror.batch.guarantee import BatchAtLeastOnce, BatchGuarantee, Wire
from kmirror.mirror.batch.limits import TopicLimits, producer_bound
from kmirror.mirror.batch.merger import IdTranslator, Merger, Staged
from kmirror.mirror.batch.producer import ProducerSession
from kmirror.mirror.batch.records import Batch
from kmirror.partitions import SourcePartition, TargetPartition
from kmirror.progress.book import ProgressBook

log = logging.getLogger(__name__)

FETCH_MAX_BYTES = 50 * 1024 * 1024
FETCH_WAIT_MS = 100
REVOKE_FLUSH_S = 5.0
MAX_IN_FLIGHT = 5
# A partition is fetched while less than this many batch bounds wait for a send slot: enough
# to fill the next merged batches, little enough that a slow target does not pile up memory.
STAGED_BOUNDS = 4


@dataclass(frozen=True)
class Fallback:
    """A partition the batch path gave up at ``offset``: the record path continues from there."""

    offset: int
    reason: str


def unsupported(batch: Batch, position: int, *, translate: bool = False) -> str | None:
    """Why this (to be copied) batch cannot go through the batch path, or None. `translate`:
    its schema IDs are to be rewritten (by the merge kernel)."""
    if batch.magic < 2:
        return f"message format v{batch.magic} (no v2 batch header)"
    if batch.log_append_time:
        return "LogAppendTime timestamps (a producer cannot keep them)"
    if not batch.dense:
        return "compacted batch (gaps inside the batch)"
    if batch.base_offset < position:
        return "position inside a batch"
    if translate and not batch.mergeable:
        return "a batch the merge kernel cannot read, so its schema IDs cannot be rewritten"
    return None


class BatchCopier:
    def __init__(
        self,
        config: MirrorConfig,
        book: ProgressBook,
        metrics: WorkerMetrics | None = None,
        *,
        max_in_flight: int = 5,
        fetch_max_bytes: int = FETCH_MAX_BYTES,
        fetch_wait_ms: int = FETCH_WAIT_MS,
        schemas: IdTranslator | None = None,
        guarantee: BatchGuarantee | None = None,
    ) -> None:
        if not 1 <= max_in_flight <= MAX_IN_FLIGHT:
            # The broker de-duplicates the last five batches per producer and partition: more
            # in flight could write a retried batch twice, or fail it as out of order.
            raise ConfigError(f"max_in_flight must be 1..{MAX_IN_FLIGHT}, not {max_in_flight}")
        self._book = book
        self._metrics = metrics
        cconf, pconf = config.consumer_conf(), config.producer_conf()
        partition_max = int(cconf.get("max.partition.fetch.bytes", str(1024 * 1024)))
        response_max = fetch_max_bytes + partition_max + 1024 * 1024
        self._net = selector()
        self._source = clients.link(self._net, config, "source", response_max)
        self._target = clients.link(self._net, config, "target", response_max)
        self._fetcher = Fetcher(
            self._source,
            config.group_id,
            max_wait_ms=fetch_wait_ms,
            max_bytes=fetch_max_bytes,
            partition_max_bytes=partition_max,
        )
        bound = producer_bound(pconf)
        self._limits = TopicLimits(self._target, bound)
        self._translate = schemas is not None
        self.merger = Merger(self._limits, schemas)
        # At-least-once unless told: the guarantee builds the session(s) batches go through.
        self.guarantee = guarantee if guarantee is not None else BatchAtLeastOnce()
        session_args: dict[str, Any] = {
            "max_in_flight": max_in_flight,
            "request_timeout_ms": int(pconf.get("request.timeout.ms", "30000")),
            "delivery_timeout_s": int(pconf.get("message.timeout.ms", "60000")) / 1000,
            "on_error": self._count_error,
        }
        self._session: ProducerSession = self.guarantee.bind(
            Wire(
                self._target,
                self.merger,
                session_args,
                self._start,
                self._pump,
                self._poll,
                self._forget,
            )
        )
        self._max_staged = STAGED_BOUNDS * max(bound, partition_max)
        self._targets: dict[SourcePartition, TargetPartition] = {}
        self._stopping: dict[SourcePartition, Fallback] = {}
        self._fallbacks: dict[SourcePartition, Fallback] = {}
        self._copied: dict[SourcePartition, int] = {}  # source batches acknowledged since assign
        self._started = False
        # Paused topics, drains, throttles (kmirror.mirror.batch.gating); the stream's gate is
        # handed over by the hybrid copier.
        self.gating = BatchGate()

    # -- partitions -----------------------------------------------------------------------------

    def assign(self, partitions: Mapping[SourcePartition, tuple[str, int]]) -> None:
        """(source topic, partition) -> (target topic, start source offset). Opens each in the
        book; the target partition is the source's."""
        self.guarantee.assign(partitions)
        for key, (target_topic, start) in partitions.items():
            self._targets[key] = (target_topic, key[1])
            # A partition coming back from the record path keeps its runs (translation).
            known = self._book.get(*key)
            self._book.open(key[0], key[1], start, known.runs if known is not None else ())
            self._fetcher.add(key, start)
            self._copied[key] = 0
            self._target.want({target_topic})
            self._limits.want(target_topic)

    def revoke(self, keys: Iterable[SourcePartition]) -> None:
        """Stop copying these partitions: fetch no more, wait (bounded) for what is in flight,
        forget the rest and close their book entries. Commit before calling this."""
        asked = list(keys)
        keys = [k for k in asked if k in self._targets]
        for key in keys:
            self._fetcher.remove(key)
        if self._started:
            deadline = time.monotonic() + REVOKE_FLUSH_S
            while time.monotonic() < deadline and any(
                self._session.queued(self._targets[k]) for k in keys
            ):
                self._turn(deadline - time.monotonic(), fetch=False)
        for key in keys:
            self._forget(key)
            self._book.close(*key)
        # Also those it holds no more (exactly-once: a transaction may still be open).
        self.guarantee.revoke(asked)

    def _forget(self, key: SourcePartition) -> None:
        """Fetch nothing more of this partition, forget what is staged or in flight of it."""
        self._fetcher.remove(key)
        target = self._targets.pop(key, None)
        if target is not None:
            self._session.drop(target)
        self._stopping.pop(key, None)
        self._fallbacks.pop(key, None)
        self._copied.pop(key, None)

    def high_watermark(self, key: SourcePartition) -> int | None:
        """The source partition's end offset as the last fetch saw it (lag metrics)."""
        return self._fetcher.high_watermark(key)

    def copied_batches(self, key: SourcePartition) -> int:
        """Source batches of this partition the target acknowledged since it was assigned."""
        return self._copied.get(key, 0)

    def take_fallbacks(self) -> dict[SourcePartition, Fallback]:
        """Partitions the batch path stopped (see the module doc), each at the source offset
        where the record path must continue. Everything before it is acknowledged and in the
        book; the copier has forgotten the partition (its book entry stays open)."""
        out, self._fallbacks = self._fallbacks, {}
        return out

    # -- the loop -------------------------------------------------------------------------------

    def step(self, timeout_s: float) -> int:
        """Fetch what is ready, send, handle responses, for up to timeout_s. Returns the number
        of records the target acknowledged in this step (all reported into the book)."""
        try:
            self._start()
            count = self._turn(timeout_s, fetch=True)
        except kerrors.KafkaError as exc:
            # kafka-python's own failures (they are not retried here): name them, stop.
            raise MirrorError(f"batch path: unexpected client error: {exc}") from exc
        self.guarantee.drop_fenced()
        return count

    def flush(self, timeout_s: float) -> bool:
        """True once everything handed to the target is acknowledged (fetches nothing new);
        while held back, once everything already sent is (fetching goes on into the stage)."""
        if not self._started:
            return True
        deadline = time.monotonic() + timeout_s
        while self._session.unacknowledged and time.monotonic() < deadline:
            self._turn(min(0.1, deadline - time.monotonic()), fetch=self._session.held)
        self.guarantee.drop_fenced()
        return not self._session.unacknowledged

    def hold_back(self, on: bool) -> None:
        """A periodic commit point begins (True) or ended (False). Meanwhile the batches not
        sent yet stay staged, and fetching goes on into the stage: the flush before the
        commit waits for what is in flight only, and the commit covers what the target
        acknowledged (under exactly-once: exactly what the open transactions hold; the
        staged batches go into the next ones). Draining the stage first stalled the copy for
        a few hundred milliseconds at every commit: at 100 MB/s it holds tens of megabytes
        (STAGED_BOUNDS bounds per partition)."""
        self._session.hold(on)

    @property
    def unacknowledged(self) -> int:
        """Batches handed to the target and not acknowledged yet."""
        return self._session.unacknowledged

    def abandon(self) -> bool:
        """After a BatchSendError that is not permanent: forget everything unacknowledged and
        start a new producer session. The partitions stay assigned; nothing past the last
        acknowledgement is in the book, and the caller re-assigns them (``revoke`` then
        ``assign``) from the last commit. A partition that was stopping for the record path
        stays here: the re-sent batches reach the same stop again. Exactly-once: True when
        the partitions were given up instead (Sessions.abandon): dropped, to be taken back,
        nothing for the caller to rewind."""
        given_up = self._session.abandon()
        self._stopping.clear()
        if given_up:
            self.guarantee.drop_fenced()
        return given_up

    def close(self) -> None:
        try:
            if self._started:
                self.guarantee.close()  # aborts what is still open
        finally:
            self._source.close()
            self._target.close()
            self._net.close()

    def _start(self) -> None:
        if not self._started:
            self._source.bootstrap(CONNECT_TIMEOUT_S)
            self._target.bootstrap(CONNECT_TIMEOUT_S)
            self._started = True

    # While held back (a commit point), the waits of the commit itself (the progress records'
    # acknowledgements, the coordinators' answers) go on fetching into the stage too: a stream
    # copying small batches is bound by its CPU, which would otherwise sit idle there.

    def _pump(self, timeout_s: float) -> None:
        self._start()
        self._turn(timeout_s, fetch=self._session.held)

    def _poll(self, timeout_s: float) -> None:
        self._net.poll(timeout_ms=max(timeout_s, 0.0) * 1000)
        if self._session.held:
            self._take_fetched()  # staged only: this wait may be inside a send

    def _turn(self, timeout_s: float, *, fetch: bool) -> int:
        if fetch:
            self._fetcher.send(self._room)
        self._session.send()
        self._net.poll(timeout_ms=max(timeout_s, 0.0) * 1000)
        self._limits.poll()
        acked = self._acknowledged()
        if fetch:
            self._take_fetched()
        self._session.send()
        return acked

    def _take_fetched(self) -> None:
        """Hand what the source sent to the session (staged), fetch again where there is room."""
        for fetched in self._fetcher.take():
            self._hand(self.gating.cut(fetched, self._fetcher))
        self.gating.mark_ends(self._fetcher, self._targets)
        self._fetcher.send(self._room)

    def _room(self, key: SourcePartition) -> bool:
        return (
            key not in self._stopping
            and self._session.staged_bytes(self._targets[key]) < self._max_staged
            and self.gating.room(key, self._fetcher.position(key))
        )

    def _hand(self, fetched: Fetched) -> None:
        key = fetched.key
        target = self._targets.get(key)
        if target is None or key in self._stopping:
            return
        book = self._book[key]
        cursor = fetched.start
        figures = self._metrics.partitions if self._metrics is not None else None
        read_at = time.time()
        for batch, copy in fetched.batches:
            reason = unsupported(batch, cursor, translate=self._translate) if copy else None
            if reason is not None:
                self._stop(key, Fallback(cursor, reason))
                return
            after = batch.next_offset
            if copy:
                self._session.enqueue(target, Staged(key, batch, after))
                book.handed(after)
                if figures is not None and batch.first_timestamp > 0:  # MM2's record age
                    figures.read(*target, max(read_at - batch.first_timestamp / 1000.0, 0.0))
            else:
                last = self._session.last(target)
                if last is not None:
                    last.next_source = max(last.next_source, after)
                else:
                    book.skip(after)
            cursor = after

    def _stop(self, key: SourcePartition, fallback: Fallback) -> None:
        log.info(
            "batch path stops %s[%d] at offset %d (%s): the record path continues",
            key[0],
            key[1],
            fallback.offset,
            fallback.reason,
        )
        self._fetcher.remove(key)
        self._stopping[key] = fallback
        self._release_stopped()

    def _release_stopped(self) -> None:
        for key, fallback in list(self._stopping.items()):
            target = self._targets[key]
            if not self._session.queued(target):
                del self._stopping[key]
                del self._targets[key]
                self._session.drop(target)
                self._fallbacks[key] = fallback

    def _acknowledged(self) -> int:
        count = 0
        for p in self._session.take():
            book = self._book.get(*p.source)
            if book is None or p.source not in self._targets:
                continue
            if p.target_offset is not None and p.target_offset >= 0:
                book.acknowledge(p.first, p.target_offset, p.records, p.next_source)
            else:
                book.skip(p.next_source)
            count += p.records
            self._copied[p.source] = self._copied.get(p.source, 0) + p.batches
            if self._metrics is not None:
                topic, partition = self._targets[p.source]
                self._metrics.records.labels(topic).inc(p.records)
                self._metrics.bytes.labels(topic).inc(len(p.data))
                latency = (
                    max(time.time() - p.first_timestamp / 1000.0, 0.0)
                    if p.first_timestamp > 0
                    else None
                )
                if latency is not None:
                    self._metrics.latency.observe(latency)
                figures = self._metrics.partitions
                if figures is not None:
                    figures.acknowledged(topic, partition, p.records, len(p.data), latency)
        if self._stopping:
            self._release_stopped()
        self._session.check()
        return count

    def _count_error(self, name: str) -> None:
        if self._metrics is not None:
            self._metrics.send_errors.labels(name).inc()
