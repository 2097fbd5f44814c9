"""Failover, then failback, with a topic map in place: a group reads part of `orders` on A,
fails over to `shop.orders.v2` on B, reads on there (into records produced on B after the
failover on one partition, up to the end of A's copies on another, short of it on the third),
and goes back to `orders` on A with `kmirror failback`: no record missing, none read twice.

A's records are written in transactions, some aborted, so A's offsets have gaps (markers,
aborted records) that B's copies do not: a failback that took B's offsets for A's would be off.
The records produced on B reach A through the reverse flow B->A (the same mm2.properties, the
inverse map), prepared with `kmirror failback --start-reverse` so that it copies only them."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from confluent_kafka import TopicPartition

from tests.integration.dr.drtools import consume_and_commit, consume_rest, member
from tests.integration.dr.test_failover import PARTITIONS, transactions
from tests.kafkatools import Clusters, commit_offsets, consume_all, end_offsets, produce, wait_until
from tests.mirrorproc import MirrorProcess, mirror_args, run_cli

pytestmark = pytest.mark.integration


def two_flows(tmp: Path, clusters: Clusters, run: str, source: str, mapped: str) -> Path:
    """One mm2.properties with A->B (the map) and B->A (the inverse map), identity policy."""
    props = {
        "clusters": "A, B",
        "A.bootstrap.servers": clusters.source_bootstrap,
        "B.bootstrap.servers": clusters.target_bootstrap,
        "replication.policy.class": "org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
        "A->B.enabled": "true",
        "A->B.topics": source,
        "A->B.kmirror.topic.map": f"{source}:{mapped}",
        "A->B.consumer.group.id": f"fwd-{run}",
        "B->A.enabled": "true",
        "B->A.topics": mapped,
        "B->A.kmirror.topic.map": f"{mapped}:{source}",
        "B->A.consumer.group.id": f"rev-{run}",
        "emit.heartbeats.enabled": "false",
        "emit.checkpoints.interval.seconds": "1",
        "offset.flush.interval.ms": "500",
        "replication.factor": "1",
    }
    path = tmp / "mm2.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()), encoding="utf-8")
    return path


def consume_until(bootstrap: str, topic: str, group: str, stops: dict[int, int]) -> list[bytes]:
    """A group member that processes every record before `stops[p]` on each partition, from
    its committed offsets, commits `stops` and leaves."""
    c = member(bootstrap, group)
    seen: list[bytes] = []
    position: dict[int, int] = {}
    try:
        c.subscribe([topic])
        while len(position) < len(stops) or any(position[p] < s for p, s in stops.items()):
            msg = c.poll(30)
            assert msg is not None, f"{group} stalled on {topic}: {position} of {stops}"
            if msg.error() is not None:
                continue
            p, offset = int(msg.partition() or 0), int(msg.offset() or 0)
            if offset < stops[p]:
                seen.append(msg.value() or b"")
            position[p] = max(position.get(p, 0), offset + 1)
            if position[p] >= stops[p]:
                c.pause([TopicPartition(topic, p)])
        commit_offsets(c, [TopicPartition(topic, p, o) for p, o in stops.items()])
    finally:
        c.close()
    return seen


def test_failover_then_failback_nothing_missing_nothing_twice(
    tmp_path: Path, clusters: Clusters, make_topic, unique_name
) -> None:
    run = uuid.uuid4().hex[:8]
    source = make_topic(clusters.source_bootstrap, f"orders-{run}", partitions=PARTITIONS)
    mapped = f"shop.orders-{run}.v2"
    everything = transactions(clusters.source_bootstrap, source)
    group = unique_name("app")
    consumed = consume_and_commit(clusters.source_bootstrap, source, group, 20, PARTITIONS)
    mm2 = ["--mm2-config", str(two_flows(tmp_path, clusters, run, source, mapped))]
    forward, backward = [*mm2, "--flow", "A->B"], [*mm2, "--flow", "B->A"]

    def checkpoints_current() -> bool:
        res = run_cli(["offsets", *forward, "--group", group, "--json"])
        rows = json.loads(res.stdout)["partitions"] if res.returncode == 0 else []
        return len(rows) == PARTITIONS and all(
            r["checkpoint"] is not None and r["checkpoint"] == r["translated"] for r in rows
        )

    with MirrorProcess(["run", *forward], tmp_path / "forward.log") as m:
        wait_until(lambda: {r.value for r in consume_all(clusters.target_bootstrap, mapped)}
                   >= set(everything), 90, message="B holds every record of A")  # fmt: skip
        wait_until(checkpoints_current, 60, 0.5, "checkpoints current")
        assert m.stop() == 0, m.log
    res = run_cli(["failover", *forward, "--group", group])
    assert res.returncode == 0, res.stderr

    # On B: producers write into the mapped topic, the group reads on.
    copied = end_offsets(clusters.target_bootstrap, mapped)  # per partition: A's copies end
    on_b = [{"value": f"b-{p}-{i}".encode(), "partition": p}
            for i in range(15) for p in range(PARTITIONS)]  # fmt: skip
    produce(clusters.target_bootstrap, mapped, on_b)
    stops = {0: copied[0] - 7, 1: copied[1], 2: copied[2] + 9}
    consumed += consume_until(clusters.target_bootstrap, mapped, group, stops)

    # Back to A: the reverse flow copies what was produced on B (and nothing of A's).
    res = run_cli(["failback", *forward, "--start-reverse"])
    assert res.returncode == 0, res.stderr
    with MirrorProcess(["run", *backward], tmp_path / "backward.log") as m:
        wait_until(lambda: {r.value for r in consume_all(clusters.source_bootstrap, source)}
                   >= {r["value"] for r in on_b}, 90, message="A holds B's records")  # fmt: skip
        assert m.stop() == 0, m.log
    on_a = [r.value for r in consume_all(clusters.source_bootstrap, source)]
    assert len(on_a) == len(set(on_a)) == len(everything) + len(on_b), "A's records came back"

    res = run_cli(["offsets", *forward, "--group", group, "--json"])
    assert res.returncode == 0, res.stderr
    shown = {r["partition"]: r["failback"] for r in json.loads(res.stdout)["partitions"]}
    res = run_cli(["failback", *forward, "--group", group, "--dry-run"])
    assert res.returncode == 0, res.stderr
    assert "A->B progress" in res.stdout and "B->A progress" in res.stdout, res.stdout
    # The same mirror described with MirrorMaker 1 flags: the reverse flow by its group.
    mm1 = mirror_args(tmp_path, clusters, f"fwd-{run}", source, None, None,
                      "--topic-map", f"{source}:{mapped}")[1:]  # fmt: skip
    same = run_cli(["failback", *mm1, "--group", group, "--dry-run",
                    "--reverse-group-id", f"rev-{run}"])  # fmt: skip
    assert (same.returncode, same.stdout) == (0, res.stdout), same.stderr
    res = run_cli(["failback", *forward, "--group", group])
    assert res.returncode == 0, res.stderr
    written = {p: o for (t, p), o in committed(clusters.source_bootstrap, group, source).items()}
    assert written == shown, "kmirror offsets showed another failback than was applied"

    rest = consume_rest(clusters.source_bootstrap, source, group)
    assert set(rest) & set(consumed) == set(), "records read twice after failback"
    wanted = set(everything) | {r["value"] for r in on_b}
    assert set(consumed) | set(rest) == wanted, "records missing after failback"

    # A->B may run again: its group on A moves over the reverse flow's copies (not back to B).
    res = run_cli(["failback", *backward, "--start-reverse"])
    assert res.returncode == 0, res.stderr
    forward_group = committed(clusters.source_bootstrap, f"fwd-{run}", source)
    assert forward_group == {
        (source, p): o for p, o in end_offsets(clusters.source_bootstrap, source).items()
    }


def committed(bootstrap: str, group: str, topic: str) -> dict[tuple[str, int], int]:
    c = member(bootstrap, group)
    try:
        got = c.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10)
    finally:
        c.close()
    return {(tp.topic, tp.partition): tp.offset for tp in got}
