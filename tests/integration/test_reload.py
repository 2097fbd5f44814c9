"""Reloading a running mirror's configuration (SIGHUP) on the real clusters: a new include
pattern starts a new topic in the same process, streams and consumer group without copying
anything twice; a change that needs a restart, and a configuration that does not load, leave
the running configuration copying and say why."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.test_mirror import assert_same, sample_records, target_has
from tests.integration.test_supervisor import alive, children
from tests.kafkatools import (
    Clusters,
    consume_all,
    end_offsets,
    list_topics,
    produce,
    wait_until,
)
from tests.mirrorproc import MirrorProcess
from tests.promtext import sample

pytestmark = pytest.mark.integration


def mm2_properties(
    clusters: Clusters, group: str, topics: str, source: str = "", protocol: str = "classic"
) -> str:
    """Two streams, identity names, commits every second, checked for new topics every 2 s;
    `protocol`: the consumer group protocol (`consumer`: KIP-848's)."""
    return (
        "clusters = A, B\n"
        f"A.bootstrap.servers = {source or clusters.source_bootstrap}\n"
        f"B.bootstrap.servers = {clusters.target_bootstrap}\n"
        "A->B.enabled = true\n"
        f"A->B.topics = {topics}\n"
        "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n"
        "emit.heartbeats.enabled = false\n"
        "tasks.max = 2\n"
        "offset.flush.interval.ms = 1000\n"
        "refresh.topics.interval.seconds = 2\n"
        f"A->B.consumer.group.id = {group}\n"
        f"A->B.consumer.group.protocol = {protocol}\n"
    )


def member_ids(bootstrap: str, group: str) -> set[str]:
    """The group's members: a member that left and joined again has a new id."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    desc = admin.describe_consumer_groups([group], request_timeout=10)[group].result()
    return {m.member_id for m in desc.members}


def hang_up(mirror: MirrorProcess, expect: str) -> None:
    """SIGHUP to the supervisor alone; waits for the reload's log line."""
    seen = mirror.log.count(expect)
    os.kill(mirror.pid, signal.SIGHUP)
    wait_until(lambda: mirror.log.count(expect) > seen, 30, 0.2, f"the log saying {expect!r}")


def test_sighup_adds_a_topic_live_and_refuses_what_needs_a_restart(
    tmp_path: Path, clusters: Clusters, make_topic, make_group_id, unique_name
) -> None:
    src, dst = clusters.source_bootstrap, clusters.target_bootstrap
    first = make_topic(src, partitions=2)
    produce(src, first, sample_records(100, 2))
    group = make_group_id()
    mm2 = tmp_path / "mm2.properties"
    mm2.write_text(mm2_properties(clusters, group, first), encoding="utf-8")
    with MirrorProcess(["run", "--mm2-config", str(mm2)], tmp_path / "m.log") as mirror:
        wait_until(target_has(clusters, first, 100), 90, 0.5, "the first topic copied")
        mirror.wait_ready(60)
        streams = sorted(p for p in children(mirror.pid) if alive(p))
        wait_until(lambda: len(member_ids(src, group)) == 2, 30, 0.5, "both streams joined")
        members = member_ids(src, group)

        # A new include pattern: the second topic, created after the reload, is copied.
        second = unique_name("reload-b")
        mm2.write_text(mm2_properties(clusters, group, f"{first}, {second}"), encoding="utf-8")
        hang_up(mirror, "reload (SIGHUP) applied flow=A->B changed=topics")
        second = make_topic(src, partitions=2, name=second)
        produce(src, second, sample_records(60, 2))
        wait_until(target_has(clusters, second, 60), 60, 0.5, "the new topic copied")
        assert_same(consume_all(src, second), consume_all(dst, second))
        # Nothing of the first topic copied again, by the same processes in the same group.
        assert sum(end_offsets(dst, first).values()) == 100
        assert mirror.running()
        assert sorted(p for p in children(mirror.pid) if alive(p)) == streams
        assert member_ids(src, group) == members

        # Another source cluster needs a restart: refused, the running configuration copies on.
        mm2.write_text(
            mm2_properties(clusters, group, f"{first}, {second}", source="127.0.0.1:1"),
            encoding="utf-8",
        )
        hang_up(mirror, "reload refused (SIGHUP): source.bootstrap_servers cannot change")
        assert "restart kmirror to apply them" in mirror.log
        # A file that does not load: refused with its error.
        mm2.write_text(mm2_properties(clusters, group, first) + "tasks.max = many\n", "utf-8")
        hang_up(mirror, "reload (SIGHUP) refused, the new configuration is invalid: ")
        assert "tasks.max" in mirror.log.rsplit("the new configuration is invalid", 1)[1]
        produce(src, second, sample_records(40, 2))
        wait_until(target_has(clusters, second, 100), 60, 0.5, "copying went on")
        assert sorted(p for p in children(mirror.pid) if alive(p)) == streams

        metrics = mirror.get("/metrics")[1]
        for outcome, count in (("applied", 1), ("refused", 1), ("invalid", 1)):
            assert sample(metrics, "kmirror_reloads_total", outcome=outcome) == count
        assert mirror.stop() == 0, mirror.log
    assert_same(consume_all(src, first), consume_all(dst, first))
    assert_same(consume_all(src, second), consume_all(dst, second))


def per_stream(metrics: str, name: str, **labels: str) -> dict[str, float]:
    """One metric's value per stream, `labels` matched."""
    return {
        s.labels["stream"]: float(s.value)
        for family in text_string_to_metric_families(metrics)
        for s in family.samples
        if s.name == name and labels.items() <= s.labels.items()
    }


@pytest.mark.slow
def test_a_reload_under_kip848_is_no_group_rebalance(
    tmp_path: Path, clusters: Clusters, make_topic, make_group_id, unique_name
) -> None:
    """With KIP-848's group protocol (`group.protocol=consumer`, Kafka 4.0+ brokers) a new
    subscription is no group rebalance: the coordinator adds the new topic's partitions to the
    members' assignments and takes back at most what keeps the streams balanced (one
    revocation here; the classic protocol's eager reload takes every partition back from both
    streams: the test above), and the first topic is copied on."""
    src, dst = clusters.source_bootstrap, clusters.target_bootstrap
    first = make_topic(src, partitions=2)
    produce(src, first, sample_records(100, 2))
    group = make_group_id()
    mm2 = tmp_path / "mm2.properties"
    mm2.write_text(mm2_properties(clusters, group, first, protocol="consumer"), "utf-8")
    with MirrorProcess(["run", "--mm2-config", str(mm2)], tmp_path / "m.log") as mirror:
        wait_until(target_has(clusters, first, 100), 90, 0.5, "the first topic copied")
        mirror.wait_ready(60)
        wait_until(lambda: len(member_ids(src, group)) == 2, 30, 0.5, "both streams joined")
        members = member_ids(src, group)

        def assignment() -> tuple[dict[str, float], dict[str, float]]:
            """Partitions held and revocations so far, per stream."""
            text = mirror.get("/metrics")[1]
            return (
                per_stream(text, "kmirror_mirror_assigned_partitions"),
                per_stream(text, "kmirror_mirror_rebalances_total", kind="revoke"),
            )

        def settled() -> dict[str, float] | None:
            """The revocations so far, once both streams hold partitions and nothing moved for
            2 s (the second stream's join took some from the first; the cluster may hold a
            `heartbeats` topic from other tests, which MM2's rules mirror too)."""
            before = assignment()
            time.sleep(2)
            held, revoked = assignment()
            ok = (held, revoked) == before and len(held) == 2 and min(held.values()) >= 1
            return revoked if ok else None

        revoked = wait_until(settled, 60, 0.5, "the assignment settled")

        second = unique_name("reload-b")
        mm2.write_text(
            mm2_properties(clusters, group, f"{first}, {second}", protocol="consumer"), "utf-8"
        )
        hang_up(mirror, "reload (SIGHUP) applied flow=A->B changed=topics")
        second = make_topic(src, partitions=2, name=second)
        produce(src, second, sample_records(60, 2))
        produce(src, first, sample_records(50, 2))
        wait_until(target_has(clusters, second, 60), 60, 0.5, "the new topic copied")
        wait_until(target_has(clusters, first, 150), 60, 0.5, "the first topic copied on")
        assert member_ids(src, group) == members
        after = per_stream(
            mirror.get("/metrics")[1], "kmirror_mirror_rebalances_total", kind="revoke"
        )
        moved = sum(after.values()) - sum(revoked.values())
        assert moved <= 1, (revoked, after, mirror.log)
        assert mirror.stop() == 0, mirror.log
    assert sum(end_offsets(dst, first).values()) == 150  # nothing copied twice
    assert_same(consume_all(src, first), consume_all(dst, first))
    assert_same(consume_all(src, second), consume_all(dst, second))


@pytest.mark.slow
def test_a_configmap_update_is_reloaded_without_a_signal(
    tmp_path: Path, clusters: Clusters, make_topic, make_group_id
) -> None:
    """--reload-on-change: the mounted file changes the way the kubelet changes a ConfigMap
    volume (a new directory, then the `..data` symlink swapped), and the mirror applies it."""
    src, dst = clusters.source_bootstrap, clusters.target_bootstrap
    first, second = make_topic(src, partitions=1), make_topic(src, partitions=1)
    produce(src, first, sample_records(30, 1))
    produce(src, second, sample_records(20, 1))
    group = make_group_id()
    mounted = tmp_path / "mm2"
    mounted.mkdir()

    def update(version: str, topics: str) -> None:
        (mounted / version).mkdir()
        (mounted / version / "mm2.properties").write_text(
            mm2_properties(clusters, group, topics), encoding="utf-8"
        )
        (mounted / "..data_tmp").symlink_to(version)
        os.replace(mounted / "..data_tmp", mounted / "..data")

    update("..1", first)
    (mounted / "mm2.properties").symlink_to("..data/mm2.properties")
    args = ["run", "--mm2-config", str(mounted / "mm2.properties"), "--reload-on-change"]
    with MirrorProcess(args, tmp_path / "m.log") as mirror:
        wait_until(target_has(clusters, first, 30), 90, 0.5, "the first topic copied")
        assert second not in list_topics(dst)  # not selected yet
        update("..2", f"{first}, {second}")
        wait_until(target_has(clusters, second, 20), 60, 0.5, "the newly selected topic copied")
        assert f"reload ({mounted / 'mm2.properties'} changed) applied" in mirror.log
        assert sum(end_offsets(dst, first).values()) == 30
        assert mirror.stop() == 0, mirror.log
    assert_same(consume_all(src, second), consume_all(dst, second))
