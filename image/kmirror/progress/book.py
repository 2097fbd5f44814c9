"""The progress book: per source partition, what the target acknowledged and where it landed.

One owner for the mirror's progress. The copiers (batch and record path) report every
acknowledged copy here; commits, lag metrics, the persisted progress record on the target,
checkpoints (offset translation) and exactly-once transactions all read it. Nothing here talks
to a broker, so every rule is unit-tested without one.

A *run* is a stretch where source and target offsets advance together: source offsets
``s .. s+n-1`` landed at target offsets ``t .. t+n-1``. A new run starts only at a gap: source
offsets that were never copied (compaction, transaction markers, aborted records) or target
offsets that someone else took (another writer, a re-copy after a crash). A partition without
gaps is one run forever, so the book stays small.

Translation is exact: a consumer group committed at source offset X (the next record it would
read) resumes on the target at the target offset of the first copied record whose source offset
is >= X. No record is skipped and none is read twice.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kmirror.errors import MirrorError
from kmirror.partitions import SourcePartition

# Runs kept per partition in memory and in the persisted record. A partition whose source has a
# gap per transaction makes a run per transaction; translating an offset older than the oldest
# kept run falls back to that run's start (a re-read, never a skip).
MAX_RUNS = 1000


@dataclass(frozen=True, slots=True)
class Run:
    source_start: int
    target_start: int
    count: int

    @property
    def source_end(self) -> int:
        """The source offset after the run's last record."""
        return self.source_start + self.count

    @property
    def target_end(self) -> int:
        return self.target_start + self.count


@dataclass
class PartitionBook:
    """Progress of one source partition.

    ``acked`` is the source offset from which nothing has been acknowledged yet: every source
    record below it is on the target (or was deliberately not copied: a gap). Commits use it.
    ``sent`` is the copier's position: records below it were handed to the target.
    """

    acked: int
    sent: int = -1
    runs: list[Run] = field(default_factory=list)
    committed: int = -1

    def __post_init__(self) -> None:
        self.sent = max(self.sent, self.acked)

    # -- the copiers report ------------------------------------------------------------------

    def handed(self, next_source: int) -> None:
        """Records up to (not including) next_source were handed to the target."""
        self.sent = max(self.sent, next_source)

    def acknowledge(
        self, source_start: int, target_start: int, count: int, next_source: int
    ) -> None:
        """The target acknowledged ``count`` records copied from consecutive source offsets
        ``source_start..`` at ``target_start..``; the source position is now ``next_source``
        (after any trailing gap such as a transaction marker).

        Acknowledgements arrive in source order per partition (idempotent producer); an
        acknowledgement behind ``acked`` means a copy was re-sent (a rewind), and its run is
        recorded too: the target holds those records twice and the newer copy wins translation.
        """
        if next_source < source_start + count:
            raise MirrorError(
                f"progress book: next source offset {next_source} is inside the acknowledged "
                f"run {source_start}+{count} (a copier bug)"
            )
        if count > 0:
            self._add(Run(source_start, target_start, count))
        self.acked = max(self.acked, next_source)
        self.sent = max(self.sent, self.acked)

    def skip(self, next_source: int) -> None:
        """Source offsets below next_source need no copy (control batches, aborted records)."""
        self.acked = max(self.acked, next_source)
        self.sent = max(self.sent, self.acked)

    def _add(self, run: Run) -> None:
        runs = self.runs
        if runs:
            last = runs[-1]
            if run.source_start == last.source_end and run.target_start == last.target_end:
                runs[-1] = Run(last.source_start, last.target_start, last.count + run.count)
                return
            if run.source_start < last.source_end:
                # A re-copy (after a rewind): drop what it supersedes so runs stay sorted.
                while runs and runs[-1].source_start >= run.source_start:
                    runs.pop()
                if runs and runs[-1].source_end > run.source_start:
                    keep = run.source_start - runs[-1].source_start
                    runs[-1] = Run(runs[-1].source_start, runs[-1].target_start, keep)
        runs.append(run)
        if len(runs) > MAX_RUNS:
            del runs[: len(runs) - MAX_RUNS]

    def rewind(self, source_offset: int) -> None:
        """The copier will re-send from source_offset (after a failed send). Acknowledgements
        past it may sit on either side of a failed record: they count again only once re-sent
        and acknowledged, so a commit cannot cover the record that failed."""
        self.sent = source_offset
        self.acked = min(self.acked, source_offset)

    # -- readers ------------------------------------------------------------------------------

    @property
    def target_end(self) -> int | None:
        """The target offset after the last copied record, when one was copied."""
        return self.runs[-1].target_end if self.runs else None

    def translate(self, source_offset: int) -> int | None:
        """Target offset where a consumer committed at source_offset resumes, or None when the
        book cannot say (nothing copied yet, or the offset is beyond what was acknowledged)."""
        return translate(self.runs, source_offset, self.acked)

    def translate_back(self, target_offset: int) -> int | None:
        """Source offset where a consumer committed at target_offset on the target resumes on
        the source (failback), or None when the book cannot say (see translate_back)."""
        return translate_back(self.runs, target_offset, self.acked)

    def lag(self, source_end: int) -> tuple[int, int]:
        """(records not yet acknowledged, records not yet committed) against a source end."""
        committed = self.committed if self.committed >= 0 else self.acked
        return max(source_end - self.acked, 0), max(source_end - committed, 0)


def translate(runs: list[Run], source_offset: int, acked: int) -> int | None:
    """Exact translation over sorted runs (see the module doc)."""
    if not runs or source_offset > acked:
        return None
    starts = [r.source_start for r in runs]
    i = bisect.bisect_right(starts, source_offset) - 1
    if i < 0:
        # Older than the oldest run kept: its start is the safe answer (re-read, not skip).
        return runs[0].target_start
    run = runs[i]
    if source_offset < run.source_end:
        return run.target_start + (source_offset - run.source_start)
    # In a gap after run i: the next copied record is the next run's first, or, after the
    # last run, the next record to be copied, which lands at the run's target end.
    return runs[i + 1].target_start if i + 1 < len(runs) else run.target_end


def translate_back(runs: list[Run], target_offset: int, acked: int) -> int | None:
    """The reverse of `translate`, exact: a consumer committed at target offset Y (the next
    copy it would read) resumes on the source at the source offset of the first copy at a
    target offset >= Y. Past the last copy that is `acked`: the first source record not yet
    copied, which the consumer has not seen. None before the oldest run kept (or with no run):
    the target offsets there may be copies whose runs were dropped, whose source offsets the
    book no longer knows, and guessing could skip records."""
    if not runs or target_offset < runs[0].target_start:
        return None
    starts = [r.target_start for r in runs]
    i = bisect.bisect_right(starts, target_offset) - 1
    run = runs[i]
    if target_offset < run.target_end:
        return run.source_start + (target_offset - run.target_start)
    # Target offsets after run i that no run covers (another writer's records, copies a
    # re-copy superseded): the next copy is the next run's first, or after the last, `acked`.
    return runs[i + 1].source_start if i + 1 < len(runs) else acked


class ProgressBook:
    """All partitions a stream owns, by source partition."""

    def __init__(self) -> None:
        self._parts: dict[SourcePartition, PartitionBook] = {}

    def open(
        self, topic: str, partition: int, start: int, runs: Iterable[Run] = ()
    ) -> PartitionBook:
        """Start (or resume, with persisted runs) a partition at source offset ``start``."""
        book = PartitionBook(acked=start, runs=list(runs))
        self._parts[(topic, partition)] = book
        return book

    def close(self, topic: str, partition: int) -> None:
        self._parts.pop((topic, partition), None)

    def get(self, topic: str, partition: int) -> PartitionBook | None:
        return self._parts.get((topic, partition))

    def __getitem__(self, key: SourcePartition) -> PartitionBook:
        return self._parts[key]

    def __contains__(self, key: object) -> bool:
        return key in self._parts

    def keys(self) -> set[SourcePartition]:
        return set(self._parts)

    def items(self) -> list[tuple[SourcePartition, PartitionBook]]:
        return sorted(self._parts.items())

    def to_commit(self) -> dict[SourcePartition, int]:
        """Source offsets that may be committed now (acknowledged, and moved since the last)."""
        return {k: b.acked for k, b in self._parts.items() if b.acked != b.committed}

    def committed(self, offsets: Mapping[SourcePartition, int]) -> None:
        for key, offset in offsets.items():
            book = self._parts.get(key)
            if book is not None:
                book.committed = offset
