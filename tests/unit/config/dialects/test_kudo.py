from __future__ import annotations

from pathlib import Path

import pytest

from kmirror.config import sides
from kmirror.config.dialects.kudo import load_kudo, security_from_env
from kmirror.config.secret import Secret
from kmirror.errors import ConfigError
from tests.unit.config.conftest import load

pytestmark = pytest.mark.unit

THIS, OTHER = "kafka-qa-0.svc:9092", "other-server-1.example.com:9092,other-2.example.com:9092"


def test_destination_via_flags_copies_this_to_external() -> None:
    c = load(
        [
            "--this-bootstrap-servers",
            THIS,
            "--external-bootstrap-servers",
            OTHER,
            "--external-cluster-type",
            "destination",
        ]
    )
    assert c.dialect == "kudo"
    assert (c.source.bootstrap_servers, c.target.bootstrap_servers) == (THIS, OTHER)
    assert c.topics.include == (".*",)
    assert (c.num_streams, c.offset_commit_interval_ms, c.abort_on_send_failure) == (1, 60000, True)
    assert c.group_id == "kmirror"
    assert c.target_topic("t") == "t"


def test_source_via_environment_only() -> None:
    env = {
        "MIRROR_MAKER_THIS_BOOTSTRAP_SERVERS": THIS,
        "MIRROR_MAKER_EXTERNAL_BOOTSTRAP_SERVERS": OTHER,
        "MIRROR_MAKER_EXTERNAL_CLUSTER_TYPE": "SOURCE",
        "MIRROR_MAKER_TOPIC_WHITELIST": "topic5,topic6",
        "MIRROR_MAKER_NUM_STREAMS": "3",
        "MIRROR_MAKER_OFFSET_COMMIT_INTERVAL": "15000",
        "MIRROR_MAKER_ABORT_ON_SEND_FAILURE": "false",
    }
    c = load([], env)
    assert (c.source.bootstrap_servers, c.target.bootstrap_servers) == (OTHER, THIS)
    assert c.topics.include == ("topic5", "topic6")
    assert (c.num_streams, c.offset_commit_interval_ms, c.abort_on_send_failure) == (
        3,
        15000,
        False,
    )


def test_flags_win_over_environment() -> None:
    env = {
        "MIRROR_MAKER_EXTERNAL_CLUSTER_TYPE": "SOURCE",
        "MIRROR_MAKER_NUM_STREAMS": "3",
        "WHITELISTED_TOPICS": "env-topic",
    }
    c = load(
        [
            "--this-bootstrap-servers",
            THIS,
            "--external-bootstrap-servers",
            OTHER,
            "--external-cluster-type",
            "DESTINATION",
            "--num.streams",
            "2",
        ],
        env,
    )
    assert c.source.bootstrap_servers == THIS
    assert c.num_streams == 2
    assert c.topics.include == ("env-topic",)


def test_cluster_type_typo_lists_both_values() -> None:
    with pytest.raises(ConfigError, match=r"must be SOURCE or DESTINATION, not 'DEST'"):
        load_kudo(THIS, OTHER, "DEST", environ={})


def test_missing_external_names_flag_and_variable() -> None:
    with pytest.raises(
        ConfigError,
        match=r"--external-bootstrap-servers .*"
        "MIRROR_MAKER_EXTERNAL_BOOTSTRAP_SERVERS",
    ):
        load_kudo(THIS, None, "SOURCE", environ={})


def test_bad_boolean_in_environment_names_variable() -> None:
    with pytest.raises(ConfigError, match=r"MIRROR_MAKER_ABORT_ON_SEND_FAILURE must be true"):
        load_kudo(THIS, OTHER, "SOURCE", environ={"MIRROR_MAKER_ABORT_ON_SEND_FAILURE": "ja"})


def test_security_per_side_from_environment(tmp_path: Path) -> None:
    pw = tmp_path / "pw"
    pw.write_text("s3cret-from-file\n")
    env = {
        "SOURCE_CLUSTER_SECURITY_PROTOCOL": "sasl_ssl",
        "SOURCE_CLUSTER_SASL_MECHANISM": "SCRAM-SHA-512",
        "SOURCE_CLUSTER_SASL_USERNAME": "mirror",
        "SOURCE_CLUSTER_SASL_PASSWORD_FILE": str(pw),
        "SOURCE_CLUSTER_SSL_CA_LOCATION": "/certs/ca.pem",
        "SINK_CLUSTER_SASL_USERNAME": "stray",
    }
    c = load_kudo(THIS, OTHER, "DESTINATION", environ=env)
    assert c.source.common == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "mirror",
        "sasl.password": Secret("s3cret-from-file"),
        "ssl.ca.location": "/certs/ca.pem",
        "ssl.endpoint.identification.algorithm": "https",
    }
    assert c.target.common == {"security.protocol": "PLAINTEXT"}
    assert c.notes == (
        "SINK_CLUSTER_SASL_USERNAME ignored: SINK_CLUSTER_SECURITY_PROTOCOL is PLAINTEXT",
    )


def test_security_errors_name_the_variable() -> None:
    with pytest.raises(ConfigError, match=r"SINK_CLUSTER_SECURITY_PROTOCOL='TLS' must be one of"):
        security_from_env("SINK_CLUSTER", {"SINK_CLUSTER_SECURITY_PROTOCOL": "TLS"})
    env = {
        "SINK_CLUSTER_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
        "SINK_CLUSTER_SASL_MECHANISM": "PLAIN",
        "SINK_CLUSTER_SASL_USERNAME": "u",
    }
    with pytest.raises(
        ConfigError,
        match=r"needs SINK_CLUSTER_SASL_USERNAME and "
        "SINK_CLUSTER_SASL_PASSWORD_FILE",
    ):
        security_from_env("SINK_CLUSTER", env)
    env["SINK_CLUSTER_SASL_PASSWORD_FILE"] = "/nonexistent/pw"
    with pytest.raises(ConfigError, match=r"SINK_CLUSTER_SASL_PASSWORD_FILE names"):
        security_from_env("SINK_CLUSTER", env)


@pytest.mark.parametrize(
    ("mechanism", "method", "read"),
    [
        ("PLAIN", "", {"SASL_USERNAME", "SASL_PASSWORD_FILE"}),
        ("SCRAM-SHA-256", "", {"SASL_USERNAME", "SASL_PASSWORD_FILE"}),
        ("OAUTHBEARER", "oidc", {f"SASL_OAUTHBEARER_{s}" for s in (
            "METHOD", "TOKEN_ENDPOINT_URL", "CLIENT_ID", "CLIENT_SECRET_FILE", "SCOPE",
            "EXTENSIONS")}),
        ("OAUTHBEARER", "unsecured", {"SASL_OAUTHBEARER_METHOD", "SASL_OAUTHBEARER_CONFIG"}),
        ("AWS_MSK_IAM", "", {"AWS_REGION", "AWS_ROLE_ARN"}),
    ],
)  # fmt: skip
def test_each_mechanism_reports_the_variables_it_does_not_read(
    tmp_path: Path, mechanism: str, method: str, read: set[str]
) -> None:
    secret = tmp_path / "secret"
    secret.write_text("s3cret\n")
    sasl = [s for s in sides.SIDE_SUFFIXES if s.startswith(("SASL_", "AWS_"))]
    env = {f"SOURCE_CLUSTER_{s}": str(secret) if s.endswith("_FILE") else "x" for s in sasl}
    env |= {
        "SOURCE_CLUSTER_SECURITY_PROTOCOL": "SASL_SSL",
        "SOURCE_CLUSTER_SASL_MECHANISM": mechanism,
        "SOURCE_CLUSTER_SASL_OAUTHBEARER_METHOD": method or "x",
        "SOURCE_CLUSTER_AWS_REGION": "eu-west-1",
    }
    _, notes = security_from_env("SOURCE_CLUSTER", env)
    ignored = set(sasl) - read - {"SASL_MECHANISM"}
    assert notes == [
        f"{', '.join(f'SOURCE_CLUSTER_{s}' for s in sasl if s in ignored)} ignored: "
        f"SOURCE_CLUSTER_SASL_MECHANISM is {mechanism}"
    ]
