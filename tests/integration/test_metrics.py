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
