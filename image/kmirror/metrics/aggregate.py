"""One scrape endpoint for N stream processes.

Each stream periodically sends a snapshot of its registry (plain tuples, picklable) to the
supervisor; the supervisor re-exposes the latest snapshot of every stream with a `stream` label.
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
        self._latest: dict[int, list[FamilySnapshot]] = {}

    def update(self, stream: int, families: list[FamilySnapshot]) -> None:
        with self._lock:
            self._latest[stream] = families

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            latest = dict(self._latest)
        merged: dict[str, Metric] = {}
        for stream, families in sorted(latest.items()):
            for fam in families:
                metric = merged.get(fam.name)
                if metric is None:
                    metric = merged[fam.name] = Metric(fam.name, fam.documentation, fam.type)
                for name, labels, value in fam.samples:
                    metric.add_sample(name, {**labels, "stream": str(stream)}, value)
        yield from merged.values()
