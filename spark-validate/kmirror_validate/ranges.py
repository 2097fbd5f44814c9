"""Bounded ranges: which part of each partition to validate, and where it landed on the target
(no Spark here).

By default a partition is compared from where the mirror started copying it when the mirror
keeps a progress record on the target (image/kmirror/mirror/progress.py: exact source->target
runs), else from the earliest offset. `--since` and `--last` bound the range further. Where
the progress record gives the target offset of the range's first record, both ranges are
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
from typing import Any, Literal

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

from kmirror.errors import ConfigError
from kmirror.mirror.progress import PartitionBook, decode_record, translate

log = logging.getLogger(__name__)
TP = tuple[str, int]
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


def read_progress(
    conf: Mapping[str, Any], topic: str, group_id: str, timeout: float
) -> dict[TP, PartitionBook]:
    """The mirror's progress records (the latest per source partition); {} when the mirror
    keeps none. Read with a consumer that joins no group."""
    consumer = Consumer({**conf, "group.id": f"{group_id}.validate", "enable.auto.commit": False,
                         "enable.partition.eof": True})  # fmt: skip
    books: dict[TP, PartitionBook] = {}
    try:
        md = consumer.list_topics(topic, timeout=timeout).topics.get(topic)
        if md is None or md.error is not None or not md.partitions:
            return {}
        parts = [TopicPartition(topic, p, OFFSET_BEGINNING) for p in md.partitions]
        ends = {p.partition: consumer.get_watermark_offsets(p, timeout=timeout)[1]
                for p in parts}  # fmt: skip
        todo = {p for p, end in ends.items() if end > 0}
        consumer.assign(parts)
        deadline = time.monotonic() + max(timeout, 10.0)
        while todo and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                todo.discard(msg.partition())  # end of partition (or an error: stop there)
                continue
            t, p, book = decode_record(msg.key() or b"", msg.value())
            if book is None:
                books.pop((t, p), None)
            else:
                books[(t, p)] = book
            part, offset = msg.partition(), msg.offset()
            if part is not None and offset is not None and offset + 1 >= ends[part]:
                todo.discard(part)
    except KafkaException as exc:
        log.warning("could not read the progress topic %s: %s", topic, exc)
        return {}
    finally:
        consumer.close()
    return books


@dataclass
class Bounded:
    """The bounded ranges of a snapshot."""

    source_low: dict[TP, int] = field(default_factory=dict)  # by source (topic, partition)
    target_low: dict[TP, int] = field(default_factory=dict)  # by target (topic, partition)
    source_high: dict[TP, int] = field(default_factory=dict)  # --to copied: range ends
    target_high: dict[TP, int] = field(default_factory=dict)  # exact ones (progress record)
    since: dict[TP, int] = field(default_factory=dict)  # timestamp filter, by source tp
    notes: list[str] = field(default_factory=list)
    books: dict[TP, PartitionBook] = field(default_factory=dict)  # the progress records read
    uncopied: list[TP] = field(default_factory=list)  # --to copied: nothing committed yet


def target_start(book: PartitionBook, source_low: int) -> int | None:
    """Target offset where the copy of the source record at source_low (or the next copied
    one) landed, from the progress record's runs."""
    if not book.runs:
        return None
    at = translate(book.runs, source_low, book.acked)
    return at if at is not None else book.target_end


def first_offsets(consumer_conf: Mapping[str, Any], wanted: Mapping[TP, int],
                  timeout: float) -> dict[TP, int]:  # fmt: skip
    """Per partition, the first offset whose timestamp is >= the given ms (-1: none)."""
    if not wanted:
        return {}
    consumer = Consumer({**consumer_conf, "group.id": "kmirror-validate-offsets",
                         "enable.auto.commit": False})  # fmt: skip
    try:
        res = consumer.offsets_for_times(
            [TopicPartition(t, p, ms) for (t, p), ms in sorted(wanted.items())], timeout=timeout
        )
    finally:
        consumer.close()
    return {(tp.topic, tp.partition): int(tp.offset) for tp in res}


def timestamps_at(consumer_conf: Mapping[str, Any], at: Mapping[TP, int],
                  timeout: float) -> dict[TP, int]:  # fmt: skip
    """The timestamp (ms) of the record at each given offset (or the next one there is)."""
    out: dict[TP, int] = {}
    if not at:
        return out
    consumer = Consumer({**consumer_conf, "group.id": "kmirror-validate-offsets",
                         "enable.auto.commit": False})  # fmt: skip
    try:
        for (t, p), offset in sorted(at.items()):
            consumer.assign([TopicPartition(t, p, offset)])
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                msg = consumer.poll(0.5)
                if msg is not None and msg.error() is None:
                    out[(t, p)] = int(msg.timestamp()[1])
                    break
    finally:
        consumer.close()
    return out


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


def plan_bounds(bounds: Bounds, source_conf: Mapping[str, Any], target_conf: Mapping[str, Any],
                group_id: str, progress_topic: str, watermarks: Mapping[TP, tuple[int, int]],
                target_of: Mapping[TP, TP], timeout: float,
                committed: Mapping[TP, int] | None = None) -> Bounded:  # fmt: skip
    """Source and target range starts (and timestamp filters) for every source partition;
    `target_of` maps a source (topic, partition) to its target partition (same partitioning)."""
    out = Bounded()
    if bounds.start != "earliest":
        out.books = read_progress(target_conf, progress_topic, group_id, timeout)
    books = out.books
    if bounds.to == "copied":
        watermarks = copied_ends(watermarks, books, committed or {}, out)
    since_offsets = (first_offsets(source_conf, dict.fromkeys(watermarks, bounds.since_ms),
                                   timeout) if bounds.since_ms is not None else {})  # fmt: skip
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
    cut.update(timestamps_at(source_conf, todo, timeout))
    found = first_offsets(target_conf, {target_of[tp]: ms for tp, ms in cut.items()
                                        if ms is not None}, timeout)  # fmt: skip
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
