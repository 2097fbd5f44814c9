"""`make demo`: the main job on embedded defaults, end to end, with nothing faked.

Starts two local clusters, writes a few thousand keyed records with headers to sample topics on
`source`, runs `kmirror run` until `target` has caught up, runs `kmirror-validate` on both, prints
a short summary and stops everything (also on failure or Ctrl-C).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from kmirror.kafka.admin import AdminClient, NewTopic
from kmirror.logsetup import configure
from scripts import kafkalocal
from scripts.kmirrorproc import KMIRROR, ProcessGroup, mm1_args

BIN = Path(sys.executable).parent
TOPICS = {"demo.orders": 6, "demo.payments": 3, "demo.audit": 1}
RECORDS_PER_TOPIC = 2000
SOURCE, TARGET = "demo-source", "demo-target"
PORTS = {SOURCE: 19492, TARGET: 29492}
# The demo's own clients log like kmirror's: warnings only, a fresh cluster's start-up
# retries left out (kmirror.logsetup).
CLIENT_LOG: dict[str, Any] = {"logger": logging.getLogger("kmirror.librdkafka")}
# A partition the mirror has just created on the target, before it has a leader.
NOT_READY = (
    KafkaError.NOT_LEADER_FOR_PARTITION,
    KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.UNKNOWN_TOPIC_OR_PART,
)


def step(msg: str) -> None:
    print(f"\n==> {msg}", flush=True)


def produce_samples(bootstrap: str) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap, **CLIENT_LOG})
    futures = admin.create_topics([NewTopic(t, num_partitions=n) for t, n in TOPICS.items()])
    for fut in futures.values():
        fut.result()
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, **CLIENT_LOG})
    total = 0
    for topic in TOPICS:
        for i in range(RECORDS_PER_TOPIC):
            producer.produce(
                topic,
                key=f"customer-{i % 97}".encode(),
                value=json.dumps({"id": i, "topic": topic, "amount": i * 1.5}).encode(),
                headers=[("trace-id", os.urandom(8)), ("source", b"demo"), ("source", b"dup")],
            )
            total += 1
            if i % 1000 == 0:
                producer.poll(0)
    if producer.flush(60):
        raise SystemExit("demo: could not write the sample records")
    return total


def target_count(bootstrap: str) -> int:
    """Records on `bootstrap` in the sample topics; a partition NOT_READY counts as empty until
    the next look."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "demo-counter", **CLIENT_LOG})
    try:
        md = consumer.list_topics(timeout=10)
        total = 0
        for topic in TOPICS:
            t = md.topics.get(topic)
            if t is None or t.error is not None:
                continue
            for p in t.partitions:
                try:
                    lo, hi = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
                except KafkaException as exc:
                    if exc.args[0].code() not in NOT_READY:
                        raise
                    continue
                total += hi - lo
        return total
    finally:
        consumer.close()


def mirror_until_caught_up(mirror: ProcessGroup, dst: str, total: int) -> int:
    """Wait until the target holds every record, then stop the mirror (SIGTERM); its exit code."""
    t0 = time.monotonic()
    # On a terminal one line counts up; in a log (CI, `make demo > file`) a line per change.
    live = sys.stdout.isatty()
    shown = -1
    while (copied := target_count(dst)) < total:
        if not mirror.running():
            raise SystemExit(f"demo: the mirror exited early; see {mirror.log_path}")
        if time.monotonic() - t0 > 120:
            raise SystemExit("demo: the target did not catch up within 120 s")
        if live:
            print(f"\r  target has {copied}/{total} records", end="", flush=True)
        elif copied != shown:
            print(f"  target has {copied}/{total} records", flush=True)
        shown = copied
        time.sleep(0.5)
    back = "\r" if live else ""
    print(f"{back}  target has {total}/{total} records after {time.monotonic() - t0:.1f}s")
    code = mirror.stop(60)
    print(f"  mirror stopped cleanly (exit {code}), offsets committed")
    return code


def validate(src: str, dst: str, report_path: Path) -> int | None:
    """kmirror-validate's exit code, or None when it is not installed."""
    validate = BIN / "kmirror-validate"
    if not validate.exists():
        print("  kmirror-validate is not installed yet: validation step missing")
        return None
    return subprocess.call(
        [
            str(validate),
            "--source-bootstrap-servers",
            src,
            "--target-bootstrap-servers",
            dst,
            "--topics",
            r"demo\..*",
            "--mode",
            "digest",
            "--json-out",
            str(report_path),
        ]
    )


def summary(total: int, dst: str, vcode: int | None, report_path: Path, started: float) -> None:
    print(f"  records written to source : {total}")
    print(f"  records on target         : {target_count(dst)}")
    if vcode is not None and report_path.exists():
        report = json.loads(report_path.read_text(encoding="utf-8"))
        print(
            f"  validation                : {'MATCH' if report.get('ok') else 'MISMATCH'}"
            f" (exit {vcode})"
        )
        print(f"  report                    : {report_path} (kept if KMIRROR_DEMO_KEEP=1)")
    print(f"  total time                : {time.monotonic() - started:.1f}s")


def main() -> int:
    configure("WARN", pattern="  %p %m")
    work = Path(tempfile.mkdtemp(prefix="kmirror-demo-"))
    mirror: ProcessGroup | None = None
    specs = [kafkalocal.ClusterSpec(name, port) for name, port in PORTS.items()]
    started = time.monotonic()
    try:
        step("starting two local Kafka clusters (source, target)")
        results = kafkalocal.up(specs, fresh=True)
        src, dst = results[SOURCE].bootstrap, results[TARGET].bootstrap
        print(f"source {src}   target {dst}")

        step(f"writing {RECORDS_PER_TOPIC} keyed records with headers to {', '.join(TOPICS)}")
        total = produce_samples(src)

        step("running the mirror: kmirror run (MirrorMaker 1 style flags)")
        args = mm1_args(work, src, dst, "kmirror-demo", r"demo\..*", extra=["--metrics-port", "0"])
        mirror = ProcessGroup([*KMIRROR, *args], work / "mirror.log").start()
        code = mirror_until_caught_up(mirror, dst, total)

        step("validating: kmirror-validate (PySpark) compares every record by content digest")
        report_path = work / "report.json"
        vcode = validate(src, dst, report_path)
        step("summary")
        summary(total, dst, vcode, report_path, started)
        return 0 if code == 0 and vcode in (0, None) else 1
    finally:
        if mirror is not None and mirror.running():
            mirror.kill()
        step("stopping the clusters")
        for line in kafkalocal.down(list(PORTS), keep=False):
            print(f"  {line}")
        if os.environ.get("KMIRROR_DEMO_KEEP") != "1":
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
