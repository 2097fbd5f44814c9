"""Metrics one mirror stream records. Each stream owns a registry; the supervisor merges the
streams' samples for the single HTTP port (see aggregate.py)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from kmirror.metrics.partitions import PartitionFigures

# Replication latency spans milliseconds (steady state) to minutes (catching up a backlog).
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900)


class LibrdkafkaStats(Collector):
    """Per-partition lag read from the consumer's latest librdkafka statistics at scrape time:
    librdkafka already tracks high watermarks, positions and committed offsets, so we don't.

    Two lags: to the committed offset (what a restart would copy again; it never drops below
    one commit interval's worth of records) and to the copy position (what the mirror has not
    yet handed to the target: the mirror's real distance behind the source)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lag: dict[tuple[str, int], tuple[int, int]] = {}
        # Partitions the consumer does not fetch (the batch path: kmirror.mirror.hybrid):
        # their (source end, copy position) from the engine, read at each statistics update.
        self.elsewhere: Callable[[], dict[tuple[str, int], tuple[int, int]]] | None = None

    def update(self, stats_json: str) -> None:
        stats: dict[str, Any] = json.loads(stats_json)
        lag: dict[tuple[str, int], tuple[int, int]] = {}
        elsewhere = self.elsewhere() if self.elsewhere is not None else {}
        for topic, tstats in stats.get("topics", {}).items():
            for pid, p in tstats.get("partitions", {}).items():
                partition = int(pid)
                other = elsewhere.get((topic, partition))
                if other is not None:
                    hi, position = other
                    committed = int(p.get("committed_offset", -1))
                    base = committed if committed >= 0 else max(int(p.get("lo_offset", 0)), 0)
                    lag[(topic, partition)] = (max(hi - base, 0), max(hi - position, 0))
                    continue
                # -1 is librdkafka's internal UA partition; only fetched partitions count.
                if partition < 0 or p.get("fetch_state") in (None, "none", "stopped"):
                    continue
                hi, committed = int(p.get("hi_offset", -1)), int(p.get("committed_offset", -1))
                if hi < 0:
                    continue
                lo = int(p.get("lo_offset", 0))
                base = committed if committed >= 0 else max(lo, 0)
                # app_offset: after the last record handed to the mirror (-1001 before any).
                position = max(int(p.get("app_offset", -1)), base)
                lag[(topic, partition)] = (max(hi - base, 0), max(hi - position, 0))
        with self._lock:
            self._lag = lag

    def collect(self) -> Iterator[GaugeMetricFamily]:
        committed = GaugeMetricFamily(
            "kmirror_mirror_lag_records",
            "Source end offset minus the mirror's committed offset, per partition",
            labels=["topic", "partition"],
        )
        copy = GaugeMetricFamily(
            "kmirror_mirror_copy_lag_records",
            "Source end offset minus the mirror's copy position (records not yet handed to the "
            "target), per partition",
            labels=["topic", "partition"],
        )
        with self._lock:
            for (topic, partition), (to_commit, to_copy) in sorted(self._lag.items()):
                committed.add_metric([topic, str(partition)], to_commit)
                copy.add_metric([topic, str(partition)], to_copy)
        yield committed
        yield copy


class WorkerMetrics:
    """Every metric a stream updates. Tests build one on a fresh CollectorRegistry."""

    def __init__(
        self, registry: CollectorRegistry | None = None, partitions: PartitionFigures | None = None
    ) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.records = Counter(
            "kmirror_mirror_records", "Records sent to the target", ["topic"], registry=r
        )
        self.bytes = Counter(
            "kmirror_mirror_bytes",
            "Key plus value bytes sent to the target",
            ["topic"],
            registry=r,
        )
        self.latency = Histogram(
            "kmirror_mirror_replication_latency_seconds",
            "Target acknowledgement time minus source record timestamp (sampled)",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.waiting = Gauge(
            "kmirror_mirror_partitions_waiting_for_target",
            "Assigned partitions paused because their target partitions have no leader yet",
            registry=r,
        )
        self.target_waits = Counter(
            "kmirror_mirror_target_waits",
            "Times a stream waited for target partitions without a leader (a slow target)",
            registry=r,
        )
        self.send_errors = Counter(
            "kmirror_mirror_send_errors",
            "Records the target did not acknowledge",
            ["error"],
            registry=r,
        )
        self.rebalances = Counter(
            "kmirror_mirror_rebalances",
            "Partition assignments and revocations",
            ["kind"],
            registry=r,
        )
        self.commits = Counter(
            "kmirror_mirror_commits", "Successful source offset commits", registry=r
        )
        self.assigned = Gauge(
            "kmirror_mirror_assigned_partitions",
            "Source partitions this stream copies",
            registry=r,
        )
        self.throttled_seconds = Counter(
            "kmirror_mirror_throttled_seconds",
            "Time partitions of a topic waited for the throttle, by class (backlog: catching "
            "up; tail: keeping up with live records)",
            ["topic", "kind"],
            registry=r,
        )
        self._last_commit = time.time()
        Gauge(
            "kmirror_mirror_seconds_since_last_commit",
            "Seconds since offsets were last committed (or since start)",
            registry=r,
        ).set_function(lambda: time.time() - self._last_commit)
        self.stats = LibrdkafkaStats()
        r.register(self.stats)
        # Per target partition figures, only for MirrorMaker 2's metric names (--mm2-metric-names)
        self.partitions = partitions
        if partitions is not None:
            r.register(partitions)

    def throttled(self, topic: str, kind: str, seconds: float) -> None:
        self.throttled_seconds.labels(topic, kind).inc(seconds)

    def committed(self) -> None:
        self._last_commit = time.time()
        self.commits.inc()
