"""Each config dialect users arrive with runs the real mirror end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.test_mirror import assert_same, sample_records, target_has
from tests.kafkatools import Clusters, consume_all, list_topics, produce, wait_until
from tests.mirrorproc import MirrorProcess, mirror_args, run_cli, write_properties

pytestmark = pytest.mark.integration


def test_mm2_default_replication_policy_prefixes(
    tmp_path: Path, clusters: Clusters, make_topic, unique_name
) -> None:
    topic = make_topic(clusters.source_bootstrap, partitions=2)
    produce(clusters.source_bootstrap, topic, sample_records(100, 2))
    mm2 = tmp_path / "mm2.properties"
    mm2.write_text(
        "clusters = east, west\n"
        f"east.bootstrap.servers = {clusters.source_bootstrap}\n"
        f"west.bootstrap.servers = {clusters.target_bootstrap}\n"
        "east->west.enabled = true\n"
        f"east->west.topics = {topic}\n"
        "west->east.enabled = false\n"
        "tasks.max = 2\n"
        "emit.heartbeats.enabled = false\n"
        f"east.consumer.group.id = {unique_name('g')}\n"
        "offset.flush.interval.ms = 1000\n",
        encoding="utf-8",
    )
    with MirrorProcess(["run", "--mm2-config", str(mm2)], tmp_path / "m.log") as m:
        wait_until(target_has(clusters, f"east.{topic}", 100), 90)
        m.wait_ready(30)
        assert m.stop() == 0, m.log
    assert "not implemented" not in m.log  # disaster-recovery settings are implemented
    assert_same(
        consume_all(clusters.source_bootstrap, topic),
        consume_all(clusters.target_bootstrap, f"east.{topic}"),
    )
    assert topic not in list_topics(clusters.target_bootstrap)


def test_mm2_identity_policy(tmp_path: Path, clusters: Clusters, make_topic, unique_name) -> None:
    topic = make_topic(clusters.source_bootstrap, partitions=3)
    produce(clusters.source_bootstrap, topic, sample_records(60, 3))
    mm2 = tmp_path / "mm2.properties"
    mm2.write_text(
        "clusters=A,B\n"
        f"A.bootstrap.servers={clusters.source_bootstrap}\n"
        f"B.bootstrap.servers={clusters.target_bootstrap}\n"
        "A->B.enabled=true\n"
        f"A->B.topics={topic}\n"
        "replication.policy.class=org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n"
        f"A->B.consumer.group.id={unique_name('g')}\n",
        encoding="utf-8",
    )
    with MirrorProcess(["run", "--mm2-config", str(mm2)], tmp_path / "m.log") as m:
        wait_until(target_has(clusters, topic, 60), 90)
        m.wait_ready(30)
        assert m.stop() == 0, m.log
    assert_same(
        consume_all(clusters.source_bootstrap, topic), consume_all(clusters.target_bootstrap, topic)
    )


@pytest.mark.parametrize("via", ["flags", "env"])
@pytest.mark.parametrize("cluster_type", ["DESTINATION", "SOURCE"])
def test_kudo_cluster_types(
    tmp_path: Path, clusters: Clusters, make_topic, unique_name, cluster_type: str, via: str
) -> None:
    # DESTINATION: the mirror runs by the source ("this") and the external cluster is the
    # target. SOURCE: runs by the target and pulls from the external cluster.
    this, external = (
        (clusters.source_bootstrap, clusters.target_bootstrap)
        if cluster_type == "DESTINATION"
        else (clusters.target_bootstrap, clusters.source_bootstrap)
    )
    topic = make_topic(clusters.source_bootstrap, partitions=2)
    produce(clusters.source_bootstrap, topic, sample_records(50, 2))
    group = unique_name("g")
    if via == "flags":
        args = [
            "run",
            "--this-bootstrap-servers",
            this,
            "--external-bootstrap-servers",
            external,
            "--external-cluster-type",
            cluster_type.lower(),
            "--whitelist",
            topic,
            "--group-id",
            group,
        ]
        env = {}
    else:
        args = ["run"]
        env = {
            "MIRROR_MAKER_THIS_BOOTSTRAP_SERVERS": this,
            "MIRROR_MAKER_EXTERNAL_BOOTSTRAP_SERVERS": external,
            "MIRROR_MAKER_EXTERNAL_CLUSTER_TYPE": cluster_type,
            "MIRROR_MAKER_TOPIC_WHITELIST": topic,
            "MIRROR_MAKER_NUM_STREAMS": "1",
            "MIRROR_MAKER_OFFSET_COMMIT_INTERVAL": "1000",
            "SOURCE_CLUSTER_CONSUMER_GROUP": group,
        }
    with MirrorProcess(args, tmp_path / "m.log", env=env) as m:
        wait_until(target_has(clusters, topic, 50), 90)
        m.wait_ready(30)
        assert m.stop() == 0, m.log
    assert_same(
        consume_all(clusters.source_bootstrap, topic), consume_all(clusters.target_bootstrap, topic)
    )


def test_seed_mm1_properties_start_with_warnings(
    tmp_path: Path, clusters: Clusters, make_topic, unique_name
) -> None:
    """The seed's consumer.properties (auto commit on, a stray key) and a classic producer file
    (Java serializers, lz4, linger, batch.size) work as they are, with warnings."""
    topic = make_topic(clusters.source_bootstrap, partitions=2)
    produce(clusters.source_bootstrap, topic, sample_records(40, 2))
    cons = write_properties(
        tmp_path / "consumer.properties",
        {
            "bootstrap.servers": clusters.source_bootstrap,
            "group.id": unique_name("g"),
            "exclude.internal.topics": "true",
            "enable.auto.commit": "true",
            "auto.offset.reset": "earliest",
            "consumer.auto.offset.reset": "latest",
            "key.deserializer": "org.apache.kafka.common.serialization.ByteArrayDeserializer",
            "partition.assignment.strategy": "org.apache.kafka.clients.consumer.RoundRobinAssignor",
        },
    )
    prod = write_properties(
        tmp_path / "producer.properties",
        {
            "bootstrap.servers": clusters.target_bootstrap,
            "client.id": "mm1.Producer",
            "value.serializer": "org.apache.kafka.common.serialization.BytesSerializer",
            "compression.type": "lz4",
            "linger.ms": "100",
            "batch.size": "65536",
            "offset.commit.interval.ms": "1000",
        },
    )
    args = [
        "run",
        "--consumer.config",
        str(cons),
        "--producer.config",
        str(prod),
        "--whitelist",
        topic,
    ]
    with MirrorProcess(args, tmp_path / "m.log") as m:
        wait_until(target_has(clusters, topic, 40), 90)
        m.wait_ready(30)
        assert m.stop() == 0, m.log
    log = m.log
    assert "consumer.auto.offset.reset" in log
    assert "enable.auto.commit" in log
    assert_same(
        consume_all(clusters.source_bootstrap, topic), consume_all(clusters.target_bootstrap, topic)
    )


def test_check_prints_the_mapping_and_writes_nothing(
    tmp_path: Path, clusters: Clusters, make_topic, unique_name
) -> None:
    topic = make_topic(clusters.source_bootstrap, partitions=3)
    args = mirror_args(tmp_path, clusters, unique_name("g"), topic)
    args[0] = "check"
    result = run_cli([*args, "--json"])
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan["topics"] == [
        {
            "source": topic,
            "target": topic,
            "named_by": "identity",
            "partitions": 3,
            "target_partitions": None,
            "action": "create",
        }
    ]
    assert topic not in list_topics(clusters.target_bootstrap)
    files = args[1:5]  # --consumer.config F --producer.config F
    nothing = run_cli(["check", *files, "--whitelist", "no-such-topic-.*"])
    assert nothing.returncode == 2, nothing.stderr
    assert "no source topic matches" in nothing.stderr
