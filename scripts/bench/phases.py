"""The phases a running contender goes through after (or instead of) a drain: the fixed-rate
latency phase (scripts/bench/latency.py) and the sustained-rate search
(scripts/bench/sustained.py), each on a topic of its own that the contender mirrors from its
start. The topics are created, and seeded with one sentinel record per partition, before the
contender starts; the phases begin once every sentinel is on the target (the mirror copies
both topics)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scripts.bench import kafkaio, latency, procs
from scripts.bench.contenders import Contender
from scripts.bench.plan import Phases
from scripts.bench.sustained import Sustained

POLL_S = 0.1


@dataclass
class PhaseTopics:
    latency: str | None
    sustained: str | None

    def names(self) -> list[str]:
        return [t for t in (self.latency, self.sustained) if t]


def prepare(phases: Phases, c: Contender, run_id: str, source: str, target: str) -> PhaseTopics:
    """Create (on both clusters) and seed the topics of the phases `c` runs."""
    topics = PhaseTopics(
        f"bench-lat-{run_id}" if phases.runs(c.name) else None,
        f"bench-sus-{run_id}" if runs_sustained(phases, c) else None,
    )
    for topic, n, tconf in (
        (topics.latency, phases.latency_partitions, latency.TARGET_CONFIG),
        (topics.sustained, phases.sustained_partitions, None),
    ):
        if topic:
            kafkaio.create_topic(source, topic, n)
            kafkaio.create_topic(target, topic, n, config=tconf)
            latency.send_sentinels(source, topic, n)
    return topics


def runs_sustained(phases: Phases, c: Contender) -> bool:
    # An exactly-once target's offsets count transaction markers: the search reads offsets.
    return c.name in phases.sustained and not c.exactly_once


def run(
    phases: Phases,
    c: Contender,
    topics: PhaseTopics,
    tree: procs.Tree,
    source: str,
    target: str,
    res: dict[str, Any],
    log_dir: Path,
    tick: Callable[[str], None],
) -> None:
    """Run the phases into res["latency"] / res["sustained"]; a failed phase sets
    res["verified"] False and res["error"]."""
    parts = {t: phases.latency_partitions for t in [topics.latency] if t}
    parts |= {t: phases.sustained_partitions for t in [topics.sustained] if t}
    if not _sentinels_arrived(target, parts, tree, phases.sentinel_timeout_s):
        res["verified"] = False
        res["error"] = "phase sentinels never reached the target"
        return
    if topics.latency:
        cpu0 = tree.sample()
        lat = latency.steady_load(
            source,
            target,
            topics.latency,
            phases.latency_partitions,
            phases.latency_rate,
            phases.latency_seconds,
            phases.latency_size,
            tick=tick,
            exactly_once=c.exactly_once,
        )
        lat["cpu_s"] = tree.sample() - cpu0
        lat["cpu_s_per_m"] = lat["cpu_s"] / max(lat["sent"], 1) * 1e6
        res["latency"] = lat
        if not lat["verified"]:
            res["verified"] = False
            res["error"] = (
                f"latency phase: {lat['received']}/{lat['sent']} received, "
                f"source {lat['source_end']} target {lat['target_end']}"
            )
            return
    if topics.sustained:
        cpu0 = tree.sample()
        search = Sustained(
            source,
            target,
            topics.sustained,
            phases.sustained_partitions,
            phases.sustained_shape,
            log_dir,
            phases.sustained_step_s,
            tree.running,
            tick,
        ).search(phases.sustained_start, phases.sustained_steps)
        search["cpu_s"] = tree.sample() - cpu0
        res["sustained"] = search
        broken = [s["error"] for s in search["steps"] if s["error"]]
        if broken or not search["steps"]:
            res["verified"] = False
            res["error"] = f"sustained phase: {(broken or [search['stopped']])[0]}"


def _sentinels_arrived(
    target: str, topics: dict[str, int], tree: procs.Tree, timeout_s: float
) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and tree.running():
        if all(sum(kafkaio.end_offsets(target, t, n)) >= n for t, n in topics.items()):
            return True
        time.sleep(POLL_S)
    return False
