"""MirrorMaker 2's metric names, computed from kmirror's own figures (--mm2-metric-names), so
that dashboards made for MM2 (Strimzi's) show kmirror's data.

The names and labels are the ones Strimzi's JMX exporter rules give MM2's MBeans
(`kafka.connect.mirror:type=MirrorSourceConnector,target=..,topic=..,partition=..` attributes
become `kafka_connect_mirror_mirrorsourceconnector_<attribute>` gauges labelled `target`,
`topic` (the target topic), `partition`); every series also carries kmirror's `flow` label.
Only what kmirror measures is exported (docs/monitoring.md lists what is left out and why).

Input: the streams' latest snapshots (StreamsCollector), where PartitionFigures' families hold
the per target partition figures and LibrdkafkaStats' the per source partition lag. A partition
is copied by one stream at a time; when several streams report it (a rebalance moved it), their
counts and rates add up, minima and maxima are the lowest and highest, and the last and mean
latency and age come from the stream that copied the most of it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kmirror.metrics import partitions as pf
from kmirror.metrics.aggregate import FamilySnapshot, StreamsCollector

SOURCE = "kafka_connect_mirror_mirrorsourceconnector_"
COPY_LAG = "kmirror_mirror_copy_lag_records"
_SUMMED = {
    f"{pf.RECORDS}_total": "record_count",
    f"{pf.BYTES}_total": "byte_count",
    pf.RECORD_RATE: "record_rate",
    pf.BYTE_RATE: "byte_rate",
}
_HELP = {
    "record_count": "Records the target acknowledged (kmirror: "
    "kmirror_mirror_partition_records_total)",
    "record_rate": "Acknowledged records per second over the last 30-60 s",
    "byte_count": "Bytes the target acknowledged (kmirror: kmirror_mirror_partition_bytes_total)",
    "byte_rate": "Acknowledged bytes per second over the last 30-60 s",
    "replication_latency_ms": "Target acknowledgement time minus source record timestamp, the "
    "last record's",
    "replication_latency_ms_min": "Minimum replication latency over the last 30-60 s",
    "replication_latency_ms_max": "Maximum replication latency over the last 30-60 s",
    "replication_latency_ms_avg": "Mean replication latency over the last 30-60 s",
    "record_age_ms": "Time the last record was read from the source minus its timestamp",
    "record_age_ms_min": "Minimum record age when read over the last 30-60 s",
    "record_age_ms_max": "Maximum record age when read over the last 30-60 s",
    "record_age_ms_avg": "Mean record age when read over the last 30-60 s",
}
# kmirror's duration families (a `stat` label) -> MM2's stem; stat "last" is MM2's bare name.
_DURATIONS = {pf.LATENCY: "replication_latency_ms", pf.AGE: "record_age_ms"}


@dataclass
class _Partition:
    sums: dict[str, float] = field(default_factory=dict)
    # MM2 name -> (records the reporting stream copied, value in seconds)
    durations: dict[str, tuple[float, float]] = field(default_factory=dict)


class Mm2Collector(Collector):
    """`targets`: each flow's target cluster alias (MM2's `target` label); `tasks`: each flow's
    stream processes (MM2's tasks)."""

    def __init__(
        self, streams: StreamsCollector, targets: Mapping[str, str], tasks: Mapping[str, int]
    ) -> None:
        self._streams = streams
        self._targets = dict(targets)
        self._tasks = dict(tasks)

    def collect(self) -> Iterator[Metric]:
        copied: dict[tuple[str, str, str], _Partition] = {}
        lag = GaugeMetricFamily(
            "kafka_consumer_fetch_manager_records_lag",
            "Source end offset minus the copy position, per source partition "
            "(kmirror: kmirror_mirror_copy_lag_records)",
            labels=["clientid", "topic", "partition", "flow"],
        )
        for (flow, stream), families in sorted(self._streams.latest().items()):
            _gather(copied, flow, families)
            for fam in families:
                if fam.name == COPY_LAG:
                    client = f"kmirror-{flow}-{stream}"
                    for _, labels, value in fam.samples:
                        lag.add_metric([client, labels["topic"], labels["partition"], flow], value)
        yield from self._source_families(copied)
        yield lag
        yield from self._worker_families()

    def _source_families(
        self, copied: dict[tuple[str, str, str], _Partition]
    ) -> Iterator[GaugeMetricFamily]:
        labels = ["target", "topic", "partition", "flow"]
        out = {name: GaugeMetricFamily(SOURCE + name, text, labels=labels)
               for name, text in _HELP.items()}  # fmt: skip
        for (flow, topic, partition), p in sorted(copied.items()):
            key = [self._targets.get(flow, ""), topic, partition, flow]
            for name, value in p.sums.items():
                out[name].add_metric(key, value)
            for name, (_, seconds) in p.durations.items():
                out[name].add_metric(key, seconds * 1000.0)
        yield from out.values()

    def _worker_families(self) -> Iterator[GaugeMetricFamily]:
        connectors = GaugeMetricFamily(
            "kafka_connect_worker_connector_count",
            "Flows this process copies (each is what MM2 runs as a MirrorSourceConnector)",
            labels=["flow"],
        )
        tasks = GaugeMetricFamily(
            "kafka_connect_worker_task_count",
            "Stream processes of the flow (what MM2 runs as tasks)",
            labels=["flow"],
        )
        for flow, n in sorted(self._tasks.items()):
            connectors.add_metric([flow], 1)
            tasks.add_metric([flow], n)
        yield connectors
        yield tasks


def _gather(
    copied: dict[tuple[str, str, str], _Partition], flow: str, families: list[FamilySnapshot]
) -> None:
    """Adds one stream's per-partition figures to `copied`."""
    mine: dict[tuple[str, str, str], _Partition] = {}
    for fam in families:
        for name, labels, value in fam.samples:
            summed, stem = _SUMMED.get(name), _DURATIONS.get(name)
            if summed is None and stem is None:
                continue
            p = mine.setdefault((flow, labels["topic"], labels["partition"]), _Partition())
            if summed is not None:
                p.sums[summed] = value
            elif stem is not None:
                stat = labels["stat"]
                p.durations[stem if stat == "last" else f"{stem}_{stat}"] = (0.0, value)
    for key, p in mine.items():
        weight = p.sums.get("record_count", 0.0)
        into = copied.setdefault(key, _Partition())
        for name, value in p.sums.items():
            into.sums[name] = into.sums.get(name, 0.0) + value
        for name, (_, seconds) in p.durations.items():
            held = into.durations.get(name)
            value = seconds
            if held is not None and name.endswith("_min"):
                value = min(held[1], seconds)
            elif held is not None and name.endswith("_max"):
                value = max(held[1], seconds)
            elif held is not None and held[0] >= weight:
                continue  # last and avg: the stream that copied the most of the partition
            into.durations[name] = (max(weight, held[0] if held else 0.0), value)
