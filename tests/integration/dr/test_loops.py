"""Two-way mirroring with the prefix policy: nothing goes back where it came from, every record
exists exactly once per cluster, and heartbeats cross both ways (their age is a metric)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.dr.drtools import java_heartbeats, mm2_config
from tests.kafkatools import (
    Clusters,
    consume_all,
    create_topic,
    delete_topic,
    list_topics,
    produce,
    wait_until,
)
from tests.mirrorproc import MirrorProcess

pytestmark = pytest.mark.integration


def metric(m: MirrorProcess, name: str) -> float | None:
    _, text = m.get("/metrics")
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


@pytest.fixture
def name(clusters: Clusters, unique_name) -> Iterator[str]:
    """A topic name used on both clusters; it and every copy are deleted afterwards."""
    topic = unique_name("orders")
    yield topic
    for side in (clusters.source_bootstrap, clusters.target_bootstrap):
        for t in list_topics(side):
            if t.endswith(topic):
                delete_topic(side, t, wait=False)


def test_two_way_prefix_no_loop(tmp_path: Path, clusters: Clusters, name: str) -> None:
    a, b = clusters.source_bootstrap, clusters.target_bootstrap
    for side in (a, b):
        create_topic(side, name, 2)
    produce(a, name, [{"value": f"a{i}".encode(), "partition": i % 2} for i in range(300)])
    produce(b, name, [{"value": f"b{i}".encode(), "partition": i % 2} for i in range(200)])
    pattern = rf"(.*\.)?{name}"
    forward = mm2_config(tmp_path, clusters, f"ab-{name}", pattern)
    back_path = tmp_path / "ba.properties"
    back_path.write_text(
        Path(forward[1]).read_text(encoding="utf-8").replace("A->B.", "B->A.")
        + "A->B.enabled=false\n",
        encoding="utf-8",
    )
    back = ["--mm2-config", str(back_path)]

    def copied(bootstrap: str, topic: str, count: int) -> bool:
        return topic in list_topics(bootstrap) and len(consume_all(bootstrap, topic)) >= count

    # Each mirror starts when the other's copy already exists on its source, so its first
    # topic selection (not a later refresh) is what must leave that copy alone.
    with MirrorProcess(["run", *forward], tmp_path / "ab1.log") as ab:
        wait_until(lambda: copied(b, f"A.{name}", 300), 90, message="A->B copied")
        assert ab.stop() == 0, ab.log
    with (
        MirrorProcess(["run", *back], tmp_path / "ba.log") as ba,
        MirrorProcess(["run", *forward], tmp_path / "ab2.log") as ab,
    ):
        wait_until(lambda: copied(a, f"B.{name}", 200), 90, message="B->A copied")
        ab.wait_ready(60)
        # Producers on both sides while both directions run.
        produce(a, name, [{"value": f"a{i}".encode()} for i in range(300, 400)])
        produce(b, name, [{"value": f"b{i}".encode()} for i in range(200, 300)])
        wait_until(lambda: copied(b, f"A.{name}", 400), 90, message="A->B caught up")
        wait_until(lambda: copied(a, f"B.{name}", 300), 90, message="B->A caught up")
        wait_until(
            lambda: not math.isnan(metric(ab, "kmirror_dr_heartbeat_age_seconds") or math.nan),
            60,
            message="a heartbeat crossed A->B",
        )
        assert ab.stop() == 0, ab.log
        assert ba.stop() == 0, ba.log
    # MM2's own Heartbeat class reads what kmirror wrote and what crossed.
    assert ("A", "B") in {(s, t) for s, t, _ in java_heartbeats(b, "heartbeats")}
    assert ("B", "A") in {(s, t) for s, t, _ in java_heartbeats(b, "A.heartbeats")}
    topics_a, topics_b = list_topics(a), list_topics(b)
    assert f"A.B.{name}" not in topics_b and f"B.A.{name}" not in topics_a
    assert f"B.A.{name}" not in topics_b and f"A.B.{name}" not in topics_a
    assert not any(t.endswith("A.B.heartbeats") or t.endswith("B.A.heartbeats")
                   for t in topics_a | topics_b)  # fmt: skip
    values = {
        "A": sorted(r.value or b"" for r in consume_all(a, name) + consume_all(a, f"B.{name}")),
        "B": sorted(r.value or b"" for r in consume_all(b, name) + consume_all(b, f"A.{name}")),
    }
    every = sorted([f"a{i}".encode() for i in range(400)] + [f"b{i}".encode() for i in range(300)])
    assert values["A"] == every and values["B"] == every


def test_two_way_identity_with_provenance_header(
    tmp_path: Path, clusters: Clusters, name: str
) -> None:
    a, b = clusters.source_bootstrap, clusters.target_bootstrap
    for side in (a, b):
        create_topic(side, name, 2)
    identity = {
        "replication.policy.class": "org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
        "provenance.header.enabled": "true",
        "emit.heartbeats.enabled": "false",
    }
    forward = mm2_config(tmp_path, clusters, f"ab-{name}", name, **identity)
    back_path = tmp_path / "ba.properties"
    back_path.write_text(
        Path(forward[1]).read_text(encoding="utf-8").replace("A->B.", "B->A.")
        + "A->B.enabled=false\n",
        encoding="utf-8",
    )
    produce(a, name, [{"value": f"a{i}".encode(), "headers": [("h", b"1")]} for i in range(200)])
    produce(b, name, [{"value": f"b{i}".encode()} for i in range(150)])
    with (
        MirrorProcess(["run", *forward], tmp_path / "ab.log") as ab,
        MirrorProcess(["run", "--mm2-config", str(back_path)], tmp_path / "ba.log") as ba,
    ):
        produce(a, name, [{"value": f"a{i}".encode()} for i in range(200, 300)])
        produce(b, name, [{"value": f"b{i}".encode()} for i in range(150, 200)])
        for side in (a, b):
            wait_until(lambda s=side: len(consume_all(s, name)) >= 500, 90, message="copied")
        assert ab.stop() == 0, ab.log
        assert ba.stop() == 0, ba.log
    every = sorted([f"a{i}".encode() for i in range(300)] + [f"b{i}".encode() for i in range(200)])
    for side, own, other in ((a, b"a", b"B"), (b, b"b", b"A")):
        recs = consume_all(side, name)
        assert sorted(r.value or b"" for r in recs) == every  # each record exactly once
        for r in recs:
            origin = [v for k, v in r.headers if k == "kmirror.origin"]
            # Copies carry their origin; records written here are untouched.
            assert origin == ([] if (r.value or b"").startswith(own) else [other])
