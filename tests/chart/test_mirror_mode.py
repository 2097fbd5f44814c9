"""The mirror's modes in the chart: the default (values -> environment -> the entrypoint's
rendered `kmirror run`), extra flags through `args` (topic refresh interval, --no-create-topics)
and mm2Config (the user's mm2.properties from a ConfigMap or Secret, `kmirror run --mm2-config`).
What the chart renders is loaded by kmirror's own command line and config loader."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kmirror.cli.flags import options_from
from kmirror.cli.main import build_parser
from kmirror.config.dialects.loader import load_config
from tests.chart import chartlib

pytestmark = pytest.mark.chart

MM2_DIR = "/etc/kmirror/mm2"
MM2_SECRET = {"enabled": True, "existingSecret": "my-mm2", "key": "mm2.conf"}
NO_VALIDATION = {"test": {"enabled": False}, "hook": {"enabled": False}}


def mirror(docs: chartlib.Rendered) -> dict[str, Any]:
    return chartlib.container(docs.deployment, "mirror")


def mm2_values(**extra: Any) -> dict[str, Any]:
    return {"mm2Config": MM2_SECRET, "validation": NO_VALIDATION, **extra}


# ------------------------------------------------------------------------- default mode


def test_default_mode_passes_no_arguments(
    helm_template: Callable[..., Any], minimal: dict[str, Any]
) -> None:
    c = mirror(helm_template(minimal))
    assert "args" not in c and "command" not in c
    assert c["envFrom"] == [{"configMapRef": {"name": chartlib.FULLNAME}}]


def test_topic_values_become_run_flags(
    helm_template: Callable[..., Any], minimal: dict[str, Any]
) -> None:
    values = {**minimal, "topicRefreshIntervalSeconds": 30, "createTopics": False}
    args = mirror(helm_template(values))["args"]
    assert args == ["--refresh-topics-interval-s", "30", "--no-create-topics"]
    # The entrypoint applies them as `kmirror run` flags: they must be flags that command knows.
    parsed = build_parser().parse_args(["run", "--consumer.config", "c", *args])
    assert parsed.no_create_topics is True and parsed.refresh_topics_interval_s == "30"


def test_args_without_command_follow_the_chart_flags(
    helm_template: Callable[..., Any], minimal: dict[str, Any]
) -> None:
    values = {**minimal, "createTopics": False, "args": ["--strict"]}
    c = mirror(helm_template(values))
    assert "command" not in c  # the image's ENTRYPOINT, `kmirror entrypoint`, gets them
    assert c["args"] == ["--no-create-topics", "--strict"]
    entry = build_parser().parse_args(["entrypoint", *c["args"]])
    assert entry.args == ["--no-create-topics", "--strict"]


def test_command_takes_args_verbatim(
    helm_template: Callable[..., Any], minimal: dict[str, Any]
) -> None:
    values = {
        **minimal,
        "createTopics": False,
        "command": ["/opt/kmirror/bin/kmirror"],
        "args": ["check", "--json"],
    }
    c = mirror(helm_template(values))
    assert c["command"] == ["/opt/kmirror/bin/kmirror"] and c["args"] == ["check", "--json"]


# --------------------------------------------------------------------------- mm2Config


def test_mm2_mode_mounts_the_secret_and_runs_it(helm_template: Callable[..., Any]) -> None:
    docs = helm_template(mm2_values(mm2Config={**MM2_SECRET, "flow": "east->west"}))
    c = mirror(docs)
    assert "command" not in c
    run = ["run", "--mm2-config", f"{MM2_DIR}/mm2.properties", "--flow", "east->west"]
    assert c["args"][:5] == run
    # The file is the configuration: none of the values' environment may override it.
    assert "envFrom" not in c and "env" not in c
    assert chartlib.mounted_secret_files(docs.deployment, c) == {
        f"{MM2_DIR}/mm2.properties": chartlib.SecretRef("my-mm2", "mm2.conf")
    }


def test_mm2_mode_from_a_configmap(helm_template: Callable[..., Any]) -> None:
    values = mm2_values(mm2Config={"enabled": True, "existingConfigMap": "mm2-cm"})
    docs = helm_template(values)
    volumes = {v["name"]: v for v in chartlib.pod_spec(docs.deployment)["volumes"]}
    assert volumes["mm2-config"]["configMap"] == {
        "name": "mm2-cm",
        "defaultMode": 0o440,
        "items": [{"key": "mm2.properties", "path": "mm2.properties"}],
    }
    mounts = {m["name"]: m for m in mirror(docs)["volumeMounts"]}
    assert mounts["mm2-config"] == {"name": "mm2-config", "mountPath": MM2_DIR, "readOnly": True}


def test_mm2_mode_reloads_a_changed_configmap_when_asked(
    helm_template: Callable[..., Any],
) -> None:
    """reloadOnChange: `kmirror run` watches the mounted mm2.properties (the kubelet swaps it
    when the ConfigMap changes) instead of the pod being rolled; off by default."""
    cm = {"enabled": True, "existingConfigMap": "mm2-cm"}
    assert "--reload-on-change" not in mirror(helm_template(mm2_values(mm2Config=cm)))["args"]
    args = mirror(helm_template(mm2_values(mm2Config={**cm, "reloadOnChange": True})))["args"]
    options = options_from(build_parser().parse_args(args))
    assert options.reload_on_change
    assert options.files() == (f"{MM2_DIR}/mm2.properties",)


def test_mm2_mode_arguments_load_in_kmirror(
    helm_template: Callable[..., Any], tmp_path: Path
) -> None:
    """kmirror's loader accepts the rendered command line with a real mm2.properties, and the
    chart's values (port, logging, group, refresh interval, topic creation) reach the config."""
    values = mm2_values(
        consumerGroup="dr-mirror",
        metrics={"port": 9555},
        logLevel="WARN",
        logFormat="json",
        abortOnSendFailure=False,
        topicRefreshIntervalSeconds=60,
        createTopics=False,
        exactlyOnce=True,
        args=["--partitioning", "same"],
    )
    args = mirror(helm_template(values))["args"]
    mm2 = tmp_path / "mm2.properties"
    mm2.write_text(
        "clusters=east,west\neast.bootstrap.servers=e:9092\nwest.bootstrap.servers=w:9092\n"
        "east->west.enabled=true\neast->west.topics=orders.*\ntasks.max=3\n"
    )
    args = [str(mm2) if a == f"{MM2_DIR}/mm2.properties" else a for a in args]
    config = load_config(options_from(build_parser().parse_args(args)), environ={})
    assert config.dialect == "mm2" and config.num_streams == 3
    assert config.rename.kind == "prefix"  # MM2's default policy, not overridden by the chart
    assert config.group_id == "dr-mirror" and config.metrics_port == 9555
    assert config.log_level == "WARN" and config.log_json
    assert config.abort_on_send_failure is False
    assert config.refresh_topics_interval_s == 60 and config.create_topics is False
    assert config.exactly_once


@pytest.mark.parametrize(
    ("values", "messages"),
    [
        (
            {"mm2Config": {"enabled": True}, "validation": NO_VALIDATION},
            ["kmirror: mm2Config.existingSecret", "needs your mm2.properties"],
        ),
        (
            mm2_values(mm2Config={**MM2_SECRET, "existingConfigMap": "cm"}),
            ["kmirror: mm2Config.existingConfigMap / mm2Config.existingSecret"],
        ),
        (
            mm2_values(whitelist="orders", numStreams=2, rename={"policy": "prefix"}),
            [
                "kmirror: whitelist",
                "<flow>.topics",
                "kmirror: numStreams",
                "tasks.max",
                "kmirror: rename",
            ],
        ),
        (
            {"mm2Config": MM2_SECRET},
            [
                "kmirror: source.bootstrapServers / target.bootstrapServers",
                "validation pods",
                "kmirror: validation.topics",
            ],
        ),
        (
            mm2_values(networkPolicy={"enabled": True, "allowExternalEgress": False}),
            ["kmirror: networkPolicy.extraEgress", "cannot read the\n    brokers' ports"],
        ),
        (
            mm2_values(prometheusRule={"enabled": True, "selector": 'job="m"'}),
            ["kmirror: prometheusRule.commitIntervalSeconds", "offset.flush.interval.ms"],
        ),
    ],
    ids=[
        "no-file",
        "two-files",
        "contradicting-values",
        "validation-clusters",
        "egress-ports",
        "alert-interval",
    ],
)
def test_mm2_mode_bad_values_name_the_fix(
    helm_template: Callable[..., Any], values: dict[str, Any], messages: list[str]
) -> None:
    err = helm_template(values, expect_fail=True)
    for message in messages:
        assert message in err, err


def test_mm2_mode_with_validation_clusters_renders_the_test_pod(
    helm_template: Callable[..., Any], minimal: dict[str, Any]
) -> None:
    values = {**minimal, "mm2Config": MM2_SECRET, "validation": {"topics": "east\\..*"}}
    docs = helm_template(values)
    (pod,) = docs.of_kind("Pod")
    args = chartlib.container(pod, "validate")["args"]
    assert "--source-bootstrap-servers=src-kafka:9092" in args
    assert "--topics=east\\..*" in args


def test_mm2_mode_validation_pods_keep_the_cluster_credentials(
    helm_template: Callable[..., Any], minimal: dict[str, Any]
) -> None:
    """The mirror reads mm2.properties only; the validation pods still reach the clusters with
    the settings and Secrets from values (the shared pod helper must not drop them)."""
    sasl = {"securityProtocol": "SASL_SSL", "sasl": {"mechanism": "SCRAM-SHA-512",
                                                     "existingSecret": "src-sasl"}}  # fmt: skip
    values = {
        **minimal,
        "source": {**minimal["source"], **sasl},
        "mm2Config": MM2_SECRET,
        "validation": {"topics": "east\\..*", "hook": {"enabled": True}},
    }
    docs = helm_template(values)
    mirror_c = mirror(docs)
    assert "envFrom" not in mirror_c and "env" not in mirror_c
    assert {v["name"] for v in chartlib.pod_spec(docs.deployment)["volumes"]} == {
        "tmp",
        "mm2-config",
    }
    for doc in (*docs.of_kind("Pod"), *docs.of_kind("Job")):
        c = chartlib.container(doc, "validate")
        assert c["envFrom"] == [{"configMapRef": {"name": chartlib.FULLNAME}}]
        assert c["env"][0]["name"] == "SOURCE_CLUSTER_SASL_USERNAME"
        assert "source-sasl" in {v["name"] for v in chartlib.pod_spec(doc)["volumes"]}


def test_mm2_mode_notes_say_where_the_configuration_is() -> None:
    notes = chartlib.render_notes(mm2_values(mm2Config={**MM2_SECRET, "flow": "a->b"}))
    assert "kmirror runs your MirrorMaker 2 configuration (mm2.conf in Secret my-mm2" in notes
    assert "rollout restart deployment/rel-kmirror" in notes
    assert "kmirror mirrors" not in notes  # no clusters from the values to name
