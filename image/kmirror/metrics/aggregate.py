"""One scrape endpoint for N stream processes of one or more flows.

Each stream periodically sends a snapshot of its registry (plain tuples, picklable) to the
supervisor; the supervisor re-exposes the latest snapshot of every stream with its `flow` and
`stream` labels. The supervisor's per-flow services (disaster recovery, topic config sync,
schemas) register in a registry per flow, exposed with the `flow` label (FlowsCollector).
Nothing is summed here: Prometheus aggregates (`sum by (topic)`), and a restarted stream simply
looks like a counter reset.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass

from prometheus_client import CollectorRegistry
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

Sample = tuple[str, dict[str, str], float]


@dataclass(frozen=True)
class FamilySnapshot:
    name: str
    documentation: str
    type: str
    samples: tuple[Sample, ...]


def snapshot(registry: CollectorRegistry) -> list[FamilySnapshot]:
    return [
        FamilySnapshot(
            m.name,
            m.documentation,
            m.type,
            tuple((s.name, dict(s.labels), float(s.value)) for s in m.samples),
        )
        for m in registry.collect()
    ]


class StreamsCollector(Collector):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._latest: dict[tuple[str, int], list[FamilySnapshot]] = {}

    def update(self, stream: int, families: list[FamilySnapshot], flow: str) -> None:
        with self._lock:
            self._latest[(flow, stream)] = families

    def latest(self) -> dict[tuple[str, int], list[FamilySnapshot]]:
        """Each (flow, stream)'s latest snapshot."""
        with self._lock:
            return dict(self._latest)

    def collect(self) -> Iterator[Metric]:
        latest = self.latest()
        merged: dict[str, Metric] = {}
        for (flow, stream), families in sorted(latest.items()):
            extra = {"flow": flow, "stream": str(stream)}
            _merge(merged, families, extra)
        yield from merged.values()


class FlowsCollector(Collector):
    """A registry per flow and service, exposed with the `flow` label."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._registries: dict[tuple[str, str], CollectorRegistry] = {}

    def registry(self, flow: str, service: str) -> CollectorRegistry:
        """A service's registry in a flow; a new one replaces the service's old one (a service
        restarted by a reload starts its counters again, like a restarted process)."""
        with self._lock:
            registry = self._registries[(flow, service)] = CollectorRegistry()
        return registry

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            registries = sorted(self._registries.items())
        merged: dict[str, Metric] = {}
        for (flow, _), registry in registries:
            _merge(merged, snapshot(registry), {"flow": flow})
        yield from merged.values()


def _merge(
    merged: dict[str, Metric], families: list[FamilySnapshot], extra: dict[str, str]
) -> None:
    for fam in families:
        metric = merged.get(fam.name)
        if metric is None:
            metric = merged[fam.name] = Metric(fam.name, fam.documentation, fam.type)
        for name, labels, value in fam.samples:
            metric.add_sample(name, {**labels, **extra}, value)
