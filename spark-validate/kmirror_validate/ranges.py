"""Bounded ranges: which part of each partition to validate, and where it landed on the target
(no Spark here).

By default a partition is compared from where the mirror started copying it when the mirror
keeps a progress record on the target (kmirror.progress: exact source->target runs), else
from the earliest offset. `--since` and `--last` bound the range further. Where the progress
record gives the target offset of the range's first record, both ranges are
offset ranges (exact). Where it does not, both sides are read from the first offset with a
timestamp >= T and filtered to timestamps >= T: a mirror copies timestamps, so the same
records pass on both sides (exact too, whatever the target held before).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from kmirror.config.model import MirrorConfig
from kmirror.errors import ClusterError, ConfigError
from kmirror.kafka.cluster import Cluster
from kmirror.partitions import Partition, SourcePartition, TargetPartition
from kmirror.progress.book import PartitionBook, translate
from kmirror.progress.reader import read_progress

log = logging.getLogger(__name__)
# librdkafka's own log lines (connection refused ...) go through logging, not raw stderr; the
# CLI quiets them (its errors already say why a cluster cannot be reached).
LIBRDKAFKA_LOG = logging.getLogger("kmirror_validate.librdkafka")
TP = Partition
Start = Literal["auto", "earliest", "mirror"]
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


@dataclass(frozen=True)
class Bounds:
    start: Start = "auto"  # auto: the mirror's start where a progress record says it
    since_ms: int | None = None  # records with timestamps >= this
    last: int | None = None  # the last N records of each source partition
    to: Literal["end", "copied"] = "end"  # copied: end where the mirror has copied to

    @property
    def bounded(self) -> bool:
        return (self.start != "earliest" or self.since_ms is not None or self.last is not None
                or self.to != "end")  # fmt: skip


def parse_since(text: str, now: float | None = None) -> int:
    """`--since`: an ISO 8601 time (`2026-11-26T10:00:00Z`), epoch milliseconds, or a
    duration back from now (`90s`, `15m`, `2h`, `1d`) -> epoch milliseconds."""
    value = text.strip()
    now = time.time() if now is None else now
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([smhd])", value)
    if m:
        return int((now - float(m.group(1)) * _UNITS[m.group(2)]) * 1000)
    if value.isdigit():
        return int(value)
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(
            f"--since {text!r}: give an ISO 8601 time (2026-11-26T10:00:00Z), epoch "
            "milliseconds, or a duration back from now (15m, 2h, 1d)"
        ) from None
    if parsed.tzinfo is None:
        raise ConfigError(f"--since {text!r} has no time zone: add Z or +HH:MM")
    return int(parsed.timestamp() * 1000)


@dataclass
class Bounded:
    """The bounded ranges of a snapshot."""

    source_low: dict[SourcePartition, int] = field(default_factory=dict)
    target_low: dict[TargetPartition, int] = field(default_factory=dict)
    source_high: dict[SourcePartition, int] = field(default_factory=dict)  # --to copied: ends
    target_high: dict[TargetPartition, int] = field(default_factory=dict)  # exact (progress)
    since: dict[SourcePartition, int] = field(default_factory=dict)  # timestamp filter
    notes: list[str] = field(default_factory=list)
    books: dict[SourcePartition, PartitionBook] = field(default_factory=dict)  # progress read
    uncopied: list[SourcePartition] = field(default_factory=list)  # --to copied: none yet


def target_start(book: PartitionBook, source_low: int) -> int | None:
    """Target offset where the copy of the source record at source_low (or the next copied
    one) landed, from the progress record's runs."""
    if not book.runs:
        return None
    at = translate(book.runs, source_low, book.acked)
    return at if at is not None else book.target_end


def source_lows(bounds: Bounds, watermarks: Mapping[TP, tuple[int, int]],
                books: Mapping[TP, PartitionBook], since_offsets: Mapping[TP, int],
                notes: list[str]) -> dict[TP, int]:  # fmt: skip
    """The first source offset of each partition's range."""
    lows: dict[TP, int] = {}
    for tp, (low, end) in watermarks.items():
        start = low
        book = books.get(tp)
        if bounds.start != "earliest" and book is not None and book.runs:
            start = max(start, book.runs[0].source_start)
        elif bounds.start == "mirror":
            notes.append(f"{tp[0]}/{tp[1]}: no progress record of the mirror's start: "
                         "compared from the earliest offset")  # fmt: skip
        if bounds.last is not None:
            start = max(start, end - bounds.last)
        since = since_offsets.get(tp)
        if since is not None:
            start = max(start, end if since < 0 else since)
        lows[tp] = min(start, end)
    return lows


def plan_bounds(bounds: Bounds, config: MirrorConfig, source: Cluster, target: Cluster,
                watermarks: Mapping[TP, tuple[int, int]],
                target_of: Mapping[SourcePartition, TargetPartition],
                committed: Mapping[TP, int] | None = None) -> Bounded:  # fmt: skip
    """Source and target range starts (and timestamp filters) for every source partition;
    `target_of` maps a source (topic, partition) to its target partition (same partitioning)."""
    out = Bounded()
    if bounds.start != "earliest":
        out.books = _progress(config, target)
    books = out.books
    if bounds.to == "copied":
        watermarks = copied_ends(watermarks, books, committed or {}, out)
    since_offsets = (source.offsets_for_times(dict.fromkeys(watermarks, bounds.since_ms))
                     if bounds.since_ms is not None else {})  # fmt: skip
    out.source_low = source_lows(bounds, watermarks, books, since_offsets, out.notes)
    unmapped: dict[TP, int] = {}
    for tp, low in out.source_low.items():
        if tp not in target_of or (low == watermarks[tp][0] and not bounds.bounded):
            continue
        book = books.get(tp)
        at = target_start(book, low) if book is not None else None
        if at is not None:
            out.target_low[target_of[tp]] = at
        elif low > watermarks[tp][0]:
            unmapped[tp] = low
    for tp, high in out.source_high.items():
        book = books.get(tp)
        at = target_start(book, high) if book is not None and tp in target_of else None
        if at is not None:
            out.target_high[target_of[tp]] = at
    # No progress record: bound both sides by the timestamp of the range's first record.
    cut = dict.fromkeys(unmapped, bounds.since_ms) if bounds.since_ms is not None else {}
    todo = {tp: o for tp, o in unmapped.items() if tp not in cut}
    cut.update(source.timestamps_at(todo))
    found = target.offsets_for_times({target_of[tp]: ms for tp, ms in cut.items()
                                      if ms is not None})  # fmt: skip
    for tp, ms in cut.items():
        if ms is None:
            continue
        out.since[tp] = ms
        t_off = found.get(target_of[tp], -1)
        if t_off >= 0:
            out.target_low[target_of[tp]] = t_off
        else:  # nothing that recent on the target: an empty target range
            out.target_low[target_of[tp]] = 1 << 62
    return out


def _progress(config: MirrorConfig, target: Cluster) -> dict[TP, PartitionBook]:
    """The mirror's progress records (kmirror.progress.reader); {} when it keeps none or they
    cannot be read (the ranges then start at the earliest offsets, with a warning)."""
    try:
        books = read_progress(config, max(target.timeout, 10.0), {"logger": LIBRDKAFKA_LOG})
    except ClusterError as exc:
        log.warning("could not read the progress topic %s: %s", config.progress_topic, exc)
        return {}
    return books or {}


def copied_ends(
    watermarks: Mapping[TP, tuple[int, int]],
    books: Mapping[TP, PartitionBook],
    committed: Mapping[TP, int],
    out: Bounded,
) -> dict[TP, tuple[int, int]]:
    """--to copied: each range ends where the mirror has copied to (its progress record's
    acknowledged position, else its consumer group's committed offset; nothing known: an
    empty range)."""
    ends: dict[TP, tuple[int, int]] = {}
    for tp, (low, end) in watermarks.items():
        book = books.get(tp)
        copied = book.acked if book is not None else committed.get(tp)
        if copied is None:
            out.uncopied.append(tp)
            out.notes.append(f"{tp[0]}/{tp[1]}: the mirror has not committed anything yet: "
                             "nothing to compare")  # fmt: skip
            copied = low
        out.source_high[tp] = high = max(low, min(end, copied))
        ends[tp] = (low, high)
    return ends


def merge_high(current: Mapping[TP, tuple[int, int]],
               highs: Mapping[TP, int]) -> dict[TP, tuple[int, int]]:  # fmt: skip
    """Ranges with their ends lowered to the bounded highs (never below the start)."""
    return {tp: (low, max(low, min(end, highs.get(tp, end)))) for tp, (low, end) in current.items()}


def merge_low(
    current: Mapping[TP, tuple[int, int]], lows: Mapping[TP, int]
) -> dict[TP, tuple[int, int]]:
    """Watermarks with the range starts raised to the bounded lows (never past the end)."""
    return {tp: (min(max(low, lows.get(tp, low)), end), end) for tp, (low, end) in current.items()}
