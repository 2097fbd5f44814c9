"""Cloud authentication through the chart (ci/msk-iam-oidc-values.yaml): MSK IAM needs no
static keys, the OIDC client secret is a mounted Secret key, and the environment the chart
renders is one the image's entrypoint turns into working client settings (the signer's
oauth_cb for MSK, librdkafka's OIDC client for the target)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kmirror.config import oauth
from kmirror.entrypoint.render import build_plan, plan_config
from tests.chart import chartlib
from tests.chart.chartlib import SecretRef

pytestmark = pytest.mark.chart

CI = chartlib.CI_DIR / "msk-iam-oidc-values.yaml"


def test_msk_iam_needs_no_static_keys_and_oidc_mounts_only_its_secret() -> None:
    docs = chartlib.helm_template(CI)
    sa = docs.one(
        "ServiceAccount", docs.deployment["spec"]["template"]["spec"]["serviceAccountName"]
    )
    assert "eks.amazonaws.com/role-arn" in sa["metadata"]["annotations"]
    for doc, spec in docs.pods():
        c = spec["containers"][0]
        env = chartlib.resolve_env(c, docs)
        assert env["SOURCE_CLUSTER_SASL_MECHANISM"] == "AWS_MSK_IAM"
        assert not any(k.startswith("AWS_ACCESS") or k.startswith("AWS_SECRET") for k in env)
        assert "SOURCE_CLUSTER_SASL_USERNAME" not in env
        assert "SOURCE_CLUSTER_SASL_PASSWORD_FILE" not in env
        files = chartlib.mounted_secret_files(doc, c)
        assert files == {
            "/etc/kmirror/secrets/target/oauth/client-secret": SecretRef(
                "kmirror-dr-oidc", "client-secret"
            )
        }, doc["kind"]
        assert env["SINK_CLUSTER_SASL_OAUTHBEARER_CLIENT_SECRET_FILE"] in files


def test_rendered_environment_gives_the_mirror_its_token_providers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = chartlib.helm_template(CI)
    env = {
        k: v
        for k, v in chartlib.resolve_env(chartlib.container(docs.deployment), docs).items()
        if isinstance(v, str)
    }
    secret = tmp_path / "client-secret"  # stands in for the mounted Secret key
    secret.write_text("oidc-client-secret\n")
    env["SINK_CLUSTER_SASL_OAUTHBEARER_CLIENT_SECRET_FILE"] = str(secret)
    env["KMIRROR_CONFIG_DIR"] = str(tmp_path / "rendered")
    monkeypatch.setattr("kmirror.entrypoint.render.load_env_file", lambda *_: {})
    config = plan_config(build_plan(env))  # what the entrypoint hands to the mirror
    token = config.consumer_conf()["oauth_cb"]
    assert isinstance(token, oauth.MskIamToken)
    assert (token.region, token.role_arn) == (
        "eu-west-1",
        "arn:aws:iam::210987654321:role/msk-orders-reader",
    )
    producer = config.producer_conf()
    assert producer["sasl.oauthbearer.method"] == "oidc"
    assert producer["sasl.oauthbearer.client.secret"] == "oidc-client-secret"
    assert producer["sasl.oauthbearer.extensions"] == "logicalCluster=lkc-dr1"
