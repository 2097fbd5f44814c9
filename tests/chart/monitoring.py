"""What the dashboard and the alerts may refer to, derived from kmirror's own code, and a small
PromQL reader for the names a query uses.

`exported_series()` builds the registries kmirror serves on /metrics (a stream's WorkerMetrics,
merged by the supervisor's StreamsCollector with its `flow` and `stream` labels, plus the
supervisor's own metrics), gives every labelled metric one child so that its label names show,
and reads the result back from the Prometheus text format: the names and labels a scrape really
has. Nothing here lists metric names by hand.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.parser import text_string_to_metric_families

from kmirror.app.supervisor import Supervisor
from kmirror.config.model import ClusterConfig, MirrorConfig
from kmirror.metrics.aggregate import StreamsCollector, snapshot
from kmirror.metrics.worker import WorkerMetrics
from tests.chart import chartlib

PROMTOOL = chartlib.BIN_DIR / "promtool"
# Labels Prometheus adds to every scraped series: `job` and `instance` always, the rest from the
# Prometheus Operator's ServiceMonitor/PodMonitor. Queries may group by these.
TARGET_LABELS = frozenset(
    {"job", "instance", "namespace", "pod", "container", "service", "endpoint"}
)
# Series Prometheus itself writes for every target.
SCRAPE_SERIES = {"up": TARGET_LABELS}

# A librdkafka statistics document with one fetched partition: the lag collector's input.
_STATS = '{"topics": {"t": {"partitions": {"0": {"fetch_state": "active", "hi_offset": 10}}}}}'


def _give_children(registry_owner: object) -> None:
    for metric in vars(registry_owner).values():
        if not isinstance(metric, MetricWrapperBase):
            continue
        # prometheus_client keeps a metric's label names only in this attribute.
        names: tuple[str, ...] = metric._labelnames
        if names:
            child = metric.labels(*["x"] * len(names))
            for method in ("inc", "observe", "set"):
                if hasattr(child, method):
                    getattr(child, method)(1)
                    break


@functools.cache
def exported_series() -> Mapping[str, frozenset[str]]:
    """Sample name (as in /metrics and in PromQL) -> its label names, target labels included."""
    worker = WorkerMetrics()
    _give_children(worker)
    worker.stats.update(_STATS)
    streams = StreamsCollector()
    streams.update(0, snapshot(worker.registry), "source->target")
    registry = CollectorRegistry()
    registry.register(streams)
    config = MirrorConfig(
        source=ClusterConfig("source", "127.0.0.1:1"),
        target=ClusterConfig("target", "127.0.0.1:2"),
        group_id="g",
    )
    Supervisor(config, registry=registry)  # registers the supervisor's own metrics
    out: dict[str, frozenset[str]] = dict(SCRAPE_SERIES)
    text = generate_latest(registry).decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[sample.name] = frozenset(sample.labels) | out.get(sample.name, TARGET_LABELS)
    return out


# ----------------------------------------------------------------------------- PromQL reading

_KEYWORDS = frozenset(
    {"by", "without", "on", "ignoring", "group_left", "group_right", "offset", "bool", "and",
     "or", "unless", "atan2", "inf", "nan"}
)  # fmt: skip
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
_GROUPING = re.compile(
    r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)", re.IGNORECASE
)
_SELECTOR = re.compile(r"([A-Za-z_:][A-Za-z0-9_:]*)?\s*\{([^}]*)\}")
_MATCHER = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)")
_IDENT = re.compile(r"(?<![\w$.])([A-Za-z_:][A-Za-z0-9_:]*)\b(?!\s*\()")
_RANGE = re.compile(r"\[[^\]]*\]")
_NUMBER_OR_DURATION = re.compile(r"^(\d|0x)")


def grafana_to_promql(expr: str) -> str:
    """A Grafana query with its variables set to values Prometheus parses."""
    for var, value in (("$__rate_interval", "1m"), ("$__interval", "1m"), ("$__range", "1h"),
                       ("$job", ".*"), ("$topic", ".*")):  # fmt: skip
        expr = expr.replace(var, value)
    return expr


@functools.cache
def metrics_and_labels(expr: str) -> tuple[frozenset[str], frozenset[str]]:
    """(metric names, label names) a PromQL expression refers to: selectors and their matchers,
    by/without/on/ignoring/group_* lists. Strings and ranges are ignored."""
    labels: set[str] = set()
    names: set[str] = set()
    text = _STRING.sub('""', expr)
    for m in _GROUPING.finditer(text):
        labels |= {x.strip() for x in m.group(1).split(",") if x.strip()}
    text = _GROUPING.sub(" ", text)
    for m in _SELECTOR.finditer(text):
        if m.group(1):
            names.add(m.group(1))
        labels |= set(_MATCHER.findall(m.group(2)))
    text = _RANGE.sub(" ", _SELECTOR.sub(lambda m: f" {m.group(1) or ''} ", text))
    for ident in _IDENT.findall(text):
        if ident.lower() not in _KEYWORDS and not _NUMBER_OR_DURATION.match(ident):
            names.add(ident)
    return frozenset(names), frozenset(labels)


def unknown_references(expr: str) -> list[str]:
    """What an expression names that kmirror's /metrics (and the scrape) does not have."""
    exported = exported_series()
    names, labels = metrics_and_labels(expr)
    problems = [f"metric {n}" for n in sorted(names) if n not in exported]
    known = set().union(*(exported[n] for n in names if n in exported)) if names else set()
    problems += [f"label {label}" for label in sorted(labels - known)]
    return problems


def promtool(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    if not os.access(PROMTOOL, os.X_OK):
        raise FileNotFoundError(
            f"{PROMTOOL} is missing: run `make go-tools` (scripts/build-go-tools builds promtool)"
        )
    return subprocess.run(
        [str(PROMTOOL), *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def walk_exprs(dashboard: Mapping[str, object]) -> Iterator[tuple[str, str]]:
    """(where, PromQL) of every query of a Grafana dashboard: panel targets (rows' nested panels
    too) and query variables."""
    panels = list(dashboard.get("panels", []))  # type: ignore[call-overload]
    while panels:
        panel = panels.pop(0)
        panels += panel.get("panels", [])
        for target in panel.get("targets", []):
            yield f"panel {panel['title']!r} {target['refId']}", target["expr"]
    for var in dashboard.get("templating", {}).get("list", []):  # type: ignore[attr-defined]
        if var.get("type") == "query":
            query = var["query"]["query"] if isinstance(var["query"], dict) else var["query"]
            m = re.fullmatch(r"label_values\((.+),\s*([A-Za-z_][A-Za-z0-9_]*)\)", query)
            assert m, f"variable {var['name']}: only label_values(selector, label) is supported"
            yield f"variable {var['name']}", f"group by ({m.group(2)}) ({m.group(1)})"
