"""Failover and failback comparison: how many records a consumer group reads twice (or never)
when it moves to the target and back, with kmirror's exact translation and with Apache
MirrorMaker 2's (checkpoints + group offset sync, MM2's defaults otherwise: offset.lag.max=100),
on the same clusters and the same workload.

    python -m scripts.bench.dr_failover [--records N] [--source B --target B]

Like `make bench` it starts two clusters of its own (kafka-local `drbench-src`/`drbench-tgt`
on ports 19692/29692, not the shared pair) and stops and wipes them at the end; `--source` and
`--target` use running clusters instead.

Per contender, a fresh 3-partition topic with N unique records on A:
1. the group reads the first third of every partition on A and commits;
2. the mirror runs with group offset sync every second until the group's offsets on B are synced
   and stable, then stops (failover: the group's offsets on B are the tool's translation);
3. the group reads on B up to two thirds of every partition and commits;
4. failback: kmirror moves the group back with `kmirror failback` (exact, from the progress
   book); MM2 has no failback translation (reverse checkpointing, KIP-1098, is a proposal): its
   users get the group's offsets on A as they were (a third);
5. the group reads on A to the end.
Counted per move: records read again (already consumed) and records never read.
Results: docs/disaster-recovery.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from scripts import kafkalocal
from scripts.bench import kafkaio
from scripts.bench.contenders import MM2_LOG4J2, MM2_MAIN, REPO_ROOT, mm2_jar_dir, mm2_properties
from scripts.bench.procs import Tree
from scripts.kmirrorproc import KMIRROR, run_to_end, write_properties

PARTITIONS = 3
CLUSTERS = (("drbench-src", 19692), ("drbench-tgt", 29692))
CLUSTER_START_TIMEOUT_S = 240.0
SYNC = {
    "emit.checkpoints.enabled": "true",
    "emit.checkpoints.interval.seconds": "1",
    "sync.group.offsets.enabled": "true",
    "sync.group.offsets.interval.seconds": "1",
    "refresh.groups.interval.seconds": "1",
    "emit.offset-syncs.enabled": "true",
}
Stops = dict[int, int] | None  # per partition: read up to this offset; None: to the end


def _consumer(bootstrap: str, group: str) -> Consumer:
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "enable.partition.eof": True,
            "isolation.level": "read_committed"}  # fmt: skip
    return Consumer(conf)


def read(bootstrap: str, topic: str, group: str, stops: Stops) -> list[bytes]:
    """A real group member from the group's committed offsets. With `stops`: process every
    record before stops[p] one by one, commit the stops and leave (an application stopped
    part-way). Without: read to the end, commit nothing."""
    c = _consumer(bootstrap, group)
    seen: list[bytes] = []
    eof: set[int] = set()
    position: dict[int, int] = {}
    first: dict[int, int] = {}  # the first offset read per partition (the group's start)

    def finished() -> bool:
        if stops is None:
            return len(eof) == PARTITIONS
        return all(position.get(p, -1) >= s or p in eof for p, s in stops.items())

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
            offset = int(msg.offset() or 0)
            if stops is None or offset < stops[p]:
                seen.append(msg.value() or b"")
            first.setdefault(p, offset)
            position[p] = max(position.get(p, 0), offset + 1)
        if stops is not None:  # never backwards: a group that started past its stop stays
            c.commit(offsets=[TopicPartition(topic, p, max(o, first.get(p, o)))
                              for p, o in stops.items()], asynchronous=False)  # fmt: skip
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


def kmirror_props(work: Path, source: str, target: str, topic: str, alias: str) -> Path:
    props = {
        "clusters": f"{alias}, tgt", f"{alias}.bootstrap.servers": source,
        "tgt.bootstrap.servers": target, f"{alias}->tgt.enabled": "true",
        f"{alias}->tgt.topics": topic,
        "replication.policy.class": "org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
        "emit.heartbeats.enabled": "false", "offset.flush.interval.ms": "1000", **SYNC,
    }  # fmt: skip
    return write_properties(work / f"kmirror-{alias}.properties", props)


def kmirror_cmd(work: Path, source: str, target: str, topic: str, alias: str) -> list[str]:
    path = kmirror_props(work, source, target, topic, alias)
    return [*KMIRROR, "run", "--mm2-config", str(path), "--metrics-port", "0"]


def mm2_cmd(work: Path, source: str, target: str, topic: str, alias: str) -> list[str]:
    props = mm2_properties(alias, "tgt", source, target, [topic], 1)
    props.update(SYNC)
    props["checkpoints.topic.replication.factor"] = "1"
    path = write_properties(work / "mm2.properties", props)
    log4j = work / "log4j2.properties"
    log4j.write_text(MM2_LOG4J2)
    return [kafkalocal.java_bin(), "-Xmx1g", f"-Dlog4j2.configurationFile={log4j}", "-cp",
            f"{mm2_jar_dir()}/*", MM2_MAIN, str(path)]  # fmt: skip


def failback(name: str, work: Path, src: str, tgt: str, topic: str, alias: str, group: str) -> str:
    """Move the group back to A the way each tool's users can: kmirror's exact failback; MM2
    has none, its users find the group's offsets on A as they left them."""
    if name != "kmirror":
        return "none (MM2 has no failback translation)"
    path = kmirror_props(work, src, tgt, topic, alias)
    res = run_to_end([*KMIRROR, "failback", "--mm2-config", str(path), "--group", group],
                     dict(os.environ), 120)  # fmt: skip
    if res.returncode != 0:
        raise RuntimeError(f"kmirror failback failed: {res.stderr}")
    return res.stdout.strip()


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
    per = {q: len(range(q, records, PARTITIONS)) for q in range(PARTITIONS)}
    on_a = read(source, topic, group, {q: n // 3 for q, n in per.items()})
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
    # Records are produced in order, one partition after the other: value i is offset i // 3
    # of partition i % 3, on A and on B (a fresh topic, one writer).
    two_thirds = {q: 2 * n // 3 for q, n in per.items()}
    on_b = read(target, topic, group, two_thirds)
    before_b = {v for i, v in enumerate(values) if i // PARTITIONS < two_thirds[i % PARTITIONS]}
    how = failback(name, work, source, target, topic, alias, group)
    back_at = committed(source, group, topic)
    rest = read(source, topic, group, None)
    seen = set(on_a) | set(on_b)
    return {"contender": name, "records": records, "consumed_on_source": len(on_a),
            "source_committed": {q: n // 3 for q, n in per.items()}, "target_synced": synced,
            "failover_read_again": len(set(on_a) & set(on_b)),
            "failover_missing": len(before_b - seen), "consumed_on_target": len(on_b),
            "target_committed": two_thirds, "failback": how, "source_after_failback": back_at,
            "failback_read_again": len(set(rest) & seen),
            "failback_missing": len(set(values) - seen - set(rest)),
            "topic": topic}  # fmt: skip


def clusters_up() -> tuple[str, str]:
    names = [n for n, _ in CLUSTERS]
    leftovers = [n for n in names if n in kafkalocal.known_clusters()]
    if leftovers:
        kafkalocal.down(leftovers, keep=False)  # an interrupted run's: stopped and wiped
    specs = [kafkalocal.ClusterSpec(n, port) for n, port in CLUSTERS]
    kafkalocal.up(specs, fresh=True, timeout=CLUSTER_START_TIMEOUT_S)
    return specs[0].bootstrap, specs[1].bootstrap


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--source", help="a running source cluster (default: start drbench-src)")
    ap.add_argument("--target", help="a running target cluster (default: start drbench-tgt)")
    ap.add_argument("--records", type=int, default=30_000)
    ap.add_argument("--contenders", default="kmirror,mm2", help="comma list: kmirror, mm2")
    ap.add_argument("--json-out", type=Path)
    args = ap.parse_args(argv)
    if bool(args.source) != bool(args.target):
        ap.error("give both --source and --target, or neither (the bench starts its own)")
    work = Path(tempfile.mkdtemp(prefix="kmirror-drbench-"))
    own = not args.source
    try:
        source, target = clusters_up() if own else (args.source, args.target)
        results = [run_one(n, source, target, args.records, work)
                   for n in args.contenders.split(",")]  # fmt: skip
    finally:
        if own:
            kafkalocal.down([n for n, _ in CLUSTERS], keep=False)
    for r in results:
        print(f"{r['contender']:8} failover: read again {r['failover_read_again']:6}  missing "
              f"{r['failover_missing']:3}   failback: read again {r['failback_read_again']:6}  "
              f"missing {r['failback_missing']:3}   target synced {r['target_synced']}  "
              f"source after failback {r['source_after_failback']}")  # fmt: skip
    if args.json_out:
        args.json_out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"logs: {work}", file=sys.stderr)
    ok = all(r["failover_missing"] == 0 and r["failback_missing"] == 0 for r in results)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
