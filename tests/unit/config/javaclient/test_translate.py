from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from kmirror.config.javaclient import librdkafka
from kmirror.config.javaclient.translate import translate
from kmirror.config.secret import Secret
from kmirror.errors import ConfigError

pytestmark = pytest.mark.unit

JAAS_PLAIN = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="user" '
    'password="pa$$-w0rd";'
)


def notes_text(notes: list[str]) -> str:
    return "\n".join(notes)


def test_librdkafka_keys_pass_through() -> None:
    t = translate(
        {"linger.ms": "100", "compression.type": "lz4", "batch.size": "65536", "client.id": "mm"},
        "producer",
        "p",
    )
    assert t.producer == {
        "linger.ms": "100",
        "compression.type": "lz4",
        "batch.size": "65536",
        "client.id": "mm",
    }
    assert t.notes == []


def test_invalid_value_names_key_and_value() -> None:
    with pytest.raises(ConfigError, match=r"p: invalid value 'zz' for 'compression.type'"):
        translate({"compression.type": "zz"}, "producer", "p")


def test_invalid_value_error_masks_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(librdkafka, "_conf_set", lambda k, v: f'Invalid value "{v}" for "{k}"')
    with pytest.raises(ConfigError) as err:
        librdkafka.check_value("sasl.password", "hunter22", "where")
    assert "hunter22" not in str(err.value)
    assert "***" in str(err.value)


def test_unknown_key_is_a_note_with_prefix_hint() -> None:
    t = translate({"consumer.auto.offset.reset": "latest", "foo.bar": "1"}, "consumer", "c")
    text = notes_text(t.notes)
    assert "unknown consumer property 'consumer.auto.offset.reset' ignored" in text
    assert "did you mean 'auto.offset.reset'" in text
    assert "unknown consumer property 'foo.bar' ignored" in text
    assert t.consumer == {}


@pytest.mark.parametrize(
    ("java", "value", "key", "expected"),
    [
        ("max.request.size", "2097152", "message.max.bytes", "2097152"),
        ("buffer.memory", "33554432", "queue.buffering.max.kbytes", "32768"),
        ("buffer.memory", "1000", "queue.buffering.max.kbytes", "1"),
        ("delivery.timeout.ms", "120000", "message.timeout.ms", "120000"),
        ("send.buffer.bytes", "-1", "socket.send.buffer.bytes", "0"),
    ],
)
def test_producer_renames(java: str, value: str, key: str, expected: str) -> None:
    assert translate({java: value}, "producer", "p").producer == {key: expected}


def test_consumer_renames_and_start_policy() -> None:
    t = translate({"fetch.max.wait.ms": "250", "auto.offset.reset": "latest"}, "consumer", "c")
    assert t.consumer == {"fetch.wait.max.ms": "250"}
    assert t.start_policy == "latest"


@pytest.mark.parametrize(
    ("value", "policy"), [("earliest", "earliest"), ("none", "none"), ("LATEST", "latest")]
)
def test_auto_offset_reset_values(value: str, policy: str) -> None:
    assert translate({"auto.offset.reset": value}, "consumer", "c").start_policy == policy


def test_auto_offset_reset_invalid() -> None:
    with pytest.raises(ConfigError, match=r"must be earliest, latest or none"):
        translate({"auto.offset.reset": "oldest"}, "consumer", "c")


@pytest.mark.parametrize(
    ("java", "expected"),
    [
        ("org.apache.kafka.clients.consumer.RoundRobinAssignor", "roundrobin"),
        ("org.apache.kafka.clients.consumer.RangeAssignor", "range"),
        ("org.apache.kafka.clients.consumer.CooperativeStickyAssignor", "cooperative-sticky"),
        (
            "org.apache.kafka.clients.consumer.RangeAssignor, "
            "org.apache.kafka.clients.consumer.RoundRobinAssignor",
            "range,roundrobin",
        ),
    ],
)
def test_assignor_class_names(java: str, expected: str) -> None:
    t = translate({"partition.assignment.strategy": java}, "consumer", "c")
    assert t.consumer == {"partition.assignment.strategy": expected}


def test_sticky_assignor_and_java_default_mix_have_notes() -> None:
    t = translate(
        {"partition.assignment.strategy": "org.apache.kafka.clients.consumer.StickyAssignor"},
        "consumer",
        "c",
    )
    assert t.consumer["partition.assignment.strategy"] == "cooperative-sticky"
    assert "StickyAssignor mapped to cooperative-sticky" in notes_text(t.notes)
    # Java 3.x default: RangeAssignor, CooperativeStickyAssignor -> librdkafka refuses the mix.
    t = translate(
        {"partition.assignment.strategy": "RangeAssignor,CooperativeStickyAssignor"},
        "consumer",
        "c",
    )
    assert t.consumer["partition.assignment.strategy"] == "range"
    assert "cannot mix eager and cooperative" in notes_text(t.notes)


def test_endpoint_identification_empty_means_none() -> None:
    t = translate({"ssl.endpoint.identification.algorithm": ""}, "consumer", "c")
    assert t.consumer == {"ssl.endpoint.identification.algorithm": "none"}


def test_java_only_keys_are_noted() -> None:
    t = translate(
        {
            "key.deserializer": "x.StringDeserializer",
            "max.block.ms": "1",
            "ssl.enabled.protocols": "TLSv1.2",
        },
        "consumer",
        "c",
    )
    text = notes_text(t.notes)
    for key in ("key.deserializer", "max.block.ms", "ssl.enabled.protocols"):
        assert f"Java property '{key}' has no effect here" in text


def test_jaas_plain_becomes_username_and_secret_password() -> None:
    t = translate(
        {"security.protocol": "SASL_SSL", "sasl.jaas.config": JAAS_PLAIN},
        "consumer",
        "c",
        security_to_common=True,
    )
    assert t.common["sasl.username"] == "user"
    assert t.common["sasl.password"] == Secret("pa$$-w0rd")
    assert t.common["sasl.mechanism"] == "PLAIN"
    assert "sasl.mechanism set to PLAIN" in notes_text(t.notes)
    assert "pa$$" not in notes_text(t.notes)


def test_jaas_scram_needs_matching_mechanism() -> None:
    jaas = (
        "org.apache.kafka.common.security.scram.ScramLoginModule required\n"
        "  username=alice password='s\\'cret';"
    )
    t = translate({"sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": jaas}, "common", "c")
    assert t.common["sasl.username"] == "alice"
    assert t.common["sasl.password"] == Secret("s'cret")
    with pytest.raises(ConfigError, match=r"SCRAM-SHA-256 or SCRAM-SHA-512") as err:
        translate({"sasl.jaas.config": jaas}, "common", "c")
    assert "cret" not in str(err.value)


@pytest.mark.parametrize(
    ("module", "advice"),
    [
        (
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule",
            "sasl.oauthbearer.token.endpoint.url",
        ),
        ("com.sun.security.auth.module.Krb5LoginModule", "sasl.kerberos.keytab"),
    ],
)
def test_unsupported_login_modules(module: str, advice: str) -> None:
    jaas = f'{module} required clientSecret="topsecret";'
    with pytest.raises(ConfigError, match=advice) as err:
        translate({"sasl.jaas.config": jaas}, "common", "c")
    assert "topsecret" not in str(err.value)


def test_malformed_jaas_does_not_echo_it() -> None:
    with pytest.raises(ConfigError, match=r"not of the form") as err:
        translate(
            {"sasl.jaas.config": 'PlainLoginModule username="u" password="leak"'}, "common", "c"
        )
    assert "leak" not in str(err.value)


def test_pem_truststore_becomes_ca_location() -> None:
    t = translate(
        {
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": "/certs/ca.pem",
            "ssl.truststore.password": "ignored",
        },
        "common",
        "c",
    )
    assert t.common == {"ssl.ca.location": "/certs/ca.pem"}
    assert "ssl.truststore.password ignored" in notes_text(t.notes)


@pytest.mark.parametrize(
    "props",
    [
        {"ssl.truststore.location": "/home/truststore.jks"},
        {"ssl.truststore.type": "JKS", "ssl.truststore.location": "/certs/ts"},
    ],
)
def test_missing_jks_truststore_is_fatal(props: dict[str, str]) -> None:
    with pytest.raises(ConfigError, match=r"JKS truststore .* cannot be read"):
        translate(props, "common", "c")


def test_pem_truststore_without_its_type_names_the_fix(tmp_path: Path) -> None:
    pem = tmp_path / "ca.pem"  # Java's default type is JKS
    pem.write_text("-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n")
    with pytest.raises(ConfigError, match=r"is not a JKS file.*ssl\.truststore\.type=PEM"):
        translate({"ssl.truststore.location": str(pem)}, "common", "c")


def test_pkcs12_truststore_is_fatal_with_openssl_hint() -> None:
    with pytest.raises(ConfigError, match=r"openssl pkcs12 -in truststore.p12 -nokeys"):
        translate(
            {"ssl.truststore.type": "PKCS12", "ssl.truststore.location": "/t.p12"}, "common", "c"
        )


def test_pkcs12_keystore() -> None:
    t = translate(
        {
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": "/k.p12",
            "ssl.keystore.password": "kspw",
        },
        "common",
        "c",
    )
    assert t.common == {"ssl.keystore.location": "/k.p12", "ssl.keystore.password": Secret("kspw")}


def test_pem_keystore_gives_certificate_and_key_location() -> None:
    t = translate(
        {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": "/client.pem",
            "ssl.key.password": "keypw",
        },
        "common",
        "c",
    )
    assert t.common == {
        "ssl.certificate.location": "/client.pem",
        "ssl.key.location": "/client.pem",
        "ssl.key.password": Secret("keypw"),
    }


def test_missing_or_non_jks_keystore_is_fatal(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"JKS keystore '/k\.jks' cannot be read"):
        translate({"ssl.keystore.location": "/k.jks"}, "common", "c")
    p12 = tmp_path / "k.bin"
    p12.write_bytes(b"0\x82\x01")  # PKCS12 DER starts like this, not like JKS
    with pytest.raises(ConfigError, match=r"is not a JKS file.*ssl\.keystore\.type"):
        translate({"ssl.keystore.location": str(p12)}, "common", "c")


def test_inline_pem_material() -> None:
    pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"
    t = translate(
        {
            "ssl.truststore.type": "PEM",
            "ssl.truststore.certificates": pem,
            "ssl.keystore.type": "PEM",
            "ssl.keystore.certificate.chain": pem,
            "ssl.keystore.key": "-----BEGIN PRIVATE KEY-----",
        },
        "common",
        "c",
    )
    assert t.common["ssl.ca.pem"] == pem
    assert t.common["ssl.certificate.pem"] == pem
    assert isinstance(t.common["ssl.key.pem"], Secret)


@pytest.mark.parametrize(
    ("key", "advice"),
    [
        ("interceptor.classes", "interceptors are Java classes"),
        ("sasl.login.callback.handler.class", "sasl.oauthbearer.method=oidc"),
        ("sasl.client.callback.handler.class", "sasl.username/sasl.password"),
        ("security.providers", "OpenSSL"),
    ],
)
def test_fatal_java_class_keys(key: str, advice: str) -> None:
    with pytest.raises(ConfigError, match=f"'{key}' is not supported: .*{advice}"):
        translate({key: "com.example.Thing"}, "consumer", "c")


def test_empty_interceptor_list_is_harmless() -> None:
    assert translate({"interceptor.classes": ""}, "consumer", "c").notes == []


def test_consumer_safety_overrides_are_noted() -> None:
    t = translate(
        {"enable.auto.commit": "true", "enable.auto.offset.store": "true"}, "consumer", "c"
    )
    assert t.consumer == {}
    text = notes_text(t.notes)
    assert "enable.auto.commit=true overridden to enable.auto.commit=false" in text
    assert "enable.auto.offset.store=true overridden" in text


def test_producer_safety_overrides_are_noted() -> None:
    t = translate(
        {
            "acks": "1",
            "enable.idempotence": "false",
            "max.in.flight.requests.per.connection": "10",
            "retries": "0",
        },
        "producer",
        "p",
    )
    assert t.producer == {"max.in.flight.requests.per.connection": "5"}
    text = notes_text(t.notes)
    assert "acks=1 overridden to acks=all" in text
    assert "enable.idempotence=false overridden to enable.idempotence=true" in text
    assert "capped at 5" in text
    assert "retries=0 overridden" in text


def test_acks_all_and_minus_one_are_silent() -> None:
    assert translate({"acks": "-1"}, "producer", "p").notes == []
    assert translate({"acks": "all"}, "producer", "p").notes == []


def test_wrong_role_keys_are_noted_and_dropped() -> None:
    t = translate({"linger.ms": "5", "fetch.min.bytes": "1"}, "consumer", "c")
    assert t.consumer == {"fetch.min.bytes": "1"}
    assert "producer property 'linger.ms' has no effect on a consumer" in notes_text(t.notes)


def test_common_role_routes_by_scope() -> None:
    t = translate(
        {
            "linger.ms": "5",
            "session.timeout.ms": "10000",
            "client.id": "x",
            "security.protocol": "SSL",
        },
        "common",
        "cluster",
    )
    assert t.common == {"client.id": "x", "security.protocol": "SSL"}
    assert t.consumer == {"session.timeout.ms": "10000"}
    assert t.producer == {"linger.ms": "5"}
    assert t.notes == []


def test_bootstrap_and_group_id_are_lifted_out() -> None:
    t = translate({"bootstrap.servers": " h:1 ", "group.id": "g"}, "consumer", "c")
    assert (t.bootstrap_servers, t.group_id, t.consumer) == ("h:1", "g", {})
    assert translate({"metadata.broker.list": "h:2"}, "common", "c").bootstrap_servers == "h:2"


def test_probing_is_fast_and_leaves_no_threads() -> None:
    librdkafka.is_known.cache_clear()
    librdkafka.canonical.cache_clear()
    librdkafka._scope_cache.clear()
    threads = threading.active_count()
    start = time.perf_counter()
    translate(
        {
            "bootstrap.servers": "h:1",
            "group.id": "g",
            "client.id": "c",
            "auto.offset.reset": "earliest",
            "session.timeout.ms": "30000",
            "max.poll.interval.ms": "300000",
            "fetch.min.bytes": "1",
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": JAAS_PLAIN,
        },
        "consumer",
        "c",
    )
    translate(
        {
            "bootstrap.servers": "h:2",
            "acks": "all",
            "linger.ms": "100",
            "batch.size": "65536",
            "compression.type": "lz4",
        },
        "producer",
        "p",
    )
    assert time.perf_counter() - start < 0.2
    assert threading.active_count() == threads
