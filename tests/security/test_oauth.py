"""SASL/OAUTHBEARER against a real broker (the OAUTH listener of tests/securecluster.py, with
Kafka's unsecured JWS validator): OIDC client credentials from the container's environment,
AWS MSK IAM from a Java config (only the signer's AWS call is replaced: it returns a token
this broker accepts; everything from the Java config to librdkafka's SASL exchange is real),
and Java's unsecured OAuthBearerLoginModule in an mm2.properties.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.cleanenv import kmirror_env, mirror_process, run_kmirror
from tests.conftest import MakeTopic
from tests.kafkatools import Clusters, end_offsets, produce, unique, wait_until
from tests.mirrorproc import write_properties
from tests.securecluster import SecureCluster
from tests.security.test_security import (
    assert_no_secret,
    contents,
    entry_env,
    records,
    run_validation,
)
from tests.tokenserver import TokenEndpoint, token_endpoint

pytestmark = pytest.mark.security

# Stands in for AWS: the real package is imported and only its network-free signing call is
# replaced (credentials and SigV4 need AWS). Loaded by every kmirror process through
# PYTHONPATH, stream processes included; each call is recorded for the test.
SITECUSTOMIZE = """
import json, sys, time
sys.path.insert(0, {tests_parent!r})
from aws_msk_iam_sasl_signer import MSKAuthTokenProvider
from tests.tokenserver import unsecured_jwt

def _signed(region, *args):
    with open({calls!r}, "a") as fh:
        fh.write(json.dumps([region, *args]) + "\\n")
    return unsecured_jwt("msk-mirror", 900), int(time.time() + 900) * 1000

MSKAuthTokenProvider.generate_auth_token = _signed
MSKAuthTokenProvider.generate_auth_token_from_role_arn = _signed
"""


def oidc_env(idp: TokenEndpoint, secret_file: Path) -> dict[str, str]:
    return {
        "SOURCE_CLUSTER_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
        "SOURCE_CLUSTER_SASL_MECHANISM": "OAUTHBEARER",
        "SOURCE_CLUSTER_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL": idp.url,
        "SOURCE_CLUSTER_SASL_OAUTHBEARER_CLIENT_ID": idp.client_id,
        "SOURCE_CLUSTER_SASL_OAUTHBEARER_CLIENT_SECRET_FILE": str(secret_file),
        "SOURCE_CLUSTER_SASL_OAUTHBEARER_SCOPE": "kafka",
    }


def mirror_from_oauth(
    tmp_path: Path, s: SecureCluster, target: str, topic: str, n: int, side: dict[str, str]
) -> tuple[dict[str, str], str]:
    """The entrypoint mirrors `topic` from the OAUTH listener (SOURCE_CLUSTER_* settings
    `side`) until the target has `n` records and stops cleanly; returns its environment and
    log."""
    env = kmirror_env({**entry_env(tmp_path, s.oauth, target, topic, unique("g")), **side})
    with mirror_process(["entrypoint"], tmp_path / "m.log", env=env) as m:
        wait_until(lambda: sum(end_offsets(target, topic).values()) >= n, 90)
        assert m.stop() == 0, m.log[-3000:]
        return env, m.log


def test_entrypoint_mirrors_from_oidc_with_a_client_secret_file(
    tmp_path: Path, clusters: Clusters, secure_cluster: SecureCluster, make_topic: MakeTopic
) -> None:
    """Source: OAUTHBEARER, tokens from an OIDC endpoint (client credentials grant); the
    client secret comes from a mounted file and never shows."""
    s = secure_cluster
    topic = make_topic(s.plaintext, unique("oidc-src"), partitions=2)
    produce(s.plaintext, topic, records(200))
    secret = "oidc-Secret-" + os.urandom(8).hex()
    (tmp_path / "client-secret").write_text(secret + "\n")
    with token_endpoint("kmirror", secret, "mirror") as idp:
        side = oidc_env(idp, tmp_path / "client-secret")
        _, log = mirror_from_oauth(tmp_path, s, clusters.target_bootstrap, topic, 200, side)
        assert idp.grants and all(g.get("scope") == "kafka" for g in idp.grants)
        assert idp.refused == 0
    assert contents(s.plaintext, topic) == contents(clusters.target_bootstrap, topic)
    assert_no_secret(log, secret)


@pytest.mark.spark
@pytest.mark.slow  # a Spark start-up: the credential path is the mirror's, tested above
def test_validation_job_reads_through_unsecured_oauthbearer(
    tmp_path: Path, clusters: Clusters, secure_cluster: SecureCluster, make_topic: MakeTopic
) -> None:
    """kmirror-validate's Spark reader (Java's OAuthBearerLoginModule) and offset reader
    (librdkafka) authenticate with OAUTHBEARER from the environment: a match.

    Unsecured tokens, not OIDC: Java's OIDC login refuses a token without a signature
    ("expected three sections") and this broker's unsecured validator refuses one with a
    signature, so OIDC through Spark is covered by the option mapping's unit test only."""
    s = secure_cluster
    topic = make_topic(s.plaintext, unique("oauth-validate"), partitions=2)
    produce(s.plaintext, topic, records(120))
    side = {
        "SOURCE_CLUSTER_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
        "SOURCE_CLUSTER_SASL_MECHANISM": "OAUTHBEARER",
        "SOURCE_CLUSTER_SASL_OAUTHBEARER_METHOD": "unsecured",
        "SOURCE_CLUSTER_SASL_OAUTHBEARER_CONFIG": "principal=validator",
    }
    env, _ = mirror_from_oauth(tmp_path, s, clusters.target_bootstrap, topic, 120, side)
    report = tmp_path / "report.json"
    result = run_validation(s.oauth, clusters.target_bootstrap, topic, report, env)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-4000:]
    doc = json.loads(report.read_text())
    assert doc["ok"] and doc["totals"]["matched"] == 120, report.read_text()[-3000:]


def test_wrong_oidc_client_secret_is_a_clear_error(
    tmp_path: Path, clusters: Clusters, secure_cluster: SecureCluster, make_topic: MakeTopic
) -> None:
    s = secure_cluster
    topic = make_topic(s.plaintext, unique("oidc-wrong"), partitions=1)
    wrong = tmp_path / "wrong-secret"
    wrong.write_text("wrong-Secret-value")
    with token_endpoint("kmirror", "right-Secret-value", "mirror") as idp:
        env = {
            **entry_env(tmp_path, s.oauth, clusters.target_bootstrap, topic, unique("g")),
            **oidc_env(idp, wrong),
        }
        result = run_kmirror(["entrypoint"], timeout=120, env=kmirror_env(env))
        assert idp.refused > 0
    out = result.stdout + result.stderr
    assert result.returncode == 3, out[-3000:]
    assert "authentication failed" in out, out[-3000:]
    assert_no_secret(out, "wrong-Secret-value", "right-Secret-value")


def test_mm1_msk_iam_java_config_mirrors_through_the_token_provider(
    tmp_path: Path, clusters: Clusters, secure_cluster: SecureCluster, make_topic: MakeTopic
) -> None:
    """An MSK user's consumer.properties, unchanged but for the address: IAMLoginModule is
    mapped to OAUTHBEARER with the signer as oauth_cb, region from AWS_REGION (as IRSA /
    EKS sets it), and the mirror copies every record through it."""
    s = secure_cluster
    topic = make_topic(s.plaintext, unique("msk-src"), partitions=2)
    produce(s.plaintext, topic, records(150))
    calls = tmp_path / "signer-calls.jsonl"
    shim = tmp_path / "shim"
    shim.mkdir()
    tests_parent = str(Path(__file__).resolve().parents[2])
    (shim / "sitecustomize.py").write_text(
        SITECUSTOMIZE.format(tests_parent=tests_parent, calls=str(calls))
    )
    cprops = write_properties(
        tmp_path / "c.properties",
        {
            "bootstrap.servers": s.oauth,
            "group.id": unique("g"),
            "security.protocol": "SASL_PLAINTEXT",  # MSK: SASL_SSL on port 9098
            "sasl.mechanism": "AWS_MSK_IAM",
            "sasl.jaas.config": "software.amazon.msk.auth.iam.IAMLoginModule required;",
            "sasl.client.callback.handler.class": "software.amazon.msk.auth.iam."
            "IAMClientCallbackHandler",
        },
    )
    pprops = write_properties(
        tmp_path / "p.properties", {"bootstrap.servers": clusters.target_bootstrap}
    )
    path = os.pathsep.join([str(shim), os.environ.get("PYTHONPATH", "")])
    env = kmirror_env({"PYTHONPATH": path, "AWS_REGION": "eu-west-1"})
    args = ["run", "--consumer.config", str(cprops), "--producer.config", str(pprops),
            "--whitelist", topic, "--offset.commit.interval.ms", "1000"]  # fmt: skip
    with mirror_process(args, tmp_path / "m.log", env=env) as m:
        wait_until(lambda: sum(end_offsets(clusters.target_bootstrap, topic).values()) >= 150, 90)
        assert m.stop() == 0, m.log[-3000:]
        log = m.log
    assert contents(s.plaintext, topic) == contents(clusters.target_bootstrap, topic)
    assert "AWS MSK IAM authentication" in log
    signed = calls.read_text().splitlines()
    assert signed and all(line == '["eu-west-1"]' for line in signed), signed


def test_mm2_unsecured_oauthbearer_java_login_mirrors_to_the_target(
    tmp_path: Path, clusters: Clusters, secure_cluster: SecureCluster, make_topic: MakeTopic
) -> None:
    """Target: Java's OAuthBearerLoginModule with unsecured tokens (development brokers),
    mapped to librdkafka's own unsecured tokens."""
    s = secure_cluster
    topic = make_topic(clusters.source_bootstrap, unique("unsec-dst"), partitions=2)
    produce(clusters.source_bootstrap, topic, records(120))
    mm2 = tmp_path / "mm2.properties"
    mm2.write_text(
        f"""clusters = A, B
A.bootstrap.servers = {clusters.source_bootstrap}
B.bootstrap.servers = {s.oauth}
B.security.protocol = SASL_PLAINTEXT
B.sasl.mechanism = OAUTHBEARER
B.sasl.jaas.config = org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule \\
    required unsecuredLoginStringClaim_sub="mirror";
A->B.enabled = true
A->B.topics = {topic}
A->B.consumer.group.id = {unique("g")}
A->B.offset.flush.interval.ms = 1000
replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy
""",
        encoding="utf-8",
    )
    check = run_kmirror(["check", "--mm2.config", str(mm2)], env=kmirror_env({}))
    assert check.returncode == 0, check.stderr[-3000:]
    with mirror_process(["run", "--mm2.config", str(mm2)], tmp_path / "m.log",
                        env=kmirror_env({})) as m:  # fmt: skip
        wait_until(lambda: sum(end_offsets(s.plaintext, topic).values()) >= 120, 90)
        assert m.stop() == 0, m.log[-3000:]
    assert contents(clusters.source_bootstrap, topic) == contents(s.plaintext, topic)
