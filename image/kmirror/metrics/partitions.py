"""Per target partition figures of what the target acknowledged: records, bytes and the
replication latency of every record, kept only with --mm2-metric-names (they feed MirrorMaker 2's
metric names, kmirror.metrics.mm2; kmirror's own metrics count per topic).

Rates and the latency's min, max and mean cover a sliding window the way Kafka's metrics
library (which MirrorMaker 2's come from) computes them: two samples of 30 s, the older one
dropped when a third begins, so they describe the last 30 to 60 seconds. The last latency and
the totals never expire, like MM2's `Value` and cumulative counts.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

SAMPLE_S = 30.0  # Kafka's metrics.sample.window.ms
SAMPLES = 2  # Kafka's metrics.num.samples

RECORDS = "kmirror_mirror_partition_records"
BYTES = "kmirror_mirror_partition_bytes"
RECORD_RATE = "kmirror_mirror_partition_records_per_second"
BYTE_RATE = "kmirror_mirror_partition_bytes_per_second"
LATENCY = "kmirror_mirror_partition_latency_seconds"
STATS = ("last", "min", "max", "avg")


@dataclass(slots=True)
class _Sample:
    start: float
    records: int = 0
    bytes: int = 0
    latency_sum: float = 0.0
    latency_n: int = 0
    latency_min: float = math.inf
    latency_max: float = -math.inf


@dataclass(slots=True)
class _Partition:
    records: int = 0
    bytes: int = 0
    last_latency: float | None = None
    samples: list[_Sample] = field(default_factory=list)

    def sample(self, now: float) -> _Sample:
        if not self.samples or now - self.samples[-1].start >= SAMPLE_S:
            self.samples.append(_Sample(now))
            del self.samples[:-SAMPLES]
        return self.samples[-1]

    def live(self, now: float) -> list[_Sample]:
        return [s for s in self.samples if now - s.start < SAMPLE_S * SAMPLES]


class PartitionFigures(Collector):
    """Fed by the copiers on acknowledgement, read by the stream's registry at each snapshot."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._partitions: dict[tuple[str, int], _Partition] = {}

    def acknowledged(
        self, topic: str, partition: int, records: int, nbytes: int, latency_s: float | None
    ) -> None:
        """`records` acknowledged by the target partition; `latency_s`: acknowledgement time
        minus the (first) record's source timestamp, None without a timestamp."""
        # Called for every record on the record path: kept to a few attribute updates.
        now = self._clock()
        with self._lock:
            p = self._partitions.get((topic, partition))
            if p is None:
                p = self._partitions[(topic, partition)] = _Partition()
            p.records += records
            p.bytes += nbytes
            last = p.samples[-1] if p.samples else None
            s = last if last is not None and now - last.start < SAMPLE_S else p.sample(now)
            s.records += records
            s.bytes += nbytes
            if latency_s is not None:
                p.last_latency = latency_s
                s.latency_sum += latency_s
                s.latency_n += 1
                s.latency_min = min(s.latency_min, latency_s)
                s.latency_max = max(s.latency_max, latency_s)

    def collect(self) -> Iterator[Metric]:
        labels = ["topic", "partition"]
        records = CounterMetricFamily(
            RECORDS, "Records the target acknowledged, per target partition", labels=labels
        )
        nbytes = CounterMetricFamily(
            BYTES,
            "Bytes the target acknowledged (key plus value; whole batches on the batch path), "
            "per target partition",
            labels=labels,
        )
        record_rate = GaugeMetricFamily(
            RECORD_RATE, "Acknowledged records per second over the last 30-60 s", labels=labels
        )
        byte_rate = GaugeMetricFamily(
            BYTE_RATE, "Acknowledged bytes per second over the last 30-60 s", labels=labels
        )
        latency = GaugeMetricFamily(
            LATENCY,
            "Target acknowledgement time minus source record timestamp: the last one, and the "
            "min, max and mean over the last 30-60 s",
            labels=[*labels, "stat"],
        )
        now = self._clock()
        with self._lock:
            for (topic, partition), p in sorted(self._partitions.items()):
                key = [topic, str(partition)]
                records.add_metric(key, p.records)
                nbytes.add_metric(key, p.bytes)
                live = p.live(now)
                span = max(now - live[0].start, SAMPLE_S) if live else SAMPLE_S
                record_rate.add_metric(key, sum(s.records for s in live) / span)
                byte_rate.add_metric(key, sum(s.bytes for s in live) / span)
                if p.last_latency is not None:
                    latency.add_metric([*key, "last"], p.last_latency)
                n = sum(s.latency_n for s in live)
                if n:
                    latency.add_metric([*key, "min"], min(s.latency_min for s in live))
                    latency.add_metric([*key, "max"], max(s.latency_max for s in live))
                    latency.add_metric([*key, "avg"], sum(s.latency_sum for s in live) / n)
        yield from (records, nbytes, record_rate, byte_rate, latency)
