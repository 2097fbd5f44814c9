"""The chart <-> image contract: every environment variable the chart sets is one the image's
entrypoint reads (image/kmirror/config/env.py), every variable the image reads is either set by
the chart or listed here with the reason it is not, and the rendered mirror container maps onto
a `podman run` (the later render-and-run test runs exactly that against the local clusters)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kmirror.config import env as image_env
from kmirror.config import schemas as image_schemas
from kmirror.config.model import DEFAULT_NUM_STREAMS, DEFAULT_OFFSET_COMMIT_INTERVAL_MS
from tests.chart import chartlib
from tests.chart.chartlib import SecretRef

pytestmark = pytest.mark.chart

# Read by the image, deliberately never set by the chart.
NOT_SET_BY_CHART = {
    # The chart resolves thisCluster/external/clusterType itself into SOURCE_/SINK_ names, so the
    # image sees one unambiguous pair (and the security settings can follow their cluster).
    "MIRROR_MAKER_THIS_BOOTSTRAP_SERVERS": "resolved by the chart",
    "MIRROR_MAKER_EXTERNAL_BOOTSTRAP_SERVERS": "resolved by the chart",
    "MIRROR_MAKER_EXTERNAL_CLUSTER_TYPE": "resolved by the chart",
    # KUDO spellings that only override the seed names the chart sets.
    "MIRROR_MAKER_TOPIC_WHITELIST": "WHITELISTED_TOPICS is set instead",
    "MIRROR_MAKER_NUM_STREAMS": "NUM_STREAMS is set instead",
    # Image internals: defaults fit the pod; extraEnv/extraVolumes can still set them.
    "KMIRROR_ENV_FILE": "no .env file in a pod",
    "KMIRROR_TEMPLATE_DIR": "mount templates with extraVolumes and set it with extraEnv",
    "KMIRROR_SPARK_JARS": "the validate image sets it",
    "KMIRROR_CACHE": "development machines only",
    # The environment mode renders everything from variables, which a running pod never gets
    # anew: nothing to watch. mm2Config mode passes --reload-on-change (mm2Config.reloadOnChange).
    "KMIRROR_RELOAD_ON_CHANGE": "a flag in mm2Config mode (mm2Config.reloadOnChange)",
    # TLS on the metrics port changes the scheme of the probes and of the ServiceMonitor and
    # PodMonitor: the chart offers the control API with its bearer token; mutual TLS is set with
    # extraEnv and extraVolumes (docs/control.md).
    "KMIRROR_CONTROL_TLS_CERT": "TLS on the metrics port: extraEnv (docs/control.md)",
    "KMIRROR_CONTROL_TLS_KEY": "TLS on the metrics port: extraEnv (docs/control.md)",
    "KMIRROR_CONTROL_TLS_CLIENT_CA": "mutual TLS on the metrics port: extraEnv (docs/control.md)",
    # Schema registry mirroring (issue 23): chart values (schemaRegistry.source/target.url,
    # auth secrets, mode) come in a later change; extraEnv can set them meanwhile.
    **{n: "no chart values yet (issue 23)" for n, _, _ in image_schemas.ENV_DOCS},
}

RENDERS: list[tuple[str, Any]] = [
    *((f.name, f) for f in chartlib.ci_values_files()),
    ("kitchen-sink", chartlib.KITCHEN_SINK),
    # The kitchen sink with the sides' security swapped: SASL on the target, mTLS on the source.
    (
        "swapped-security",
        [
            chartlib.KITCHEN_SINK,
            {
                "source": {
                    "securityProtocol": "SSL",
                    "sasl": {"mechanism": "", "existingSecret": ""},
                    "tls": {"clientCertSecret": "s-tls", "keyPasswordKey": "pw"},
                },
                "target": {
                    "securityProtocol": "SASL_SSL",
                    "sasl": {"mechanism": "PLAIN", "existingSecret": "t"},
                },
            },
        ],
    ),
    # The ci file's cloud authentication with the sides swapped, and unsecured OAUTHBEARER.
    (
        "swapped-auth",
        [
            chartlib.CI_DIR / "msk-iam-oidc-values.yaml",
            {
                "source": {"sasl": {"mechanism": "OAUTHBEARER"}},
                "target": {"sasl": {"mechanism": "AWS_MSK_IAM"}},
                "auth": {
                    "source": {
                        "oauthbearer": {
                            "tokenEndpointUrl": "https://idp/token",
                            "clientId": "c",
                            "existingSecret": "s",
                            "scope": "kafka",
                            "extensions": "a=b",
                        }
                    },
                    "target": {"awsRoleArn": "arn:aws:iam::1:role/r"},
                },
            },
        ],
    ),
    (
        "unsecured-oauthbearer",
        {
            **{
                side: {
                    "bootstrapServers": f"{side}.local:9092",
                    "securityProtocol": "SASL_PLAINTEXT",
                    "sasl": {"mechanism": "OAUTHBEARER"},
                }
                for side in ("source", "target")
            },
            "auth": {
                side: {"oauthbearer": {"method": "unsecured", "unsecuredConfig": "principal=m"}}
                for side in ("source", "target")
            },
        },
    ),
]


def _chart_env_names(docs: chartlib.Rendered, include_extra: bool = False) -> set[str]:
    names: set[str] = set()
    for _doc, spec in docs.pods():
        for c in spec["containers"]:
            names |= set(chartlib.resolve_env(c, docs))
    if not include_extra:
        names -= {"POD_NAME", "SPARK_LOCAL_IP"}  # the kitchen sink's extraEnv
    return names


@pytest.mark.parametrize(("name", "values"), RENDERS, ids=[r[0] for r in RENDERS])
def test_chart_sets_only_variables_the_image_reads(name: str, values: Any) -> None:
    unknown = _chart_env_names(chartlib.helm_template(values)) - set(image_env.BY_NAME)
    assert not unknown, f"{name}: not in image/kmirror/config/env.py: {sorted(unknown)}"


def test_every_image_variable_is_set_by_the_chart_or_explained() -> None:
    set_by_chart: set[str] = set()
    for _name, values in RENDERS:
        set_by_chart |= _chart_env_names(chartlib.helm_template(values))
    missing = set(image_env.BY_NAME) - set_by_chart - set(NOT_SET_BY_CHART)
    assert not missing, (
        f"env.py variables the chart cannot set: {sorted(missing)}; add a value for them or "
        "list them in NOT_SET_BY_CHART with the reason"
    )
    assert not set(NOT_SET_BY_CHART) - set(image_env.BY_NAME), "stale NOT_SET_BY_CHART entries"
    assert not set(NOT_SET_BY_CHART) & set_by_chart


@pytest.mark.parametrize(("name", "values"), RENDERS, ids=[r[0] for r in RENDERS])
def test_secret_file_variables_are_files_and_never_plain(name: str, values: Any) -> None:
    docs = chartlib.helm_template(values)
    for doc, spec in docs.pods():
        c = spec["containers"][0]
        env = chartlib.resolve_env(c, docs)
        files = chartlib.mounted_secret_files(doc, c)
        for variable, value in env.items():
            var = image_env.BY_NAME.get(variable)
            if var is not None and var.secret_file:
                assert value in files, (name, doc["kind"], variable, value)


# ------------------------------------------------------------------------ render-and-run

LOCAL = {
    "source": {"bootstrapServers": "127.0.0.1:19092"},
    "target": {"bootstrapServers": "127.0.0.1:29092"},
    "whitelist": "it-.*",
}


def test_run_spec_of_a_local_render() -> None:
    spec = chartlib.run_spec(chartlib.helm_template(LOCAL))
    assert spec.image == "ghcr.io/kmirror/mirror:0.1.0"
    assert spec.command == [] and spec.args == []  # the image's `kmirror entrypoint`
    assert spec.env["SOURCE_CLUSTER_BOOTSTRAP_SERVERS"] == "127.0.0.1:19092"
    assert spec.env["SINK_CLUSTER_BOOTSTRAP_SERVERS"] == "127.0.0.1:29092"
    assert spec.env["WHITELISTED_TOPICS"] == "it-.*"
    assert spec.env["KMIRROR_CONFIG_DIR"].startswith("/tmp/")
    assert spec.user == "65532:65532"
    assert spec.read_only and spec.cap_drop_all and spec.no_new_privileges
    assert spec.tmpfs == ["/tmp"]
    assert spec.ports == [9404]
    assert not spec.secret_env and not spec.secret_files
    args = spec.podman_args("km-it", image="localhost/kmirror-mirror:dev")
    assert args[:8] == [
        "run",
        "--rm",
        "--name",
        "km-it",
        "--network",
        "host",
        "--user",
        "65532:65532",
    ]
    assert "--read-only" in args and "--cap-drop=ALL" in args
    assert "--tmpfs=/tmp:rw,mode=1777" in args
    assert "--env" in args and "SOURCE_CLUSTER_BOOTSTRAP_SERVERS=127.0.0.1:19092" in args
    assert args[-1] == "localhost/kmirror-mirror:dev"
    assert "--entrypoint" not in args


def test_run_spec_with_command_and_secrets(tmp_path: Path) -> None:
    values = [
        LOCAL,
        {
            "command": ["kmirror"],
            "args": ["check"],
            "source": {
                "securityProtocol": "SASL_PLAINTEXT",
                "sasl": {"mechanism": "PLAIN", "existingSecret": "c"},
            },
        },
    ]
    spec = chartlib.run_spec(chartlib.helm_template(values))
    with pytest.raises(ValueError, match=r"c/password"):
        spec.podman_args("x")
    secrets = {SecretRef("c", "username"): "alice", SecretRef("c", "password"): "s3cret"}
    args = spec.podman_args("x", secrets=secrets, secret_dir=tmp_path)
    assert "SOURCE_CLUSTER_SASL_USERNAME=alice" in args
    mount = next(a for a in args if a.endswith(":/etc/kmirror/secrets/source/sasl/password:ro,Z"))
    assert Path(mount.split(":")[0]).read_text() == "s3cret"
    assert args[args.index("--entrypoint") + 1] == '["kmirror"]'
    assert args[-2:] == ["ghcr.io/kmirror/mirror:0.1.0", "check"]


def test_chart_and_environment_defaults_are_the_models() -> None:
    """The two mirror defaults are defined once (config/model.py); the chart's values and the
    image's variable table repeat them for their readers and must say the same."""
    values = yaml.safe_load((chartlib.CHART_DIR / "values.yaml").read_text())
    assert values["numStreams"] == DEFAULT_NUM_STREAMS
    assert values["offsetCommitIntervalMs"] == DEFAULT_OFFSET_COMMIT_INTERVAL_MS
    assert image_env.BY_NAME["NUM_STREAMS"].default == str(DEFAULT_NUM_STREAMS)
    commit = image_env.BY_NAME["MIRROR_MAKER_OFFSET_COMMIT_INTERVAL"].default
    assert commit == str(DEFAULT_OFFSET_COMMIT_INTERVAL_MS)
