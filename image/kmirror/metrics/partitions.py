"""Per target partition figures of what the target acknowledged (records, bytes and the
replication latency of every record) and of the age of records when read from the source, kept
only with --mm2-metric-names (they feed MirrorMaker 2's metric names, kmirror.metrics.mm2;
kmirror's own metrics count per topic).

Rates and the latency's min, max and mean cover a sliding window the way Kafka's metrics
library (which MirrorMaker 2's come from) computes them: two samples of 30 s, the older one
dropped when a third begins, so they describe the last 30 to 60 seconds. The last latency and
age and the totals never expire, like MM2's `Value` and cumulative counts.
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
AGE = "kmirror_mirror_partition_record_age_seconds"


@dataclass(slots=True)
class _Stat:
    """Durations of one sample: their count, sum, min and max."""

    n: int = 0
    total: float = 0.0
    low: float = math.inf
    high: float = -math.inf

    def add(self, seconds: float) -> None:
        self.n += 1
        self.total += seconds
        self.low = min(self.low, seconds)
        self.high = max(self.high, seconds)


@dataclass(slots=True)
class _Sample:
    start: float
    records: int = 0
    bytes: int = 0
    latency: _Stat = field(default_factory=_Stat)
    age: _Stat = field(default_factory=_Stat)


@dataclass(slots=True)
class _Partition:
    records: int = 0
    bytes: int = 0
    last_latency: float | None = None
    last_age: float | None = None
    samples: list[_Sample] = field(default_factory=list)

    def sample(self, now: float) -> _Sample:
        last = self.samples[-1] if self.samples else None
        if last is not None and now - last.start < SAMPLE_S:
            return last
        self.samples.append(_Sample(now))
        del self.samples[:-SAMPLES]
        return self.samples[-1]

    def live(self, now: float) -> list[_Sample]:
        return [s for s in self.samples if now - s.start < SAMPLE_S * SAMPLES]


def _stats(
    family: GaugeMetricFamily, key: list[str], last: float | None, stats: list[_Stat]
) -> None:
    """The last value and, when the window has any, min, max and mean."""
    if last is not None:
        family.add_metric([*key, "last"], last)
    n = sum(s.n for s in stats)
    if n:
        family.add_metric([*key, "min"], min(s.low for s in stats))
        family.add_metric([*key, "max"], max(s.high for s in stats))
        family.add_metric([*key, "avg"], sum(s.total for s in stats) / n)


class PartitionFigures(Collector):
    """Fed by the copiers on acknowledgement, read by the stream's registry at each snapshot."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._partitions: dict[tuple[str, int], _Partition] = {}

    def _partition(self, topic: str, partition: int) -> _Partition:
        p = self._partitions.get((topic, partition))
        if p is None:
            p = self._partitions[(topic, partition)] = _Partition()
        return p

    def acknowledged(
        self, topic: str, partition: int, records: int, nbytes: int, latency_s: float | None
    ) -> None:
        """`records` acknowledged by the target partition; `latency_s`: acknowledgement time
        minus the (first) record's source timestamp, None without a timestamp."""
        now = self._clock()
        with self._lock:
            p = self._partition(topic, partition)
            p.records += records
            p.bytes += nbytes
            s = p.sample(now)
            s.records += records
            s.bytes += nbytes
            if latency_s is not None:
                p.last_latency = latency_s
                s.latency.add(latency_s)

    def read(self, topic: str, partition: int, age_s: float) -> None:
        """A record (or a batch's first record) for the target partition was read from the
        source `age_s` after its source timestamp: MM2's record age, taken when it polls."""
        now = self._clock()
        with self._lock:
            p = self._partition(topic, partition)
            p.last_age = age_s
            p.sample(now).age.add(age_s)

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
        age = GaugeMetricFamily(
            AGE,
            "Time a record was read from the source minus its timestamp: the last one, and the "
            "min, max and mean over the last 30-60 s",
            labels=[*labels, "stat"],
        )
        now = self._clock()
        with self._lock:
            for (topic, partition), p in sorted(self._partitions.items()):
                key = [topic, str(partition)]
                live = p.live(now)
                span = max(now - live[0].start, SAMPLE_S) if live else SAMPLE_S
                records.add_metric(key, p.records)
                nbytes.add_metric(key, p.bytes)
                record_rate.add_metric(key, sum(s.records for s in live) / span)
                byte_rate.add_metric(key, sum(s.bytes for s in live) / span)
                _stats(latency, key, p.last_latency, [s.latency for s in live])
                _stats(age, key, p.last_age, [s.age for s in live])
        yield from (records, nbytes, record_rate, byte_rate, latency, age)
