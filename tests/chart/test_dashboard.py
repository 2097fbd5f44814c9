"""The Grafana dashboard: valid JSON, shipped in docs/ and in the chart (an optional ConfigMap for
Grafana's sidecar), and every query names metrics and labels kmirror really exports."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.chart import chartlib, monitoring

pytestmark = pytest.mark.chart

DASHBOARD = chartlib.CHART_DIR / "files" / "grafana-dashboard.json"
DOCS_COPY = chartlib.REPO_ROOT / "docs" / "grafana-dashboard.json"


def dashboard() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return doc


def test_dashboard_loads_and_docs_ship_the_same_file() -> None:
    doc = dashboard()
    assert doc["uid"] == "kmirror-overview" and doc["title"] == "kmirror"
    assert DOCS_COPY.is_symlink() and DOCS_COPY.resolve() == DASHBOARD.resolve()
    ids = [p["id"] for p in doc["panels"]]
    assert len(ids) == len(set(ids)), "panel ids must be unique"


def test_every_query_names_metrics_and_labels_kmirror_exports() -> None:
    exported = monitoring.exported_series()
    problems = []
    for where, expr in monitoring.walk_exprs(dashboard()):
        names, _ = monitoring.metrics_and_labels(expr)
        if not any(n.startswith("kmirror_") and n in exported for n in names):
            problems.append(f"{where}: names no kmirror metric: {expr}")
        problems += [f"{where}: {p} is not exported" for p in monitoring.unknown_references(expr)]
    assert not problems, "\n".join(problems)


def test_legends_use_labels_the_query_keeps() -> None:
    problems = []
    doc = dashboard()
    for panel in doc["panels"]:
        for target in panel.get("targets", []):
            legend = set(re.findall(r"\{\{\s*(\w+)\s*\}\}", target.get("legendFormat", "")))
            _, labels = monitoring.metrics_and_labels(target["expr"])
            if legend - labels:
                problems.append(
                    f"{panel['title']}: legend {sorted(legend - labels)} not grouped by"
                )
    assert not problems, "\n".join(problems)


def test_every_query_parses_as_promql(tmp_path: Path) -> None:
    """promtool's parser (the one Prometheus uses) reads each query as a recording rule."""
    rules = [
        {"record": f"kmirror_dashboard_query_{i}", "expr": monitoring.grafana_to_promql(expr)}
        for i, (_, expr) in enumerate(monitoring.walk_exprs(dashboard()))
    ]
    path = tmp_path / "dashboard-queries.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    result = monitoring.promtool("check", "rules", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(rules)} rules found" in result.stdout


def test_dashboard_shows_what_an_operator_watches() -> None:
    """Throughput, lag per topic and per partition, latency, send errors, commits, rebalances,
    streams up: each has a panel querying the metric that measures it."""
    exprs = [expr for _, expr in monitoring.walk_exprs(dashboard())]

    def queried(metric: str, grouped_by: set[str] | None = None) -> bool:
        for expr in exprs:
            names, labels = monitoring.metrics_and_labels(expr)
            if metric in names and (grouped_by is None or grouped_by <= labels):
                return True
        return False

    assert queried("kmirror_mirror_records_total", {"topic"})
    assert queried("kmirror_mirror_bytes_total", {"topic"})
    assert queried("kmirror_mirror_lag_records", {"topic"})
    assert queried("kmirror_mirror_lag_records", {"topic", "partition"})
    assert queried("kmirror_mirror_replication_latency_seconds_bucket", {"le"})
    assert queried("kmirror_mirror_send_errors_total", {"error"})
    assert queried("kmirror_mirror_commits_total")
    assert queried("kmirror_mirror_seconds_since_last_commit")
    assert queried("kmirror_mirror_rebalances_total", {"kind"})
    assert queried("kmirror_mirror_assigned_partitions", {"stream"})


def test_data_source_is_a_variable() -> None:
    """The sidecar loads the JSON as is (no import dialog maps `__inputs`): every panel and query
    takes the data source from the `datasource` variable."""
    doc = dashboard()
    assert "__inputs" not in doc
    (var,) = [v for v in doc["templating"]["list"] if v["type"] == "datasource"]
    assert var["name"] == "datasource" and var["query"] == "prometheus"
    for panel in doc["panels"]:
        if panel["type"] == "row":
            continue
        uids = {panel["datasource"]["uid"]} | {t["datasource"]["uid"] for t in panel["targets"]}
        assert uids == {"${datasource}"}, panel["title"]


# ------------------------------------------------------------------------------------ chart


def test_dashboard_configmap_is_off_by_default(
    helm_template: Callable[..., Any], minimal: dict[str, Any]
) -> None:
    docs = helm_template(minimal)
    assert [d["metadata"]["name"] for d in docs.of_kind("ConfigMap")] == [chartlib.FULLNAME]


def test_dashboard_configmap_carries_the_sidecar_label_and_the_file(
    helm_template: Callable[..., Any], minimal: dict[str, Any]
) -> None:
    values = {
        **minimal,
        "grafanaDashboard": {
            "enabled": True,
            "namespace": "monitoring",
            "annotations": {"grafana_folder": "Kafka"},
        },
    }
    cm = helm_template(values).one("ConfigMap", f"{chartlib.FULLNAME}-dashboard")
    assert cm["metadata"]["namespace"] == "monitoring"
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert cm["metadata"]["annotations"] == {"grafana_folder": "Kafka"}
    (content,) = cm["data"].values()
    assert json.loads(content) == dashboard()


def test_dashboard_labels_follow_the_values(
    helm_template: Callable[..., Any], minimal: dict[str, Any]
) -> None:
    """A sidecar with another label: add it, and drop the default one with null (helm merges
    maps)."""
    labels = {"dashboards": "kafka", "grafana_dashboard": None}
    values = {**minimal, "grafanaDashboard": {"enabled": True, "labels": labels}}
    cm = helm_template(values).one("ConfigMap", f"{chartlib.FULLNAME}-dashboard")
    assert cm["metadata"]["labels"]["dashboards"] == "kafka"
    assert "grafana_dashboard" not in cm["metadata"]["labels"]
