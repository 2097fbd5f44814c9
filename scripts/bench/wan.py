"""The WAN benchmark (`make bench-wan`): kmirror and MirrorMaker 2 copying across a slow link.

    python -m scripts.bench.wan                       # 0, 25, 50, 100 ms; 100 B and 1 KB
    python -m scripts.bench.wan --rtts 50 --records 200000 --records-1kb 50000 \\
        --max-copy-s 0 --latency-seconds 2            # a smoke run: one RTT, small backlogs

A cross-region mirror as people deploy one: the mirror runs next to the target and consumes
the source across the WAN. So the source cluster (`wansrc`, one broker) sits behind Toxiproxy
(kafka-local --proxy) and only the mirror connects through it; the target (`wantgt`) is local.
The link gets RTT/2 each way, with a tenth of the RTT of jitter. The harness itself (the
loaders, the offsets it reads, the latency phase's producer) uses the source broker's own
listener: producers live in the source's region.

For each RTT and record size: a backlog copy by each contender (records/s over a window of at
most --max-copy-s, scripts/bench/drain.py), then the latency of live records at a steady rate
(scripts/bench/latency.py), per contender, and for a plain consumer reading the source across
the same link (what the RTT adds by itself, no mirror in between). Method, settings and
results: docs/benchmarks.md ("WAN"). Writes --json-out (default bench/results/wan.json).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from types import FrameType
from typing import Any

from scripts import kafkalocal
from scripts.bench import kafkaio, latency, procs, report
from scripts.bench.plan import Phases, Plan, Shape, Workload
from scripts.bench.progress import Progress
from scripts.bench.run import RESULTS_DIR, Bench, disk_problem, host_info, versions
from scripts.bench.wansettings import (
    JITTER_FRACTION,
    SOURCE_BROKER,
    contenders,
    link_description,
)
from scripts.toxiproxy import Toxiproxy

SOURCE = ("wansrc", 13592)  # proxied: Toxiproxy 13592, its API 13601, the broker 13602-13604
TARGET = ("wantgt", 14592)
RTTS_MS = (0, 25, 50, 100)
# Backlogs for >= 10 s of kmirror's batch path on a quiet machine (2.1 M x 100 B and 0.22 M x
# 1 KB records/s in the reference run of docs/benchmarks.md); drains are cut at 10 s.
RECORDS = {"100B": 24_000_000, "1KB": 3_000_000}
MAX_COPY_S = 10.0
LATENCY_RATE = 2000
LATENCY_SECONDS = 10.0
PARTITIONS = 8
SENTINEL_TIMEOUT_S = 240.0


class WanBench(Bench):
    """Bench with a proxied source: the contenders reach it through Toxiproxy."""

    def __init__(self, plan: Plan, out_dir: Path, progress: Progress) -> None:
        super().__init__(plan, out_dir, progress)
        self.quorum = kafkalocal.Quorum(
            SOURCE[0], SOURCE[1], brokers=1, proxied=True, overrides=dict(SOURCE_BROKER)
        )
        self.src = self.quorum.direct_bootstrap
        self.mirror_src = self.quorum.bootstrap
        self.proxy = Toxiproxy(f"http://127.0.0.1:{self.quorum.api_port}")
        self.proxy_name = self.quorum.node_name(1)

    def source_data(self) -> Path:
        """The one source broker's: the quorum keeps each node's files under its own name."""
        return kafkalocal.files(self.quorum.node_name(1))["data"]

    def clusters_up(self) -> dict[str, Any]:
        self._down_leftovers()
        self._clusters_up = True
        t0 = time.monotonic()
        kafkalocal.quorum_up([self.quorum], timeout=240)
        kafkalocal.up([kafkalocal.ClusterSpec(*TARGET)], fresh=True, timeout=240)
        return {
            "source": self.src,
            "source_through_the_link": self.mirror_src,
            "target": self.tgt,
            "start_s": round(time.monotonic() - t0, 1),
        }

    def _down_leftovers(self) -> None:
        """A run interrupted before its end leaves its clusters: stop and wipe them."""
        if kafkalocal.load_quorum(SOURCE[0]) is not None:
            kafkalocal.quorum_down(SOURCE[0])
        if TARGET[0] in kafkalocal.known_clusters():
            kafkalocal.down([TARGET[0]], keep=False)

    def clusters_down(self) -> None:
        if self._clusters_up:
            self._clusters_up = False
            procs.kill_all()
            for line in self._down_lines():
                self.progress.line(line)

    def _down_lines(self) -> list[str]:
        lines = []
        with contextlib.suppress(kafkalocal.ClusterError):
            lines += kafkalocal.quorum_down(SOURCE[0])
        lines += kafkalocal.down([TARGET[0]], keep=False)
        return lines

    def set_rtt(self, rtt_ms: int) -> dict[str, int]:
        """The link's round trip from now on (0: none), half each way."""
        self.proxy.clear(self.proxy_name)
        jitter = round(rtt_ms * JITTER_FRACTION)
        if rtt_ms:
            self.proxy.latency(self.proxy_name, rtt_ms, jitter)
        return {"rtt_ms": rtt_ms, "jitter_ms": jitter}

    def latency_run(self, c_name: str, size: int, args: argparse.Namespace) -> dict[str, Any]:
        """A contender started on an empty latency topic of `size`-byte records: the phase
        alone (Bench.contender_run with no workload)."""
        self.plan.phases = Phases(
            latency_rate=args.latency_rate,
            latency_seconds=args.latency_seconds,
            contenders=frozenset({c_name}),
            sustained=frozenset(),
            sustained_start=0,
            sustained_step_s=0.0,
            sustained_steps=0,
            latency_partitions=PARTITIONS,
            latency_size=size,
            sentinel_timeout_s=SENTINEL_TIMEOUT_S,
        )
        c = next(c for c in self.plan.contenders if c.name == c_name)
        try:
            return self.contender_run(None, c, 1)
        finally:
            self.plan.phases = None

    def consumer_alone(self, size: int, args: argparse.Namespace) -> dict[str, Any]:
        """What the link adds by itself: the paced producer writes to the source directly and
        the latency reader reads the same topic through the link (no mirror)."""
        topic = f"wan-floor-{self._run_id()}"
        kafkaio.create_topic(self.src, topic, PARTITIONS)
        try:
            res = latency.steady_load(
                self.src,
                self.mirror_src,
                topic,
                PARTITIONS,
                args.latency_rate,
                args.latency_seconds,
                size,
                tick=self.progress.tick,
            )
        finally:
            kafkaio.delete_topics(self.src, [topic], wait=False)
        return {"verified": res["verified"], "latency": res}


def make_plan(args: argparse.Namespace) -> Plan:
    records = {"100B": args.records, "1KB": args.records_1kb}
    sizes = {"100B": 100, "1KB": 1024}
    workloads = [
        Workload(name, records[name], Shape(sizes[name]), partitions=PARTITIONS)
        for name in args.sizes.split(",")
    ]
    return Plan(
        mode="wan",
        workloads=workloads,
        reps=1,
        phases=None,
        drain_timeout_s=900,
        max_copy_s=args.max_copy_s or None,
        source=SOURCE,
        target=TARGET,
        contenders=[c for c in contenders() if c.kind in args.only.split(",")],
        ceilings=[],
    )


def measure(bench: WanBench, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every cell: per RTT, the drains of each size by each contender, then the latency of
    each size for the plain consumer and each contender."""
    p, plan = bench.progress, bench.plan
    cells: list[dict[str, Any]] = []

    def one(tag: str, cell: dict[str, Any], run: Callable[[], dict[str, Any]]) -> None:
        p.line(f"{tag}: start")
        try:
            r = run()
        except Exception as exc:  # one broken run must not lose the others
            r = {"verified": False, "error": f"{type(exc).__name__}: {exc}"}
            r["traceback"] = traceback.format_exc()
        cells.append({**cell, **r})
        p.line(f"{tag}: {report.run_line(r)}")

    for rtt in [int(x) for x in args.rtts.split(",")]:
        link = bench.set_rtt(rtt)
        p.line(f"link: {rtt} ms round trip, ± {link['jitter_ms']} ms jitter")
        for w in plan.workloads:
            for c in plan.contenders:
                cell = {"kind": "drain", **link, "size": w.name, "contender": c.name}
                one(f"{rtt} ms {w.name} {c.name} copy", cell, partial(bench.contender_run, w, c, 1))
        for w in plan.workloads:
            cell = {"kind": "latency", **link, "size": w.name, "contender": "consumer"}
            one(
                f"{rtt} ms {w.name} consumer alone",
                cell,
                partial(bench.consumer_alone, w.size, args),
            )
            for c in plan.contenders:
                cell = {"kind": "latency", **link, "size": w.name, "contender": c.name}
                one(
                    f"{rtt} ms {w.name} {c.name} latency",
                    cell,
                    partial(bench.latency_run, c.name, w.size, args),
                )
    bench.set_rtt(0)
    return cells


def run(args: argparse.Namespace) -> dict[str, Any]:
    plan = make_plan(args)
    progress = Progress()
    bench = WanBench(plan, args.json_out.parent, progress)
    bench.log_dir.mkdir(parents=True, exist_ok=True)
    meta: dict[str, Any] = {
        "started": dt.datetime.now().isoformat(timespec="seconds"),
        "command": " ".join(["python -m scripts.bench.wan", *sys.argv[1:]]),
        "load_avg_start": os.getloadavg(),
        "host": host_info(),
        "versions": versions(),
        "link": link_description(),
        "workloads": [w.describe() for w in plan.workloads],
        "max_copy_s": plan.max_copy_s,
        "latency_rate_rps": args.latency_rate,
        "latency_seconds": args.latency_seconds,
        "contenders": [c.describe() for c in plan.contenders],
        "source_broker": dict(SOURCE_BROKER),
        "logs": str(bench.log_dir),
    }
    progress.line(f"bench-wan: logs in {bench.log_dir}")
    try:
        meta["clusters"] = bench.clusters_up()
        progress.line(f"clusters up: {meta['clusters']}")
        for w in plan.workloads:
            bench._preload(w)
        cells = measure(bench, args)
    finally:
        bench.clusters_down()
    meta["finished"] = dt.datetime.now().isoformat(timespec="seconds")
    meta["load_avg_end"] = os.getloadavg()
    return {"meta": meta, "preloads": bench.preloads, "cells": cells}


def table(result: dict[str, Any]) -> str:
    """The markdown table: per RTT and size, each contender's copy rate and live latency."""
    cells: list[dict[str, Any]] = result["cells"]

    def find(kind: str, rtt: int, size: str, who: str) -> dict[str, Any]:
        for c in cells:
            if (c["kind"], c["rtt_ms"], c["size"], c["contender"]) == (kind, rtt, size, who):
                return c
        return {}

    def rate(c: dict[str, Any]) -> str:
        if not c.get("verified") or "rate_rps" not in c:
            return "failed" if c else "-"
        return f"{c['rate_rps']:,.0f} ({c['rate_mbps']:.1f} MB/s)"

    def lat(c: dict[str, Any]) -> str:
        if not c.get("verified") or "latency" not in c:
            return "failed" if c else "-"
        return f"{c['latency']['p50_ms']:.0f} / {c['latency']['p99_ms']:.0f}"

    meta = result["meta"]
    names = [c["name"] for c in meta["contenders"]]
    k, m = (
        next(n for n in names if n.startswith("kmirror")),
        next((n for n in names if n.startswith("mm2")), ""),
    )
    lines = [
        f"`{meta['command']}`; load average {meta['load_avg_start'][0]:.1f} at the start, "
        f"{meta['load_avg_end'][0]:.1f} at the end; {meta['started']} - {meta['finished']}",
        "",
        "| RTT | size | kmirror records/s (MB/s) | MM2 records/s (MB/s) | kmirror ÷ MM2 "
        "| p50 / p99 ms: kmirror | MM2 | consumer alone |",
        "|--:|---|--:|--:|--:|--:|--:|--:|",
    ]
    seen = sorted({(c["rtt_ms"], c["size"]) for c in cells}, key=lambda x: (x[0], x[1] != "100B"))
    for rtt, size in seen:
        dk, dm = find("drain", rtt, size, k), find("drain", rtt, size, m)
        ok = dk.get("verified") and dm.get("verified")
        ratio = f"**{dk['rate_rps'] / dm['rate_rps']:.2f}**" if ok else "-"
        lines.append(
            f"| {rtt} ms | {size} | {rate(dk)} | {rate(dm)} | {ratio} "
            f"| {lat(find('latency', rtt, size, k))} | {lat(find('latency', rtt, size, m))} "
            f"| {lat(find('latency', rtt, size, 'consumer'))} |"
        )
    return "\n".join(lines) + "\n"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m scripts.bench.wan", description=__doc__)
    ap.add_argument("--rtts", default=",".join(map(str, RTTS_MS)), help="ms, comma list")
    ap.add_argument("--sizes", default="100B,1KB", help="comma list of 100B, 1KB")
    ap.add_argument("--only", default="kmirror,mm2", help="contender kinds: kmirror,mm2")
    ap.add_argument("--records", type=int, default=RECORDS["100B"], help="100B backlog")
    ap.add_argument("--records-1kb", type=int, default=RECORDS["1KB"], help="1KB backlog")
    ap.add_argument(
        "--max-copy-s", type=float, default=MAX_COPY_S, help="cut a copy after this long (0: never)"
    )
    ap.add_argument("--latency-rate", type=int, default=LATENCY_RATE, help="records/s")
    ap.add_argument("--latency-seconds", type=float, default=LATENCY_SECONDS)
    ap.add_argument("--json-out", type=Path, default=RESULTS_DIR / "wan.json")
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    args.json_out.parent.mkdir(parents=True, exist_ok=True)

    def on_signal(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    problem = disk_problem(make_plan(args), kafkalocal.clusters_root())
    if problem:
        print(f"bench-wan: {problem}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    result = run(args)
    args.json_out.write_text(json.dumps(result, indent=1, default=str) + "\n")
    text = table(result)
    args.json_out.with_suffix(".md").write_text(text)
    sys.stdout.write(text)
    failed = [c for c in result["cells"] if not c.get("verified")]
    if failed:
        print(f"{len(failed)} cell(s) FAILED; see {args.json_out}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
