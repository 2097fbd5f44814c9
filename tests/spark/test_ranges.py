"""Bounded ranges, the duplicate policy and the timestamp type, against the real clusters: a
mirror that started late into a target that already held records, a restarted at-least-once
mirror, a topic whose timestamps are LogAppendTime."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import pytest
from pyspark.sql import SparkSession

from kmirror.config.model import ClusterConfig, MirrorConfig, TopicSelection
from kmirror.progress.book import PartitionBook, Run
from kmirror.progress.codec import encode_record
from kmirror_validate import ranges
from kmirror_validate.report import Report, TopicResult
from kmirror_validate.validate import Options, prepare, run
from tests.kafkatools import Clusters, create_topic, delete_topic, produce, unique
from tests.spark.conftest import copy_topic

pytestmark = [pytest.mark.spark, pytest.mark.integration]

TS = (int(time.time()) - 600) * 1000
N = 30
LATE = 10  # the mirror started after the first 10 source records


def _records(tag: str, n: int = N) -> list[dict[str, Any]]:
    return [{"key": f"{tag}{i}".encode(), "value": f"{tag}-value-{i}".encode(),
             "timestamp": TS + i * 1000, "partition": 0} for i in range(n)]  # fmt: skip


class World:
    def __init__(self, clusters: Clusters) -> None:
        self.clusters = clusters
        self.group = unique("ranges-group")
        self.prefix = unique("rng")
        self.created: list[tuple[str, str]] = []

    def topic(self, role: str, bootstrap: str, **config: str) -> str:
        name = f"{self.prefix}-{role}"
        create_topic(bootstrap, name, 1, config or None)
        self.created.append((bootstrap, name))
        return name

    def validate(self, spark: SparkSession, role: str, **options: Any) -> TopicResult:
        config = MirrorConfig(source=ClusterConfig("source", self.clusters.source_bootstrap),
                              target=ClusterConfig("target", self.clusters.target_bootstrap),
                              group_id=self.group)  # fmt: skip
        selection = TopicSelection(include=(f"{self.prefix}-{role}",))
        report: Report = run(spark, prepare(config, Options(**options), selection))
        self.last = report
        return report.topics[0]


@pytest.fixture(scope="module")
def world(clusters: Clusters) -> Iterator[World]:
    w = World(clusters)
    src, tgt = clusters.source_bootstrap, clusters.target_bootstrap
    try:
        # A mirror started at `latest` after 10 records, into a target holding 10 others.
        late = w.topic("late", src)
        w.topic("late", tgt)
        produce(src, late, _records("late"))
        produce(tgt, late, _records("before")[:LATE])
        copy_topic(clusters, late, damage=lambda rs: rs[LATE:])
        # An at-least-once mirror that restarted: records 20..24 copied twice.
        replay = w.topic("replay", src)
        w.topic("replay", tgt)
        produce(src, replay, _records("replay"))
        copy_topic(clusters, replay, damage=lambda rs: rs[:25] + rs[20:])
        # LogAppendTime on the source; the copy is CreateTime with the same milliseconds.
        stamped = w.topic("stamped", src, **{"message.timestamp.type": "LogAppendTime"})
        w.topic("stamped", tgt)
        produce(src, stamped, _records("stamped", 5))
        copy_topic(clusters, stamped)
        yield w
    finally:
        for bootstrap, name in w.created:
            with contextlib.suppress(Exception):
                delete_topic(bootstrap, name, timeout=10, wait=False)


def test_late_start_into_a_non_empty_target(spark: SparkSession, world: World) -> None:
    # Without a progress record, every record is compared: 10 missing, 10 extra.
    full = world.validate(spark, "late")
    assert (full.partitions[0].missing, full.partitions[0].extra) == (LATE, LATE)
    assert not full.ok
    # Since the mirror started (by timestamp, no progress record needed): exact.
    since = world.validate(spark, "late", bounds=ranges.Bounds(since_ms=TS + LATE * 1000))
    assert since.ok, world.last.summary()
    assert (since.partitions[0].source_count, since.partitions[0].matched) == (N - LATE, N - LATE)
    # The mirror's progress record (source 10.. landed at target 10..) bounds it by offsets.
    topic = f"kmirror-progress.{world.group}.internal"
    create_topic(world.clusters.target_bootstrap, topic, 1, {"cleanup.policy": "compact"})
    world.created.append((world.clusters.target_bootstrap, topic))
    book = PartitionBook(acked=N, runs=[Run(LATE, LATE, N - LATE)])
    key, value = encode_record(f"{world.prefix}-late", 0, book)
    produce(world.clusters.target_bootstrap, topic, [{"key": key, "value": value}])
    auto = world.validate(spark, "late")
    assert auto.ok, world.last.summary()
    (p,) = auto.partitions
    assert (p.source_start, p.target_start, p.matched) == (LATE, LATE, N - LATE)
    assert world.last.range["progress_records"] == 1
    # The post-install hook's range: the last 5 records of what the mirror has copied (the
    # source has 3 more that it has not: they are not compared, not even read).
    produce(world.clusters.source_bootstrap, f"{world.prefix}-late", _records("new", 3))
    hook = world.validate(spark, "late", bounds=ranges.Bounds(last=5, to="copied"))
    assert hook.ok, world.last.summary()
    (p,) = hook.partitions
    assert (p.source_start, p.source_end, p.source_read_end) == (N - 5, N, N)
    assert (p.target_start, p.target_end, p.matched, p.pending) == (N - 5, N, 5, 0)


@pytest.mark.parametrize("policy", ["allow", "fail"])
def test_restarted_at_least_once_mirror(spark: SparkSession, world: World, policy: str) -> None:
    replay = world.validate(spark, "replay", duplicates=policy)
    (p,) = replay.partitions
    assert (p.missing, p.extra, p.differs, p.order_violations, p.duplicates) == (0, 0, 0, 0, 5)
    assert [e.source_offset for e in p.examples["duplicate"]] == [20, 21, 22, 23, 24]
    assert replay.ok is (policy == "allow")


def test_timestamp_type_is_compared(spark: SparkSession, world: World) -> None:
    stamped = world.validate(spark, "stamped")
    (p,) = stamped.partitions
    assert p.differs == 5
    assert p.field_differs == {"key": 0, "value": 0, "headers": 0, "timestamp": 5}
    assert not stamped.ok
