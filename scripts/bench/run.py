"""Benchmark: kmirror against Apache MirrorMaker 2 on two dedicated local clusters.

    python -m scripts.bench.run --smoke     # 100,000 records, 1 repetition (CI)
    python -m scripts.bench.run --full      # 1 M records per workload, 3 repetitions

Writes bench/results/<mode>-<stamp>.{json,md,png} (and the contenders' logs next to them).
Method and settings: docs/benchmarks.md. Exit code 0 only if every run copied every record.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import datetime as dt
import json
import os
import platform
import re
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import confluent_kafka

from scripts import kafkalocal
from scripts.bench import kafkaio, latency, procs, report
from scripts.bench.contenders import (
    REPO_ROOT,
    Contender,
    default_contenders,
    kafka_jar_dir,
    mm2_jar_dir,
)
from scripts.bench.loops import producer_conf
from scripts.bench.progress import Progress

RESULTS_DIR = REPO_ROOT / "bench" / "results"
POLL_S = 0.1
STOP_GRACE_S = 10.0
# Two brokers starting on 2 busy cores: kafka-local's 90 s is not always enough.
CLUSTER_START_TIMEOUT_S = 240.0


@dataclass(frozen=True)
class Workload:
    name: str
    records: int
    size: int
    partitions: int = 8
    latency: bool = False  # the fixed-rate latency phase runs after this workload's drain
    # Source producer settings of the preload (how the source's record batches look).
    producer: tuple[tuple[str, str], ...] = ()

    @property
    def topic(self) -> str:
        return f"bench-{self.name.lower()}"


@dataclass
class Plan:
    mode: str
    workloads: list[Workload]
    reps: int
    latency_rate: int
    latency_seconds: float
    drain_timeout_s: float
    source: tuple[str, int]  # kafka-local cluster name, port
    target: tuple[str, int]
    contenders: list[Contender] = field(default_factory=default_contenders)
    ceilings: list[str] = field(
        default_factory=lambda: ["producer-perf", "python-produce", "python-consume"]
    )


def batch_shape_workloads(n: int) -> list[Workload]:
    """Source batches as the batch path meets them: tiny (linger 0, 5 records per batch: where
    the record path is cheaper) and lz4-compressed (copied compressed, never decoded)."""
    return [
        Workload("small", n, 100, producer=(("linger.ms", "0"), ("batch.num.messages", "5"))),
        Workload("lz4", n, 100, producer=(("compression.type", "lz4"),)),
    ]


def make_plan(args: argparse.Namespace) -> Plan:
    if args.mode == "full":
        n = args.records or 1_000_000
        plan = Plan(
            mode="full",
            # Both workloads 1 M records: the whole run took 9.3 min on a quiet 2-core
            # machine; under heavy load from other jobs, lower --records-1kb to stay in budget.
            workloads=[
                Workload("100B", n, 100, latency=True),
                Workload("1KB", args.records_1kb or 1_000_000, 1024),
                *batch_shape_workloads(n),
            ],
            reps=args.reps or 3,
            latency_rate=args.latency_rate or 2000,
            latency_seconds=args.latency_seconds or 10,
            drain_timeout_s=600,
            source=("bsrc", args.source_port or 19292),
            target=("btgt", args.target_port or 29292),
        )
    else:
        # Enough records that the copy spans several of the harness's 100 ms polls of the
        # target, so records/s has a window to be measured in: on a quiet machine 5,000
        # records arrived within one poll and the rate came out as 0.
        n = args.records or 100_000
        plan = Plan(
            mode="smoke",
            # One workload: every MirrorMaker 2 start costs 15-60 s here, and the 1 KB path
            # is the same code with another record size.
            workloads=[Workload("100B", n, 100, latency=True)],
            reps=args.reps or 1,
            latency_rate=args.latency_rate or 200,
            latency_seconds=args.latency_seconds or 3,
            drain_timeout_s=180,
            # Not the full run's clusters: a smoke run (CI, tests) never stops a full run's.
            source=("bsmoke-src", args.source_port or 19592),
            target=("bsmoke-tgt", args.target_port or 29592),
        )
    if args.workloads:
        wanted_w = set(args.workloads.split(","))
        plan.workloads = [w for w in plan.workloads if w.name in wanted_w]
    if args.only:
        wanted = set(args.only.split(","))
        plan.contenders = [c for c in plan.contenders if c.name in wanted]
        plan.ceilings = [c for c in plan.ceilings if c in wanted]
    if args.experiments:
        from scripts.bench.experiments import experiment_contenders

        plan.contenders += experiment_contenders(args.experiments)
    return plan


class Bench:
    def __init__(self, plan: Plan, out_dir: Path, progress: Progress) -> None:
        self.plan = plan
        self.progress = progress
        self.stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        self.out_dir = out_dir
        self.log_dir = out_dir / f"{plan.mode}-{self.stamp}-logs"
        self.src = f"127.0.0.1:{plan.source[1]}"
        self.tgt = f"127.0.0.1:{plan.target[1]}"
        self.runs: list[dict[str, Any]] = []
        self.ceilings: list[dict[str, Any]] = []
        self.preloads: list[dict[str, Any]] = []
        self._seq = 0
        self._clusters_up = False

    # -- clusters --------------------------------------------------------------------------

    def clusters_up(self) -> dict[str, Any]:
        names = [self.plan.source[0], self.plan.target[0]]
        # Dedicated clusters: one left over by an interrupted run is stopped and wiped.
        leftovers = [n for n in names if n in kafkalocal.known_clusters()]
        if leftovers:
            kafkalocal.down(leftovers, keep=False)
        specs = [kafkalocal.ClusterSpec(n, p) for n, p in (self.plan.source, self.plan.target)]
        self._clusters_up = True
        t0 = time.monotonic()
        kafkalocal.up(specs, fresh=True, timeout=CLUSTER_START_TIMEOUT_S)
        return {"names": names, "bootstraps": [self.src, self.tgt], "start_s": _r(t0)}

    def clusters_down(self) -> None:
        if self._clusters_up:
            self._clusters_up = False
            procs.kill_all()
            for line in kafkalocal.down([self.plan.source[0], self.plan.target[0]], keep=False):
                self.progress.line(line)

    # -- helpers ---------------------------------------------------------------------------

    def _run_id(self) -> str:
        self._seq += 1
        return f"{self.stamp[-6:]}{self._seq:03d}"

    def _clean_target(self) -> None:
        """Delete every non-internal topic on the target (targets of earlier runs, MM2's
        internal topics, ceiling topics)."""
        names = [t for t in kafkaio.topics(self.tgt) if not t.startswith("__")]
        kafkaio.delete_topics(self.tgt, names)

    # -- preload ---------------------------------------------------------------------------

    def preload(self, w: Workload) -> None:
        t0 = time.monotonic()
        kafkaio.create_topic(self.src, w.topic, w.partitions)
        self.progress.line(f"preload {w.name}: {w.records:,} records of {w.size} B → {w.topic}")
        res = self._loop(
            [
                *("produce", self.src, w.topic, str(w.records), str(w.size)),
                *(f"--set={k}={v}" for k, v in w.producer),
            ],
            f"preload-{w.name}",
        )
        ends = kafkaio.end_offsets(self.src, w.topic, w.partitions)
        if sum(ends) != w.records or res.get("errors"):
            raise RuntimeError(f"preload of {w.topic} incomplete: {ends} ({res})")
        res.update({"workload": w.name, "source_end": ends, "wall_s": _r(t0)})
        self.preloads.append(res)
        self.progress.line(
            f"preload {w.name}: done in {res['seconds']:.1f} s "
            f"({res['rate_rps']:,.0f} rec/s, {res['rate_mbps']:.1f} MB/s)"
        )

    def _loop(self, args: list[str], name: str) -> dict[str, Any]:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        tree = procs.Tree(
            [sys.executable, "-m", "scripts.bench.loops", *args],
            self.log_dir / f"{name}.log",
            cwd=REPO_ROOT,
        )
        try:
            tree.wait(self.plan.drain_timeout_s)
        except subprocess.TimeoutExpired:
            tree.stop(1)
            raise RuntimeError(f"{name}: no result in {self.plan.drain_timeout_s:.0f}s") from None
        cpu = tree.sample()
        code, _ = tree.stop(1)
        lines = [ln for ln in tree.log_path.read_text().splitlines() if ln.startswith("{")]
        if not lines:
            raise RuntimeError(f"{name}: exit {code}, no result:\n{tree.log_tail()}")
        out: dict[str, Any] = json.loads(lines[-1])
        out["cpu_s"] = cpu
        out["peak_rss_mb"] = tree.peak_rss / 2**20
        return out

    # -- one contender run -----------------------------------------------------------------

    def contender_run(self, w: Workload, c: Contender, rep: int) -> dict[str, Any]:
        run_id = self._run_id()
        res: dict[str, Any] = {
            "workload": w.name,
            "contender": c.name,
            "rep": rep,
            "run_id": run_id,
            "records": w.records,
            "record_bytes": w.size,
            "verified": False,
        }
        self._clean_target()
        kafkaio.create_topic(self.tgt, w.topic, w.partitions)
        topics = [w.topic]
        lat_topic = f"bench-lat-{run_id}"
        if w.latency:
            kafkaio.create_topic(self.src, lat_topic, w.partitions)
            kafkaio.create_topic(self.tgt, lat_topic, w.partitions)
            latency.send_sentinels(self.src, lat_topic, w.partitions)
            topics.append(lat_topic)
        source_end = kafkaio.end_offsets(self.src, w.topic, w.partitions)
        run_dir = self.log_dir / f"{run_id}-{w.name}-{c.name}-rep{rep}"
        launch = c.prepare(run_dir, run_id, self.src, self.tgt, topics)
        res["command"] = launch.cmd
        res["config_files"] = {k: str(v) for k, v in launch.files.items()}
        tree = procs.Tree(launch.cmd, run_dir / f"{c.kind}.log", env=launch.env, cwd=REPO_ROOT)
        try:
            self._watch_drain(w, c, tree, source_end, res, f"bench-{run_id}")
            if res["verified"] and w.latency:
                if c.kind == "kmirror":
                    settled = kafkaio.group_settled(self.src, f"bench-{run_id}", c.parallelism)
                    res["group_settled_s"] = settled
                self._latency_phase(w, tree, lat_topic, res, c.exactly_once)
        finally:
            res["peak_rss_mb"] = tree.peak_rss / 2**20
            res["processes"] = tree.process_count
            alive = tree.running()
            code, stop_s = tree.stop(STOP_GRACE_S)
            res.update({"exit_code": code, "stop_s": round(stop_s, 2), "alive_at_end": alive})
            if not res["verified"]:
                res["log_tail"] = tree.log_tail()
            with contextlib.suppress(Exception):
                if w.latency:
                    kafkaio.delete_topics(self.src, [lat_topic], wait=False)
        return res

    def _watch_drain(
        self,
        w: Workload,
        c: Contender,
        tree: procs.Tree,
        source_end: list[int],
        res: dict[str, Any],
        group: str,
    ) -> None:
        total = sum(source_end)
        t0 = tree.started
        deadline = t0 + self.plan.drain_timeout_s
        first: Mark | None = None
        before: Mark | None = None  # the last poll that saw nothing on the target
        while True:
            if c.exactly_once:
                # Target offsets count transaction markers too: what is committed is known
                # from the group, committed after each transaction (verified below). The copy
                # window opens at the first record written, committed or not.
                ends = kafkaio.committed(self.src, group, w.topic, w.partitions)
                started = first is not None or sum(
                    kafkaio.end_offsets(self.tgt, w.topic, w.partitions)
                )
            else:
                ends = kafkaio.end_offsets(self.tgt, w.topic, w.partitions)
                started = sum(ends) > 0
            now = time.monotonic()
            copied = sum(ends)
            if first is None:
                first, before = _open_window(bool(started), before, now, copied, total, tree)
            if ends == source_end:
                cpu = tree.sample()
                res["peak_rss_drain_mb"] = tree.peak_rss / 2**20
                break
            if any(t > s for t, s in zip(ends, source_end, strict=True)):
                res["error"] = f"target has more records than the source: {ends} > {source_end}"
                return
            if not tree.running():
                res["error"] = f"{c.name} exited with {tree.returncode} before the end"
                return
            if now > deadline:
                res["error"] = f"timeout: {copied:,}/{total:,} after {now - t0:.0f}s"
                res["target_end"] = ends
                return
            self.progress.tick(
                f"{w.name} {c.name}: {copied:,}/{total:,} on the target ({now - t0:.1f} s)"
            )
            time.sleep(POLL_S)
        assert first is not None
        if c.exactly_once:
            ends = kafkaio.count_committed(self.tgt, w.topic, w.partitions)
            if ends != source_end:
                res["error"] = f"read_committed counts {ends} != source {source_end}"
                res["target_end"] = ends
                return
        t_first, n_first, cpu_first = first
        copy_s = max(now - t_first, 1e-6)
        n = total - n_first
        res.update(
            {
                "verified": True,
                "target_end": ends,
                "first_record_s": round(t_first - t0, 3),
                "wall_s": round(now - t0, 3),
                "copy_s": round(copy_s, 3),
                "rate_rps": n / copy_s,
                "rate_mbps": n * w.size / copy_s / 1e6,
                "cpu_s_total": cpu,
                "cpu_s_copy": cpu - cpu_first,
                "cpu_s_per_m": (cpu - cpu_first) / max(n, 1) * 1e6,
                "cpu_s_per_m_with_startup": cpu / total * 1e6,
            }
        )

    def _latency_phase(
        self, w: Workload, tree: procs.Tree, topic: str, res: dict[str, Any], eos: bool
    ) -> None:
        deadline = time.monotonic() + 60
        while sum(kafkaio.end_offsets(self.tgt, topic, w.partitions)) < w.partitions:
            if time.monotonic() > deadline or not tree.running():
                res["verified"] = False
                res["error"] = "latency sentinels never reached the target"
                return
            time.sleep(POLL_S)
        cpu0 = tree.sample()
        lat = latency.steady_load(
            self.src,
            self.tgt,
            topic,
            w.partitions,
            self.plan.latency_rate,
            self.plan.latency_seconds,
            w.size,
            tick=self.progress.tick,
            exactly_once=eos,
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

    # -- ceilings --------------------------------------------------------------------------

    def ceiling(self, w: Workload, kind: str, rep: int) -> dict[str, Any]:
        run_id = self._run_id()
        res: dict[str, Any] = {
            "workload": w.name,
            "ceiling": kind,
            "rep": rep,
            "records": w.records,
            "record_bytes": w.size,
            "verified": False,
        }
        if kind == "python-consume":
            out = self._loop(["consume", self.src, w.topic, str(w.records)], f"{run_id}-{kind}")
            res.update(out)
            res["verified"] = out["records"] == w.records and not out["errors"]
            return res
        self._clean_target()
        topic = f"ceiling-{run_id}"
        kafkaio.create_topic(self.tgt, topic, w.partitions)
        if kind == "python-produce":
            out = self._loop(
                ["produce", self.tgt, topic, str(w.records), str(w.size)], f"{run_id}-{kind}"
            )
        else:
            out = self._producer_perf(w, topic, run_id)
        res.update(out)
        res["verified"] = sum(kafkaio.end_offsets(self.tgt, topic, w.partitions)) == w.records
        return res

    def _producer_perf(self, w: Workload, topic: str, run_id: str) -> dict[str, Any]:
        props = producer_perf_props(self.tgt)
        cmd = [
            kafkalocal.java_bin(),
            "-Xmx1g",
            "-cp",
            f"{kafka_jar_dir()}/*",
            "org.apache.kafka.tools.ProducerPerformance",
            "--topic",
            topic,
            "--num-records",
            str(w.records),
            "--record-size",
            str(w.size),
            "--throughput",
            "-1",
            "--producer-props",
            *[f"{k}={v}" for k, v in props.items()],
        ]
        self.log_dir.mkdir(parents=True, exist_ok=True)
        tree = procs.Tree(cmd, self.log_dir / f"{run_id}-producer-perf.log")
        try:
            tree.wait(self.plan.drain_timeout_s)
        except subprocess.TimeoutExpired:
            tree.stop(1)
            raise RuntimeError("ProducerPerformance did not finish") from None
        cpu = tree.sample()
        code, _ = tree.stop(1)
        text = tree.log_path.read_text(errors="replace")
        # The last line is the summary; earlier ones are 5-second windows.
        found = list(re.finditer(r"(\d+) records sent, ([\d.]+) records/sec", text))
        m = found[-1] if found else None
        if code != 0 or m is None:
            raise RuntimeError(f"ProducerPerformance failed (exit {code}):\n{tree.log_tail()}")
        rps = float(m.group(2))
        return {
            "records_sent": int(m.group(1)),
            "rate_rps": rps,
            "rate_mbps": rps * w.size / 1e6,
            "seconds": int(m.group(1)) / rps,
            "cpu_s": cpu,
            "peak_rss_mb": tree.peak_rss / 2**20,
            "command": cmd,
        }

    # -- the whole plan --------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        p = self.progress
        plan = self.plan
        started = time.time()
        meta: dict[str, Any] = {
            "mode": plan.mode,
            "started": dt.datetime.now().isoformat(timespec="seconds"),
            "command": " ".join(["python -m scripts.bench.run", *sys.argv[1:]]),
            "host": host_info(),
            "versions": versions(),
            "plan": {
                "reps": plan.reps,
                "workloads": [asdict(w) | {"topic": w.topic} for w in plan.workloads],
                "latency_rate_rps": plan.latency_rate,
                "latency_seconds": plan.latency_seconds,
                "contenders": [c.describe() for c in plan.contenders],
                "ceilings": plan.ceilings,
                "producer_perf_props": producer_perf_props(self.tgt),
                "python_loop_producer": {
                    k: v for k, v in producer_conf(self.tgt).items() if k != "logger"
                },
            },
        }
        p.line(
            f"bench {plan.mode}: clusters {plan.source[0]}={self.src} "
            f"{plan.target[0]}={self.tgt}; logs in {self.log_dir}"
        )
        self.log_dir.mkdir(parents=True, exist_ok=True)
        meta["clusters"] = self.clusters_up()
        p.line(f"clusters up in {meta['clusters']['start_s']:.1f} s")
        for w in plan.workloads:
            self.preload(w)
        items: list[tuple[str, Any]] = [("contender", c) for c in plan.contenders]
        items += [("ceiling", k) for k in plan.ceilings]
        for rep in range(1, plan.reps + 1):
            # Rotate the order each repetition: no contender always runs first or last.
            shift = (rep - 1) % len(items)
            order = items[shift:] + items[:shift]
            for w in plan.workloads:
                for kind, item in order:
                    if kind == "contender":
                        self._one_contender(w, item, rep)
                    else:
                        self._one_ceiling(w, item, rep)
        self._clean_target()
        meta["finished"] = dt.datetime.now().isoformat(timespec="seconds")
        meta["duration_s"] = round(time.time() - started, 1)
        meta["load_avg_end"] = os.getloadavg()
        result = {
            "meta": meta,
            "preloads": self.preloads,
            "runs": self.runs,
            "ceilings": self.ceilings,
        }
        result["summary"] = report.summarize(result)
        return result

    def _one_contender(self, w: Workload, c: Contender, rep: int) -> None:
        p = self.progress
        tag = f"{w.name} {c.name} rep {rep}/{self.plan.reps}"
        p.line(f"{tag}: start")
        try:
            r = self.contender_run(w, c, rep)
        except Exception as exc:  # one broken run must not lose the others
            r = {"workload": w.name, "contender": c.name, "rep": rep, "verified": False}
            r["error"] = f"{type(exc).__name__}: {exc}"
            r["traceback"] = traceback.format_exc()
        self.runs.append(r)
        if r["verified"]:
            msg = (
                f"{tag}: {r['records']:,} verified; {r['rate_rps']:,.0f} rec/s "
                f"{r['rate_mbps']:.1f} MB/s, first record {r['first_record_s']:.1f} s, "
                f"{r['cpu_s_per_m']:.1f} CPU s/M, RSS {r['peak_rss_mb']:.0f} MB"
            )
            if "latency" in r:
                lat = r["latency"]
                msg += f"; latency p50 {lat['p50_ms']:.0f} ms p99 {lat['p99_ms']:.0f} ms"
            p.line(msg)
        else:
            p.line(f"{tag}: FAILED: {r.get('error')}")

    def _one_ceiling(self, w: Workload, kind: str, rep: int) -> None:
        p = self.progress
        tag = f"{w.name} ceiling {kind} rep {rep}/{self.plan.reps}"
        try:
            r = self.ceiling(w, kind, rep)
        except Exception as exc:
            r = {"workload": w.name, "ceiling": kind, "rep": rep, "verified": False}
            r["error"] = f"{type(exc).__name__}: {exc}"
            r["traceback"] = traceback.format_exc()
        self.ceilings.append(r)
        if r["verified"]:
            p.line(f"{tag}: {r['rate_rps']:,.0f} rec/s {r['rate_mbps']:.1f} MB/s")
        else:
            p.line(f"{tag}: FAILED: {r.get('error')}")


Mark = tuple[float, int, float]  # (monotonic time, records on the target, CPU seconds)


def _open_window(
    started: bool, before: Mark | None, now: float, copied: int, total: int, tree: procs.Tree
) -> tuple[Mark | None, Mark | None]:
    """(where the copy window opens, or None yet; the last poll that saw nothing). The window
    opens at the first poll that sees records -- or at the poll before it, when that first poll
    already sees all of them (the batch path copies a smoke run's 100,000 records within one
    100 ms poll): the rate is then a lower bound instead of 0."""
    if not started:
        return None, (now, 0, tree.sample())
    if before is not None and copied == total:
        return before, before
    return (now, copied, tree.sample()), before


def producer_perf_props(bootstrap: str) -> dict[str, str]:
    """ProducerPerformance with the producer settings kmirror uses (Java names)."""
    return {
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "enable.idempotence": "true",
        "max.in.flight.requests.per.connection": "5",
        "linger.ms": "10",
        "batch.size": "1000000",
        "compression.type": "none",
    }


def host_info() -> dict[str, Any]:
    import psutil

    return {
        "cpus": os.cpu_count(),
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "load_avg_start": os.getloadavg(),
    }


def versions() -> dict[str, Any]:
    import kmirror

    java = subprocess.run(
        [kafkalocal.java_bin(), "-version"], capture_output=True, text=True, check=False
    ).stderr.splitlines()

    def git(*args: str) -> str:
        proc = subprocess.run(
            ["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, check=False
        )
        return proc.stdout.strip()

    return {
        "kmirror": kmirror.__version__,
        "git_commit": git("rev-parse", "--short", "HEAD"),
        # The engine measured is the working tree's: say when it differs from the commit.
        "engine_changes": git("status", "--porcelain", "--", "image/kmirror").splitlines(),
        "confluent_kafka": confluent_kafka.__version__,
        "librdkafka": confluent_kafka.libversion()[0],
        "kafka_jars": kafka_jar_dir().name,
        "mm2_jars": mm2_jar_dir().name,
        "java": java[0] if java else "?",
    }


def _r(t0: float) -> float:
    return round(time.monotonic() - t0, 2)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m scripts.bench.run", description=__doc__)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--full", dest="mode", action="store_const", const="full")
    mode.add_argument("--smoke", dest="mode", action="store_const", const="smoke")
    ap.add_argument("--out-dir", type=Path, default=RESULTS_DIR, help="default bench/results")
    ap.add_argument("--reps", type=int, help="repetitions (full 3, smoke 1)")
    ap.add_argument("--records", type=int, help="records per workload (full 1000000)")
    ap.add_argument("--records-1kb", type=int, help="records of the 1 KB workload (full 1000000)")
    ap.add_argument("--latency-rate", type=int, help="records/s of the latency phase")
    ap.add_argument("--latency-seconds", type=float, help="duration of the latency phase")
    ap.add_argument("--workloads", help="comma list of workloads to run (100B,1KB,small,lz4)")
    ap.add_argument("--only", help="comma list of contender/ceiling names to run")
    ap.add_argument("--experiments", help="extra kmirror variants (scripts/bench/experiments.py)")
    ap.add_argument("--source-port", type=int)
    ap.add_argument("--target-port", type=int)
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    plan = make_plan(args)
    progress = Progress()
    out_dir: Path = args.out_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    bench = Bench(plan, out_dir, progress)

    def on_signal(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    atexit.register(bench.clusters_down)  # backstop; the finally below is the normal path
    try:
        result = bench.run()
    except KeyboardInterrupt:
        progress.line("interrupted")
        return 130
    finally:
        progress.line("stopping the bench clusters")
        bench.clusters_down()
    base = out_dir / f"{plan.mode}-{bench.stamp}"
    json_path = base.with_suffix(".json")
    json_path.write_text(json.dumps(result, indent=1, default=str) + "\n")
    md_path = base.with_suffix(".md")
    md_path.write_text(report.markdown(result))
    png_path = base.with_suffix(".png")
    report.chart(result, png_path)
    failed = [r for r in result["runs"] + result["ceilings"] if not r.get("verified")]
    progress.line(f"done in {result['meta']['duration_s']:.0f} s: {json_path}")
    sys.stdout.write(report.markdown(result))
    if failed:
        progress.line(f"{len(failed)} run(s) FAILED")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
