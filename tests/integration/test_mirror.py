"""The mirror against real clusters: every record read back from the target, byte for byte."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource

from tests.kafkatools import (
    Clusters,
    Rec,
    consume_all,
    end_offsets,
    produce,
    topic_partitions,
    wait_until,
)
from tests.mirrorproc import QUICK_REJOIN, MirrorProcess, mirror_args, run_cli
from tests.promtext import sample

pytestmark = pytest.mark.integration


def target_has(clusters: Clusters, topic: str, count: int) -> Callable[[], bool]:
    def check() -> bool:
        try:
            return sum(end_offsets(clusters.target_bootstrap, topic).values()) >= count
        except Exception:
            return False

    return check


def assert_same(src: list[Rec], dst: list[Rec]) -> None:
    """Same records in the same partitions in the same order, every byte."""
    assert [r.content() for r in dst] == [r.content() for r in src]


def committed(clusters: Clusters, group: str, topic: str) -> dict[int, int]:
    from confluent_kafka import Consumer

    partitions = topic_partitions(clusters.source_bootstrap, topic)
    c = Consumer({"bootstrap.servers": clusters.source_bootstrap, "group.id": group})
    try:
        tps = c.committed([TopicPartition(topic, p) for p in partitions], timeout=10)
        return {tp.partition: tp.offset for tp in tps}
    finally:
        c.close()


def sample_records(n: int, partitions: int) -> list[dict[str, object]]:
    base = int(time.time() * 1000) - 3_600_000
    recs: list[dict[str, object]] = []
    for i in range(n):
        recs.append(
            {
                "partition": i % partitions,
                "key": f"k{i}".encode(),
                "value": bytes([i % 256]) * (i % 50) + f"v{i}".encode(),
                "headers": [
                    ("h", b"1"),
                    ("h", bytes([0, 255, i % 256])),
                    ("trace", f"{i}".encode()),
                ],
                "timestamp": base + i,
            }
        )
    return recs


def test_byte_exact_copy(tmp_path: Path, clusters: Clusters, make_topic, unique_name) -> None:
    topic = make_topic(clusters.source_bootstrap, partitions=3)
    base = int(time.time() * 1000) - 10_000_000
    edge = [
        {"partition": 0, "key": None, "value": b"null key"},
        {"partition": 0, "key": b"", "value": b"empty key", "timestamp": base},
        {"partition": 1, "key": b"tomb", "value": None, "timestamp": base + 1},
        {
            "partition": 1,
            "key": b"\x00\xff\x10",
            "value": b"\x00" * 1000,
            "headers": [("dup", b"a"), ("dup", b"b"), ("nil", None), ("", b"empty-name")],
            "timestamp": base + 2,
        },
        {"partition": 2, "key": b"big", "value": b"x" * 200_000, "timestamp": 1},
    ]
    produce(clusters.source_bootstrap, topic, edge + sample_records(500, 3))
    src = consume_all(clusters.source_bootstrap, topic)
    with MirrorProcess(
        mirror_args(tmp_path, clusters, unique_name("g"), topic), tmp_path / "mirror.log"
    ) as m:
        wait_until(target_has(clusters, topic, len(src)), 60, message="target caught up")
        assert m.stop() == 0, m.log
    dst = consume_all(clusters.target_bootstrap, topic)
    assert_same(src, dst)
    assert topic_partitions(clusters.target_bootstrap, topic) == [0, 1, 2]
    assert dst[0].key is None and dst[1].key == b""


def test_sigterm_commits_and_restart_loses_nothing(
    tmp_path: Path, clusters: Clusters, make_topic, unique_name
) -> None:
    topic = make_topic(clusters.source_bootstrap, partitions=4)
    group = unique_name("g")
    produce(clusters.source_bootstrap, topic, sample_records(2000, 4))
    args = mirror_args(tmp_path, clusters, group, topic)
    with MirrorProcess(args, tmp_path / "m1.log") as m:
        wait_until(target_has(clusters, topic, 2000), 60)
        assert m.stop() == 0, m.log
    assert committed(clusters, group, topic) == end_offsets(clusters.source_bootstrap, topic)
    produce(clusters.source_bootstrap, topic, sample_records(1000, 4))
    with MirrorProcess(args, tmp_path / "m2.log") as m:
        wait_until(target_has(clusters, topic, 3000), 60)
        assert m.stop() == 0, m.log
    # A clean stop commits everything: the restart resends nothing.
    assert_same(
        consume_all(clusters.source_bootstrap, topic), consume_all(clusters.target_bootstrap, topic)
    )


def test_kill9_then_restart_loses_nothing(
    tmp_path: Path, clusters: Clusters, make_topic, unique_name
) -> None:
    topic = make_topic(clusters.source_bootstrap, partitions=2)
    produce(clusters.source_bootstrap, topic, sample_records(3000, 2))
    args = mirror_args(tmp_path, clusters, unique_name("g"), topic, QUICK_REJOIN)
    with MirrorProcess(args, tmp_path / "m1.log") as m:
        wait_until(target_has(clusters, topic, 1), 60)
        m.kill()
    with MirrorProcess(args, tmp_path / "m2.log") as m:
        wait_until(target_has(clusters, topic, 3000), 60)
        m.wait_ready(60)
        assert m.stop() == 0, m.log
    src = {r.content() for r in consume_all(clusters.source_bootstrap, topic)}
    dst = {r.content() for r in consume_all(clusters.target_bootstrap, topic)}
    assert src <= dst  # at-least-once: duplicates allowed, nothing missing


def test_regex_selection_and_new_topic_while_running(
    tmp_path: Path, clusters: Clusters, make_topic, unique_name
) -> None:
    prefix = unique_name("sel")
    keep = make_topic(clusters.source_bootstrap, f"{prefix}.orders")
    skip = make_topic(clusters.source_bootstrap, f"{prefix}.orders-internal")
    other = make_topic(clusters.source_bootstrap, f"other-{prefix}")
    for t in (keep, skip, other):
        produce(clusters.source_bootstrap, t, sample_records(10, 1))
    args = mirror_args(
        tmp_path,
        clusters,
        unique_name("g"),
        rf"{prefix}\..*",
        None,
        None,
        "--blacklist",
        r".*-internal",
    )
    with MirrorProcess(args, tmp_path / "m.log") as m:
        wait_until(target_has(clusters, keep, 10), 60)
        late = make_topic(clusters.source_bootstrap, f"{prefix}.late", partitions=2)
        produce(clusters.source_bootstrap, late, sample_records(20, 2))
        started = time.monotonic()
        wait_until(target_has(clusters, late, 20), 30, message="late topic mirrored")
        assert time.monotonic() - started < 15
        assert m.stop() == 0, m.log
    from tests.kafkatools import list_topics

    target_topics = list_topics(clusters.target_bootstrap)
    assert skip not in target_topics and other not in target_topics
    assert_same(
        consume_all(clusters.source_bootstrap, late), consume_all(clusters.target_bootstrap, late)
    )


def test_topic_created_with_source_configs(
    tmp_path: Path, clusters: Clusters, make_topic, unique_name
) -> None:
    topic = make_topic(
        clusters.source_bootstrap,
        partitions=5,
        config={
            "cleanup.policy": "compact",
            "retention.ms": "123456789",
            "min.insync.replicas": "1",
            "max.message.bytes": "2000000",
        },
    )
    produce(clusters.source_bootstrap, topic, sample_records(10, 5))
    with MirrorProcess(
        mirror_args(tmp_path, clusters, unique_name("g"), topic), tmp_path / "m.log"
    ) as m:
        wait_until(target_has(clusters, topic, 10), 60)
        assert m.stop() == 0, m.log
    admin = AdminClient({"bootstrap.servers": clusters.target_bootstrap})
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    conf = admin.describe_configs([res])[res].result()
    assert conf["cleanup.policy"].value == "compact"
    assert conf["retention.ms"].value == "123456789"
    assert conf["max.message.bytes"].value == "2000000"
    # Excluded like MM2's config.properties.exclude: stays the target's default.
    assert conf["min.insync.replicas"].source != ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert topic_partitions(clusters.target_bootstrap, topic) == [0, 1, 2, 3, 4]


def test_partition_growth_is_propagated(
    tmp_path: Path, clusters: Clusters, make_topic, unique_name
) -> None:
    from confluent_kafka.admin import NewPartitions

    topic = make_topic(clusters.source_bootstrap, partitions=2)
    produce(clusters.source_bootstrap, topic, sample_records(10, 2))
    with MirrorProcess(
        mirror_args(tmp_path, clusters, unique_name("g"), topic), tmp_path / "m.log", env={}
    ) as m:
        wait_until(target_has(clusters, topic, 10), 60)
        admin = AdminClient({"bootstrap.servers": clusters.source_bootstrap})
        admin.create_partitions([NewPartitions(topic, 4)])[topic].result()
        wait_until(lambda: len(topic_partitions(clusters.source_bootstrap, topic)) == 4, 30)
        produce(clusters.source_bootstrap, topic, sample_records(40, 4))
        wait_until(target_has(clusters, topic, 50), 90, message="grown partitions mirrored")
        assert m.stop() == 0, m.log
    assert topic_partitions(clusters.target_bootstrap, topic) == [0, 1, 2, 3]
    assert_same(
        consume_all(clusters.source_bootstrap, topic), consume_all(clusters.target_bootstrap, topic)
    )


def test_two_streams_share_the_partitions(
    tmp_path: Path, clusters: Clusters, make_topic, unique_name
) -> None:
    topic = make_topic(clusters.source_bootstrap, partitions=6)
    produce(clusters.source_bootstrap, topic, sample_records(3000, 6))
    args = mirror_args(
        tmp_path, clusters, unique_name("g"), topic, None, None, "--num.streams", "2"
    )
    with MirrorProcess(args, tmp_path / "m.log") as m:
        wait_until(target_has(clusters, topic, 3000), 90)
        m.wait_ready(30)
        _, metrics = m.get("/metrics")
        assert m.stop() == 0, m.log
    assigned = [
        line
        for line in metrics.splitlines()
        if line.startswith("kmirror_mirror_assigned_partitions{")
    ]
    assert len(assigned) == 2 and all(float(x.split()[-1]) > 0 for x in assigned), assigned
    assert_same(
        consume_all(clusters.source_bootstrap, topic), consume_all(clusters.target_bootstrap, topic)
    )


def test_metrics_and_probes(tmp_path: Path, clusters: Clusters, make_topic, unique_name) -> None:
    topic = make_topic(clusters.source_bootstrap, partitions=2)
    produce(clusters.source_bootstrap, topic, sample_records(200, 2))
    with MirrorProcess(
        mirror_args(tmp_path, clusters, unique_name("g"), topic), tmp_path / "m.log"
    ) as m:
        wait_until(target_has(clusters, topic, 200), 60)
        m.wait_ready(30)
        assert m.get("/healthz")[0] == 200

        def scraped() -> str | None:
            text = m.get("/metrics")[1]
            ok = sample(text, "kmirror_mirror_records_total", stream="0", topic=topic) == 200
            return text if ok and "kmirror_mirror_lag_records{" in text else None

        text = wait_until(scraped, 20, 0.5, "metrics published")
        assert m.stop() == 0, m.log
    for name in (
        "kmirror_mirror_bytes_total",
        "kmirror_mirror_replication_latency_seconds_bucket",
        "kmirror_mirror_rebalances_total",
        "kmirror_mirror_seconds_since_last_commit",
        "kmirror_info",
    ):
        assert name in text, name


def test_fewer_target_partitions_is_refused(
    tmp_path: Path, clusters: Clusters, make_topic, unique_name
) -> None:
    topic = make_topic(clusters.source_bootstrap, partitions=4)
    make_topic(clusters.target_bootstrap, topic, partitions=2)
    produce(clusters.source_bootstrap, topic, sample_records(20, 4))
    group = unique_name("g")
    result = run_cli(mirror_args(tmp_path, clusters, group, topic), timeout=60)
    assert result.returncode == 2, result.stderr
    assert "has 2 partitions" in result.stderr and "--partitioning hash" in result.stderr
    assert all(o < 0 for o in committed(clusters, group, topic).values())
    assert sum(end_offsets(clusters.target_bootstrap, topic).values()) == 0


def test_hash_partitioning_into_fewer_partitions(
    tmp_path: Path, clusters: Clusters, make_topic, unique_name
) -> None:
    topic = make_topic(clusters.source_bootstrap, partitions=4)
    make_topic(clusters.target_bootstrap, topic, partitions=2)
    produce(clusters.source_bootstrap, topic, sample_records(100, 4))
    args = mirror_args(
        tmp_path, clusters, unique_name("g"), topic, None, None, "--partitioning", "hash"
    )
    with MirrorProcess(args, tmp_path / "m.log") as m:
        wait_until(target_has(clusters, topic, 100), 60)
        assert m.stop() == 0, m.log
    src = sorted(
        (r.key, r.value, tuple(r.headers), r.timestamp)
        for r in consume_all(clusters.source_bootstrap, topic)
    )
    dst_recs = consume_all(clusters.target_bootstrap, topic)
    dst = sorted((r.key, r.value, tuple(r.headers), r.timestamp) for r in dst_recs)
    assert src == dst
    # Same key, same partition: per-key order survives re-partitioning.
    by_key: dict[bytes | None, set[int]] = {}
    for r in dst_recs:
        by_key.setdefault(r.key, set()).add(r.partition)
    assert all(len(p) == 1 for p in by_key.values())


def test_source_trimmed_is_a_loud_error(
    tmp_path: Path, clusters: Clusters, make_topic, unique_name
) -> None:
    topic = make_topic(clusters.source_bootstrap, partitions=1)
    group = unique_name("g")
    produce(clusters.source_bootstrap, topic, sample_records(10, 1))
    args = mirror_args(tmp_path, clusters, group, topic)
    with MirrorProcess(args, tmp_path / "m1.log") as m:
        wait_until(target_has(clusters, topic, 10), 60)
        assert m.stop() == 0, m.log
    produce(clusters.source_bootstrap, topic, sample_records(10, 1))
    admin = AdminClient({"bootstrap.servers": clusters.source_bootstrap})
    for fut in admin.delete_records([TopicPartition(topic, 0, 15)]).values():
        fut.result()
    result = run_cli(args, timeout=60)
    assert result.returncode == 1, result.stderr
    assert "deleted before they were mirrored" in result.stderr + result.stdout
    assert committed(clusters, group, topic)[0] == 10


def test_latest_start_position_is_honoured(
    tmp_path: Path, clusters: Clusters, make_topic, unique_name
) -> None:
    topic = make_topic(clusters.source_bootstrap, partitions=1)
    produce(clusters.source_bootstrap, topic, sample_records(5, 1))
    args = mirror_args(tmp_path, clusters, unique_name("g"), topic, {"auto.offset.reset": "latest"})
    with MirrorProcess(args, tmp_path / "m.log") as m:
        m.wait_ready(60)
        time.sleep(2)
        produce(clusters.source_bootstrap, topic, [{"key": b"after", "value": b"start"}])
        wait_until(target_has(clusters, topic, 1), 60)
        assert m.stop() == 0, m.log
    dst = consume_all(clusters.target_bootstrap, topic)
    assert [r.key for r in dst] == [b"after"]


def test_second_sigint_exits_at_once(
    tmp_path: Path, clusters: Clusters, make_topic, unique_name
) -> None:
    topic = make_topic(clusters.source_bootstrap, partitions=1)
    with MirrorProcess(
        mirror_args(tmp_path, clusters, unique_name("g"), topic), tmp_path / "m.log"
    ) as m:
        m.wait_ready(60)
        m.signal(signal.SIGINT)
        m.signal(signal.SIGINT)
        code = m.wait(10)
    assert code in (0, 130)
