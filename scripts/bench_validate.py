#!/usr/bin/env python3
"""Benchmark kmirror-validate's digest mode against a plain Spark read-and-count.

Writes N records (default 2,000,000; 8 partitions; 100-byte values with an 8-byte key and a
fixed timestamp) to a fresh topic on each cluster, identical on both sides, so the digest run
compares 2N records and finds a match. Then, in one local Spark session:

  baseline  spark.read.format("kafka") over exactly the same ranges on both sides, count()
  digest    the validation job (snapshot, read, normalise, match, order check, report)

each --rounds times (default 5); the first round warms the JVM up, the median of the others is
the headline (the ratio moves between rounds on a shared machine). Prints records/s for both,
the ratio baseline time / digest time (the goal is >= 0.5) and the load average.

    .venv/bin/python scripts/bench_validate.py [--records 2000000] [--master 'local[2]']
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for p in (ROOT / "image", ROOT / "spark-validate"):
    sys.path.insert(0, str(p))

TS = 1_700_000_000_000


def produce_side(bootstrap: str, topic: str, records: int, partitions: int, size: int) -> float:
    """Produce the benchmark records to one cluster; returns seconds taken."""
    from confluent_kafka import Producer

    started = time.monotonic()
    producer = Producer({
        "bootstrap.servers": bootstrap, "linger.ms": 50, "batch.num.messages": 100_000,
        "batch.size": 8_000_000, "queue.buffering.max.messages": 2_000_000,
        "queue.buffering.max.kbytes": 2_000_000, "compression.type": "lz4",
        # Idempotence keeps the order per partition through retries: both sides must agree.
        "enable.idempotence": True,
    })  # fmt: skip
    base = bytes(range(256)) * (size // 256 + 1)
    pad = size - 16
    errors: list[str] = []

    def report(err: Any, _msg: Any) -> None:
        if err is not None and len(errors) < 5:
            errors.append(str(err))

    for i in range(records):
        value = base[i % 251 : i % 251 + pad] + b"%016d" % i
        while True:
            try:
                producer.produce(topic, value=value, key=b"%08d" % i, partition=i % partitions,
                                 timestamp=TS + i // 1000, on_delivery=report)  # fmt: skip
                break
            except BufferError:
                producer.poll(0.05)
        if i % 10_000 == 0:
            producer.poll(0)
    if producer.flush(300) or errors:
        raise SystemExit(f"produce to {bootstrap} failed: {errors or 'flush timed out'}")
    return time.monotonic() - started


def create(bootstrap: str, topic: str, partitions: int) -> None:
    from kmirror.kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    fut = admin.create_topics([NewTopic(topic, partitions, 1, config={"retention.ms": "-1"})])
    fut[topic].result(60)


def delete(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        admin.delete_topics([topic])[topic].result(60)
    except Exception as exc:  # a leftover topic is not worth failing the benchmark for
        print(f"warning: could not delete {topic} at {bootstrap}: {exc}", file=sys.stderr)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", default=os.environ.get("KMIRROR_SOURCE_BOOTSTRAP",
                                                           "127.0.0.1:19092"))  # fmt: skip
    parser.add_argument("--target", default=os.environ.get("KMIRROR_TARGET_BOOTSTRAP",
                                                           "127.0.0.1:29092"))  # fmt: skip
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--size", type=int, default=100, help="value bytes")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--driver-memory", default="2g")
    parser.add_argument("--keep", action="store_true", help="keep the topics")
    parser.add_argument("--json-out", help="write the figures as JSON here")
    parser.add_argument("--spark-conf", action="append", default=[], metavar="K=V")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    from kmirror.config.model import ClusterConfig, MirrorConfig, TopicSelection
    from kmirror_validate import sparkio
    from kmirror_validate.validate import Options, prepare, run

    topic = f"bench-validate-{uuid.uuid4().hex[:8]}"
    for bootstrap in (args.source, args.target):
        create(bootstrap, topic, args.partitions)
    try:
        print(f"producing {args.records:,} records x 2 clusters to {topic} ...", flush=True)
        with multiprocessing.Pool(2) as pool:
            times = pool.starmap(produce_side, [
                (b, topic, args.records, args.partitions, args.size)
                for b in (args.source, args.target)
            ])  # fmt: skip
        print(f"  produced in {max(times):.1f}s", flush=True)

        config = MirrorConfig(source=ClusterConfig("source", args.source),
                              target=ClusterConfig("target", args.target),
                              group_id="bench-validate")  # fmt: skip
        selection = TopicSelection(include=(topic,))
        spark = sparkio.build_session(
            args.master, sparkio.connector_jars(),
            {"spark.ui.enabled": "false", "spark.driver.memory": args.driver_memory,
             **dict(kv.split("=", 1) for kv in args.spark_conf)},
        )  # fmt: skip
        total = 2 * args.records
        rounds: list[dict[str, float]] = []
        for n in range(1, args.rounds + 1):
            # Baseline: the same ranges, read and counted, nothing else.
            prep = prepare(config, Options(), selection)
            t0 = time.monotonic()
            frames = []
            for cluster, which in ((config.source, "source"), (config.target, "target")):
                snap = prep.snapshot.source if which == "source" else prep.snapshot.target
                ranges = [sparkio.Range(t, p, lo, hi) for (t, p), (lo, hi) in snap.items()]
                frames.append(sparkio.read_kafka(
                    spark, sparkio.reader_options(cluster, "read_committed"), ranges,
                    headers=False,
                ))  # fmt: skip
            counted = sum(f.count() for f in frames if f is not None)
            base_s = time.monotonic() - t0
            assert counted == total, (counted, total)

            t0 = time.monotonic()
            report = run(spark, prepare(config, Options(mode="digest"), selection))
            digest_s = time.monotonic() - t0
            assert report.ok and report.totals()["matched"] == args.records, report.summary()
            figures = {
                "round": n, "baseline_s": round(base_s, 2), "digest_s": round(digest_s, 2),
                "baseline_records_per_s": round(total / base_s),
                "digest_records_per_s": round(total / digest_s),
                "ratio": round(base_s / digest_s, 3),
            }  # fmt: skip
            rounds.append(figures)
            print(f"round {n}: read+count {base_s:6.1f}s = {total / base_s:>10,.0f} rec/s | "
                  f"digest validation {digest_s:6.1f}s = {total / digest_s:>10,.0f} rec/s | "
                  f"ratio {base_s / digest_s:.2f}", flush=True)  # fmt: skip
        spark.stop()
        warm = rounds[1:] or rounds
        median = {k: statistics.median(r[k] for r in warm)
                  for k in ("baseline_s", "digest_s", "ratio")}  # fmt: skip
        load = [round(x, 2) for x in os.getloadavg()]
        print(f"median of {len(warm)} warm rounds: read+count {median['baseline_s']:.1f}s | "
              f"digest validation {median['digest_s']:.1f}s | ratio {median['ratio']:.2f} "
              f"(load average {load[0]} {load[1]} {load[2]})", flush=True)  # fmt: skip
        result = {"records_per_side": args.records, "partitions": args.partitions,
                  "value_bytes": args.size, "master": args.master, "rounds": rounds,
                  "median_warm": median, "load_average": load}  # fmt: skip
        if args.json_out:
            Path(args.json_out).write_text(json.dumps(result, indent=2) + "\n")
        return 0
    finally:
        if not args.keep:
            for bootstrap in (args.source, args.target):
                delete(bootstrap, topic)


if __name__ == "__main__":
    sys.exit(main())
