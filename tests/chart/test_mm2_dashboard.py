"""Strimzi's MirrorMaker 2 Grafana dashboard on kmirror's metrics (--mm2-metric-names, chart
value metrics.mm2Names): the dashboard's queries about the mirror, as Strimzi ships them, return
kmirror's numbers.

kmirror's /metrics page is rendered by the real collectors (a stream's WorkerMetrics with its
per-partition figures, merged by StreamsCollector, and the supervisor's Mm2Collector) from known
acknowledgements; every sample becomes a series carrying the labels a scrape through the chart's
PodMonitor adds (namespace, and the pod labels strimzi.io/kind and strimzi.io/cluster copied as
strimzi_io_kind and strimzi_io_cluster), and `promtool test rules` evaluates each query on them,
expecting the values those reads and acknowledgements make. The dashboard's other panels (JVM
memory, GC, CPU, the clients' network bytes, Connect's task internals, checkpoint latency) read
what kmirror does not have: docs/monitoring.md lists them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from kmirror.metrics.aggregate import StreamsCollector, snapshot
from kmirror.metrics.mm2 import Mm2Collector
from kmirror.metrics.partitions import SAMPLE_S, PartitionFigures
from kmirror.metrics.worker import WorkerMetrics
from tests.chart import monitoring

pytestmark = pytest.mark.chart

FLOW = "dc1->dc2"
CLUSTER = "dc1-to-dc2"  # metrics.mm2ClusterName
NAMESPACE = "mirror-ns"
SCRAPED = {
    "job": "mirror-ns/rel-kmirror",
    "instance": "10.0.0.7:9404",
    "namespace": NAMESPACE,
    "pod": "rel-kmirror-0",
    "strimzi_io_kind": "KafkaMirrorMaker2",
    "strimzi_io_cluster": CLUSTER,
}
VARIABLES = {"$strimzi_mirror_maker_cluster_name": CLUSTER, "$kubernetes_namespace": NAMESPACE}

# The dashboard's filter, as in every one of its mirror queries.
F = 'strimzi_io_kind=~"KafkaMirrorMaker2",strimzi_io_cluster="$strimzi_mirror_maker_cluster_name"'
SOURCE = "kafka_connect_mirror_mirrorsourceconnector_"
STATS = ("", "_avg", "_min", "_max")  # the panels' Current, Average, Min, Max columns

# (where in the dashboard, its PromQL): Strimzi's strimzi-kafka-mirror-maker-2.json.
QUERIES: list[tuple[str, str]] = [
    ("variable kubernetes_namespace (query_result)",
     'kafka_connect_worker_connector_count{strimzi_io_kind="KafkaMirrorMaker2"}'),
    ("variable strimzi_mirror_maker_cluster_name (query_result)",
     'kafka_connect_worker_connector_count{namespace="$kubernetes_namespace", '
     'strimzi_io_kind="KafkaMirrorMaker2"}'),
    ("Number of Connectors", f"sum(kafka_connect_worker_connector_count{{{F}}})"),
    ("Number of Tasks", f"sum(kafka_connect_worker_task_count{{{F}}})"),
    ("Total record rate", f"sum({SOURCE}record_rate{{{F}}})"),
    ("Total byte rate", f"sum({SOURCE}byte_rate{{{F}}})"),
    *[(f"{title} {stem}{stat}", f"sum({SOURCE}{stem}{stat}{{{F}}}) by (partition, topic)")
      for title, stem in (("Record Age", "record_age_ms"),
                          ("Replication Latency", "replication_latency_ms"))
      for stat in STATS],
    ("Consumer Lag",
     f'sum(kafka_consumer_fetch_manager_records_lag{{{F},clientid!~"consumer-mirrormaker2-.*"}}) '
     "by (topic, partition)"),
]  # fmt: skip


def exposition() -> str:
    """kmirror's /metrics with the MM2 names: topic `orders` copied to `dc1.orders`; partition 0
    read records 0.5 s and 1.5 s old and took 60 records (6000 bytes) 30 s ago with latencies
    250 ms and 125 ms, partition 1 read records 2 s old and took 30 records (3000 bytes) at
    500 ms; the copy is 7 and 0 records behind."""
    now = [0.0]
    figures = PartitionFigures(lambda: now[0])
    worker = WorkerMetrics(partitions=figures)
    figures.read("dc1.orders", 0, 0.5)
    figures.read("dc1.orders", 0, 1.5)
    figures.read("dc1.orders", 1, 2.0)
    figures.acknowledged("dc1.orders", 0, 30, 3000, 0.250)
    figures.acknowledged("dc1.orders", 0, 30, 3000, 0.125)
    figures.acknowledged("dc1.orders", 1, 30, 3000, 0.500)
    now[0] = SAMPLE_S
    partitions = {
        str(p): {"fetch_state": "active", "hi_offset": hi, "app_offset": at}
        for p, hi, at in ((0, 67, 60), (1, 30, 30))
    }
    worker.stats.update(json.dumps({"topics": {"orders": {"partitions": partitions}}}))
    streams = StreamsCollector()
    streams.update(0, snapshot(worker.registry), FLOW)
    registry = CollectorRegistry()
    registry.register(streams)
    registry.register(Mm2Collector(streams, {FLOW: "dc2"}, {FLOW: 2}))
    return generate_latest(registry).decode()


def _series(name: str, labels: dict[str, str]) -> str:
    text = ",".join(
        f'{k}="{v}"' for k, v in sorted({**labels, **SCRAPED}.items())
    )  # label values here hold no quotes or backslashes
    return f"{name}{{{text}}}"


def input_series() -> list[dict[str, str]]:
    return [
        {"series": _series(s.name, s.labels), "values": f"{s.value}x10"}
        for family in text_string_to_metric_families(exposition())
        for s in family.samples
    ]


def expected() -> dict[str, list[dict[str, Any]]]:
    """What each query returns: (labels, value) as promtool compares them."""
    by_partition = {
        "Record Age record_age_ms": (1500.0, 2000.0),  # the last record's
        "Record Age record_age_ms_avg": (1000.0, 2000.0),
        "Record Age record_age_ms_min": (500.0, 2000.0),
        "Record Age record_age_ms_max": (1500.0, 2000.0),
        "Replication Latency replication_latency_ms": (125.0, 500.0),
        "Replication Latency replication_latency_ms_avg": (187.5, 500.0),
        "Replication Latency replication_latency_ms_min": (125.0, 500.0),
        "Replication Latency replication_latency_ms_max": (250.0, 500.0),
    }
    connectors = {"__name__": "kafka_connect_worker_connector_count", "flow": FLOW, **SCRAPED}
    one = [{"labels": _labels(connectors), "value": 1}]
    out: dict[str, list[dict[str, Any]]] = {
        QUERIES[0][0]: one,
        QUERIES[1][0]: one,
        "Number of Connectors": [{"labels": "{}", "value": 1}],
        "Number of Tasks": [{"labels": "{}", "value": 2}],
        "Total record rate": [{"labels": "{}", "value": 90 / SAMPLE_S}],
        "Total byte rate": [{"labels": "{}", "value": 9000 / SAMPLE_S}],
        "Consumer Lag": [
            {"labels": '{partition="0", topic="orders"}', "value": 7},
            {"labels": '{partition="1", topic="orders"}', "value": 0},
        ],
    }
    for where, values in by_partition.items():
        out[where] = [
            {"labels": f'{{partition="{p}", topic="dc1.orders"}}', "value": v}
            for p, v in enumerate(values)
        ]
    return out


def _labels(labels: dict[str, str]) -> str:
    return "{" + ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


def _promql(expr: str) -> str:
    for var, value in VARIABLES.items():
        expr = expr.replace(var, value)
    return expr


def test_strimzis_mm2_dashboard_queries_return_kmirrors_numbers(tmp_path: Path) -> None:
    want = expected()
    assert set(want) == {where for where, _ in QUERIES}
    tests = {
        "rule_files": [],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": input_series(),
                "promql_expr_test": [
                    {"expr": _promql(expr), "eval_time": "5m", "exp_samples": want[where]}
                    for where, expr in QUERIES
                ],
            }
        ],
    }
    (tmp_path / "mm2.test.yaml").write_text(yaml.safe_dump(tests, sort_keys=False))
    result = monitoring.promtool("test", "rules", "mm2.test.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_query_finds_series_only_with_the_setting(tmp_path: Path) -> None:
    """Without --mm2-metric-names, /metrics has none of what the dashboard reads."""
    names = set().union(*(monitoring.metrics_and_labels(e)[0] for _, e in QUERIES))
    assert names and not names & set(monitoring.exported_series())
    assert names <= {s["series"].split("{")[0] for s in input_series()}
