"""Which topics to validate and over which offsets: the snapshot, taken with confluent-kafka
(the mirror's own client library, so the same config and secrets apply), and the bounded wait
for the target to catch up with it. No Spark here.

The snapshot is taken in three steps so that the result stays exact while producers keep
writing (docs/validation.md, "Snapshot"):

1. source watermarks ``[low, end)`` per partition: the records that must be on the target;
2. (optional) wait until the target has caught up with step 1;
3. target watermarks, then the source end once more (``read_end``). Every record the target
   holds now was written to the source before this second look, so reading the source up to
   ``read_end`` sees the original of every target record.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace

from kmirror.config.model import MirrorConfig, TopicSelection
from kmirror.errors import ClusterError, ConfigError, TopicError
from kmirror.kafka.cluster import Cluster, Isolation
from kmirror.partitions import Partition, SourcePartition, TargetPartition
from kmirror_validate import ranges

log = logging.getLogger(__name__)
TP = Partition


@dataclass(frozen=True)
class TopicPlan:
    """One source topic and where the mirror puts it."""

    source: str
    target: str
    partitions: int
    target_partitions: int | None  # None: the target topic does not exist
    compacted: bool = False

    @property
    def missing_topic(self) -> bool:
        return self.target_partitions is None


@dataclass(frozen=True)
class Snapshot:
    """Offsets per source (topic, partition) and per target (topic, partition)."""

    source: Mapping[SourcePartition, tuple[int, int]]  # [low, end): what must be mirrored
    source_read_end: Mapping[SourcePartition, int]  # read this far (>= end), see module doc
    target: Mapping[TargetPartition, tuple[int, int]]  # [low, end) of each target partition
    taken_at: float = field(default_factory=time.time)
    # Bounded ranges (kmirror_validate.ranges): a timestamp filter (ms) per source partition
    # whose range has no exact target start, notes for the report, progress records found.
    since: Mapping[SourcePartition, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    progress_records: int = 0


@dataclass(frozen=True)
class WaitResult:
    caught_up: bool
    waited_s: float
    lagging: tuple[str, ...] = ()  # "topic/partition" still behind when the wait ended


def clients(config: MirrorConfig, timeout: float) -> tuple[Cluster, Cluster]:
    quiet = {"logger": ranges.LIBRDKAFKA_LOG}
    return Cluster(config, "source", timeout, quiet), Cluster(config, "target", timeout, quiet)


def committed_offsets(cluster: Cluster, group: str, tps: Iterable[TP]) -> dict[TP, int]:
    """The mirror group's committed offsets; none when they cannot be read (the wait then
    relies on the target's offsets alone)."""
    try:
        return {tp: c.offset for tp, c in cluster.committed(group, tps).items()}
    except ClusterError as exc:
        log.debug("no committed offsets for group=%s: %s", group, exc)
        return {}


def resolve_topics(
    config: MirrorConfig,
    source: Cluster,
    target: Cluster,
    selection: TopicSelection | None = None,
) -> list[TopicPlan]:
    """Source topics matching the selection (default: the mirror's), each with its target
    name through the mirror's topic mapping and the target's partition count (None: missing).
    A given selection (--topics) may name either side: a mirrored topic whose target name
    matches it is validated too (`--topics shop.orders.v2` finds `orders`)."""
    # MM2's heartbeats topics cross with the data (config.topics.always) but are live
    # bookkeeping, not the user's records: not validated unless named with --topics.
    src = source.topics()
    names = (selection or replace(config.topics, always=())).select(set(src))
    if selection is not None:
        mirrored = config.topics.select(set(src))
        by_target = [s for s in mirrored if selection.matches(config.target_topic(s))]
        names = sorted(set(names) | set(by_target))
    selection = selection or config.topics
    if not names:
        raise TopicError(
            f"no source topic at {source.bootstrap} matches include={list(selection.include)} "
            f"exclude={list(selection.exclude)}: fix --topics / --whitelist (regexes match "
            "whole topic names)"
        )
    tgt = target.topics()
    compacted = source.compacted(names)
    return [
        TopicPlan(
            source=name,
            target=config.target_topic(name),
            partitions=src[name],
            target_partitions=tgt.get(config.target_topic(name)),
            compacted=name in compacted,
        )
        for name in names
    ]


def source_partitions(plans: Iterable[TopicPlan]) -> list[SourcePartition]:
    return [(p.source, i) for p in plans for i in range(p.partitions)]


def target_partitions(plans: Iterable[TopicPlan]) -> list[TargetPartition]:
    return [(p.target, i) for p in plans for i in range(p.target_partitions or 0)]


def caught_up(
    plans: Iterable[TopicPlan],
    source: Mapping[TP, tuple[int, int]],
    target: Mapping[TP, tuple[int, int]],
    committed: Mapping[TP, int],
    same_partitions: bool = True,
) -> list[str]:
    """Partitions ("topic/partition") where the target is still behind the source snapshot.

    A partition has caught up when the mirror's group has committed the snapshot end (it
    commits only what the target acknowledged) or when the target holds at least as many
    offsets as the source range spans. The second test suffices for plain topics; compacted
    and transactional sources have offset gaps, for them only the commit test can succeed.
    """
    behind: list[str] = []
    for plan in plans:
        if plan.target_partitions is None:
            behind.append(f"{plan.target} (missing)")
            continue
        if not same_partitions:  # records are re-partitioned: compare whole topics
            want = sum(source[(plan.source, i)][1] - source[(plan.source, i)][0]
                       for i in range(plan.partitions))  # fmt: skip
            have = sum(target[(plan.target, i)][1] - target[(plan.target, i)][0]
                       for i in range(plan.target_partitions))  # fmt: skip
            done = all(committed.get((plan.source, i), -1) >= source[(plan.source, i)][1]
                       for i in range(plan.partitions))  # fmt: skip
            if have < want and not done:
                behind.append(plan.target)
            continue
        for i in range(plan.partitions):
            low, end = source[(plan.source, i)]
            if committed.get((plan.source, i), -1) >= end or end == low:
                continue
            t = target.get((plan.target, i))
            if t is None or t[1] - t[0] < end - low:
                behind.append(f"{plan.target}/{i}")
    return behind


def take_snapshot(
    config: MirrorConfig,
    source: Cluster,
    target: Cluster,
    plans: list[TopicPlan],
    isolation: Isolation,
    wait_timeout: float = 0.0,
    poll_interval: float = 2.0,
    on_wait: Callable[[list[str], float], None] | None = None,
    bounds: ranges.Bounds | None = None,
) -> tuple[Snapshot, WaitResult]:
    """Source snapshot (bounded: kmirror_validate.ranges), bounded wait for the target, then
    target and source read ends."""
    src_tps = source_partitions(plans)
    raw = source.watermarks(src_tps, isolation)
    same = config.keeps_partitions
    if bounds is not None and not same and (bounds.since_ms is not None or bounds.last is not None
                                            or bounds.to != "end"):  # fmt: skip
        raise ConfigError("--since, --last and --to copied need --partitioning same (the "
                          "mirror keeps partitions), so that ranges correspond")  # fmt: skip

    def bound(plans: list[TopicPlan], committed: Mapping[TP, int] | None) -> ranges.Bounded:
        if bounds is None:
            return ranges.Bounded()
        target_of = {(p.source, i): (p.target, i) for p in plans if same
                     for i in range(min(p.partitions, p.target_partitions or 0))}  # fmt: skip
        if bounds.to == "copied" and committed is None:
            committed = committed_offsets(source, config.group_id, src_tps)
        return ranges.plan_bounds(bounds, config, source, target, raw, target_of, committed)

    started = time.monotonic()
    lagging: list[str] = []
    current = plans
    while True:
        # Bounds are planned again on every look: the mirror's progress moves while we wait.
        committed = None
        if wait_timeout > 0:
            committed = committed_offsets(source, config.group_id, src_tps)
        bounded = bound(current, committed)
        src = ranges.merge_high(ranges.merge_low(raw, bounded.source_low), bounded.source_high)
        tgt = ranges.merge_low(target.watermarks(target_partitions(current), isolation),
                               bounded.target_low)  # fmt: skip
        tgt = ranges.merge_high(tgt, bounded.target_high)
        if bounded.source_high:  # --to copied without exact target ends: as many records
            tgt = _align_ends(current, src, tgt, bounded.target_high)
        if wait_timeout <= 0:
            break
        lagging = caught_up(current, src, tgt, committed or {}, same)
        # --to copied: a partition the mirror has not committed anything of yet (a fresh
        # install) is worth waiting for, while its source has records.
        lagging += [f"{t}/{p} (nothing copied yet)" for t, p in bounded.uncopied
                    if raw[(t, p)][1] > raw[(t, p)][0]]  # fmt: skip
        waited = time.monotonic() - started
        if not lagging or waited >= wait_timeout:
            break
        if on_wait is not None:
            on_wait(lagging, waited)
        time.sleep(min(poll_interval, max(0.0, wait_timeout - waited)))
        # A mirror creates missing target topics as it goes: look again.
        if any(p.missing_topic for p in current):
            current = _refresh_targets(current, target)
    waited = time.monotonic() - started
    plans[:] = current
    if bounded.source_high:  # the range ends where the mirror has copied to: read no further
        read_end = {tp: end for tp, (_, end) in src.items()}
    else:
        read_end = {tp: max(hi, src[tp][1]) for tp, (_, hi)
                    in source.watermarks(src_tps, isolation).items()}  # fmt: skip
    snapshot = Snapshot(source=src, source_read_end=read_end, target=tgt,
                        since=bounded.since, notes=tuple(bounded.notes),
                        progress_records=len(bounded.books))  # fmt: skip
    return snapshot, WaitResult(not lagging, round(waited, 3), tuple(lagging))


Ranges = Mapping[TP, tuple[int, int]]


def _align_ends(
    plans: list[TopicPlan], src: Ranges, tgt: Ranges, exact: Mapping[TP, int]
) -> dict[TP, tuple[int, int]]:
    """Target ranges as long as their source ranges, where no progress record gives the exact
    end (exact for a mirror without gaps; otherwise the edge shows as missing or extra)."""
    out = dict(tgt)
    for p in plans:
        for i in range(min(p.partitions, p.target_partitions or 0)):
            t = (p.target, i)
            if t in out and t not in exact:
                low, end = out[t]
                s_low, s_end = src[(p.source, i)]
                out[t] = (low, min(end, low + (s_end - s_low)))
    return out


def _refresh_targets(plans: list[TopicPlan], target: Cluster) -> list[TopicPlan]:
    have = target.topics()
    out = []
    for p in plans:
        count = have.get(p.target)
        out.append(p if count == p.target_partitions else replace(p, target_partitions=count))
    return out
