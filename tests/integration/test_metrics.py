"""What /metrics tells an operator, read from a real mirror."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.integration.test_mirror import target_has
from tests.kafkatools import Clusters, produce, wait_until
from tests.mirrorproc import MirrorProcess, mirror_args
from tests.promtext import sample

pytestmark = pytest.mark.integration


def gauge(text: str, name: str, topic: str, partition: int) -> float | None:
    """A sample of /metrics by topic and partition (-1: a metric without a partition label)."""
    if partition < 0:
        return sample(text, name, topic=topic)
    return sample(text, name, topic=topic, partition=str(partition))


def test_copy_lag_drops_to_zero_before_any_commit(
    tmp_path: Path, clusters: Clusters, make_topic, make_group_id
) -> None:
    topic = make_topic(clusters.source_bootstrap, partitions=1)
    produce(clusters.source_bootstrap, topic, [{"value": b"r%d" % i} for i in range(100)])
    args = mirror_args(tmp_path, clusters, make_group_id(), topic)
    # No commit during the test: the committed lag stays at 100, the copy lag must not.
    args[args.index("--offset.commit.interval.ms") + 1] = "3600000"
    with MirrorProcess(args, tmp_path / "mirror.log") as mirror:
        wait_until(target_has(clusters, topic, 100), 60, 0.5, "the records copied")

        def caught_up() -> tuple[float, float] | None:
            text = mirror.get("/metrics")[1]
            copy = gauge(text, "kmirror_mirror_copy_lag_records", topic, 0)
            committed = gauge(text, "kmirror_mirror_lag_records", topic, 0)
            if copy == 0 and committed is not None:
                return copy, committed
            return None

        _, committed = wait_until(caught_up, 60, 0.5, "copy lag 0 in /metrics")
        assert committed == 100
        assert re.search(r"# TYPE kmirror_mirror_copy_lag_records gauge", mirror.get("/metrics")[1])
        assert mirror.stop() == 0, mirror.log


@pytest.mark.parametrize("engine", ["record", "batch"])
def test_mm2_names_count_the_records_copied_per_partition(
    tmp_path: Path, clusters: Clusters, make_topic, make_group_id, engine: str
) -> None:
    """--mm2-metric-names: MirrorMaker 2's record_count of each target partition is the number
    of records copied into it, on either copy path."""
    topic = make_topic(clusters.source_bootstrap, partitions=2)
    counts = {0: 30, 1: 70}
    records = [
        {"key": b"k%d" % i, "value": b"v" * 10, "partition": p}
        for p, n in counts.items()
        for i in range(n)
    ]
    produce(clusters.source_bootstrap, topic, records)
    args = mirror_args(tmp_path, clusters, make_group_id(), topic)
    args += ["--engine", engine, "--mm2-metric-names"]
    name = "kafka_connect_mirror_mirrorsourceconnector_record_count"
    with MirrorProcess(args, tmp_path / "mirror.log") as mirror:
        wait_until(target_has(clusters, topic, 100), 60, 0.5, "the records copied")

        def counted() -> list[float | None] | None:
            text = mirror.get("/metrics")[1]
            got = [gauge(text, name, topic, p) for p in counts]
            return got if got == [float(n) for n in counts.values()] else None

        wait_until(counted, 30, 0.5, f"{name} per partition in /metrics")
        text = mirror.get("/metrics")[1]
        if engine == "record":  # key plus value bytes (the batch path counts whole batches)
            byte_count = "kafka_connect_mirror_mirrorsourceconnector_byte_count"
            assert gauge(text, byte_count, topic, 0) == sum(
                len(r["key"]) + len(r["value"]) for r in records if r["partition"] == 0
            )
        for timed in ("replication_latency_ms_max", "record_age_ms_max"):
            value = gauge(text, f"kafka_connect_mirror_mirrorsourceconnector_{timed}", topic, 1)
            assert value is not None and 0 <= value < 60_000, (timed, value)
        assert mirror.stop() == 0, mirror.log
