"""Writing to a target topic the mirror has just created.

Without care this loses records silently: the controller confirms a new topic before its
partitions are online at the leader, and an idempotent producer writing in that window can have
its first records acknowledged and not written (reproduced with Kafka 4.1 and librdkafka 2.16:
1 run in 8). TopicManager.ensure() therefore returns only once every partition answers at its
leader (image/kmirror/mirror/topics.py, _await_online).
"""

from __future__ import annotations

import contextlib
import logging
import time

import pytest
from confluent_kafka import KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from kmirror.config.model import ClusterConfig, MirrorConfig
from kmirror.mirror.topics import TopicManager
from tests.conftest import MakeTopic
from tests.faults.cluster3 import Clusters3
from tests.kafkatools import Clusters, consume_all, create_topic, delete_topic, unique

QUIET = logging.getLogger("faults.new-topic")
QUIET.addHandler(logging.NullHandler())
QUIET.propagate = False


def manager(clusters: Clusters, sync_topic_configs: bool = True) -> TopicManager:
    config = MirrorConfig(
        source=ClusterConfig("source", clusters.source_bootstrap),
        target=ClusterConfig("target", clusters.target_bootstrap),
        group_id="unused",
        sync_topic_configs=sync_topic_configs,
    )
    return TopicManager(config)


def online_now(bootstrap: str, topic: str, partitions: int) -> list[int]:
    """Partitions that do NOT answer a single ListOffsets round right now."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "logger": QUIET})
    asked = {TopicPartition(topic, p): OffsetSpec.latest() for p in range(partitions)}
    failed = []
    for tp, fut in admin.list_offsets(asked, request_timeout=10).items():
        try:
            fut.result()
        except KafkaException:
            failed.append(tp.partition)
    return failed


@pytest.mark.faults
def test_ensure_returns_only_when_new_partitions_are_online(
    clusters: Clusters, make_topic: MakeTopic
) -> None:
    topic = make_topic(clusters.source_bootstrap, unique("faults-online"), partitions=12)
    tm = manager(clusters)
    try:
        tm.ensure({topic: 12})
        assert online_now(clusters.target_bootstrap, topic, 12) == []
    finally:
        delete_topic(clusters.target_bootstrap, topic, wait=False)


@pytest.mark.slow
def test_no_silent_loss_writing_right_after_creation(
    clusters: Clusters, make_topic: MakeTopic
) -> None:
    """The statistical version: 10 times, create through TopicManager and write at once from a
    fresh idempotent producer (small batches, many in flight): every record is there."""
    lost: dict[str, int] = {}
    errors: list[object] = []

    def on_delivery(err: object, msg: object) -> None:
        if err is not None:
            errors.append(err)

    for _ in range(10):
        topic = make_topic(clusters.source_bootstrap, unique("faults-newtopic"), partitions=12)
        producer = Producer(
            {
                "bootstrap.servers": clusters.target_bootstrap,
                "enable.idempotence": True,
                "linger.ms": 1,
                "allow.auto.create.topics": False,
                "logger": QUIET,
            }
        )
        producer.list_topics(timeout=10)
        try:
            manager(clusters).ensure({topic: 12})
            sent, end = 0, time.monotonic() + 2
            while time.monotonic() < end:
                for p in range(12):
                    producer.produce(
                        topic,
                        key=b"%08d" % sent,
                        partition=p,
                        on_delivery=on_delivery,
                    )
                    sent += 1
                producer.poll(0.002)
            assert producer.flush(60) == 0
            assert not errors, errors[:3]
            got = {r.key for r in consume_all(clusters.target_bootstrap, topic, logger=QUIET)}
            missing = sum(1 for i in range(sent) if b"%08d" % i not in got)
            if missing:
                lost[topic] = missing
        finally:
            delete_topic(clusters.target_bootstrap, topic, wait=False)
    assert not lost, f"acknowledged records missing: {lost}"


@pytest.mark.faults
def test_new_topics_found_online_on_three_brokers(clusters3: Clusters3) -> None:
    """On a multi-broker target the first metadata answer after creating a topic may come from
    a broker that has not seen it yet; librdkafka's ListOffsets then kept finding "no leaders"
    in its cache for 30 s and more (1 creation in 2 here), which held every mirror start with
    a new target topic for a 30 s timeout and a retry. Each of six new topics (one the progress
    topic's way, five the mirrored topics' way) must be found online well within 10 s."""
    # Without copying topic configs: describing a source topic a moment after its creation can
    # reach a broker that has not seen it yet (UNKNOWN_TOPIC_OR_PART), and configs are not what
    # this test is about.
    tm = manager(clusters3.proxied, sync_topic_configs=False)
    names = [unique("faults-online3") for _ in range(6)]
    try:
        tm.ensure_internal(names[0], 1, {"cleanup.policy": "compact"}, online_timeout=10)
        for name in names[1:]:
            create_topic(clusters3.bootstrap("source"), name, 2, replication_factor=3)
            tm.ensure({name: 2}, online_timeout=10)
        assert online_now(clusters3.proxied.target_bootstrap, names[-1], 2) == []
    finally:
        for side in ("source", "target"):
            for name in names:
                with contextlib.suppress(Exception):
                    delete_topic(clusters3.bootstrap(side), name, wait=False)
