"""Service, ServiceAccount, PodDisruptionBudget, NetworkPolicy, ServiceMonitor/PodMonitor and
NOTES.txt."""

from __future__ import annotations

from typing import Any

import pytest

from tests.chart import chartlib
from tests.chart.chartlib import MINIMAL, container, pod_metadata, pod_spec

pytestmark = pytest.mark.chart

T = chartlib.helm_template
MIRROR_SELECTOR = {
    "app.kubernetes.io/name": "kmirror",
    "app.kubernetes.io/instance": chartlib.RELEASE,
    "app.kubernetes.io/component": "mirror",
}


def _with(**overrides: Any) -> list[dict[str, Any]]:
    return [MINIMAL, overrides]


# ------------------------------------------------------------------------------ service


def test_metrics_service_selects_only_mirror_pods() -> None:
    docs = T(_with(validation={"hook": {"enabled": True}}))
    svc = docs.one("Service")
    assert svc["spec"]["type"] == "ClusterIP"
    assert svc["spec"]["selector"] == MIRROR_SELECTOR
    assert set(MIRROR_SELECTOR.items()) <= set(pod_metadata(docs.deployment)["labels"].items())
    # Validation pods share name and instance but must not become metrics endpoints.
    for kind in ("Job", "Pod"):
        labels = pod_metadata(docs.one(kind))["labels"]
        assert not set(MIRROR_SELECTOR.items()) <= set(labels.items()), kind


def test_service_values() -> None:
    docs = T(_with(service={"type": "NodePort", "annotations": {"a": "b"}, "labels": {"c": "d"}}))
    svc = docs.one("Service")
    assert svc["spec"]["type"] == "NodePort"
    assert svc["metadata"]["annotations"] == {"a": "b"}
    assert svc["metadata"]["labels"]["c"] == "d"
    assert not T(_with(service={"enabled": False})).has("Service")


# ------------------------------------------------------------------------ serviceaccount


def test_service_account_for_cloud_iam() -> None:
    role = {"eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/kmirror"}
    docs = T(_with(serviceAccount={"annotations": role}))
    sa = docs.one("ServiceAccount", chartlib.FULLNAME)
    assert sa["metadata"]["annotations"] == role
    assert sa["automountServiceAccountToken"] is False
    assert pod_spec(docs.deployment)["serviceAccountName"] == chartlib.FULLNAME


@pytest.mark.parametrize(
    ("sa", "expected"),
    [
        ({"create": False}, "default"),
        ({"create": False, "name": "existing"}, "existing"),
        ({"create": True, "name": "mine"}, "mine"),
    ],
)
def test_service_account_name(sa: dict[str, Any], expected: str) -> None:
    docs = T(_with(serviceAccount=sa))
    assert pod_spec(docs.deployment)["serviceAccountName"] == expected
    created = [d["metadata"]["name"] for d in docs.of_kind("ServiceAccount")]
    assert (expected in created) == sa["create"]


def test_api_token_mount_can_be_enabled() -> None:
    docs = T(_with(serviceAccount={"automountServiceAccountToken": True}))
    assert pod_spec(docs.deployment)["automountServiceAccountToken"] is True
    assert docs.one("ServiceAccount", chartlib.FULLNAME)["automountServiceAccountToken"] is True


# ---------------------------------------------------------------------------------- pdb


def test_pdb_defaults_allow_drains() -> None:
    pdb = T(MINIMAL).one("PodDisruptionBudget")
    assert pdb["spec"] == {
        "maxUnavailable": 1,
        "unhealthyPodEvictionPolicy": "AlwaysAllow",
        "selector": {"matchLabels": MIRROR_SELECTOR},
    }


@pytest.mark.parametrize(
    ("pdb", "expected"),
    [
        ({"minAvailable": 1, "maxUnavailable": ""}, {"minAvailable": 1}),
        ({"minAvailable": "50%", "maxUnavailable": ""}, {"minAvailable": "50%"}),
        ({"maxUnavailable": "25%"}, {"maxUnavailable": "25%"}),
    ],
)
def test_pdb_budget(pdb: dict[str, Any], expected: dict[str, Any]) -> None:
    spec = T(_with(pdb=pdb, replicaCount=2)).one("PodDisruptionBudget")["spec"]
    assert {k: v for k, v in spec.items() if k in ("minAvailable", "maxUnavailable")} == expected


def test_pdb_can_be_off() -> None:
    assert not T(_with(pdb={"create": False})).has("PodDisruptionBudget")
    spec = T(_with(pdb={"unhealthyPodEvictionPolicy": ""})).one("PodDisruptionBudget")["spec"]
    assert "unhealthyPodEvictionPolicy" not in spec


# ------------------------------------------------------------------------ networkpolicy


def test_network_policy_is_off_by_default() -> None:
    assert not T(MINIMAL).has("NetworkPolicy")


def test_network_policy_open_egress() -> None:
    np = T(_with(networkPolicy={"enabled": True})).one("NetworkPolicy")
    assert np["spec"]["podSelector"] == {
        "matchLabels": {
            "app.kubernetes.io/name": "kmirror",
            "app.kubernetes.io/instance": chartlib.RELEASE,
        }
    }
    assert np["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert np["spec"]["ingress"] == [{"ports": [{"port": "metrics", "protocol": "TCP"}]}]
    assert np["spec"]["egress"] == [{}]


def test_network_policy_restricted_egress() -> None:
    docs = T(
        [
            MINIMAL,
            {
                "source": {"bootstrapServers": "a:9096,b:9096"},
                "target": {"bootstrapServers": "c:9093"},
                "networkPolicy": {
                    "enabled": True,
                    "allowExternalEgress": False,
                    "metricsFrom": [{"namespaceSelector": {}}],
                    "extraIngress": [{"ports": [{"port": 1}]}],
                    "extraEgress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}],
                },
            },
        ]
    )
    spec = docs.one("NetworkPolicy")["spec"]
    assert spec["ingress"] == [
        {"ports": [{"port": "metrics", "protocol": "TCP"}], "from": [{"namespaceSelector": {}}]},
        {"ports": [{"port": 1}]},
    ]
    assert spec["egress"] == [
        {"ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]},
        {"ports": [{"port": 9093, "protocol": "TCP"}, {"port": 9096, "protocol": "TCP"}]},
        {"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]},
    ]
    # The policy covers the validation pods too (same name and instance labels).
    labels = pod_metadata(docs.one("Pod"))["labels"]
    assert set(spec["podSelector"]["matchLabels"].items()) <= set(labels.items())


# --------------------------------------------------------------------- prometheus monitors


def test_monitors_are_off_by_default() -> None:
    docs = T(MINIMAL)
    assert not docs.has("ServiceMonitor") and not docs.has("PodMonitor")


def test_service_monitor_scrapes_the_metrics_service() -> None:
    docs = T(
        _with(
            serviceMonitor={
                "enabled": True,
                "labels": {"release": "prom"},
                "interval": "15s",
                "scrapeTimeout": "10s",
                "metricRelabelings": [{"action": "drop"}],
            }
        )
    )
    sm = docs.one("ServiceMonitor")
    svc = docs.one("Service")
    assert sm["apiVersion"] == "monitoring.coreos.com/v1"
    assert sm["metadata"]["labels"]["release"] == "prom"
    assert sm["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items()
    assert sm["spec"]["namespaceSelector"] == {"matchNames": [chartlib.NAMESPACE]}
    [endpoint] = sm["spec"]["endpoints"]
    assert endpoint["port"] in [p["name"] for p in svc["spec"]["ports"]]
    assert endpoint == {
        "port": "metrics",
        "path": "/metrics",
        "interval": "15s",
        "scrapeTimeout": "10s",
        "honorLabels": False,
        "metricRelabelings": [{"action": "drop"}],
    }


def test_pod_monitor_scrapes_the_mirror_pods() -> None:
    docs = T(
        _with(
            podMonitor={
                "enabled": True,
                "namespace": "monitoring",
                "relabelings": [{"action": "labeldrop", "regex": "x"}],
            }
        )
    )
    pm = docs.one("PodMonitor")
    assert pm["metadata"]["namespace"] == "monitoring"
    assert pm["spec"]["namespaceSelector"] == {"matchNames": [chartlib.NAMESPACE]}
    labels = pod_metadata(docs.deployment)["labels"]
    assert pm["spec"]["selector"]["matchLabels"].items() <= labels.items()
    [endpoint] = pm["spec"]["podMetricsEndpoints"]
    assert endpoint["port"] in [p["name"] for p in container(docs.deployment)["ports"]]
    assert endpoint["relabelings"] == [{"action": "labeldrop", "regex": "x"}]
    assert endpoint["interval"] == "30s"


# -------------------------------------------------------------------------------- notes


def test_notes_tell_how_to_watch_lag_and_run_helm_test() -> None:
    notes = chartlib.render_notes(MINIMAL)
    assert "src-kafka:9092 -> tgt-kafka:9092" in notes
    assert f"kubectl -n {chartlib.NAMESPACE} logs -f deployment/{chartlib.FULLNAME}" in notes
    assert f"port-forward service/{chartlib.FULLNAME} 9404:9404" in notes
    assert "kmirror_mirror_(lag_records|seconds_since_last_commit)" in notes
    assert f"helm test {chartlib.RELEASE} -n {chartlib.NAMESPACE} --logs --timeout 660s" in notes
    # The hook is on by default: the notes say what it checked and where its result is.
    assert "the last\n   1000 records per partition that the mirror had copied" in notes
    assert f"kubectl -n {chartlib.NAMESPACE} logs job/{chartlib.FULLNAME}-validate" in notes


def test_notes_variants() -> None:
    notes = chartlib.render_notes(
        [
            MINIMAL,
            {
                "service": {"enabled": False},
                "serviceMonitor": {"enabled": False},
                "podMonitor": {"enabled": True},
                "validation": {"hook": {"enabled": True}},
            },
        ]
    )
    assert f"port-forward deployment/{chartlib.FULLNAME} 9404:9404" in notes
    assert "through the PodMonitor" in notes
    assert f"kubectl -n {chartlib.NAMESPACE} logs job/{chartlib.FULLNAME}-validate" in notes
    disabled = chartlib.render_notes({"replicaCount": 0})
    assert "DISABLED" in disabled and "--set replicaCount=1" in disabled
    assert "helm test" not in disabled.replace("`helm test`", "")
