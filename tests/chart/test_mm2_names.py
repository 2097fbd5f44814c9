"""`metrics.mm2Names` in the chart: the image is told (KMIRROR_MM2_METRIC_NAMES, loaded into the
config the mirror runs with), the pods carry the two labels Strimzi's MM2 dashboard filters on,
and the chart's PodMonitor and ServiceMonitor copy them onto the series, before the user's own
relabelings. Off by default: none of it."""

from __future__ import annotations

from typing import Any

import pytest

from kmirror.entrypoint.render import build_plan, plan_config
from tests.chart import chartlib
from tests.chart.chartlib import MINIMAL

pytestmark = pytest.mark.chart

T = chartlib.helm_template
ON = {"metrics": {"mm2Names": True}}
# (values key, kind, where its endpoints are): the chart makes one or the other.
MONITORS = [("podMonitor", "PodMonitor", "podMetricsEndpoints"),
            ("serviceMonitor", "ServiceMonitor", "endpoints")]  # fmt: skip
COPIED = [
    {"sourceLabels": [f"__meta_kubernetes_pod_label_strimzi_io_{label}"],
     "targetLabel": f"strimzi_io_{label}"}
    for label in ("kind", "cluster")
]  # fmt: skip


def _relabelings(values: list[dict[str, Any]], monitor: tuple[str, str, str]) -> Any:
    key, kind, endpoints = monitor
    docs = T([*values, {key: {"enabled": True}}])
    return docs.one(kind)["spec"][endpoints][0].get("relabelings")


def test_off_by_default() -> None:
    docs = T(MINIMAL)
    labels = chartlib.pod_metadata(docs.deployment)["labels"]
    assert not any(k.startswith("strimzi.io/") for k in labels)
    assert "KMIRROR_MM2_METRIC_NAMES" not in docs.configmap
    assert plan_config(build_plan(docs.configmap)).mm2_metric_names is False
    for monitor in MONITORS:
        assert _relabelings([MINIMAL], monitor) is None


def test_on_the_image_exports_them_and_the_pods_carry_strimzis_labels() -> None:
    docs = T([MINIMAL, ON])
    assert docs.configmap["KMIRROR_MM2_METRIC_NAMES"] == "true"
    assert plan_config(build_plan(docs.configmap)).mm2_metric_names is True
    labels = chartlib.pod_metadata(docs.deployment)["labels"]
    assert labels["strimzi.io/kind"] == "KafkaMirrorMaker2"
    assert labels["strimzi.io/cluster"] == chartlib.RELEASE  # the default cluster name
    for monitor in MONITORS:
        assert _relabelings([MINIMAL, ON], monitor) == COPIED, monitor


def test_the_cluster_name_and_the_users_relabelings_are_kept() -> None:
    named = {"metrics": {"mm2Names": True, "mm2ClusterName": "dc1-to-dc2"}}
    docs = T([MINIMAL, named])
    assert chartlib.pod_metadata(docs.deployment)["labels"]["strimzi.io/cluster"] == "dc1-to-dc2"
    mine = [{"targetLabel": "team", "replacement": "data"}]
    for monitor in MONITORS:
        values = [MINIMAL, named, {monitor[0]: {"relabelings": mine}}]
        assert _relabelings(values, monitor) == COPIED + mine, monitor


def test_a_cluster_name_that_is_no_label_value_is_refused() -> None:
    err = T([MINIMAL, ON, {"metrics": {"mm2ClusterName": "dc1 -> dc2"}}], expect_fail=True)
    assert "mm2ClusterName" in err
