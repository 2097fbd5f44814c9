from __future__ import annotations

from collections.abc import Callable, Mapping

import pytest

from kmirror.config.dialects.mm1 import load_mm1
from kmirror.errors import ConfigError
from tests.unit.config.conftest import load, seed

pytestmark = pytest.mark.unit

Render = Callable[[str, Mapping[str, str]], str]
Write = Callable[[str, str], str]
SEED001_ENV = {
    "SOURCE_CLUSTER_BOOTSTRAP_SERVERS": "src-1:9092,src-2:9092",
    "SOURCE_CLUSTER_CONSUMER_GROUP": "mirror-group",
    "SINK_CLUSTER_BOOTSTRAP_SERVERS": "dst-1:9092",
}


def test_seed001_files_after_envsubst(rendered: Render) -> None:
    consumer = rendered("seed001-consumer.properties", SEED001_ENV)
    producer = rendered("seed001-producer.properties", SEED001_ENV)
    c = load(
        [
            "--consumer.config",
            consumer,
            "--producer.config",
            producer,
            "--whitelist",
            "orders,payments",
        ]
    )
    assert c.dialect == "mm1"
    assert c.source.bootstrap_servers == "src-1:9092,src-2:9092"
    assert c.target.bootstrap_servers == "dst-1:9092"
    assert c.group_id == "mirror-group"
    assert c.auto_offset_reset == "latest"
    assert c.offset_commit_interval_ms == 10_000
    assert c.topics.include == ("orders", "payments")
    assert c.target.producer == {"compression.type": "gzip"}
    assert c.consumer_conf()["enable.auto.commit"] == "false"
    text = "\n".join(c.notes)
    assert "unknown consumer property 'consumer.auto.offset.reset' ignored" in text
    assert "enable.auto.commit=true overridden to enable.auto.commit=false" in text
    assert "offset.commit.interval.ms=10000 applied, but it is a MirrorMaker command-line" in text
    assert "exclude.internal.topics" in text


def test_commit_interval_flag_wins_over_file(rendered: Render) -> None:
    c = load(
        [
            "--consumer.config",
            rendered("seed001-consumer.properties", SEED001_ENV),
            "--producer.config",
            rendered("seed001-producer.properties", SEED001_ENV),
            "--whitelist",
            ".*",
            "--offset.commit.interval.ms",
            "5000",
        ]
    )
    assert c.offset_commit_interval_ms == 5000
    assert any("offset.commit.interval.ms=10000 ignored" in n for n in c.notes)


def test_a_file_is_checked_for_placeholders_whatever_its_first_line(write: Write) -> None:
    # The entrypoint hands its rendered settings over in memory; a file on disk is never
    # trusted to be rendered because of a comment at its top.
    consumer = write(
        "c.properties",
        "# Rendered by kmirror from consumer.properties. Do not edit.\n"
        "bootstrap.servers=$SOURCE_CLUSTER_BOOTSTRAP_SERVERS\ngroup.id=g\n",
    )
    producer = write("p.properties", "bootstrap.servers=dst:9092\n")
    with pytest.raises(ConfigError, match=r"unrendered .*\$SOURCE_CLUSTER_BOOTSTRAP_SERVERS"):
        load(["--consumer.config", consumer, "--producer.config", producer, "--whitelist", "x"])


def test_seed001_unrendered_files_say_render_first() -> None:
    with pytest.raises(ConfigError, match=r"unrendered .*\$SOURCE_CLUSTER_BOOTSTRAP_SERVERS"):
        load(
            [
                "--consumer.config",
                seed("seed001-consumer.properties"),
                "--producer.config",
                seed("seed001-producer.properties"),
                "--whitelist",
                ".*",
            ]
        )


def test_seed004_classic_files() -> None:
    c = load(
        [
            "--consumer.config",
            seed("seed004-consumer.properties"),
            "--producer.config",
            seed("seed004-producer.properties"),
            "--whitelist",
            ".*",
        ]
    )
    assert c.group_id == "mm1.Consumer"
    assert c.source.consumer == {
        "client.id": "mm1.Consumer",
        "partition.assignment.strategy": "roundrobin",
    }
    assert c.target.producer == {
        "client.id": "mml.Producer",
        "compression.type": "lz4",
        "linger.ms": "100",
        "batch.size": "65536",
    }
    assert c.auto_offset_reset == "earliest"
    text = "\n".join(c.notes)
    for key in ("key.deserializer", "key.serializer", "value.serializer"):
        assert f"Java property '{key}' has no effect here" in text
    assert "unknown consumer property 'yalue.deserializer' ignored" in text


def test_security_goes_to_common_for_admin_clients(write: Write) -> None:
    consumer = write(
        "c.properties",
        "bootstrap.servers=s:1\ngroup.id=g\nsecurity.protocol="
        "SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config=org.apache.kafka."
        'common.security.scram.ScramLoginModule required username="u" '
        'password="p4ss";\n',
    )
    producer = write("p.properties", "bootstrap.servers=t:1\n")
    c = load_mm1(consumer, producer, whitelist=".*")
    admin = c.admin_conf("source")
    assert admin["sasl.password"] == "p4ss"
    assert admin["security.protocol"] == "SASL_SSL"
    assert "p4ss" not in repr(c)


def test_missing_group_id_names_the_file(write: Write) -> None:
    consumer = write("nogroup.properties", "bootstrap.servers=s:1\n")
    producer = write("p.properties", "bootstrap.servers=t:1\n")
    with pytest.raises(ConfigError, match=r"nogroup\.properties has no group\.id"):
        load_mm1(consumer, producer, whitelist=".*")
    assert load_mm1(consumer, producer, whitelist=".*", group_id="flag").group_id == "flag"


def test_empty_group_id(write: Write) -> None:
    consumer = write("c.properties", "bootstrap.servers=s:1\ngroup.id=\n")
    producer = write("p.properties", "bootstrap.servers=t:1\n")
    with pytest.raises(ConfigError, match=r"group.id is empty"):
        load_mm1(consumer, producer, whitelist=".*")


def test_a_group_id_that_cannot_name_kmirrors_topics_is_refused_at_load(write: Write) -> None:
    # kmirror-progress.<group>.internal and kmirror-control.<group>.internal: before this
    # check, the first stream found out when it created the topic, and the mirror exited 3.
    consumer = write("c.properties", "bootstrap.servers=s:1\ngroup.id=bench,1\n")
    producer = write("p.properties", "bootstrap.servers=t:1\n")
    with pytest.raises(ConfigError) as refused:
        load_mm1(consumer, producer, whitelist=".*")
    assert "group.id 'bench,1' cannot name kmirror's topics" in str(refused.value)
    assert "'kmirror-control.bench,1.internal'" in str(refused.value)
    assert "'kmirror-progress.bench,1.internal'" in str(refused.value)
    # Too long a name is refused as well (249 characters at most); 217 of them still fit.
    long_group = "g" * 240
    consumer = write("c2.properties", f"bootstrap.servers=s:1\ngroup.id={long_group}\n")
    with pytest.raises(ConfigError, match="kmirror-control") as refused:
        load_mm1(consumer, producer, whitelist=".*")
    assert "kmirror-progress" in str(refused.value)
    assert load_mm1(consumer, producer, whitelist=".*", group_id="g" * 217).group_id


def test_missing_bootstrap_names_file_and_side(write: Write) -> None:
    consumer = write("c.properties", "bootstrap.servers=s:1\ngroup.id=g\n")
    producer = write("target.properties", "acks=all\n")
    with pytest.raises(ConfigError, match=r"target\.properties has no bootstrap.servers.*target"):
        load_mm1(consumer, producer, whitelist=".*")


def test_whitelist_required_and_validated(write: Write) -> None:
    consumer = write("c.properties", "bootstrap.servers=s:1\ngroup.id=g\n")
    producer = write("p.properties", "bootstrap.servers=t:1\n")
    with pytest.raises(ConfigError, match=r"--whitelist REGEX is required"):
        load_mm1(consumer, producer, whitelist=None)
    with pytest.raises(ConfigError, match=r"invalid whitelist/include regex '\*'"):
        load_mm1(consumer, producer, whitelist="*")


def test_include_exclude_aliases(write: Write) -> None:
    consumer = write("c.properties", "bootstrap.servers=s:1\ngroup.id=g\n")
    producer = write("p.properties", "bootstrap.servers=t:1\n")
    c = load(
        [
            "--consumer.config",
            consumer,
            "--producer.config",
            producer,
            "--include",
            "app\\..*",
            "--exclude",
            "app\\.tmp.*",
            "--num.streams",
            "3",
            "--abort.on.send.failure",
            "no",
        ]
    )
    assert c.topics.select(["app.a", "app.tmp1", "other"]) == ["app.a"]
    assert (c.num_streams, c.abort_on_send_failure) == (3, False)
