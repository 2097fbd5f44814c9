"""MirrorMaker 2's metric names (--mm2-metric-names), broker-free: kmirror's per-partition
figures as the copiers record them, the streams' snapshots merged by the supervisor, and the MM2
families Strimzi's dashboard reads, with Strimzi's labels (target, topic, partition) and the
values kmirror measured. Off by default: nothing of it is exported."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from kmirror.app.supervisor import Supervisor
from kmirror.config.model import ClusterConfig, MirrorConfig
from kmirror.metrics.aggregate import StreamsCollector, snapshot
from kmirror.metrics.mm2 import Mm2Collector
from kmirror.metrics.partitions import SAMPLE_S, PartitionFigures
from kmirror.metrics.worker import WorkerMetrics
from tests.promtext import sample

pytestmark = pytest.mark.unit

FLOW = "src->tgt"
SOURCE = "kafka_connect_mirror_mirrorsourceconnector_"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _worker(clock: Clock) -> WorkerMetrics:
    return WorkerMetrics(partitions=PartitionFigures(clock))


def _scrape(streams: StreamsCollector, tasks: int = 1) -> str:
    registry = CollectorRegistry()
    registry.register(Mm2Collector(streams, {FLOW: "tgt"}, {FLOW: tasks}))
    return generate_latest(registry).decode()


def test_figures_count_rate_and_latency_per_target_partition() -> None:
    clock = Clock()
    figures = PartitionFigures(clock)
    figures.acknowledged("src.t", 0, 1, 100, 0.010)
    clock.now += 10
    figures.acknowledged("src.t", 0, 1, 300, 0.030)
    figures.acknowledged("src.t", 1, 5, 50, None)  # no timestamp: counted, no latency
    clock.now += 20
    registry = CollectorRegistry()
    registry.register(figures)
    text = generate_latest(registry).decode()
    p0 = {"topic": "src.t", "partition": "0"}
    assert sample(text, "kmirror_mirror_partition_records_total", **p0) == 2
    assert sample(text, "kmirror_mirror_partition_bytes_total", **p0) == 400
    # Two records in the 30 s since the window began: Kafka's Rate over the elapsed window.
    assert sample(text, "kmirror_mirror_partition_records_per_second", **p0) == 2 / 30
    assert sample(text, "kmirror_mirror_partition_bytes_per_second", **p0) == 400 / 30
    latency = "kmirror_mirror_partition_latency_seconds"
    assert sample(text, latency, stat="last", **p0) == 0.030
    assert sample(text, latency, stat="min", **p0) == 0.010
    assert sample(text, latency, stat="max", **p0) == 0.030
    assert sample(text, latency, stat="avg", **p0) == 0.020
    assert sample(text, "kmirror_mirror_partition_records_total", partition="1") == 5
    assert sample(text, latency, partition="1") is None


def test_record_age_when_read_per_target_partition() -> None:
    clock = Clock()
    worker = _worker(clock)
    assert worker.partitions is not None
    worker.partitions.read("src.t", 0, 2.0)  # read, not yet acknowledged
    worker.partitions.read("src.t", 0, 4.0)
    streams = StreamsCollector()
    streams.update(0, snapshot(worker.registry), FLOW)
    text = _scrape(streams)
    labels = {"target": "tgt", "topic": "src.t", "partition": "0", "flow": FLOW}
    assert sample(text, SOURCE + "record_age_ms", **labels) == 4000
    assert sample(text, SOURCE + "record_age_ms_min", **labels) == 2000
    assert sample(text, SOURCE + "record_age_ms_max", **labels) == 4000
    assert sample(text, SOURCE + "record_age_ms_avg", **labels) == 3000
    assert sample(text, SOURCE + "record_count", **labels) == 0
    assert sample(text, SOURCE + "replication_latency_ms", **labels) is None


def test_the_window_forgets_old_samples_but_not_the_totals_or_the_last_latency() -> None:
    clock = Clock()
    figures = PartitionFigures(clock)
    figures.acknowledged("t", 0, 3, 30, 5.0)
    clock.now += 2 * SAMPLE_S + 1  # older than both samples of the window
    registry = CollectorRegistry()
    registry.register(figures)
    text = generate_latest(registry).decode()
    assert sample(text, "kmirror_mirror_partition_records_total") == 3
    assert sample(text, "kmirror_mirror_partition_records_per_second") == 0
    assert sample(text, "kmirror_mirror_partition_latency_seconds", stat="last") == 5.0
    assert sample(text, "kmirror_mirror_partition_latency_seconds", stat="max") is None


def test_mm2_families_from_the_streams_snapshots() -> None:
    clock = Clock()
    worker = _worker(clock)
    assert worker.partitions is not None
    worker.partitions.acknowledged("src.t", 3, 40, 4000, 0.250)
    worker.partitions.acknowledged("src.t", 3, 2, 200, 0.050)
    worker.stats.update(
        '{"topics": {"t": {"partitions": {"3": {"fetch_state": "active", "hi_offset": 50, '
        '"app_offset": 42, "committed_offset": 40}}}}}'
    )
    streams = StreamsCollector()
    streams.update(0, snapshot(worker.registry), FLOW)
    text = _scrape(streams, tasks=2)
    labels = {"target": "tgt", "topic": "src.t", "partition": "3", "flow": FLOW}
    assert sample(text, SOURCE + "record_count", **labels) == 42
    assert sample(text, SOURCE + "byte_count", **labels) == 4200
    assert sample(text, SOURCE + "record_rate", **labels) == 42 / SAMPLE_S
    assert sample(text, SOURCE + "byte_rate", **labels) == 4200 / SAMPLE_S
    assert sample(text, SOURCE + "replication_latency_ms", **labels) == 50.0
    assert sample(text, SOURCE + "replication_latency_ms_min", **labels) == 50.0
    assert sample(text, SOURCE + "replication_latency_ms_max", **labels) == 250.0
    assert sample(text, SOURCE + "replication_latency_ms_avg", **labels) == 150.0
    # The consumer's lag of the source partition: the copy position's, as Java's records-lag.
    lag = "kafka_consumer_fetch_manager_records_lag"
    assert sample(text, lag, topic="t", partition="3", flow=FLOW) == 8
    assert sample(text, "kafka_connect_worker_connector_count", flow=FLOW) == 1
    assert sample(text, "kafka_connect_worker_task_count", flow=FLOW) == 2
    # Read but never timed when read: no record age (nothing is made up), and kmirror's
    # checkpoints are not timed: no checkpoint latency.
    assert sample(text, SOURCE + "record_age_ms", **labels) is None
    assert "mirrorcheckpointconnector" not in text


def test_a_partition_two_streams_report_adds_up_and_keeps_the_main_copiers_latency() -> None:
    clock = Clock()
    before, after = _worker(clock), _worker(clock)
    assert before.partitions is not None and after.partitions is not None
    before.partitions.acknowledged("t", 0, 10, 100, 9.0)  # copied it before a rebalance
    after.partitions.acknowledged("t", 0, 90, 900, 0.1)
    streams = StreamsCollector()
    streams.update(0, snapshot(before.registry), FLOW)
    streams.update(1, snapshot(after.registry), FLOW)
    text = _scrape(streams)
    assert sample(text, SOURCE + "record_count", topic="t", partition="0") == 100
    assert sample(text, SOURCE + "replication_latency_ms", topic="t", partition="0") == 100.0
    assert sample(text, SOURCE + "replication_latency_ms_max", topic="t", partition="0") == 9000


def _config(**kw: object) -> MirrorConfig:
    return MirrorConfig(
        source=ClusterConfig("src", "127.0.0.1:1"),
        target=ClusterConfig("tgt", "127.0.0.1:2"),
        group_id="g",
        **kw,  # type: ignore[arg-type]
    )


def test_off_by_default_and_on_with_the_setting() -> None:
    assert WorkerMetrics().partitions is None
    off = CollectorRegistry()
    Supervisor(_config(), registry=off)
    assert "kafka_connect" not in generate_latest(off).decode()
    on = CollectorRegistry()
    Supervisor(_config(mm2_metric_names=True, num_streams=3), registry=on)
    text = generate_latest(on).decode()
    assert sample(text, "kafka_connect_worker_task_count", flow="src->tgt") == 3


def test_two_flows_into_one_target_keep_their_own_series() -> None:
    """MM2's multi-cluster mode (`A->C`, `B->C`): each flow's partitions carry its target alias
    and its flow, also when both write a topic of the same name."""
    clock = Clock()
    a, b = _worker(clock), _worker(clock)
    assert a.partitions is not None and b.partitions is not None
    a.partitions.acknowledged("t", 0, 5, 50, None)
    b.partitions.acknowledged("t", 0, 7, 70, None)
    streams = StreamsCollector()
    streams.update(0, snapshot(a.registry), "A->C")
    streams.update(0, snapshot(b.registry), "B->C")
    registry = CollectorRegistry()
    registry.register(Mm2Collector(streams, {"A->C": "C", "B->C": "C"}, {"A->C": 1, "B->C": 2}))
    text = generate_latest(registry).decode()
    assert sample(text, SOURCE + "record_count", target="C", topic="t", flow="A->C") == 5
    assert sample(text, SOURCE + "record_count", target="C", topic="t", flow="B->C") == 7
    assert sample(text, "kafka_connect_worker_connector_count", flow="B->C") == 1
    assert sample(text, "kafka_connect_worker_task_count", flow="B->C") == 2
