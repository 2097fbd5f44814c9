"""The contract between a stream and its copier: what a stream's loop needs from a copier,
and what a copier gets.

A copier moves records of the partitions a stream owns from the source to the target and
reports every acknowledged copy into the stream's progress book and every failure into its
latch. The record copier (kmirror.mirror.record_copier) hands fetched records to a
confluent-kafka producer; the batch copier (kmirror.mirror.batch) copies record batches as they
are; the hybrid copier runs both, per partition. Each takes the stream's delivery guarantee
(`Guarantee`: at-least-once or exactly-once, kmirror.mirror.guarantee) as a constructor
argument; the stream opens partitions and commits through it. A stream takes any
`CopierFactory` (Stream(..., engine=...); kmirror.mirror.engine chooses).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from confluent_kafka import Consumer, KafkaError, Message, Producer

from kmirror.config.model import MirrorConfig
from kmirror.control.gate import Gate
from kmirror.metrics.worker import WorkerMetrics
from kmirror.mirror.batch.guarantee import BatchGuarantee
from kmirror.mirror.latch import FailureLatch
from kmirror.mirror.progress_store import ProgressStore
from kmirror.partitions import SourcePartition
from kmirror.progress.book import ProgressBook
from kmirror.schemas.translator import SchemaTranslator

OnDelivery = Callable[[KafkaError | None, Message], None]
Forget = Callable[[list[SourcePartition]], None]  # a copier lets partitions go

CONSUME_BATCH = 5000
CONSUME_TIMEOUT_S = 0.2


class SourceGroup(Protocol):
    def commit(self, offsets: Mapping[SourcePartition, int]) -> bool: ...


class RecordGuarantee(Protocol):
    """What the record copier asks of its guarantee's record part (RecordAtLeastOnce in
    record_guarantee.py, RecordExactlyOnce in record_transactions.py)."""

    def attach(self, ctx: CopierContext, on_delivery: OnDelivery, forget: Forget) -> Producer:
        """The copier's producer (start-up check, metadata; at-least-once: every record).
        `forget`: the copier lets partitions go (fenced ones)."""
        ...

    def producer_for(self, key: SourcePartition) -> Producer | None:
        """Where this partition's records go now; None: not ours to copy (fenced, revoked)."""
        ...

    def fencing(self, key: SourcePartition, err: KafkaError) -> bool:
        """True (and the partition marked) when err says another owner fenced it."""
        ...

    def owns(self, key: SourcePartition) -> bool: ...

    def poll(self) -> None: ...

    def flush(self, timeout: float) -> int:
        """Wait for every delivery report; the number still outstanding."""
        ...

    def abort(self) -> None:
        """Before a rewind: nothing sent since the last commit may become visible."""
        ...

    def release(self, keys: list[SourcePartition]) -> None:
        """The copier let these partitions go (revoked)."""
        ...

    def drop_fenced(self) -> None: ...

    def close(self, timeout: float) -> None: ...


class Guarantee(Protocol):
    """At-least-once or exactly-once (kmirror.mirror.guarantee): what the stream asks of it.
    Each copier takes it as a constructor argument and sends through its parts."""

    # Exactly-once: the committed progress record (read after `open`) is where a partition
    # starts, not the source group's offset.
    transactional: bool

    @property
    def record(self) -> RecordGuarantee:
        """The record path's part: the producer each partition's records go through."""
        ...

    @property
    def batch(self) -> BatchGuarantee:
        """The batch path's part: the producer session batches go through."""
        ...

    def open(self, keys: Iterable[SourcePartition]) -> None:
        """New partitions, before their progress records are read (exactly-once: fences their
        previous owners, whose open transactions are aborted)."""

    def commit(
        self,
        book: ProgressBook,
        todo: Mapping[SourcePartition, int],
        timeout: float,
        store: ProgressStore,
        group: SourceGroup,
    ) -> tuple[dict[SourcePartition, int], bool]:
        """A commit point after a clean flush: (the source offsets now committed on the
        target, whether every partition in `todo` was)."""
        ...

    def hand_over(self, key: SourcePartition, offset: int) -> bool:
        """The batch path let `key` go at `offset` for the record path: True once the record
        path may copy it from there; False when it was fenced meanwhile (dropped)."""
        ...

    def on_fenced(self, listener: Callable[[SourcePartition], None]) -> None:
        """Exactly-once: `listener` hears of each partition dropped as fenced, after the
        clean-up (the stream takes it back while the group still gives it to it)."""


class Copier(Protocol):
    """What a stream's loop needs from an engine. Acknowledged copies are reported into the
    stream's progress book; failures into its latch."""

    guarantee: Guarantee

    def connect(self, deadline: float) -> None:
        """The target answers (start-up), or ClusterError by `deadline` (time.monotonic())."""

    def assign(self, starts: Mapping[SourcePartition, int]) -> None:
        """Copy these source partitions from these offsets (OFFSET_BEGINNING allowed)."""

    def revoke(self, keys: Iterable[SourcePartition]) -> None:
        """Stop copying these partitions (after a flush, or because they were lost)."""

    def step(self) -> None:
        """One round: take what the source has (waiting briefly when nothing), hand it to the
        target, serve acknowledgements."""

    def flush(self, timeout: float) -> int:
        """Wait for every acknowledgement; return how many copies are still outstanding."""

    def hold_back(self, on: bool) -> None:
        """A periodic commit point begins (True) or ended (False): copies read but not sent
        yet wait for the next commit, so the flush waits only for what is on its way."""

    def rewind(self, positions: Mapping[SourcePartition, int]) -> None:
        """Copy again from these source offsets (after failed sends)."""

    def close(self, timeout: float) -> None:
        """Release the target side, waiting at most `timeout` for outstanding copies."""


@dataclass(frozen=True)
class CopierContext:
    """Everything a stream shares with its copier."""

    config: MirrorConfig
    # The stream's group member: owns assignment and commits. The record copier consumes
    # through it; a batch copier keeps its partitions paused and fetches itself.
    consumer: Consumer
    metrics: WorkerMetrics
    latch: FailureLatch
    book: ProgressBook
    stop: threading.Event
    targets: Mapping[str, str]  # source topic -> target topic (the subscription's live map)
    error_cb: Callable[[KafkaError], None]  # the stream's client error handler
    client_errors: list[KafkaError]  # start-up errors for the connection check
    # Schema IDs in keys and values (kmirror.schemas), both paths; None when not mirrored.
    schemas: SchemaTranslator | None = None
    consume_batch: int = CONSUME_BATCH
    consume_timeout_s: float = CONSUME_TIMEOUT_S
    # Paused topics, drains, throttles (kmirror.control.gate); None: nothing limits the copy.
    gate: Gate | None = None


CopierFactory = Callable[[CopierContext], Copier]


@dataclass(frozen=True)
class Tuning:
    """Engine knobs that are not user settings (benchmarks vary them)."""

    consume_batch: int = CONSUME_BATCH
    consume_timeout_s: float = CONSUME_TIMEOUT_S
    # First wait before re-sending after failed sends (doubles up to MAX_RETRY_BACKOFF_S).
    retry_backoff_s: float = 1.0
    # A stop (flush, final commit, leaving the group) gives up after this long, also when both
    # clusters are gone; below the supervisor's 30 s, and it also bounds an orphaned stream.
    shutdown_timeout_s: float = 20.0


DEFAULT_TUNING = Tuning()
