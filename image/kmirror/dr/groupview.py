"""One consumer group seen from both clusters: `kmirror offsets` and `kmirror failover`."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from typing import Any

from kmirror.config.model import MirrorConfig
from kmirror.dr import store
from kmirror.dr.failback import Back, failback_plan
from kmirror.dr.translate import checkpoints_for, latest_checkpoints, marker
from kmirror.errors import ClusterError, GroupError
from kmirror.kafka.cluster import Cluster

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Row:
    source_topic: str | None
    target_topic: str
    partition: int
    source_committed: int | None  # the group on the source now (None: unreachable or none)
    translated: int | None  # exact translation of source_committed (live)
    checkpoint: int | None  # newest checkpoint's target offset (what failover writes)
    target_committed: int | None  # the group on the target now
    target_end: int | None
    lag: int | None  # records on the target after the checkpoint (to read after failover)
    # Where `kmirror failback` would set the group on the source topic (None: cannot say).
    failback: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def offsets(config: MirrorConfig, group: str, reverse: MirrorConfig | None = None) -> list[Row]:
    """Read-only: everything known about `group`, the failback translation of its positions
    on the target included (`reverse`: the B->A flow, kmirror.dr.failback). Raises GroupError
    when nothing is known."""
    target = Cluster(config, "target")
    try:
        cps = latest_checkpoints(store.read_checkpoints(config), group)
    except GroupError as exc:
        log.warning("%s", exc)
        cps = {}
    # (target topic, partition) -> (source topic, source committed, translated or None)
    live: dict[tuple[str, int], tuple[str, int, int | None]] = {}
    books = None
    try:
        books = store.read_progress(config)
        source = Cluster(config, "source").committed(group, books)
        for (topic, partition), (offset, _) in sorted(source.items()):
            one = checkpoints_for(group, {(topic, partition): offset}, books, config.target_topic)
            down = one[0].downstream_offset if one else None
            live[(config.target_topic(topic), partition)] = (topic, offset, down)
    except (GroupError, ClusterError) as exc:
        log.warning("live translation unavailable: %s", exc)
    back: dict[tuple[str, int], Back] = {}
    if books is not None:
        try:
            plan = failback_plan(config, group, reverse, books)
            back = {(b.target_topic, b.partition): b for b in plan}
        except (GroupError, ClusterError) as exc:
            log.debug("no failback translation: %s", exc)
    keys = sorted({(c.topic, c.partition) for c in cps.values()} | set(live) | set(back))
    if not keys:
        raise GroupError(
            f"nothing known about group {group}: no checkpoints for it in "
            f"{config.rename.checkpoints_topic} on the target and no committed offsets on the "
            "mirrored source topics. Check the group name, the `groups`/`groups.exclude` "
            "patterns, and that the mirror runs with checkpoints enabled"
        )
    current = target.committed(group, keys)
    ends = target.ends(keys)
    rows = []
    for topic, partition in keys:
        cp = cps.get((group, topic, partition))
        src_topic, upstream, translated = live.get((topic, partition), (None, None, None))
        fb = back.get((topic, partition))
        src_topic = src_topic or (fb.source_topic if fb is not None else None)
        end = ends.get((topic, partition))
        down = cp.downstream_offset if cp is not None else translated
        rows.append(
            Row(
                source_topic=src_topic,
                target_topic=topic,
                partition=partition,
                source_committed=upstream,
                translated=translated,
                checkpoint=cp.downstream_offset if cp is not None else None,
                target_committed=current[(topic, partition)][0]
                if (topic, partition) in current
                else None,
                target_end=end,
                lag=None if end is None or down is None else max(end - down, 0),
                failback=fb.after if fb is not None else None,
            )
        )
    return rows


@dataclass(frozen=True)
class Move:
    topic: str
    partition: int
    before: int | None
    after: int
    upstream: int


def failover_plan(config: MirrorConfig, group: str) -> list[Move]:
    """What failover writes: the newest checkpoint of every partition of `group`. Refuses
    (GroupError, nothing written) when there is none or the group is active on the target."""
    topic = config.rename.checkpoints_topic
    cps = latest_checkpoints(store.read_checkpoints(config), group)
    if not cps:
        raise GroupError(
            f"no checkpoints for group {group} in {topic} on the target: the group is unknown "
            "on the source, matches no `groups` pattern, or committed nothing on the mirrored "
            f"topics. `kmirror offsets --group {group}` shows what is known"
        )
    target = Cluster(config, "target")
    members = target.active_members(group)
    if members:
        raise GroupError(
            f"group {group} has {members} active member(s) on the target: stop its consumers "
            "there first (failover never moves a group under running consumers); nothing "
            "was written"
        )
    keys = [(c.topic, c.partition) for c in cps.values()]
    current = target.committed(group, keys)
    return [
        Move(
            c.topic,
            c.partition,
            current[(c.topic, c.partition)][0] if (c.topic, c.partition) in current else None,
            c.downstream_offset,
            c.upstream_offset,
        )
        for c in sorted(cps.values(), key=lambda c: (c.topic, c.partition))
    ]


def apply(config: MirrorConfig, group: str, moves: list[Move]) -> None:
    offsets = {(m.topic, m.partition): m.after for m in moves}
    Cluster(config, "target").commit(group, offsets, marker(config.rename.source_alias))
