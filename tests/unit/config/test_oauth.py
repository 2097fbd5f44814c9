"""OAUTHBEARER in every dialect: AWS MSK IAM (Java config, environment, entrypoint) becomes
the signer's `oauth_cb`; Java OIDC and unsecured OAuthBearerLoginModule settings become
librdkafka's own. No broker: tests/security/test_oauth.py connects for real."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from aws_msk_iam_sasl_signer import MSKAuthTokenProvider

from kmirror.config import oauth
from kmirror.config.dialects.kudo import security_from_env
from kmirror.config.javaclient.translate import translate
from kmirror.config.model import ClusterConfig
from kmirror.config.secret import Secret
from kmirror.entrypoint.render import CONSUMER, build_plan, plan_config
from kmirror.errors import ConfigError
from tests.unit.config.conftest import load

pytestmark = pytest.mark.unit

MSK = "b-1.orders.abc123.c2.kafka.eu-west-1.amazonaws.com:9098"
IAM_JAAS = "software.amazon.msk.auth.iam.IAMLoginModule required;"
OAUTH_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
KAFKA_OIDC_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"


@pytest.fixture(autouse=True)
def no_aws_region(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)


def cluster(java: dict[str, str], bootstrap: str = MSK) -> ClusterConfig:
    t = translate(java, "consumer", "c.properties", security_to_common=True)
    return ClusterConfig("source", bootstrap, common=t.common)


def token_of(c: ClusterConfig) -> oauth.MskIamToken:
    conf = oauth.attach({k: str(v) for k, v in c.client_conf("consumer").items()})
    assert not any(k.startswith("kmirror.") for k in conf)  # librdkafka never sees them
    assert conf["sasl.mechanism"] == "OAUTHBEARER"
    token = conf["oauth_cb"]
    assert isinstance(token, oauth.MskIamToken)
    return token


def test_msk_iam_java_config_maps_to_the_signer_instead_of_being_refused() -> None:
    """What AWS documents for the Java clients (MM1/MM2 users have exactly this)."""
    t = translate(
        {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "AWS_MSK_IAM",
            "sasl.jaas.config": "software.amazon.msk.auth.iam.IAMLoginModule required "
            'awsRoleArn="arn:aws:iam::123456789012:role/mirror" awsDebugCreds=true;',
            "sasl.client.callback.handler.class": "software.amazon.msk.auth.iam."
            "IAMClientCallbackHandler",
        },
        "consumer",
        "c.properties",
        security_to_common=True,
    )
    assert t.common == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "OAUTHBEARER",
        oauth.PROVIDER: oauth.MSK_IAM,
        oauth.AWS_ROLE_ARN: "arn:aws:iam::123456789012:role/mirror",
    }
    assert "aws-msk-iam-sasl-signer-python" in "\n".join(t.notes)
    assert "awsDebugCreds ignored" in "\n".join(t.notes)
    token = token_of(ClusterConfig("source", MSK, common=t.common))
    assert (token.region, token.role_arn) == ("eu-west-1", "arn:aws:iam::123456789012:role/mirror")


def test_msk_iam_oauthbearer_form_maps_too() -> None:
    """AWS's second documented form: OAUTHBEARER with MSK's login callback handler."""
    handler = "software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler"
    c = cluster(
        {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "OAUTHBEARER",
            "sasl.jaas.config": f"{OAUTH_MODULE} required;",
            "sasl.login.callback.handler.class": handler,
            "sasl.client.callback.handler.class": handler,
        }
    )
    assert token_of(c).region == "eu-west-1"


def test_msk_iam_profile_and_region_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_REGION", "ap-southeast-2")
    jaas = 'software.amazon.msk.auth.iam.IAMLoginModule required awsProfileName="mirror";'
    c = cluster({"sasl.jaas.config": jaas}, bootstrap="10.0.0.1:9098")  # no MSK host name
    token = token_of(c)
    assert (token.region, token.profile, token.role_arn) == ("ap-southeast-2", "mirror", None)


def test_msk_iam_without_a_region_is_a_config_error_naming_the_settings() -> None:
    with pytest.raises(ConfigError, match=r"region .* unknown: set kmirror.sasl.aws.region"):
        cluster({"sasl.jaas.config": IAM_JAAS}, bootstrap="10.0.0.1:9098")


def test_msk_iam_with_another_mechanism_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"set sasl\.mechanism=OAUTHBEARER"):
        cluster({"sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": IAM_JAAS})


def test_other_vendors_callback_handlers_are_still_refused() -> None:
    with pytest.raises(ConfigError, match=r"callback\.handler\.class' is not supported"):
        cluster({"sasl.client.callback.handler.class": "com.example.iam.Handler"})


@pytest.mark.parametrize(
    ("host", "region"),
    [
        ("b-2.c.x1y2z3.c4.kafka.us-east-1.amazonaws.com:9098", "us-east-1"),
        ("boot-ab12.c1.kafka-serverless.eu-central-1.amazonaws.com:9098", "eu-central-1"),
        (
            "kafka.example.com:9092,b-1.c.d.c2.kafka.us-gov-west-1.amazonaws.com:9098",
            "us-gov-west-1",
        ),
        ("kafka.eu-west-1.example.com:9092", None),
    ],
)
def test_region_from_the_msk_host_name(host: str, region: str | None) -> None:
    assert oauth.region_of(host) == region


def test_token_callback_signs_for_the_region_and_returns_seconds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[tuple[Any, ...]] = []

    def generate(*args: Any) -> tuple[str, int]:
        calls.append(args)
        return "signed-token", 1_700_000_900_000

    monkeypatch.setattr(MSKAuthTokenProvider, "generate_auth_token", generate)
    monkeypatch.setattr(MSKAuthTokenProvider, "generate_auth_token_from_role_arn", generate)
    assert oauth.MskIamToken("eu-west-1")(None) == ("signed-token", 1_700_000_900.0)
    role = "arn:aws:iam::1:role/r"
    oauth.MskIamToken("eu-west-1", role_arn=role, session_name="kmirror")("")
    assert calls == [("eu-west-1",), ("eu-west-1", role, "kmirror")]


def test_token_failure_is_logged_once_with_the_fix(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def fail(region: str) -> tuple[str, int]:
        raise RuntimeError("Unable to locate credentials")

    monkeypatch.setattr(MSKAuthTokenProvider, "generate_auth_token", fail)
    token = oauth.MskIamToken("eu-west-1")
    for _ in range(3):
        with caplog.at_level(logging.ERROR), pytest.raises(RuntimeError):
            token(None)  # raising is how confluent-kafka learns the token failed
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert "Unable to locate credentials" in errors[0]
    assert "eks.amazonaws.com/role-arn" in errors[0]


# ------------------------------------------------------------------ OAUTHBEARER (not AWS)


def test_java_oidc_login_maps_to_librdkafkas_oidc_client() -> None:
    t = translate(
        {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "OAUTHBEARER",
            "sasl.jaas.config": f'{OAUTH_MODULE} required clientId="mirror" '
            'clientSecret="oidc-s3cret" scope="kafka" extension_logicalCluster="lkc-1";',
            "sasl.login.callback.handler.class": KAFKA_OIDC_HANDLER,
            "sasl.oauthbearer.token.endpoint.url": "https://idp.example.com/oauth2/token",
        },
        "consumer",
        "c",
        security_to_common=True,
    )
    assert t.common == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.client.id": "mirror",
        "sasl.oauthbearer.client.secret": Secret("oidc-s3cret"),
        "sasl.oauthbearer.scope": "kafka",
        "sasl.oauthbearer.extensions": "logicalCluster=lkc-1",
        "sasl.oauthbearer.token.endpoint.url": "https://idp.example.com/oauth2/token",
    }


def test_java_oidc_without_a_secret_names_what_is_missing() -> None:
    with pytest.raises(ConfigError, match="OIDC needs clientSecret") as err:
        translate(
            {
                "sasl.jaas.config": f'{OAUTH_MODULE} required clientId="m" scope="x";',
                "sasl.oauthbearer.token.endpoint.url": "https://idp/token",
            },
            "common",
            "c",
        )
    assert "idp" not in str(err.value)


def test_java_unsecured_login_maps_to_librdkafkas_unsecured_tokens() -> None:
    jaas = (
        f'{OAUTH_MODULE} required unsecuredLoginStringClaim_sub="admin" '
        'unsecuredLoginLifetimeSeconds="600";'
    )
    t = translate({"sasl.mechanism": "OAUTHBEARER", "sasl.jaas.config": jaas}, "common", "c")
    assert t.common == {
        "sasl.mechanism": "OAUTHBEARER",
        "enable.sasl.oauthbearer.unsecure.jwt": "true",
        "sasl.oauthbearer.config": "principal=admin lifeSeconds=600",
    }
    assert "only development brokers" in "\n".join(t.notes)


# ------------------------------------------------------------------ environment, entrypoint


def test_env_aws_msk_iam_needs_no_keys(tmp_path: Path) -> None:
    conf, notes = security_from_env(
        "SOURCE_CLUSTER",
        {
            "SOURCE_CLUSTER_SECURITY_PROTOCOL": "SASL_SSL",
            "SOURCE_CLUSTER_SASL_MECHANISM": "AWS_MSK_IAM",
            "SOURCE_CLUSTER_AWS_REGION": "eu-west-1",
            "SOURCE_CLUSTER_SASL_USERNAME": "left-over",
        },
    )
    assert conf == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "OAUTHBEARER",
        oauth.PROVIDER: oauth.MSK_IAM,
        oauth.AWS_REGION: "eu-west-1",
        "ssl.endpoint.identification.algorithm": "https",
    }
    assert notes == [
        "SOURCE_CLUSTER_SASL_USERNAME ignored: SOURCE_CLUSTER_SASL_MECHANISM is AWS_MSK_IAM"
    ]


def test_env_oidc_reads_the_secret_from_a_file(tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("oidc-s3cret\n")
    conf, _ = security_from_env(
        "SINK_CLUSTER",
        {
            "SINK_CLUSTER_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
            "SINK_CLUSTER_SASL_MECHANISM": "OAUTHBEARER",
            "SINK_CLUSTER_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL": "https://idp/token",
            "SINK_CLUSTER_SASL_OAUTHBEARER_CLIENT_ID": "mirror",
            "SINK_CLUSTER_SASL_OAUTHBEARER_CLIENT_SECRET_FILE": str(tmp_path / "secret"),
            "SINK_CLUSTER_SASL_OAUTHBEARER_SCOPE": "kafka",
        },
    )
    assert conf == {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.client.secret": Secret("oidc-s3cret"),
        "sasl.oauthbearer.token.endpoint.url": "https://idp/token",
        "sasl.oauthbearer.client.id": "mirror",
        "sasl.oauthbearer.scope": "kafka",
    }


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({}, "needs SINK_CLUSTER_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL"),
        ({"SINK_CLUSTER_SASL_OAUTHBEARER_METHOD": "unsecured"}, "needs SINK_CLUSTER_SASL_OAUTH"),
        ({"SINK_CLUSTER_SASL_OAUTHBEARER_METHOD": "jwt"}, "must be oidc or unsecured"),
    ],
)
def test_env_oauthbearer_names_the_missing_variable(extra: dict[str, str], message: str) -> None:
    env = {
        "SINK_CLUSTER_SECURITY_PROTOCOL": "SASL_SSL",
        "SINK_CLUSTER_SASL_MECHANISM": "OAUTHBEARER",
    }
    with pytest.raises(ConfigError, match=message):
        security_from_env("SINK_CLUSTER", {**env, **extra})


def test_entrypoint_renders_msk_iam_that_the_mirror_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """env -> rendered consumer.properties -> the entrypoint's config -> oauth_cb."""
    env = {
        "SOURCE_CLUSTER_BOOTSTRAP_SERVERS": MSK,
        "SINK_CLUSTER_BOOTSTRAP_SERVERS": "dst:9092",
        "SOURCE_CLUSTER_SECURITY_PROTOCOL": "SASL_SSL",
        "SOURCE_CLUSTER_SASL_MECHANISM": "AWS_MSK_IAM",
        "KMIRROR_CONFIG_DIR": str(tmp_path / "rendered"),
        "KMIRROR_ENV_FILE": "",
    }
    monkeypatch.setattr("kmirror.entrypoint.render.load_env_file", lambda *_: {})
    plan = build_plan(env)
    assert f"{oauth.PROVIDER}=aws-msk-iam" in plan.file(CONSUMER).text()
    config = plan_config(plan)
    cb = config.consumer_conf()["oauth_cb"]
    assert isinstance(cb, oauth.MskIamToken) and cb.region == "eu-west-1"
    assert "oauth_cb" not in config.producer_conf()  # the target is PLAINTEXT


def test_mm2_properties_with_msk_iam_on_the_source(write: Any) -> None:
    """mm2.properties as AWS documents it for MirrorMaker 2 on MSK (cluster-prefixed keys)."""
    path = write(
        "mm2.properties",
        f"""clusters = msk, dr
msk.bootstrap.servers = {MSK}
msk.security.protocol = SASL_SSL
msk.sasl.mechanism = AWS_MSK_IAM
msk.sasl.jaas.config = software.amazon.msk.auth.iam.IAMLoginModule required;
msk.sasl.client.callback.handler.class = software.amazon.msk.auth.iam.IAMClientCallbackHandler
dr.bootstrap.servers = dr-kafka:9092
msk->dr.enabled = true
msk->dr.topics = orders.*
""",
    )
    config = load(["--mm2.config", path])
    assert token_of(config.source).region == "eu-west-1"
    assert isinstance(config.admin_conf("source")["oauth_cb"], oauth.MskIamToken)
    assert "oauth_cb" not in config.producer_conf()
