"""Benchmark: kmirror against Apache MirrorMaker 2 on two dedicated local clusters.

    python -m scripts.bench.run --smoke     # small backlogs, 1 repetition (CI)
    python -m scripts.bench.run --full      # backlogs of 10+ s for the fastest, 3 repetitions

Writes bench/results/<mode>-<stamp>.{json,md,png} (and the contenders' logs next to them).
Method and settings: docs/benchmarks.md; what runs: scripts/bench/plan.py. Exit code 0 only if
every run copied what it should.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import dataclasses
import datetime as dt
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

import confluent_kafka

from scripts import kafkalocal
from scripts.bench import ceilings, clusters, kafkaio, phases, procs, quiet, report
from scripts.bench.contenders import REPO_ROOT, Contender, kafka_jar_dir, mm2_jar_dir
from scripts.bench.drain import Drain
from scripts.bench.loops import producer_conf
from scripts.bench.plan import Plan, Workload, make_plan
from scripts.bench.preload import preload, run_loops
from scripts.bench.progress import Progress
from scripts.bench.registries import Registries

RESULTS_DIR = REPO_ROOT / "bench" / "results"
STOP_GRACE_S = 10.0
PRELOAD_TIMEOUT_S = 900.0


class Bench:
    def __init__(self, plan: Plan, out_dir: Path, progress: Progress) -> None:
        self.plan = plan
        self.progress = progress
        self.stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        self.out_dir = out_dir
        self.log_dir = out_dir / f"{plan.mode}-{self.stamp}-logs"
        self.src = f"127.0.0.1:{plan.source[1]}"
        self.tgt = f"127.0.0.1:{plan.target[1]}"
        # Where the contenders reach the source; the harness (loaders, offsets, the latency
        # phase's producer) always uses self.src. They differ when the mirror's link to the
        # source goes through a proxy (scripts/bench/wan.py).
        self.mirror_src = self.src
        self.runs: list[dict[str, Any]] = []
        self.ceilings: list[dict[str, Any]] = []
        self.preloads: list[dict[str, Any]] = []
        self.warmups: list[dict[str, Any]] = []  # the uncounted round (Plan.warmup)
        self._seq = 0
        self._clusters_up = False
        # Schema registries, when a contender mirrors schemas (scripts/bench/registries.py).
        framed = any(plan.mirrors_schemas(w) for w in plan.workloads)
        self.registries = Registries(plan) if framed else None

    # -- clusters --------------------------------------------------------------------------

    def clusters_up(self) -> dict[str, Any]:
        names = [self.plan.source[0], self.plan.target[0]]
        self._clusters_up = True
        t0 = time.monotonic()
        clusters.fresh([self.plan.source, self.plan.target])
        return {"names": names, "bootstraps": [self.src, self.tgt], "start_s": _r(t0)}

    def clusters_down(self) -> None:
        """The clusters and, when it has them, the run's schema registries."""
        if self.registries is not None:
            for line in self.registries.down():
                self.progress.line(line)
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

    def _preload(self, w: Workload) -> None:
        self.progress.line(
            f"preload {w.name}: {w.records:,} records of {w.size} B → {w.topic} "
            f"({w.shape.producers} producer(s))"
        )
        res = preload(w, self.src, self.log_dir, PRELOAD_TIMEOUT_S)
        self.preloads.append(res)
        shape = res["batch_shape"].get("records_per_batch", {})
        self.progress.line(
            f"preload {w.name}: done in {res['seconds']:.1f} s "
            f"({res['rate_rps']:,.0f} rec/s, {res['rate_mbps']:.1f} MB/s); records per batch "
            f"mean {shape.get('mean')} p10 {shape.get('p10')} p50 {shape.get('p50')} "
            f"p90 {shape.get('p90')} max {shape.get('max')}"
        )

    # -- one contender run -----------------------------------------------------------------

    def contender_run(self, w: Workload | None, c: Contender, rep: int) -> dict[str, Any]:
        """A drain of w's backlog (and the phases, when w hosts them), or with w None the
        phases alone."""
        run_id = self._run_id()
        res: dict[str, Any] = {
            "workload": w.name if w else "phases",
            "contender": c.name,
            "rep": rep,
            "run_id": run_id,
            "verified": False,
        }
        self._clean_target()
        if w is not None:
            res.update(self._warm(w))
        res.update(self._settle())
        topics: list[str] = []
        if w is not None:
            res.update({"records": w.records, "record_bytes": w.size})
            kafkaio.create_topic(self.tgt, w.topic, w.partitions)
            topics.append(w.topic)
        plan_phases = self.plan.phases
        # Not the schema-mirroring contenders: the phases' records are not framed.
        hosts = (
            plan_phases is not None
            and (w is None or plan_phases.host == w.name)
            and not c.schema_id_mode
        )
        ptopics = None
        if plan_phases is not None and hosts:
            ptopics = phases.prepare(plan_phases, c, run_id, self.src, self.tgt)
            topics += ptopics.names()
        run_dir = self.log_dir / f"{run_id}-{res['workload']}-{c.name}-rep{rep}"
        urls = self.registries.urls if self.registries is not None else None
        launch = c.prepare(run_dir, run_id, self.mirror_src, self.tgt, topics, urls)
        res["command"] = launch.cmd
        res["config_files"] = {k: str(v) for k, v in launch.files.items()}
        tree = procs.Tree(launch.cmd, run_dir / f"{c.kind}.log", env=launch.env, cwd=REPO_ROOT)
        try:
            if w is not None:
                self._drain(w, c, tree, res, f"bench-{run_id}")
            else:
                res["verified"] = True
            if res["verified"] and ptopics is not None and plan_phases is not None:
                if w is not None and not res["complete"]:
                    raise RuntimeError(f"{w.name} hosts the phases: its drain must complete")
                if c.kind == "kmirror":
                    settled = kafkaio.group_settled(self.src, f"bench-{run_id}", c.parallelism)
                    res["group_settled_s"] = settled
                phases.run(
                    plan_phases,
                    c,
                    ptopics,
                    tree,
                    self.src,
                    self.tgt,
                    res,
                    run_dir,
                    self.progress.tick,
                )
        finally:
            res["peak_rss_mb"] = tree.peak_rss / 2**20
            res["processes"] = tree.process_count
            alive = tree.running()
            code, stop_s = tree.stop(STOP_GRACE_S)
            res.update({"exit_code": code, "stop_s": round(stop_s, 2), "alive_at_end": alive})
            res["load_avg_end"] = os.getloadavg()[0]
            if not res["verified"]:
                res["log_tail"] = tree.log_tail()
            with contextlib.suppress(Exception):
                if ptopics is not None:
                    kafkaio.delete_topics(self.src, ptopics.names(), wait=False)
        return res

    def _settle(self) -> dict[str, Any]:
        """Flush the disk, then wait for a quiet machine (quiet.py); what the run started on."""
        flushed = quiet.flush_disk()
        started = quiet.wait_quiet(self.plan.quiet)
        return {**flushed, **started, "load_avg_start": os.getloadavg()[0]}

    def _warm(self, w: Workload) -> dict[str, Any]:
        """The source backlog w's run reads, into the page cache (quiet.py)."""
        return quiet.warm_backlog(self.source_data(), w.topic)

    def source_data(self) -> Path:
        """The source broker's data directory (a bench with another source layout says its
        own)."""
        return kafkalocal.files(self.plan.source[0])["data"]

    def _drain(
        self, w: Workload, c: Contender, tree: procs.Tree, res: dict[str, Any], group: str
    ) -> None:
        source_end = kafkaio.end_offsets(self.src, w.topic, w.partitions)
        Drain(
            self.src,
            self.tgt,
            w.topic,
            w.partitions,
            w.shape.mean_size,
            c.exactly_once,
            group,
            self.plan.drain_timeout_s,
            self.plan.max_copy_s,
            self.progress.tick,
            f"{w.name} {c.name}",
        ).watch(tree, source_end, res)
        if res["verified"] and w.schema_id is not None and self.registries is not None:
            # Framed values: the copy carries the schema ID it should (registries.py).
            check = self.registries.check(w, c, self.src, self.tgt)
            res["schema_check"] = check
            if "error" in check:
                res.update(verified=False, error=f"schema check: {check['error']}")

    # -- ceilings --------------------------------------------------------------------------

    def ceiling(self, w: Workload, kind: str, rep: int) -> dict[str, Any]:
        run_id = self._run_id()
        res: dict[str, Any] = {"workload": w.name, "ceiling": kind, "rep": rep}
        if kind != "python-consume":
            self._clean_target()
        else:
            res.update(self._warm(w))
        res.update(self._settle())

        def loop(args: list[str], name: str) -> dict[str, Any]:
            return run_loops([(args, name)], self.log_dir, self.plan.drain_timeout_s)[0]

        res.update(ceilings.run_ceiling(kind, w, self.src, self.tgt, run_id, loop, self.log_dir))
        res["load_avg_end"] = os.getloadavg()[0]
        return res

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
            "plan": describe_plan(plan, self.tgt),
        }
        p.line(
            f"bench {plan.mode}: clusters {plan.source[0]}={self.src} "
            f"{plan.target[0]}={self.tgt}; logs in {self.log_dir}"
        )
        self.log_dir.mkdir(parents=True, exist_ok=True)
        meta["clusters"] = self.clusters_up()
        p.line(f"clusters up in {meta['clusters']['start_s']:.1f} s")
        if self.registries is not None:
            meta["registries"] = self.registries.up(plan)
            p.line(f"schema registries up: {meta['registries']}")
        for w in plan.workloads:
            self._preload(w)
        self._warm_up()
        for rep in range(1, plan.reps + 1):
            for w in plan.workloads:
                items: list[tuple[str, Any]] = [("contender", c) for c in plan.contenders_for(w)]
                if w.ceiling_records:
                    items += [("ceiling", k) for k in plan.ceilings]
                for kind, item in _rotate(items, rep):
                    if kind == "contender":
                        self._one_contender(w, item, rep)
                    else:
                        self._one_ceiling(w, item, rep)
            if plan.phases is not None and plan.phases.host is None:
                wanted = [
                    c
                    for c in plan.contenders
                    if (plan.phases.runs(c.name) or phases.runs_sustained(plan.phases, c))
                    and not c.schema_id_mode
                ]
                for c in _rotate(wanted, rep):
                    self._one_contender(None, c, rep)
        self._clean_target()
        meta["finished"] = dt.datetime.now().isoformat(timespec="seconds")
        meta["duration_s"] = round(time.time() - started, 1)
        meta["load_avg_end"] = os.getloadavg()
        result = {
            "meta": meta,
            "preloads": self.preloads,
            "warmups": self.warmups,
            "runs": self.runs,
            "ceilings": self.ceilings,
        }
        result["summary"] = report.summarize(result)
        return result

    def _warm_up(self) -> None:
        """The uncounted round: the first workload's drain and the phases, once per kind of
        contender (Plan.warmup_contenders), recorded under "warmups", in no median. In session
        21's two runs the first repetition after the preloads was slow for every contender
        (100 B: 633,296 and 732,869 records/s against 1.8 M in the next two; the phases' p99
        twice the later ones), with a warm backlog on a quiet CPU; whichever contender drew the
        first places lost."""
        picks = self.plan.warmup_contenders()
        ph = self.plan.phases
        for c in picks:
            if self.plan.workloads:
                self._one_contender(self.plan.workloads[0], c, 0, self.warmups)
            if ph is not None and ph.host is None and ph.runs(c.name) and not c.schema_id_mode:
                self._one_contender(None, c, 0, self.warmups)

    def _one_contender(
        self, w: Workload | None, c: Contender, rep: int, into: list[dict[str, Any]] | None = None
    ) -> None:
        """One run into self.runs (or `into`); rep 0 is the warm-up round."""
        p = self.progress
        of = f"rep {rep}/{self.plan.reps}" if rep else "warm-up"
        tag = f"{w.name if w else 'phases'} {c.name} {of}"
        p.line(f"{tag}: start")
        try:
            r = self.contender_run(w, c, rep)
        except Exception as exc:  # one broken run must not lose the others
            r = {"workload": w.name if w else "phases", "contender": c.name, "rep": rep}
            r["verified"] = False
            r["error"] = f"{type(exc).__name__}: {exc}"
            r["traceback"] = traceback.format_exc()
        (self.runs if into is None else into).append(r)
        p.line(f"{tag}: {report.run_line(r)}")

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


def _rotate(items: list[Any], rep: int) -> list[Any]:
    """Shift the order by one place each repetition: nothing always runs first or last."""
    if not items:
        return items
    shift = (rep - 1) % len(items)
    return items[shift:] + items[:shift]


def describe_plan(plan: Plan, target: str) -> dict[str, Any]:
    ph = plan.phases
    return {
        "reps": plan.reps,
        "max_copy_s": plan.max_copy_s,
        "workloads": [w.describe() for w in plan.workloads],
        "contenders": [c.describe() for c in plan.contenders],
        "ceilings": plan.ceilings,
        "quiet": dataclasses.asdict(plan.quiet),
        "phases": None
        if ph is None
        else {
            "latency_rate_rps": ph.latency_rate,
            "latency_seconds": ph.latency_seconds,
            "latency_partitions": ph.latency_partitions,
            "sustained": sorted(ph.sustained),
            "sustained_start_rps": ph.sustained_start,
            "sustained_step_s": ph.sustained_step_s,
            "sustained_steps": ph.sustained_steps,
            "sustained_partitions": ph.sustained_partitions,
            "sustained_producers": ph.sustained_shape.producers,
            "host": ph.host,
        },
        # Kept at the top level for report.py and older readers of the JSON.
        "latency_rate_rps": ph.latency_rate if ph else None,
        "latency_seconds": ph.latency_seconds if ph else None,
        "producer_perf_props": ceilings.producer_perf_props(target),
        "python_loop_producer": {k: v for k, v in producer_conf(target).items() if k != "logger"},
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
    ap.add_argument("--records", type=int, help="backlog of every workload (see plan.py)")
    ap.add_argument("--records-1kb", type=int, help="backlog of the 1KB workload")
    ap.add_argument(
        "--max-copy-s", type=float, help="cut a drain after this long (full 10; smoke: never)"
    )
    ap.add_argument(
        "--workloads",
        help="comma list of workloads (100B,1KB,small,lz4,mixed), or none: the phases alone",
    )
    ap.add_argument("--only", help="comma list of contender/ceiling names to run")
    ap.add_argument("--experiments", help="extra kmirror variants (scripts/bench/experiments.py)")
    ap.add_argument("--latency-rate", type=int, help="records/s of the latency phase")
    ap.add_argument("--latency-seconds", type=float, help="duration of the latency phase")
    ap.add_argument(
        "--sustained", help="contenders that search their sustained rate (full kmirror-1,mm2-1)"
    )
    ap.add_argument("--sustained-start", type=int, help="records/s of the search's first step")
    ap.add_argument("--sustained-steps", type=int, help="at most this many steps per search")
    ap.add_argument("--no-phases", action="store_true", help="no latency or sustained phase")
    ap.add_argument(
        "--no-warmup",
        action="store_true",
        help="no uncounted warm-up round before the repetitions (full runs have one)",
    )
    ap.add_argument(
        "--settle-max-s",
        type=float,
        help="wait at most this long for a quiet machine before each run (full 90, smoke 0)",
    )
    ap.add_argument(
        "--clusters", help="name prefix of the two clusters (default bsrc/btgt, bsmoke-src/-tgt)"
    )
    ap.add_argument("--source-port", type=int)
    ap.add_argument("--target-port", type=int)
    return ap.parse_args(argv)


def disk_problem(plan: Plan, root: Path) -> str | None:
    """Why the disk under the clusters' data cannot hold this run's backlogs, or None."""
    where = root
    while not where.exists():
        where = where.parent
    free, need = shutil.disk_usage(where).free, plan.disk_needed()
    if free >= need:
        return None
    gb = 1e9
    return (
        f"{free / gb:.1f} GB free under {where}, and this run needs about {need / gb:.1f} GB "
        "(its backlogs and room for one copy, see docs/benchmarks.md). Free disk space (old "
        "clones, stopped clusters: scripts/kafka-local down NAME), or make the run smaller "
        "with --records N / --workloads"
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    plan = make_plan(args)
    progress = Progress()
    out_dir: Path = args.out_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    problem = disk_problem(plan, kafkalocal.clusters_root())
    if problem:
        print(f"bench: {problem}", file=sys.stderr)
        return 2
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
    # A warm-up run that copied wrong is a failed copy too, though in no median.
    failed = [
        r for r in result["warmups"] + result["runs"] + result["ceilings"] if not r.get("verified")
    ]
    progress.line(f"done in {result['meta']['duration_s']:.0f} s: {json_path}")
    sys.stdout.write(report.markdown(result))
    if failed:
        progress.line(f"{len(failed)} run(s) FAILED")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
