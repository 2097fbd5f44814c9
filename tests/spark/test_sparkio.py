"""The Spark edge without Spark: client-setting translation, jar discovery, session defaults,
and the report's JSON and summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kmirror.config.model import ClusterConfig
from kmirror.config.secret import Secret, mask_config
from kmirror.errors import ConfigError
from kmirror_validate import sparkio
from kmirror_validate.report import Example, PartitionResult, Report, TopicResult

pytestmark = pytest.mark.unit


def test_plaintext() -> None:
    opts = sparkio.reader_options(ClusterConfig("s", "h1:9092,h2:9092"), "read_committed")
    assert opts == {
        "kafka.bootstrap.servers": "h1:9092,h2:9092",
        "kafka.security.protocol": "PLAINTEXT",
        "kafka.isolation.level": "read_committed",
    }


@pytest.mark.parametrize(
    ("mechanism", "module"),
    [("PLAIN", "plain.PlainLoginModule"), ("SCRAM-SHA-512", "scram.ScramLoginModule")],
)
def test_sasl_ssl_builds_jaas_and_pem_truststore(mechanism: str, module: str) -> None:
    conf = {
        "bootstrap.servers": "b:9093",
        "security.protocol": "sasl_ssl",
        "sasl.mechanisms": mechanism,
        "sasl.username": "alice",
        "sasl.password": Secret('p"w\\d'),
        "ssl.ca.location": "/certs/ca.pem",
        "ssl.endpoint.identification.algorithm": "none",
    }
    java = sparkio.java_client_options(conf)
    jaas = java["sasl.jaas.config"]
    assert isinstance(jaas, Secret)
    assert jaas.reveal() == (
        f"org.apache.kafka.common.security.{module} required "
        'username="alice" password="p\\"w\\\\d";'
    )
    assert {k: v for k, v in java.items() if k != "sasl.jaas.config"} == {
        "bootstrap.servers": "b:9093",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": mechanism,
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": "/certs/ca.pem",
        "ssl.endpoint.identification.algorithm": "",
    }
    assert "alice" not in str(mask_config(java)["sasl.jaas.config"])


def test_mtls_keystore_is_inline_pem(tmp_path: Path) -> None:
    cert, key = tmp_path / "c.pem", tmp_path / "k.pem"
    cert.write_text("-----BEGIN CERTIFICATE-----\nC\n-----END CERTIFICATE-----\n")
    key.write_text("-----BEGIN PRIVATE KEY-----\nK\n-----END PRIVATE KEY-----\n")
    java = sparkio.java_client_options({
        "bootstrap.servers": "b:9093", "security.protocol": "SSL",
        "ssl.ca.pem": "CA", "ssl.certificate.location": str(cert),
        "ssl.key.location": str(key), "ssl.key.password": Secret("kp"),
    })  # fmt: skip
    assert java["ssl.keystore.type"] == "PEM"
    assert java["ssl.keystore.certificate.chain"] == cert.read_text()
    assert java["ssl.keystore.key"] == Secret(key.read_text())
    assert java["ssl.key.password"] == Secret("kp")
    assert (java["ssl.truststore.type"], java["ssl.truststore.certificates"]) == ("PEM", "CA")
    assert java["ssl.endpoint.identification.algorithm"] == "https"


OAUTH = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
SASL_OAUTH = {"bootstrap.servers": "b:1", "security.protocol": "SASL_SSL",
              "sasl.mechanism": "OAUTHBEARER"}  # fmt: skip


def test_oidc_becomes_the_java_oidc_login() -> None:
    java = sparkio.java_client_options({
        **SASL_OAUTH, "sasl.oauthbearer.method": "oidc", "sasl.oauthbearer.client.id": "m",
        "sasl.oauthbearer.client.secret": Secret("s3"), "sasl.oauthbearer.scope": "kafka",
        "sasl.oauthbearer.extensions": "logicalCluster=lkc-1",
        "sasl.oauthbearer.token.endpoint.url": "https://idp/token",
    })  # fmt: skip
    jaas = java.pop("sasl.jaas.config")
    assert isinstance(jaas, Secret)
    assert jaas.reveal() == (
        f'{OAUTH} required clientId="m" clientSecret="s3" scope="kafka" '
        'extension_logicalCluster="lkc-1";'
    )
    assert java == {
        "bootstrap.servers": "b:1",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.login.callback.handler.class": "org.apache.kafka.common.security.oauthbearer."
        "OAuthBearerLoginCallbackHandler",
        "sasl.oauthbearer.token.endpoint.url": "https://idp/token",
        "ssl.endpoint.identification.algorithm": "https",
    }


def test_unsecured_tokens_become_the_java_unsecured_login() -> None:
    java = sparkio.java_client_options({
        **SASL_OAUTH, "enable.sasl.oauthbearer.unsecure.jwt": "true",
        "sasl.oauthbearer.config": "principal=mirror lifeSeconds=600",
    })  # fmt: skip
    assert java["sasl.jaas.config"] == Secret(
        f'{OAUTH} required unsecuredLoginStringClaim_sub="mirror" '
        'unsecuredLoginLifetimeSeconds="600";'
    )


def test_msk_iam_becomes_msks_java_login() -> None:
    java = sparkio.java_client_options({
        **SASL_OAUTH, "kmirror.sasl.oauthbearer.provider": "aws-msk-iam",
        "kmirror.sasl.aws.role.arn": "arn:aws:iam::1:role/r",
    })  # fmt: skip
    assert java["sasl.mechanism"] == "AWS_MSK_IAM"
    assert java["sasl.jaas.config"] == Secret(
        'software.amazon.msk.auth.iam.IAMLoginModule required awsRoleArn="arn:aws:iam::1:role/r";'
    )
    assert java["sasl.client.callback.handler.class"] == (
        "software.amazon.msk.auth.iam.IAMClientCallbackHandler"
    )


def test_unsupported_sasl_and_unreadable_key_are_config_errors(tmp_path: Path) -> None:
    base = {"bootstrap.servers": "b:1"}
    with pytest.raises(ConfigError, match=r"OAUTHBEARER without sasl\.oauthbearer\.method=oidc"):
        sparkio.java_client_options(
            {**base, "security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"}
        )
    with pytest.raises(ConfigError, match="GSSAPI is not supported"):
        sparkio.java_client_options({**base, "security.protocol": "SASL_SSL"})
    with pytest.raises(ConfigError, match="cannot read the client key"):
        sparkio.java_client_options({
            **base, "security.protocol": "SSL", "ssl.certificate.location": __file__,
            "ssl.key.location": str(tmp_path / "nope.pem"),
        })  # fmt: skip


def test_jars_from_env_dir_or_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jars = tmp_path / "jars"
    jars.mkdir()
    (jars / "spark-sql-kafka-0-10_2.13-9.9.9.jar").write_text("")
    (jars / "kafka-clients-1.jar").write_text("")
    assert [Path(j).name for j in sparkio.connector_jars({"KMIRROR_SPARK_JARS": str(jars)})] == [
        "kafka-clients-1.jar", "spark-sql-kafka-0-10_2.13-9.9.9.jar",
    ]  # fmt: skip
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError, match="holds no spark-sql-kafka"):
        sparkio.connector_jars({"KMIRROR_SPARK_JARS": str(empty)})

    monkeypatch.setattr(sparkio, "_pyspark_version", lambda: "4.3.0")
    cache = tmp_path / "cache"
    for version in ("3.5.0", "4.1.1", "4.2.0"):
        d = cache / "jars" / f"spark-kafka-{version}"
        d.mkdir(parents=True)
        (d / f"spark-sql-kafka-0-10_2.13-{version}.jar").write_text("")
    found = sparkio.connector_jars({"KMIRROR_CACHE": str(cache)})
    assert [Path(j).parent.name for j in found] == ["spark-kafka-4.2.0"]
    (cache / "jars" / "spark-kafka-4.3.0").mkdir()
    (cache / "jars" / "spark-kafka-4.3.0" / "x.jar").write_text("")
    assert Path(sparkio.connector_jars({"KMIRROR_CACHE": str(cache)})[0]).parent.name == (
        "spark-kafka-4.3.0"
    )
    with pytest.raises(ConfigError, match="no Spark Kafka connector jars"):
        sparkio.connector_jars({"KMIRROR_CACHE": str(tmp_path / "none")})


def test_session_defaults() -> None:
    conf = sparkio.session_conf("local[3]", ["/a.jar", "/b.jar"])
    assert conf["spark.jars"] == "/a.jar,/b.jar"
    assert conf["spark.sql.shuffle.partitions"] == "6"
    assert "jaas" in conf["spark.redaction.regex"]
    assert "keystore" in conf["spark.sql.redaction.options.regex"]
    assert "spark.sql.shuffle.partitions" not in sparkio.session_conf("spark://m:7077", [])
    options = conf["spark.driver.extraJavaOptions"]
    assert Path(options.partition("=")[2].strip('"')).is_file(), options


def _report() -> Report:
    bad = PartitionResult(
        partition=0, source_start=0, source_end=10, source_count=10, target_count=9,
        matched=8, missing=2, duplicates=1, differs=0, order_violations=0,
        field_differs={"key": 0, "value": 0, "headers": 0, "timestamp": 0}, count_missing=1,
        examples={"missing": [Example(source_offset=3), Example(source_offset=7)],
                  "duplicate": [Example(source_offset=5, target_offset=6)]},
    )  # fmt: skip
    good = PartitionResult(partition=1, source_count=4, target_count=4, matched=4,
                           duplicates=0, differs=0, order_violations=0)  # fmt: skip
    return Report(
        mode="digest",
        topics=[
            TopicResult("orders", "src.orders", [bad, good], target_partitions=2),
            TopicResult(
                "gone",
                "src.gone",
                [PartitionResult(0, source_count=3, missing=3)],
                missing_topic=True,
            ),
        ],
    )


def test_report_json_and_summary() -> None:
    report = _report()
    doc = json.loads(report.dumps())
    assert doc["ok"] is False
    assert doc["totals"]["missing"] == 5
    assert doc["totals"]["missing_topics"] == 1
    orders = doc["topics"][0]
    assert [p["ok"] for p in orders["partitions"]] == [False, True]
    assert orders["partitions"][0]["examples"]["missing"] == [
        {"source_offset": 3, "target_offset": None},
        {"source_offset": 7, "target_offset": None},
    ]
    lines = report.summary().splitlines()
    assert lines[0].startswith("kmirror-validate: MISMATCH (digest mode, 2 topics, 3 partitions")
    assert (
        "  orders/0: 2 missing (source offsets 3, 7); 1 duplicates (source offsets 5); "
        "counts: source 10 (+0 after the snapshot), target 9" in lines
    )
    assert any("target topic 'src.gone' does not exist (3 source records missing)" in line
               for line in lines)  # fmt: skip
