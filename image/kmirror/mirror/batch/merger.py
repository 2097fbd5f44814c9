"""What a target partition gets when a produce slot frees up: the source batches it has staged,
merged into one batch.

The batch path fetches source batches as the source stores them and stages them per target
partition (``Staged``). When the producer session may send another batch for that partition
(fewer than five in flight), the merger takes the longest run at the front of the stage and
builds one batch (``Pending``): a run of several is merged by the kernel
(``kmirror_batches.merge``, docs/architecture.md "Re-batching"), a run of one keeps its bytes
(only its header is rewritten). No linger: at a low rate every batch goes out as it came, one
round trip after its fetch; under load batches wait for a slot, and the next slot takes all of
them at once, so batching grows with the load (as librdkafka's does with ``linger.ms=0``).

A run is what keeps the progress book exact: consecutive source offsets (a gap - compaction,
transaction markers, aborted records - starts a new run), so record i of a merged batch is
source offset ``first + i``. It is also bounded by the target topic's batch limit
(kmirror.mirror.batch.limits) and holds one codec.

Schema IDs (``translate``, kmirror.schemas): every batch goes through the kernel with the ID
map; an ID without a mapping is resolved (its schema copied to the target registry, the pair
persisted) and the batch merged again, so it never leaves with an ID the target lacks.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import islice
from typing import Protocol

from kmirror_batches import IdMap, Merged, MergeError, merge

from kmirror.errors import MirrorError
from kmirror.mirror.batch.records import HEADER_SIZE, Batch, rewrite
from kmirror.partitions import SourcePartition


class IdTranslator(Protocol):
    """Schema IDs of the source registry -> the target's (kmirror.schemas.SchemaTranslator)."""

    @property
    def rewrite_map(self) -> Mapping[int, int]: ...

    def resolve(self, sid: int, topic: str, where: str) -> None:
        """Make `sid` known (rewrite_map has it afterwards), or raise SchemaError."""

    def count_plain(self, topic: str, records: int) -> None:
        """Records copied unchanged: neither key nor value in the wire format."""


@dataclass(eq=False)
class Staged:
    """A source batch waiting for a send slot."""

    source: SourcePartition
    batch: Batch
    next_source: int  # source position once acknowledged (after dropped batches behind it)
    since: float = field(default_factory=time.monotonic)  # the delivery timeout counts from here
    progress: bool = False  # the exactly-once progress record: sent alone, not a source copy


@dataclass(eq=False)
class Pending:
    """One batch on its way to the target: a source batch as it came, or a merged run."""

    source: SourcePartition
    data: bytes | bytearray  # as sent: our producer id, epoch and sequence
    first: int  # source offset of its first record; the rest follow without a gap
    records: int
    next_source: int
    first_timestamp: int
    since: float
    batches: int = 1  # source batches it holds
    source_bytes: int = 0  # their size as fetched
    progress: bool = False
    sequence: int = 0
    stamped: tuple[int, int, int] = (-1, -1, -1)  # producer id, epoch, sequence in `data`
    target_offset: int | None = None  # set by the acknowledgement (-1: duplicate, unknown)


class Limits(Protocol):
    """The largest batch to build per target topic (kmirror.mirror.batch.limits)."""

    def bound(self, topic: str) -> int | None:
        """None while unknown: batches go as they came."""

    def forget(self, topic: str) -> None:
        """The target refused a merged batch as too large: ask again."""


class Merger:
    def __init__(self, limits: Limits, ids: IdTranslator | None = None) -> None:
        self._limits = limits
        self._ids = ids
        self._map: Mapping[int, int] | None = None  # the translator's map IdMap was built from
        self._idmap = IdMap()

    def build(
        self,
        staged: deque[Staged],
        topic: str,
        producer_id: int,
        epoch: int,
        sequence: int,
        *,
        transactional: bool,
    ) -> Pending:
        """The next batch for target `topic`, taken off the front of `staged` (not empty)."""
        run = self._run(staged, topic)
        first = run[0]
        if len(run) == 1 and (self._ids is None or first.progress):
            return self._as_it_came(staged, producer_id, epoch, sequence, transactional)
        stamp = _Stamp(producer_id, epoch, sequence, transactional, self._limits.bound(topic) or 0)
        try:
            merged = self._merge(run, stamp)
        except MergeError as exc:
            if len(run) > 1 and self._ids is None:
                # Something the checks before could not see (a corrupt batch): the first goes
                # as it came (as before re-batching), the rest is tried again as a run.
                return self._as_it_came(staged, producer_id, epoch, sequence, transactional)
            try:
                run = run[:1]
                merged = self._merge(run, stamp)
            except MergeError:
                raise MirrorError(
                    f"source {first.source[0]}[{first.source[1]}] batch at offset "
                    f"{first.batch.base_offset} cannot be copied with translated schema "
                    f"IDs: {exc}"
                ) from exc
        for _ in range(merged.batches):
            staged.popleft()
        return _pending(run[: merged.batches], merged.data, merged.records)

    def _as_it_came(
        self,
        staged: deque[Staged],
        producer_id: int,
        epoch: int,
        sequence: int,
        transactional: bool,
    ) -> Pending:
        first = staged.popleft()
        data = rewrite(first.batch, producer_id, epoch, sequence, transactional=transactional)
        return _pending([first], bytes(data), first.batch.record_count)

    def too_large(self, topic: str) -> None:
        """The target refused a merged batch of `topic` as too large."""
        self._limits.forget(topic)

    def _run(self, staged: deque[Staged], topic: str) -> list[Staged]:
        """The longest run at the front that the kernel may take in one call: consecutive
        offsets, one codec, its source batches' bytes within the bound (the kernel bounds the
        merged records exactly; this only keeps it from checking batches it will not take)."""
        first = staged[0]
        bound = self._limits.bound(topic)
        if bound is None or first.progress or not first.batch.mergeable:
            return [first]
        run = [first]
        size = len(first.batch.data)
        for s in islice(staged, 1, None):
            batch, prev = s.batch, run[-1].batch
            size += len(batch.data) - HEADER_SIZE
            if (
                s.progress
                or size > bound
                or not batch.mergeable
                or batch.base_offset != prev.next_offset
                or batch.codec != first.batch.codec
            ):
                break
            run.append(s)
        return run

    def _merge(self, run: list[Staged], stamp: _Stamp) -> Merged:
        views = [s.batch.data for s in run]
        if self._ids is None:
            return stamp.merge(views, None)
        source = run[0].source
        while True:
            merged = stamp.merge(views, self._id_map())
            if not merged.unmapped:
                break
            where = f"{source[0]}[{source[1]}] offset {merged.first_offset}"
            for sid in merged.unmapped:
                self._ids.resolve(sid, source[0], where)
        if merged.plain_records:
            self._ids.count_plain(source[0], merged.plain_records)
        return merged

    def _id_map(self) -> IdMap:
        assert self._ids is not None
        current = self._ids.rewrite_map
        if current is not self._map:  # the translator replaces its map when it learns an ID
            self._map = current
            self._idmap = IdMap(current)
        return self._idmap


@dataclass(frozen=True)
class _Stamp:
    """What the kernel writes into the header of the batch it builds, and its size bound."""

    producer_id: int
    epoch: int
    sequence: int
    transactional: bool
    max_bytes: int

    def merge(self, views: list[memoryview], ids: IdMap | None) -> Merged:
        return merge(
            views,
            producer_id=self.producer_id,
            producer_epoch=self.epoch,
            base_sequence=self.sequence,
            transactional=self.transactional,
            max_bytes=self.max_bytes,
            ids=ids,
        )


def _pending(run: list[Staged], data: bytes, records: int) -> Pending:
    first, last = run[0], run[-1]
    return Pending(
        first.source,
        data,
        first.batch.base_offset,
        records,
        last.next_source,
        first.batch.first_timestamp,
        first.since,
        batches=len(run),
        source_bytes=sum(len(s.batch.data) for s in run),
        progress=first.progress,
    )
