"""The contract between a stream and its copier: what a stream's loop needs from a copier,
and what a copier gets.

A copier moves records of the partitions a stream owns from the source to the target and
reports every acknowledged copy into the stream's progress book and every failure into its
latch. The record copier (kmirror.mirror.record_copier) hands fetched records to a
confluent-kafka producer; the batch copier (kmirror.mirror.batch) copies record batches as they
are; the hybrid copier runs both, per partition. A stream takes any `CopierFactory`
(Stream(..., engine=...); kmirror.mirror.engine chooses).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from confluent_kafka import Consumer, KafkaError

from kmirror.config.model import MirrorConfig
from kmirror.control.gate import Gate
from kmirror.metrics.worker import WorkerMetrics
from kmirror.mirror.latch import FailureLatch
from kmirror.partitions import SourcePartition
from kmirror.progress.book import ProgressBook
from kmirror.schemas.translator import SchemaTranslator

CONSUME_BATCH = 5000
CONSUME_TIMEOUT_S = 0.2


class Copier(Protocol):
    """What a stream's loop needs from an engine. Acknowledged copies are reported into the
    stream's progress book; failures into its latch."""

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
    check: Callable[[], None]  # act on the latch now (may raise, may rewind)
    client_errors: list[KafkaError]  # start-up errors for the connection check
    # Schema IDs in keys and values (kmirror.schemas), both paths; None when not mirrored.
    schemas: SchemaTranslator | None = None
    consume_batch: int = CONSUME_BATCH
    consume_timeout_s: float = CONSUME_TIMEOUT_S
    # Paused topics, drains, throttles (kmirror.control.gate); None: nothing limits the copy.
    gate: Gate | None = None


CopierFactory = Callable[[CopierContext], Copier]


@runtime_checkable
class Transactional(Protocol):
    """A copier under --exactly-once (exactly_once.py, exactly_once_hybrid.py): the stream
    opens partitions (fencing their previous owners) before it reads their progress records,
    and its commit points commit the partitions' transactions."""

    def open(self, keys: Iterable[SourcePartition]) -> None: ...

    def commit(
        self, book: ProgressBook, keys: Iterable[SourcePartition], timeout: float
    ) -> dict[SourcePartition, int]:
        """The source offsets now committed on the target."""
        ...


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
