"""Loading a workload's backlog into the source once, before any contender runs, and the
confluent-kafka loops (scripts/bench/loops.py) as measured subprocesses.

The loader is the confluent-kafka loop: on this machine it produced 100 B records faster than
Kafka's Java ProducerPerformance (776,738 against 657,462 records/s in the reference run), it
can key records, vary their sizes and shape the batches, and `shape.producers` copies of it
load one topic at once (each its share of the records), as several producers of a real
cluster would. The batch shape the loaders made is read back (scripts/bench/batchshape.py) and
kept in the result.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from scripts.bench import batchshape, kafkaio, procs
from scripts.bench.contenders import REPO_ROOT
from scripts.bench.plan import Workload


def run_loops(
    jobs: list[tuple[list[str], str]], log_dir: Path, timeout_s: float
) -> list[dict[str, Any]]:
    """Run `python -m scripts.bench.loops ARGS` for every (ARGS, name) at once; each one's JSON
    result with its process's CPU seconds and peak RSS."""
    log_dir.mkdir(parents=True, exist_ok=True)
    trees = [
        procs.Tree(
            [sys.executable, "-m", "scripts.bench.loops", *args],
            log_dir / f"{name}.log",
            cwd=REPO_ROOT,
        )
        for args, name in jobs
    ]
    out = []
    deadline = time.monotonic() + timeout_s
    try:
        for tree, (_, name) in zip(trees, jobs, strict=True):
            try:
                tree.wait(max(deadline - time.monotonic(), 1.0))
            except subprocess.TimeoutExpired:
                raise RuntimeError(f"{name}: no result in {timeout_s:.0f}s") from None
            cpu = tree.sample()
            code, _ = tree.stop(1)
            lines = [ln for ln in tree.log_path.read_text().splitlines() if ln.startswith("{")]
            if not lines:
                raise RuntimeError(f"{name}: exit {code}, no result:\n{tree.log_tail()}")
            res: dict[str, Any] = json.loads(lines[-1])
            res["cpu_s"] = cpu
            res["peak_rss_mb"] = tree.peak_rss / 2**20
            out.append(res)
    finally:
        for tree in trees:
            if tree.running():
                tree.stop(1)
    return out


# A loader queues records as fast as Python makes them; with small batches the source takes
# them far slower (5 requests in flight per connection, one batch per partition each), and
# kmirror's 60 s message timeout expired records still queued (the first 400,000-record `small`
# preload under load lost most of them). A bounded queue makes produce() wait instead.
LOADER = ("--set=queue.buffering.max.messages=100000", "--set=message.timeout.ms=600000")


def preload(w: Workload, source: str, log_dir: Path, timeout_s: float) -> dict[str, Any]:
    """Create w.topic on the source and load w.records records of w's shape into it; the
    loaders' combined rate and the source's batch shape."""
    t0 = time.monotonic()
    kafkaio.create_topic(source, w.topic, w.partitions)
    n = w.shape.producers
    shares = [w.records // n + (1 if i < w.records % n else 0) for i in range(n)]
    common = [str(w.shape.size), f"--partitions={w.partitions}"]
    if w.schema_id is not None:
        common.append(f"--schema-id={w.schema_id}")
    jobs = [
        (
            ["produce", source, w.topic, str(share), *common, *LOADER, *w.shape.loop_args(i)],
            f"preload-{w.name}-{i}",
        )
        for i, share in enumerate(shares)
    ]
    results = run_loops(jobs, log_dir, timeout_s)
    ends = kafkaio.end_offsets(source, w.topic, w.partitions)
    errors = sum(r.get("errors", 0) for r in results)
    if sum(ends) != w.records or errors:
        raise RuntimeError(f"preload of {w.topic} incomplete: {ends} ({results})")
    seconds = time.monotonic() - t0
    nbytes = sum(r["bytes"] for r in results)
    return {
        "workload": w.name,
        "records": w.records,
        "bytes": nbytes,
        "producers": n,
        "seconds": max(r["seconds"] for r in results),
        "rate_rps": w.records / max(r["seconds"] for r in results),
        "rate_mbps": nbytes / max(r["seconds"] for r in results) / 1e6,
        "cpu_s": sum(r["cpu_s"] for r in results),
        "errors": errors,
        "source_end": ends,
        "wall_s": round(seconds, 2),
        "batch_shape": batchshape.sample(source, w.topic, w.partitions),
        "loaders": results,
    }
