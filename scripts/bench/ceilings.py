"""The ceilings: what the clients and brokers do without a mirror in between.

- producer-perf: Kafka's Java ProducerPerformance into a new topic on the target, with the
  producer settings kmirror uses; the figure is the tool's own summary (its first metadata and
  producer-id round trips included, so a conservative ceiling).
- python-produce: the confluent-kafka loop (scripts/bench/loops.py) into a new target topic.
- python-consume: the confluent-kafka loop reading the workload's source topic.

The best produce ceiling is the target's ingest ceiling the report compares the mirrors with.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scripts import kafkalocal
from scripts.bench import kafkaio, procs
from scripts.bench.contenders import MM2_PRODUCER, kafka_jar_dir
from scripts.bench.plan import Workload

KINDS = ("producer-perf", "python-produce", "python-consume")
# Runs a loop (scripts.bench.loops) in its own process: (arguments, log name) -> its JSON.
Loop = Callable[[list[str], str], dict[str, Any]]


def producer_perf_props(bootstrap: str) -> dict[str, str]:
    """ProducerPerformance with the producer settings kmirror uses (Java names, as MM2 gets
    them)."""
    return {"bootstrap.servers": bootstrap, **MM2_PRODUCER}


def run_ceiling(
    kind: str, w: Workload, source: str, target: str, run_id: str, loop: Loop, log_dir: Path
) -> dict[str, Any]:
    """One ceiling run over w.ceiling_records records of the workload's size."""
    n = w.ceiling_records
    res: dict[str, Any] = {"records": n, "record_bytes": w.size}
    if kind == "python-consume":
        out = loop(["consume", source, w.topic, str(n)], f"{run_id}-{kind}")
        res.update(out)
        res["verified"] = out["records"] == n and not out["errors"]
        return res
    topic = f"ceiling-{run_id}"
    kafkaio.create_topic(target, topic, w.partitions)
    if kind == "python-produce":
        args = ["produce", target, topic, str(n), str(w.shape.size), f"--partitions={w.partitions}"]
        out = loop(args, f"{run_id}-{kind}")
    else:
        out = producer_perf(target, topic, n, w.size, log_dir / f"{run_id}-producer-perf.log")
    res.update(out)
    res["verified"] = sum(kafkaio.end_offsets(target, topic, w.partitions)) == n
    return res


def producer_perf(target: str, topic: str, records: int, size: int, log: Path) -> dict[str, Any]:
    props = producer_perf_props(target)
    cmd = [
        kafkalocal.java_bin(),
        "-Xmx1g",
        "-cp",
        f"{kafka_jar_dir()}/*",
        "org.apache.kafka.tools.ProducerPerformance",
        *("--topic", topic, "--num-records", str(records), "--record-size", str(size)),
        *("--throughput", "-1", "--producer-props"),
        *[f"{k}={v}" for k, v in props.items()],
    ]
    log.parent.mkdir(parents=True, exist_ok=True)
    tree = procs.Tree(cmd, log)
    try:
        tree.wait(600)
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
        "rate_mbps": rps * size / 1e6,
        "seconds": int(m.group(1)) / rps,
        "cpu_s": cpu,
        "peak_rss_mb": tree.peak_rss / 2**20,
        "command": cmd,
    }
