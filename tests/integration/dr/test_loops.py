"""Two-way mirroring: nothing goes back where it came from, every record produced on either side
exists exactly once per cluster, byte for byte, and heartbeats cross both ways (their age is a
metric). Each scenario runs in two lengths: `short` (marker `integration`, part of `make test`:
producers on both sides for a second while both mirrors run) and `minute` (marker `slow`,
`make test-faults`: the same test with the producers writing for 60 s)."""

from __future__ import annotations

import dataclasses
import math
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.integration.dr.drtools import java_heartbeats, mm2_config
from tests.kafkatools import (
    Clusters,
    Header,
    Rec,
    consume_all,
    create_topic,
    delete_topic,
    end_offsets,
    list_topics,
    produce,
    wait_until,
)
from tests.mirrorproc import MirrorProcess
from tests.promtext import sample

RATE = 300  # records a second per side while both mirrors run
DURATIONS = pytest.mark.parametrize(
    "seconds",
    [
        pytest.param(1, marks=pytest.mark.integration, id="short"),
        pytest.param(60, marks=pytest.mark.slow, id="minute"),
    ],
)
ALIAS = {"a": "A", "b": "B"}  # the side a record was produced on -> its cluster's alias


def metric(m: MirrorProcess, name: str) -> float | None:
    return sample(m.get("/metrics")[1], name)


@pytest.fixture
def name(clusters: Clusters, unique_name) -> Iterator[str]:
    """A topic name used on both clusters; it and every copy are deleted afterwards."""
    topic = unique_name("orders")
    yield topic
    for side in (clusters.source_bootstrap, clusters.target_bootstrap):
        for t in list_topics(side):
            if t.endswith(topic):
                delete_topic(side, t, wait=False)


def record(side: str, i: int) -> dict[str, Any]:
    """Record i of a side: its key names the side (how the checks find a record's origin), every
    other record carries a header of its own."""
    headers = [("h", bytes([i % 256, 0, 255]))] if i % 2 else []
    return {"key": f"{side}-{i}".encode(), "value": f"{side}{i}".encode(), "headers": headers}


def paced(side: str, first: int, seconds: float) -> Iterator[dict[str, Any]]:
    """RATE records a second for `seconds`: a fixed count, so the test knows what was produced
    however busy the machine is (a slow machine only stretches the time)."""
    start = time.monotonic()
    for n in range(int(RATE * seconds)):
        time.sleep(max(0.0, start + n / RATE - time.monotonic()))
        yield record(side, first + n)


def produce_both_sides(
    clusters: Clusters, topic: str, first: Mapping[str, int], seconds: float
) -> None:
    """A producer on each cluster writing continuously at the same time (idempotent, so every
    record is written once); raises if any record was not acknowledged."""
    sides = {"a": clusters.source_bootstrap, "b": clusters.target_bootstrap}
    with ThreadPoolExecutor(2) as pool:
        jobs = [
            pool.submit(produce, bootstrap, topic, paced(side, first[side], seconds))
            for side, bootstrap in sides.items()
        ]
        for job in jobs:
            job.result()


def reverse(tmp_path: Path, forward: list[str]) -> list[str]:
    """The B->A flow of the same mm2.properties."""
    path = tmp_path / "ba.properties"
    path.write_text(
        Path(forward[1]).read_text(encoding="utf-8").replace("A->B.", "B->A.")
        + "A->B.enabled=false\n",
        encoding="utf-8",
    )
    return ["--mm2-config", str(path)]


def holds(bootstrap: str, topic: str, count: int) -> bool:
    """The topic exists and holds `count` records or more (high watermarks: cheap to poll)."""
    return topic in list_topics(bootstrap) and sum(end_offsets(bootstrap, topic).values()) >= count


def assert_exactly_once(
    clusters: Clusters,
    topics: Mapping[str, list[str]],
    produced: Mapping[str, int],
    copy_header: bool,
) -> None:
    """Every record produced on either side exists exactly once per cluster: on its own cluster
    as produced, on the other as an identical copy (with copy_header, plus `kmirror.origin`
    naming where it came from, appended last). `topics`: per side, the topics it reads."""
    held: dict[str, dict[str, list[Rec]]] = {}  # cluster side -> origin side -> records
    for side, bootstrap in (("a", clusters.source_bootstrap), ("b", clusters.target_bootstrap)):
        held[side] = {"a": [], "b": []}
        for topic in topics[side]:
            for r in consume_all(bootstrap, topic, timeout=120):
                held[side][(r.key or b"").decode().split("-")[0]].append(r)
        print(f"[loops] cluster {ALIAS[side]}: {len(held[side]['a'])} records from A, "
              f"{len(held[side]['b'])} from B")  # fmt: skip
    for origin, other in (("a", "b"), ("b", "a")):
        originals = held[origin][origin]
        sent = (record(origin, i) for i in range(produced[origin]))
        want = Counter((s["key"], s["value"], tuple(s["headers"])) for s in sent)
        got_own = Counter((r.key, r.value, tuple(r.headers)) for r in originals)
        assert got_own == want, f"{origin}'s own records on {origin} differ from what was produced"
        header: list[Header] = [("kmirror.origin", ALIAS[origin].encode())] if copy_header else []
        expected = Counter(
            dataclasses.replace(r, headers=[*r.headers, *header]).content() for r in originals
        )
        got = Counter(r.content() for r in held[other][origin])
        missing, extra = expected - got, got - expected
        assert not missing and not extra, (
            f"{origin}'s records on {other}: {sum(got.values())} of {len(originals)}, "
            f"missing {sum(missing.values())} {list(missing)[:3]}, "
            f"extra {sum(extra.values())} {list(extra)[:3]}"
        )


def topics_named(bootstrap: str, name: str) -> set[str]:
    return {t for t in list_topics(bootstrap) if t.endswith(name)}


@DURATIONS
def test_two_way_prefix_no_loop(
    tmp_path: Path, clusters: Clusters, name: str, seconds: float
) -> None:
    a, b = clusters.source_bootstrap, clusters.target_bootstrap
    for side in (a, b):
        create_topic(side, name, 2)
    produce(a, name, [record("a", i) for i in range(300)])
    produce(b, name, [record("b", i) for i in range(200)])
    forward = mm2_config(tmp_path, clusters, f"ab-{name}", rf"(.*\.)?{name}")
    back = reverse(tmp_path, forward)

    # Each mirror starts when the other's copy already exists on its source, so its first
    # topic selection (not a later refresh) is what must leave that copy alone.
    with MirrorProcess(["run", *forward], tmp_path / "ab1.log") as ab:
        wait_until(lambda: holds(b, f"A.{name}", 300), 90, message="A->B copied")
        assert ab.stop() == 0, ab.log
    with (
        MirrorProcess(["run", *back], tmp_path / "ba.log") as ba,
        MirrorProcess(["run", *forward], tmp_path / "ab2.log") as ab,
    ):
        wait_until(lambda: holds(a, f"B.{name}", 200), 90, message="B->A copied")
        ab.wait_ready(60)
        produce_both_sides(clusters, name, {"a": 300, "b": 200}, seconds)
        produced = {"a": 300 + int(RATE * seconds), "b": 200 + int(RATE * seconds)}
        wait_until(lambda: holds(b, f"A.{name}", produced["a"]), 90, message="A->B caught up")
        wait_until(lambda: holds(a, f"B.{name}", produced["b"]), 90, message="B->A caught up")
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
    # No A.B.<t> / B.A.<t>, on either side, for the topic or the heartbeats.
    assert topics_named(a, name) == {name, f"B.{name}"}
    assert topics_named(b, name) == {name, f"A.{name}"}
    assert not any(t.endswith(("A.B.heartbeats", "B.A.heartbeats"))
                   for t in list_topics(a) | list_topics(b))  # fmt: skip
    topics = {"a": [name, f"B.{name}"], "b": [name, f"A.{name}"]}
    assert_exactly_once(clusters, topics, produced, copy_header=False)


@DURATIONS
def test_two_way_identity_with_provenance_header(
    tmp_path: Path, clusters: Clusters, name: str, seconds: float
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
    produce(a, name, [record("a", i) for i in range(200)])
    produce(b, name, [record("b", i) for i in range(150)])
    with (
        MirrorProcess(["run", *forward], tmp_path / "ab.log") as ab,
        MirrorProcess(["run", *reverse(tmp_path, forward)], tmp_path / "ba.log") as ba,
    ):
        produce_both_sides(clusters, name, {"a": 200, "b": 150}, seconds)
        produced = {"a": 200 + int(RATE * seconds), "b": 150 + int(RATE * seconds)}
        total = sum(produced.values())
        for side in (a, b):
            wait_until(lambda s=side: holds(s, name, total), 90, message="caught up")
        assert ab.stop() == 0, ab.log
        assert ba.stop() == 0, ba.log
    # The same topic name on both sides and nothing else: no A.<t>, no B.<t>.
    assert topics_named(a, name) == {name} and topics_named(b, name) == {name}
    assert_exactly_once(clusters, {"a": [name], "b": [name]}, produced, copy_header=True)
