"""`make demo`: the main job on embedded defaults, end to end, with nothing faked.

Starts two local clusters, writes a few thousand keyed records with headers to sample topics on
`source`, runs `kmirror run` until `target` has caught up, runs `kmirror-validate` on both, prints
a short summary and stops everything (also on failure or Ctrl-C).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from scripts import kafkalocal

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
TOPICS = {"demo.orders": 6, "demo.payments": 3, "demo.audit": 1}
RECORDS_PER_TOPIC = 2000
SOURCE, TARGET = "demo-source", "demo-target"
PORTS = {SOURCE: 19492, TARGET: 29492}


def step(msg: str) -> None:
    print(f"\n==> {msg}", flush=True)


def produce_samples(bootstrap: str) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(t, num_partitions=n) for t, n in TOPICS.items()])
    for fut in futures.values():
        fut.result()
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
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
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "demo-counter"})
    try:
        md = consumer.list_topics(timeout=10)
        total = 0
        for topic in TOPICS:
            t = md.topics.get(topic)
            if t is None or t.error is not None:
                continue
            for p in t.partitions:
                lo, hi = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
                total += hi - lo
        return total
    finally:
        consumer.close()


def main() -> int:
    kl = kafkalocal
    work = Path(tempfile.mkdtemp(prefix="kmirror-demo-"))
    mirror: subprocess.Popen[bytes] | None = None
    specs = [kl.ClusterSpec(name, port) for name, port in PORTS.items()]
    started = time.monotonic()
    try:
        step("starting two local Kafka clusters (source, target)")
        results = kl.up(specs, fresh=True)
        src, dst = results[SOURCE].bootstrap, results[TARGET].bootstrap
        print(f"source {src}   target {dst}")

        step(f"writing {RECORDS_PER_TOPIC} keyed records with headers to {', '.join(TOPICS)}")
        total = produce_samples(src)

        step("running the mirror: kmirror run (MirrorMaker 1 style flags)")
        (work / "consumer.properties").write_text(
            f"bootstrap.servers={src}\ngroup.id=kmirror-demo\n", encoding="utf-8"
        )
        (work / "producer.properties").write_text(f"bootstrap.servers={dst}\n", encoding="utf-8")
        log = open(work / "mirror.log", "wb")  # noqa: SIM115 - closed in finally
        mirror = subprocess.Popen(
            [
                str(BIN / "kmirror"),
                "run",
                "--consumer.config",
                str(work / "consumer.properties"),
                "--producer.config",
                str(work / "producer.properties"),
                "--whitelist",
                r"demo\..*",
                "--offset.commit.interval.ms",
                "1000",
                "--metrics-port",
                "0",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        t0 = time.monotonic()
        while (copied := target_count(dst)) < total:
            if mirror.poll() is not None:
                raise SystemExit(f"demo: the mirror exited early; see {work / 'mirror.log'}")
            if time.monotonic() - t0 > 120:
                raise SystemExit("demo: the target did not catch up within 120 s")
            print(f"\r  target has {copied}/{total} records", end="", flush=True)
            time.sleep(0.5)
        print(f"\r  target has {total}/{total} records after {time.monotonic() - t0:.1f}s")
        mirror.send_signal(signal.SIGTERM)
        code = mirror.wait(60)
        log.close()
        print(f"  mirror stopped cleanly (exit {code}), offsets committed")

        step("validating: kmirror-validate (PySpark) compares every record by content digest")
        validate = BIN / "kmirror-validate"
        report_path = work / "report.json"
        if not validate.exists():
            print("  kmirror-validate is not installed yet: validation step missing")
            vcode = None
        else:
            vcode = subprocess.call(
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
        step("summary")
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
        return 0 if code == 0 and vcode in (0, None) else 1
    finally:
        if mirror is not None and mirror.poll() is None:
            mirror.kill()
        step("stopping the clusters")
        for line in kl.down(list(PORTS), keep=False):
            print(f"  {line}")
        if os.environ.get("KMIRROR_DEMO_KEEP") != "1":
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
