"""Throttle figure: does a 10 MiB/s backlog limit hold a catch-up copy to 10 MiB/s, and does the
tail stay live meanwhile?

    python -m scripts.bench.throttle [--engines auto,record,batch] [--json-out PATH]

It starts two clusters of its own (kafka-local `thrsrc`/`thrtgt` on ports 13392/14392) and stops
and wipes them at the end. On the source, a backlog topic (BACKLOG: 1 KiB records, no keys,
4 partitions, about two minutes at the limit) is loaded once; then, per engine, `kmirror run
--throttle backlog.bytes=10485760,tail.bytes=2097152` (fresh group, the target emptied) copies
it while a live topic is written at LIVE_RATE records/s throughout (the latency phase of `make
bench`: scripts/bench/latency.py, measured from produce() to a consumer on the target).

Measured per engine:

- the backlog copy rate, sampled every SAMPLE_S from the target, over WINDOW_S after WARM_UP_S
  from the first backlog record on the target: the mean over the window and the rate of each
  10 s part of it. Bytes are counted as the throttle counts them on the engine's path
  (docs/control.md "Throttles"): on the record path key plus value (records x 1024: the
  records have no key), on the batch path the record batches with their framing, i.e. the
  size of the target's log segments of the backlog topic (the batch path writes the source's
  batches as they are; read from the target broker's data directory, which this run owns).
  The default engine (auto) copies these full batches on the batch path, so it is judged by
  the batch figure; both figures are kept.
- the live records' end-to-end latency (p50/p99) over the whole live load.

The goal (issue 25): 10 MiB/s +-10 % over the minute, live p99 under 1 s. PASS/MISS per engine
in bench/results/throttle.json, with the load average at the start and the end (2 cores shared
with other work: the figure is only as good as the machine was quiet). Results:
docs/benchmarks.md ("Throttle").
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from scripts import kafkalocal
from scripts.bench import clusters, kafkaio, phases, procs
from scripts.bench.contenders import REPO_ROOT, Contender
from scripts.bench.plan import Phases, Shape, Workload
from scripts.bench.preload import preload
from scripts.bench.progress import Progress
from scripts.kafkalocal.spec import files

CLUSTERS = (("thrsrc", 13392), ("thrtgt", 14392))
PRELOAD_TIMEOUT_S = 900.0
LIMIT_BPS = 10 * 2**20  # the backlog limit under test: 10 MiB/s
TOLERANCE = 0.10
LIVE_P99_GOAL_MS = 1000.0
# The tail's own limit: about seven times what the live topic writes, so it shapes nothing here
# but is in force (a flow with a tail limit is what an operator would run).
TAIL_BPS = 2 * 2**20
SPEC = f"backlog.bytes={LIMIT_BPS},tail.bytes={TAIL_BPS}"
RECORD_BYTES = 1024
# About two minutes at the limit: the backlog must outlast the warm-up and the window.
BACKLOG = Workload("throttle", 1_200_000, Shape(RECORD_BYTES, producers=2), partitions=4)
LIVE_RATE = 300  # records/s of RECORD_BYTES on the live topic
LIVE_PARTITIONS = 2
WARM_UP_S = 10.0  # from the first backlog record on the target to the window's start
WINDOW_S = 60.0
PART_S = 10.0
SAMPLE_S = 1.0
# The live load covers the warm-up and the window (it starts once its sentinels are across).
LIVE_S = WARM_UP_S + WINDOW_S + 5.0
STOP_GRACE_S = 15.0

Sample = tuple[float, int, int]  # monotonic time, records on the target, log bytes on the target


# -- the arithmetic (tests/bench/test_bench_logic.py) ------------------------------------------


def at_or_after(samples: list[tuple[float, float]], t: float) -> tuple[float, float]:
    """The first (time, value) sample taken at or after t (the last one if none is)."""
    return next((s for s in samples if s[0] >= t), samples[-1])


def window_rates(
    samples: list[tuple[float, float]], start: float, seconds: float, part_s: float
) -> dict[str, Any]:
    """Rate of a growing count (e.g. bytes on the target) over [start, start + seconds] and over
    each part_s part of it, each between the first samples taken at or after its ends (so a
    rate is over the samples' real interval, not the nominal one)."""
    t0, v0 = at_or_after(samples, start)
    t1, v1 = at_or_after(samples, start + seconds)
    parts = []
    for k in range(round(seconds / part_s)):
        a, va = at_or_after(samples, start + k * part_s)
        b, vb = at_or_after(samples, start + (k + 1) * part_s)
        parts.append((vb - va) / (b - a) if b > a else float("nan"))
    return {
        "seconds": t1 - t0,
        "mean": (v1 - v0) / (t1 - t0) if t1 > t0 else float("nan"),
        "parts": parts,
        "min": min(parts, default=float("nan")),
        "max": max(parts, default=float("nan")),
    }


def verdict(rate_bps: float, p99_ms: float) -> tuple[bool, str]:
    """Against the goal: LIMIT_BPS +-TOLERANCE and live p99 under LIVE_P99_GOAL_MS."""
    held = abs(rate_bps / LIMIT_BPS - 1) <= TOLERANCE
    live = p99_ms < LIVE_P99_GOAL_MS
    text = (
        f"{rate_bps / 2**20:.2f} MiB/s ({'within' if held else 'outside'} 10 MiB/s +-10 %), "
        f"live p99 {p99_ms:.0f} ms ({'under' if live else 'not under'} 1 s)"
    )
    return held and live, text


# -- sampling the target -----------------------------------------------------------------------


def log_bytes(cluster: str, topic: str, partitions: int) -> int:
    """Bytes of the topic's log segments in the broker's data directory (batches with framing)."""
    data = files(cluster)["data"]
    total = 0
    for p in range(partitions):
        for seg in (data / f"{topic}-{p}").glob("*.log"):
            try:
                total += seg.stat().st_size
            except FileNotFoundError:  # a segment rolled away between listing and stat
                continue
    return total


class Sampler:
    """The backlog topic's records and log bytes on the target every SAMPLE_S, in a thread."""

    def __init__(self, target: str, cluster: str, w: Workload) -> None:
        self.samples: list[Sample] = []
        self._args = (target, cluster, w)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="throttle-sampler", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        target, cluster, w = self._args
        while not self._stop.is_set():
            t = time.monotonic()
            records = sum(kafkaio.end_offsets(target, w.topic, w.partitions))
            self.samples.append((t, records, log_bytes(cluster, w.topic, w.partitions)))
            self._stop.wait(max(0.0, SAMPLE_S - (time.monotonic() - t)))

    def first(self) -> float | None:
        return next((t for t, n, _ in self.samples if n > 0), None)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)


# -- one engine --------------------------------------------------------------------------------


def run_engine(
    engine: str, source: str, target: str, work: Path, progress: Progress
) -> dict[str, Any]:
    run_id = uuid.uuid4().hex[:8]
    kafkaio.delete_topics(target, [t for t in kafkaio.topics(target) if not t.startswith("__")])
    kafkaio.create_topic(target, BACKLOG.topic, BACKLOG.partitions)
    live = Phases(
        latency_rate=LIVE_RATE,
        latency_seconds=LIVE_S,
        contenders=frozenset(),
        sustained=frozenset(),  # no sustained-rate search
        sustained_start=0,
        sustained_step_s=0.0,
        sustained_steps=0,
        latency_partitions=LIVE_PARTITIONS,
        latency_size=RECORD_BYTES,
    )
    c = Contender(f"kmirror-{engine}", "kmirror", 1, engine="" if engine == "auto" else engine,
                  args=("--throttle", SPEC))  # fmt: skip
    topics = phases.prepare(live, c, run_id, source, target)
    run_dir = work / f"{engine}-{run_id}"
    launch = c.prepare(run_dir, run_id, source, target, [BACKLOG.topic, *topics.names()])
    res: dict[str, Any] = {"engine": engine, "command": launch.cmd, "verified": True,
                           "load_avg_start": os.getloadavg()}  # fmt: skip
    progress.line(f"{engine}: kmirror run --throttle {SPEC} (log {run_dir}/kmirror.log)")
    tree = procs.Tree(launch.cmd, run_dir / "kmirror.log", env=launch.env, cwd=REPO_ROOT)
    sampler = Sampler(target, CLUSTERS[1][0], BACKLOG)
    try:
        phases.run(live, c, topics, tree, source, target, res, run_dir, progress.tick)
        first = sampler.first()
        while first is not None and time.monotonic() < first + WARM_UP_S + WINDOW_S + SAMPLE_S:
            time.sleep(SAMPLE_S)  # the window outlasted the live load (a slow start)
        res["cpu_s"] = tree.sample()
    finally:
        sampler.close()
        code, _ = tree.stop(STOP_GRACE_S)
        res["exit_code"] = code
        res["load_avg_end"] = os.getloadavg()
    res.update(measure(sampler.samples, engine, res))
    return res


def measure(samples: list[Sample], engine: str, res: dict[str, Any]) -> dict[str, Any]:
    """The window's rates by both byte counts, the verdict by the engine's (see the module)."""
    first = next((t for t, n, _ in samples if n > 0), None)
    total = BACKLOG.records
    if first is None:
        return {"verified": False, "error": "no backlog record reached the target"}
    start = first + WARM_UP_S
    kv = window_rates([(t, n * RECORD_BYTES) for t, n, _ in samples], start, WINDOW_S, PART_S)
    batches = window_rates([(t, b) for t, _, b in samples], start, WINDOW_S, PART_S)
    end_records = at_or_after([(t, n) for t, n, _ in samples], start + WINDOW_S)[1]
    out: dict[str, Any] = {
        "bytes_key_value": kv,
        "bytes_batches": batches,
        "counted_as": "key_value" if engine == "record" else "batches",
        "backlog_copied_by_window_end": end_records,
        "backlog_records": total,
        "samples": [(round(t - first, 3), n, b) for t, n, b in samples],
    }
    error = None
    if end_records >= total:
        error = "the backlog ran out before the window ended: the rate is not the throttle's"
    elif "latency" not in res:
        error = res.get("error", "no latency figure")
    if error is not None:
        out.update(verified=False, error=error, passed=False)
        return out
    rate = (kv if out["counted_as"] == "key_value" else batches)["mean"]
    out["passed"], out["verdict"] = verdict(rate, res["latency"]["p99_ms"])
    return out


# -- the run -----------------------------------------------------------------------------------


def line(r: dict[str, Any]) -> str:
    """The PASS/MISS line of one engine: the rate by the bytes its throttle counts."""
    if "verdict" not in r:
        return f"{r['engine']:7} FAILED: {r.get('error')}"
    counted = r["counted_as"]
    judged = r[f"bytes_{counted}"]
    other = r["bytes_batches" if counted == "key_value" else "bytes_key_value"]
    mib = 2**20
    return (
        f"{r['engine']:7} {'PASS' if r['passed'] else 'MISS'}: {r['verdict']}; 10 s parts "
        f"{judged['min'] / mib:.2f}-{judged['max'] / mib:.2f} MiB/s ({counted}; the other "
        f"count {other['mean'] / mib:.2f}); live p50 {r['latency']['p50_ms']:.0f} ms; load "
        f"{r['load_avg_start'][0]:.1f} -> {r['load_avg_end'][0]:.1f}"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--engines", default="auto", help="comma list of auto, record, batch")
    ap.add_argument("--json-out", type=Path)
    args = ap.parse_args(argv)
    engines = args.engines.split(",")
    if set(engines) - {"auto", "record", "batch"}:
        ap.error(f"--engines: auto, record or batch, not {args.engines!r}")
    progress = Progress()
    work = Path(tempfile.mkdtemp(prefix="kmirror-throttlebench-"))
    result: dict[str, Any] = {"spec": SPEC, "limit_bytes_per_s": LIMIT_BPS,
                              "tolerance": TOLERANCE, "live_p99_goal_ms": LIVE_P99_GOAL_MS,
                              "backlog": BACKLOG.describe(), "live_rate_rps": LIVE_RATE,
                              "warm_up_s": WARM_UP_S, "window_s": WINDOW_S,
                              "load_avg_start": os.getloadavg(), "cpus": os.cpu_count(),
                              "runs": []}  # fmt: skip
    try:
        progress.line(f"clusters {CLUSTERS} starting")
        source, target = clusters.fresh(CLUSTERS)
        progress.line(f"preload {BACKLOG.records:,} x {RECORD_BYTES} B -> {BACKLOG.topic}")
        result["preload"] = preload(BACKLOG, source, work, PRELOAD_TIMEOUT_S)
        for engine in engines:
            r = run_engine(engine, source, target, work, progress)
            r["line"] = line(r)
            result["runs"].append(r)
            progress.line(r["line"])
    finally:
        procs.kill_all()
        kafkalocal.down([n for n, _ in CLUSTERS], keep=False)
        result["load_avg_end"] = os.getloadavg()
        if args.json_out:
            args.json_out.parent.mkdir(parents=True, exist_ok=True)
            args.json_out.write_text(json.dumps(result, indent=2) + "\n")
    for r in result["runs"]:
        print(line(r))
    print(f"logs: {work}", file=sys.stderr)
    return 0 if result["runs"] and all(r.get("passed") for r in result["runs"]) else 1


if __name__ == "__main__":
    sys.exit(main())
