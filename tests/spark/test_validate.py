"""The validation job against the two real clusters. A module fixture builds one "world" of
topics (mirrored by hand with kafkatools, some damaged on purpose) that three runs (digest,
count, sample) validate; the report must name exactly the damage."""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
from pyspark.sql import SparkSession

from kmirror.config.model import RenamePolicy, TopicSelection
from kmirror.config.topicmap import TopicMapping
from kmirror_validate.report import PartitionResult, Report, TopicResult
from kmirror_validate.validate import Options, prepare, run
from tests.kafkatools import Clusters, Rec, create_topic, delete_topic, produce, unique
from tests.spark.conftest import config_for, copy_topic

pytestmark = [pytest.mark.spark, pytest.mark.integration]

# Recent timestamps: records far in the past would fall to time-based retention mid-test.
TS = (int(time.time()) - 3600) * 1000
PER_PARTITION = 60

# The damage done to topic "damaged" on the target, by (partition, source offset).
DROPPED = {(0, 5), (0, 17), (1, 30)}
DUPLICATED = {(0, 40), (2, 10)}
VALUE_CHANGED = (1, 44)
HEADER_CHANGED = (2, 21)
SWAPPED = ((2, 50), (2, 55))


def records(partitions: int, per_partition: int, tag: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for p in range(partitions):
        for i in range(per_partition):
            headers: list[tuple[str, bytes | None]] = [("seq", b"%d" % i)]
            if i % 7 == 0:
                headers += [("dup", b"a"), ("dup", b"b"), ("null", None), ("empty", b"")]
            out.append({
                "key": f"{tag}-{p}-{i % 20}".encode(),  # keys repeat within a partition
                "value": bytes([i % 256]) * 40 + f"{tag}:{p}:{i}".encode(),
                "headers": headers,
                "timestamp": TS + p * 1000 + i,
                "partition": p,
            })  # fmt: skip
    return out


def damage(recs: list[Rec]) -> list[Rec]:
    by_key = {(r.partition, r.offset): r for r in recs}
    out: list[Rec] = []
    for p in sorted({r.partition for r in recs}):
        part: list[Rec] = []
        for orig in (r for r in recs if r.partition == p):
            at = (p, orig.offset)
            if at in DROPPED:
                continue
            rec = orig
            if at == VALUE_CHANGED:
                rec = dataclasses.replace(orig, value=b"changed")
            if at == HEADER_CHANGED:
                rec = dataclasses.replace(orig, headers=[("seq", b"changed")])
            part.append(rec)
            if at == (0, 40):
                part.append(rec)  # duplicated right away (a retried send)
            if at == (2, 12):
                part.append(by_key[(2, 10)])  # duplicated a little later (a replay)
        if p == 2:
            i, j = (next(k for k, r in enumerate(part) if r.offset == at[1]) for at in SWAPPED)
            part[i], part[j] = part[j], part[i]
        out += part
    return out


def produce_transactions(bootstrap: str, topic: str) -> None:
    """5 committed, 3 aborted, 2 committed records on partition 0."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": unique("tx")})
    producer.init_transactions(30)
    n = 0
    for count, commit in ((5, True), (3, False), (2, True)):
        producer.begin_transaction()
        for _ in range(count):
            producer.produce(topic, key=b"tx-%d" % n, value=b"v-%d" % n, partition=0,
                             timestamp=TS + n)  # fmt: skip
            n += 1
        producer.flush(30)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)


@dataclasses.dataclass
class World:
    clusters: Clusters
    names: dict[str, str]  # role -> topic name

    def selection(self, *roles: str) -> TopicSelection:
        return TopicSelection(include=tuple(self.names[r] for r in (roles or self.names)))


@pytest.fixture(scope="module")
def world(clusters: Clusters) -> Iterator[World]:
    src, tgt = clusters.source_bootstrap, clusters.target_bootstrap
    prefix = unique("val")
    names = {r: f"{prefix}-{r}" for r in ("ok", "damaged", "gone", "tomb", "compact", "txn")}
    created: list[tuple[str, str]] = []

    def make(bootstrap: str, role: str, partitions: int, **config: str) -> None:
        create_topic(bootstrap, names[role], partitions, config or None)
        created.append((bootstrap, names[role]))

    try:
        for bootstrap in (src, tgt):
            make(bootstrap, "ok", 3)
            make(bootstrap, "damaged", 3)
            make(bootstrap, "tomb", 4)
            make(bootstrap, "compact", 1, **{"cleanup.policy": "compact"})
            make(bootstrap, "txn", 1)
        make(src, "gone", 2)

        produce(src, names["ok"], records(3, 30, "ok"))
        produce(src, names["damaged"], records(3, PER_PARTITION, "dmg"))
        produce(src, names["gone"], records(2, 10, "gone"))
        tomb = [
            {"key": b"a", "value": b"1", "partition": 0, "timestamp": TS},
            {"key": b"a", "value": None, "partition": 0, "timestamp": TS + 1},  # tombstone
            {"key": None, "value": b"no key", "partition": 0, "timestamp": TS + 2},
            {"key": None, "value": None, "partition": 0, "timestamp": TS + 3},
            {"key": b"", "value": b"", "partition": 0, "timestamp": TS + 4},
            *[{"key": b"k%d" % i, "value": b"v", "partition": 3, "timestamp": TS + i}
              for i in range(5)],
        ]  # fmt: skip
        produce(src, names["tomb"], tomb)
        compact = [(b"k1", b"a"), (b"k2", b"a"), (b"k1", b"b"), (b"k3", b"a"), (b"k2", None),
                   (b"k4", b"a")]  # fmt: skip
        produce(src, names["compact"], [
            {"key": k, "value": v, "partition": 0, "timestamp": TS + i}
            for i, (k, v) in enumerate(compact)
        ])  # fmt: skip
        produce_transactions(src, names["txn"])

        for role in ("ok", "tomb", "txn"):
            copy_topic(clusters, names[role])
        copy_topic(clusters, names["damaged"], damage=damage)
        # As if the target had compacted already: only the latest record per live key.
        copy_topic(clusters, names["compact"],
                   damage=lambda rs: [r for r in rs if r.offset in (2, 3, 5)])  # fmt: skip
        yield World(clusters, names)
    finally:
        for bootstrap, topic in created:
            with contextlib.suppress(Exception):
                delete_topic(bootstrap, topic, timeout=10, wait=False)


def validate(spark: SparkSession, world: World, *roles: str, **options: Any) -> Report:
    config = config_for(world.clusters)
    prep = prepare(config, Options(**options), world.selection(*roles))
    return run(spark, prep)


def topic(report: Report, world: World, role: str) -> TopicResult:
    return next(t for t in report.topics if t.topic == world.names[role])


def offsets(p: PartitionResult, kind: str) -> list[int | None]:
    return [e.source_offset for e in p.examples.get(kind, [])]


@pytest.fixture(scope="module")
def digest_report(spark: SparkSession, world: World) -> Report:
    return validate(spark, world)


def test_exact_copy_is_ok(digest_report: Report, world: World) -> None:
    ok = topic(digest_report, world, "ok")
    assert ok.ok
    assert [(p.source_count, p.target_count, p.matched) for p in ok.partitions] == [
        (30, 30, 30)
    ] * 3
    assert all(not p.examples for p in ok.partitions)


def test_damage_is_named_exactly(digest_report: Report, world: World) -> None:
    damaged = topic(digest_report, world, "damaged")
    got = {
        (p.partition, kind): offsets(p, kind)
        for p in damaged.partitions
        for kind in ("missing", "extra", "duplicate", "differs", "order")
        if p.examples.get(kind)
    }
    assert got == {
        (0, "missing"): [5, 17],
        (0, "duplicate"): [40],
        (1, "missing"): [30],
        (1, "differs"): [44],
        (2, "duplicate"): [10],
        (2, "differs"): [21],
        (2, "order"): [50, 55],
    }
    p0, p1, p2 = damaged.partitions
    assert (p0.missing, p0.duplicates, p0.differs, p0.extra, p0.order_violations) == (2, 1, 0, 0, 0)
    assert (p1.missing, p1.duplicates, p1.differs, p1.extra, p1.order_violations) == (1, 0, 1, 0, 0)
    assert (p2.missing, p2.duplicates, p2.differs, p2.extra, p2.order_violations) == (0, 1, 1, 0, 2)
    assert p1.examples["differs"][0].fields == ["value"]
    assert p2.examples["differs"][0].fields == ["headers"]
    assert p1.field_differs == {"key": 0, "value": 1, "headers": 0, "timestamp": 0}
    assert [p.source_count for p in damaged.partitions] == [PER_PARTITION] * 3
    assert [p.target_count for p in damaged.partitions] == [59, 59, 61]
    assert not damaged.ok


def test_topic_missing_on_the_target(digest_report: Report, world: World) -> None:
    gone = topic(digest_report, world, "gone")
    assert gone.missing_topic
    assert gone.target_partitions is None
    assert [(p.missing, p.target_count) for p in gone.partitions] == [(10, 0), (10, 0)]
    assert offsets(gone.partitions[0], "missing") == list(range(10))


def test_tombstones_null_keys_and_empty_partitions(digest_report: Report, world: World) -> None:
    tomb = topic(digest_report, world, "tomb")
    assert tomb.ok
    assert [(p.source_count, p.target_count) for p in tomb.partitions] == [
        (5, 5), (0, 0), (0, 0), (5, 5),
    ]  # fmt: skip
    assert tomb.partitions[1].source_end == tomb.partitions[1].source_start == 0


def test_compacted_topic_compares_latest_state(digest_report: Report, world: World) -> None:
    compact = topic(digest_report, world, "compact")
    assert compact.compacted
    assert compact.view == "latest"
    assert compact.ok
    (p,) = compact.partitions
    # Live keys k1, k3, k4 (k2 ends in a tombstone); the source still holds all 6 records.
    assert (p.source_count, p.target_count, p.matched) == (3, 3, 3)
    assert p.source_end == 6


def test_transactions_count_committed_records_only(digest_report: Report, world: World) -> None:
    txn = topic(digest_report, world, "txn")
    assert txn.ok
    (p,) = txn.partitions
    assert (p.source_count, p.target_count, p.matched) == (7, 7, 7)
    assert p.source_end is not None and p.source_end > 7  # markers and aborted records


def test_report_totals(digest_report: Report) -> None:
    assert not digest_report.ok
    totals = digest_report.to_json()["totals"]
    assert totals["missing_topics"] == 1
    assert totals["missing"] == 3 + 20
    assert (totals["duplicates"], totals["differs"], totals["order_violations"]) == (2, 2, 2)
    assert totals["extra"] == 0
    summary = digest_report.summary()
    assert summary.startswith("kmirror-validate: MISMATCH (digest mode")
    assert "does not exist (20 source records missing)" in summary


def test_count_mode_and_bounded_wait(spark: SparkSession, world: World) -> None:
    started = time.monotonic()
    report = validate(spark, world, mode="count", wait_timeout=2.0)
    assert 2.0 <= report.wait["waited_s"] < 15
    assert report.wait["timed_out"]
    assert any("had not caught up" in w for w in report.warnings)
    assert time.monotonic() - started < 120
    damaged = topic(report, world, "damaged")
    assert [(p.count_missing, p.count_extra) for p in damaged.partitions] == [(1, 0), (1, 0),
                                                                             (0, 1)]  # fmt: skip
    assert all(p.matched is None and p.differs is None for p in damaged.partitions)
    for role in ("ok", "tomb", "compact", "txn"):
        assert topic(report, world, role).ok, role
    assert [p.missing for p in topic(report, world, "gone").partitions] == [10, 10]


def test_sample_mode_and_compacted_records_view(spark: SparkSession, world: World) -> None:
    report = validate(spark, world, "ok", "damaged", "compact", mode="sample",
                      sample_fraction=0.5, compacted="records")  # fmt: skip
    assert report.sample_fraction == 0.5
    assert topic(report, world, "ok").ok
    damaged = topic(report, world, "damaged")
    # Counts are exact whatever the sample; what the sample finds is part of the damage.
    assert [(p.count_missing, p.count_extra) for p in damaged.partitions] == [(1, 0), (1, 0),
                                                                             (0, 1)]  # fmt: skip
    damage_at = DROPPED | DUPLICATED | {VALUE_CHANGED, HEADER_CHANGED, *SWAPPED}
    for p in damaged.partitions:
        for kind, items in p.examples.items():
            for e in items:
                if kind == "extra":  # a damaged target copy whose source was not sampled
                    assert p.partition in (1, 2), e
                elif kind == "order":
                    # Among sampled records, any record between the swapped two can be the
                    # one seen out of order (51 after 55's copy when 50 was not sampled).
                    (part, first), (_, last) = SWAPPED
                    assert p.partition == part and first <= e.source_offset <= last, e
                else:
                    assert (p.partition, e.source_offset) in damage_at, (kind, e)
    compact = topic(report, world, "compact")
    assert compact.view == "records"
    assert (compact.partitions[0].source_count, compact.partitions[0].count_missing) == (6, 3)
    assert not compact.ok


@pytest.mark.slow  # a Spark standalone master and worker start: about 100 s
def test_a_standalone_cluster_gives_the_same_report(
    digest_report: Report, world: World, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The damage test on a Spark standalone cluster (master and two workers from pyspark's
    own classes), through the command line: the report is the local one."""
    import json
    import subprocess
    import sys

    from tests.spark.standalone import EXECUTOR_MEMORY, standalone_cluster

    work = tmp_path_factory.mktemp("standalone")
    with standalone_cluster(work) as master:
        out = work / "report.json"
        r = subprocess.run(
            [sys.executable, "-m", "kmirror_validate",
             "--source-bootstrap-servers", world.clusters.source_bootstrap,
             "--target-bootstrap-servers", world.clusters.target_bootstrap,
             "--topics", ",".join(sorted(world.names.values())),
             "--group-id", config_for(world.clusters).group_id,
             "--master", master, "--no-progress", "--json-out", str(out),
             "--spark-conf", f"spark.executor.memory={EXECUTOR_MEMORY}",
             "--spark-conf", "spark.driver.host=127.0.0.1",
             "--spark-conf", "spark.driver.bindAddress=127.0.0.1",
             "--spark-conf", f"spark.pyspark.python={sys.executable}",
             "--spark-conf", "spark.sql.shuffle.partitions=2"],
            capture_output=True, text=True, timeout=900, check=False,
        )  # fmt: skip
    assert r.returncode == 1, r.stderr[-3000:]  # the damage is a mismatch
    cluster = json.loads(out.read_text())
    local = digest_report.to_json()
    assert cluster["topics"] == local["topics"]
    assert cluster["totals"] == local["totals"]


def test_mapped_names_validate_and_topics_may_name_the_target(
    spark: SparkSession, world: World
) -> None:
    """A topic mirrored under a mapped name (kmirror.config.topicmap) is compared with its
    copy there, and `--topics` may give the target name: the mapping finds the source."""
    source = world.names["ok"]
    mapped = f"shop.{source}.v2"
    create_topic(world.clusters.target_bootstrap, mapped, 3)
    try:
        copy_topic(world.clusters, source, mapped)
        rename = RenamePolicy(mapping=TopicMapping(((source, mapped),)))
        config = config_for(world.clusters, rename=rename)
        report = run(spark, prepare(config, Options(), TopicSelection(include=(mapped,))))
        assert [(t.topic, t.target_topic, t.ok) for t in report.topics] == [(source, mapped, True)]
        assert sum(p.source_count for p in report.topics[0].partitions) == 90
    finally:
        delete_topic(world.clusters.target_bootstrap, mapped, wait=False)
