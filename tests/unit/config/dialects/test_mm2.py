from __future__ import annotations

from collections.abc import Callable

import pytest

from kmirror.config.describe import describe
from kmirror.config.dialects.mm2 import load_mm2
from kmirror.config.secret import Secret
from kmirror.errors import ConfigError
from tests.unit.config.conftest import load, seed

pytestmark = pytest.mark.unit

Write = Callable[[str, str], str]
BASE = (
    "clusters=a, b, c\na.bootstrap.servers=a:1\nb.bootstrap.servers=b:1\nc.bootstrap.servers=c:1\n"
)


def test_seed002_verbatim() -> None:
    c = load(["--mm2.config", seed("seed002-mm2.properties")])
    assert (c.dialect, c.source.alias, c.target.alias) == ("mm2", "source", "target")
    assert c.source.bootstrap_servers.startswith("broker-3-qnprtqnp7hnkssdz")
    assert c.target.bootstrap_servers == "kafka1:9092,kafka2:9093,kafka3:9094"
    assert c.topics.include == ("orders",)
    assert c.target_topic("orders") == "source.orders"
    assert c.group_id == "kmirror-source-target"
    assert c.refresh_topics_interval_s == 5.0
    assert c.source.common["sasl.password"] == Secret("fake-apikey-985xyz")
    assert c.source.common["sasl.mechanism"] == "PLAIN"
    summary = describe(c)
    assert "fake-apikey" not in summary and "sasl.password=***" in summary
    assert "prefix 'source.<topic>'" in summary
    assert not any("fake-apikey" in n for n in c.notes)
    assert any("'ssl.protocol' has no effect" in n for n in c.notes)


def test_seed002_strimzi_jks_truststore_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"cluster 'source'.*JKS truststore") as err:
        load_mm2(seed("seed002-strimzi-mm2.properties"), environ={})
    assert "=password" not in str(err.value)


def test_seed003_verbatim_with_environment() -> None:
    env = {
        "KAFKA_SOURCE_BROKERS": "src:9092",
        "KAFKA_TARGET_BROKERS": "es-1:9093",
        "KAFKA_TARGET_APIKEY": "apikey-very-secret",
    }
    c = load_mm2(seed("seed003-mm2.properties"), environ=env)
    assert c.source.bootstrap_servers == "src:9092"
    assert c.target.common["sasl.password"] == Secret("apikey-very-secret")
    assert c.target.common["ssl.endpoint.identification.algorithm"] == "https"
    assert c.num_streams == 10
    assert c.topics.include == ("products",)
    text = "\n".join(c.notes)
    assert "${KAFKA_SOURCE_BROKERS}" in text and "taken from the environment" in text
    assert "apikey-very-secret" not in text + describe(c)


def test_seed003_without_environment_names_the_variable() -> None:
    with pytest.raises(ConfigError, match=r"KAFKA_SOURCE_BROKERS, which is not set"):
        load_mm2(seed("seed003-mm2.properties"), environ={})


def test_config_providers(write: Write) -> None:
    secrets = write("secrets.properties", "pw=from-file\n")
    path = write(
        "mm2.properties",
        BASE + "a->b.enabled=true\n"
        "b.bootstrap.servers=${env:TARGET}\n"
        "config.providers=file\n"
        "b.sasl.jaas.config=PlainLoginModule required username=u "
        f'password="${{file:{secrets}:pw}}";\n',
    )
    c = load_mm2(path, environ={"TARGET": "t:9"})
    assert c.target.bootstrap_servers == "t:9"
    assert c.target.common["sasl.password"] == Secret("from-file")
    assert not any("config.providers" in n for n in c.notes)


def test_unknown_config_provider_says_render_first(write: Write) -> None:
    path = write("mm2.properties", BASE + "a->b.enabled=true\na.sasl.password=${vault:x:y}\n")
    with pytest.raises(ConfigError, match=r"provider 'vault'.*render the file first"):
        load_mm2(path, environ={})


def test_flow_selection(write: Write) -> None:
    path = write(
        "mm2.properties", BASE + "a->b.enabled=true\nc->b.enabled=true\na->c.enabled=false\n"
    )
    with pytest.raises(ConfigError, match=r"several flows \(a->b, c->b\).*--flow"):
        load_mm2(path, environ={})
    assert load_mm2(path, flow="c->b", environ={}).source.alias == "c"
    with pytest.raises(ConfigError, match=r"not an enabled flow"):
        load_mm2(path, flow="a->c", environ={})
    single = write("one.properties", BASE + "a->b.enabled=true\nb->c.enabled=true\n")
    assert load_mm2(single, clusters="c", environ={}).target.alias == "c"


def test_no_enabled_flow(write: Write) -> None:
    path = write("mm2.properties", BASE)
    with pytest.raises(ConfigError, match=r"no replication flow is enabled.*a->b.enabled=true"):
        load_mm2(path, environ={})


def test_flow_settings_win_over_global(write: Write) -> None:
    path = write(
        "mm2.properties",
        BASE + "a->b.enabled=true\n"
        "topics=x.*\ntopics.exclude=x\\\\.tmp\na->b.topics=orders, pay.*\n"
        "tasks.max=2\na->b.tasks.max=4\ntopics.blacklist=ignored\n"
        "offset.flush.interval.ms=10000\nsync.topic.configs.enabled=false\n"
        "replication.factor=3\nconfig.properties.exclude=retention\\\\..*\n"
        "a->b.refresh.topics.interval.seconds=2\n"
        "sync.topic.configs.interval.seconds=60\n",
    )
    c = load_mm2(path, environ={})
    assert c.sync_topic_configs_interval_s == 60
    assert c.topics.include == ("orders", "pay.*")
    assert c.topics.exclude == ("x\\.tmp",)
    assert (c.num_streams, c.offset_commit_interval_ms, c.refresh_topics_interval_s) == (
        4,
        10000,
        2,
    )
    assert (c.sync_topic_configs, c.replication_factor) == (False, 3)
    assert c.config_excludes == ("retention\\..*",)


def test_engine_key(write: Write) -> None:
    path = write("mm2.properties", BASE + "a->b.enabled=true\n")
    assert load_mm2(path, environ={}).engine == "auto"
    path = write("mm2.properties", BASE + "a->b.enabled=true\na->b.kmirror.engine=batch\n")
    assert load_mm2(path, environ={}).engine == "batch"
    path = write("mm2.properties", BASE + "a->b.enabled=true\nkmirror.engine=turbo\n")
    with pytest.raises(ConfigError, match=r"kmirror\.engine must be record, batch or auto"):
        load_mm2(path, environ={})


def test_replication_policies(write: Write) -> None:
    path = write("mm2.properties", BASE + "a->b.enabled=true\nreplication.policy.separator=_\n")
    assert load_mm2(path, environ={}).target_topic("t") == "a_t"
    ident = write(
        "i.properties",
        BASE + "a->b.enabled=true\nreplication.policy.class="
        "org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n",
    )
    assert load_mm2(ident, environ={}).target_topic("t") == "t"
    other = write("o.properties", BASE + "a->b.enabled=true\nreplication.policy.class=com.X\n")
    with pytest.raises(ConfigError, match=r"com.X is not supported.*IdentityReplicationPolicy"):
        load_mm2(other, environ={})


def test_unimplemented_settings_in_one_note(write: Write) -> None:
    path = write(
        "mm2.properties",
        BASE + "a->b.enabled=true\nemit.offset-syncs.enabled=true\n"
        "a->b.sync.topic.acls.enabled=true\ncheckpoints.topic.replication.factor=1\n"
        "b.offset.storage.replication.factor=1\na->b.emit.checkpoints.enabled=false\n",
    )
    notes = [n for n in load_mm2(path, environ={}).notes if "not implemented by kmirror" in n]
    assert len(notes) == 1
    for key in (
        "emit.offset-syncs.enabled",
        "checkpoints.topic.replication.factor",
        "b.offset.storage.replication.factor",
    ):
        assert key in notes[0]
    # Disaster-recovery settings (config/dr.py) and ACL sync (config/acls.py) are
    # implemented: not in the note.
    assert "emit.checkpoints" not in notes[0]
    assert "sync.topic.acls" not in notes[0]


def test_client_settings_layers_and_group_id(write: Write) -> None:
    path = write(
        "mm2.properties",
        BASE + "a->b.enabled=true\nclient.id=all\n"
        "b.client.id=only-b\nconsumer.fetch.min.bytes=10\na.consumer.group.id=grp\n"
        "a->b.producer.linger.ms=7\nlinger.ms=3\nc.client.id=unused\n",
    )
    c = load_mm2(path, environ={})
    assert c.source.common["client.id"] == "all"
    assert c.target.common["client.id"] == "only-b"
    assert c.source.consumer["fetch.min.bytes"] == "10"
    assert c.target.producer["linger.ms"] == "7"
    assert c.group_id == "grp"
    assert any("not used by the flow a->b: " in n and "c.client.id" in n for n in c.notes)


def test_unknown_flow_cluster(write: Write) -> None:
    path = write("mm2.properties", BASE + "a->z.enabled=true\n")
    with pytest.raises(ConfigError, match=r"a->z.enabled names a cluster that is not in"):
        load_mm2(path, environ={})


def test_missing_bootstrap(write: Write) -> None:
    path = write("mm2.properties", "clusters=a,b\na.bootstrap.servers=a:1\na->b.enabled=true\n")
    with pytest.raises(ConfigError, match=r"b.bootstrap.servers is not set"):
        load_mm2(path, environ={})


def test_bad_boolean_in_file(write: Write) -> None:
    path = write("mm2.properties", BASE + "a->b.enabled=yes please\n")
    with pytest.raises(ConfigError, match=r"a->b.enabled must be true or false"):
        load_mm2(path, environ={})


def test_progress_topic_in_every_dialect(write: Write) -> None:
    path = write("mm2.properties", BASE + "a->b.enabled=true\na->b.progress.topic=a-b.progress\n")
    assert load_mm2(path, environ={}).progress_topic == "a-b.progress"
    mm2 = write("plain.properties", BASE + "a->b.enabled=true\n")
    assert load_mm2(mm2, environ={}).progress_topic == "kmirror-progress.kmirror-a-b.internal"
    flag = load(["--mm2.config", mm2, "--progress-topic", "flagged"])
    assert flag.progress_topic == "flagged"
    env = load(["--mm2.config", mm2], {"KMIRROR_PROGRESS_TOPIC": "from-env"})
    assert env.progress_topic == "from-env"
    with pytest.raises(ConfigError, match=r"progress\.topic 'no way' is not a valid topic name"):
        load(["--mm2.config", mm2, "--progress-topic", "no way"])
