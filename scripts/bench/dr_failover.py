"""Failover comparison: how many records a consumer group reads twice after a failover, with
kmirror's exact checkpoints and with Apache MirrorMaker 2's (checkpoints + group offset sync,
MM2's defaults otherwise: offset.lag.max=100), on the same clusters and the same workload.

    python -m scripts.bench.dr_failover [--source B] [--target B] [--records N]

Per contender: a fresh 3-partition topic with N unique records; a group reads a third of them
on the source and commits; the mirror runs with group offset sync every second until the
group's offsets on the target are synced and stable; the mirror stops; a consumer with the same
group on the target reads to the end. Counted: records read again (already consumed on the
source) and records never read. Results: docs/disaster-recovery.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from scripts.bench import kafkaio
from scripts.bench.contenders import MM2_LOG4J2, MM2_MAIN, REPO_ROOT, mm2_jar_dir, mm2_properties
from scripts.bench.procs import Tree
from scripts.kafkalocal import java_bin

PARTITIONS = 3
SYNC = {
    "emit.checkpoints.enabled": "true",
    "emit.checkpoints.interval.seconds": "1",
    "sync.group.offsets.enabled": "true",
    "sync.group.offsets.interval.seconds": "1",
    "refresh.groups.interval.seconds": "1",
    "emit.offset-syncs.enabled": "true",
}


def _consumer(bootstrap: str, group: str) -> Consumer:
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "enable.partition.eof": True,
            "isolation.level": "read_committed"}  # fmt: skip
    return Consumer(conf)


def read(bootstrap: str, topic: str, group: str, per_partition: int | None) -> list[bytes]:
    """A real group member. With `per_partition`: process that many records of every partition
    one by one, commit what was processed, leave (an application stopped part-way). Without:
    read from the group's committed offsets to the end, commit nothing."""
    c = _consumer(bootstrap, group)
    seen: list[bytes] = []
    eof: set[int] = set()
    done: dict[int, int] = {}
    last: dict[int, int] = {}

    def finished() -> bool:
        if per_partition is None:
            return len(eof) == PARTITIONS
        return len(done) == PARTITIONS and min(done.values()) >= per_partition

    try:
        c.subscribe([topic])
        while not finished():
            msg = c.poll(30)
            if msg is None:
                raise RuntimeError(f"{group} stalled on {topic} after {len(seen)} records")
            p = int(msg.partition() or 0)
            err = msg.error()
            if err is not None:
                if err.code() == err._PARTITION_EOF:
                    eof.add(p)
                continue
            if per_partition is None or done.get(p, 0) < per_partition:
                seen.append(msg.value() or b"")
                done[p] = done.get(p, 0) + 1
                last[p] = int(msg.offset() or 0)
        if per_partition is not None:
            c.commit(offsets=[TopicPartition(topic, p, o + 1) for p, o in last.items()],
                     asynchronous=False)  # fmt: skip
    finally:
        c.close()
    return seen


def committed(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    c = _consumer(bootstrap, group)
    try:
        tps = c.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10)
    except KafkaException:  # the coordinator of a new group may still be loading: ask again
        return {}
    finally:
        c.close()
    return {tp.partition: tp.offset for tp in tps if tp.offset >= 0}


def wait_stable(probe: Callable[[], dict[int, int]], timeout: float = 180.0) -> dict[int, int]:
    """The group's target offsets once every partition has one and 5 polls 1 s apart agree."""
    deadline, last, same = time.monotonic() + timeout, None, 0
    while time.monotonic() < deadline:
        now = probe()
        same = same + 1 if now == last and len(now) == PARTITIONS else 0
        if same >= 5:
            return now
        last = now
        time.sleep(1)
    raise RuntimeError(f"group offsets on the target never settled: {last}")


def kmirror_cmd(work: Path, source: str, target: str, topic: str, alias: str) -> list[str]:
    props = {
        "clusters": f"{alias}, tgt", f"{alias}.bootstrap.servers": source,
        "tgt.bootstrap.servers": target, f"{alias}->tgt.enabled": "true",
        f"{alias}->tgt.topics": topic,
        "replication.policy.class": "org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
        "emit.heartbeats.enabled": "false", "offset.flush.interval.ms": "1000", **SYNC,
    }  # fmt: skip
    path = work / "kmirror-mm2.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return [sys.executable, "-m", "kmirror.cli.main", "run", "--mm2-config", str(path),
            "--metrics-port", "0"]  # fmt: skip


def mm2_cmd(work: Path, source: str, target: str, topic: str, alias: str) -> list[str]:
    props = mm2_properties(alias, "tgt", source, target, [topic], 1)
    props.update(SYNC)
    props["checkpoints.topic.replication.factor"] = "1"
    path = work / "mm2.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    log4j = work / "log4j2.properties"
    log4j.write_text(MM2_LOG4J2)
    return [java_bin(), "-Xmx1g", f"-Dlog4j2.configurationFile={log4j}", "-cp",
            f"{mm2_jar_dir()}/*", MM2_MAIN, str(path)]  # fmt: skip


def run_one(name: str, source: str, target: str, records: int, work: Path) -> dict[str, Any]:
    run = uuid.uuid4().hex[:8]
    topic, group, alias = f"drbench-{run}", f"drbench-app-{run}", f"src{run}"
    kafkaio.create_topic(source, topic, PARTITIONS)
    values = [f"{run}-{i}".encode() for i in range(records)]
    p = Producer({"bootstrap.servers": source, "enable.idempotence": True, "linger.ms": 5})
    for i, v in enumerate(values):
        while True:
            try:
                p.produce(topic, v, partition=i % PARTITIONS)
                break
            except BufferError:
                p.poll(0.1)
    assert p.flush(60) == 0
    consumed = read(source, topic, group, records // PARTITIONS // 3)
    build = kmirror_cmd if name == "kmirror" else mm2_cmd
    tree = Tree(build(work, source, target, topic, alias), work / f"{name}.log", cwd=REPO_ROOT)
    try:
        deadline = time.monotonic() + 300
        while sum(kafkaio.end_offsets(target, topic, PARTITIONS) if topic in kafkaio.topics(target)
                  else [0]) < records:  # fmt: skip
            if time.monotonic() > deadline or not tree.running():
                raise RuntimeError(f"{name} did not copy {records} records ({work / name}.log)")
            time.sleep(1)
        synced = wait_stable(lambda: committed(target, group, topic))
    finally:
        tree.stop()
    rest = read(target, topic, group, None)
    again = len(set(consumed) & set(rest))
    missing = len(set(values) - set(consumed) - set(rest))
    return {"contender": name, "records": records, "consumed_on_source": len(consumed),
            "source_committed": committed(source, group, topic), "target_synced": synced,
            "read_again": again, "missing": missing, "topic": topic}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", default="127.0.0.1:19092")
    ap.add_argument("--target", default="127.0.0.1:29092")
    ap.add_argument("--records", type=int, default=30_000)
    ap.add_argument("--contenders", default="kmirror,mm2", help="comma list: kmirror, mm2")
    ap.add_argument("--json-out", type=Path)
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="kmirror-drbench-"))
    results = [
        run_one(n, args.source, args.target, args.records, work) for n in args.contenders.split(",")
    ]
    for r in results:
        print(f"{r['contender']:8} read again {r['read_again']:6}  missing {r['missing']:3}  "
              f"source committed {r['source_committed']}  "
              f"target synced {r['target_synced']}")  # fmt: skip
    if args.json_out:
        args.json_out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"logs: {work}", file=sys.stderr)
    return 0 if all(r["missing"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
