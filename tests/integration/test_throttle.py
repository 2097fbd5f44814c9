"""Throttles on the real clusters: a backlog copied under a records/s or bytes/s limit goes no
faster than the limit on average, on both engines, and arrives whole, byte for byte."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition

from tests.integration.test_mirror import assert_same
from tests.kafkatools import Clusters, consume_all, produce, unique
from tests.mirrorproc import MirrorProcess, mirror_args

pytestmark = pytest.mark.integration

RECORDS = 2400  # the backlog, over 2 partitions
VALUE = 1000  # bytes of value per record (keys are 6 bytes or fewer)
LIMIT = 400.0  # records/s, either directly or as 400 kB/s of 1 kB records
SAMPLE_S = 0.2
# What a throttled copy may take beyond LIMIT * seconds in any window: a bucket holds one
# second of its rate, and a step overdraws it by one consume batch (the record path: at least
# 50 records) or one fetch per partition (the batch path: max.partition.fetch.bytes but at
# least one source batch; both about 50 records here).
ALLOWANCE = LIMIT * 1.0 + 100


class Watch:
    """The target topic's copied count, read quickly and often (one consumer for all reads)."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self._consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("watch")})
        self._topic = topic
        self.samples: list[tuple[float, float, int]] = []  # before, after the read; count

    def sample(self) -> int:
        before = time.monotonic()
        try:
            marks = [
                self._consumer.get_watermark_offsets(TopicPartition(self._topic, p), 5, False)
                for p in (0, 1)
            ]
            count = sum(hw for _, hw in marks)
        except KafkaException:  # the target topic is not there yet
            count = 0
        self.samples.append((before, time.monotonic(), count))
        return count

    def close(self) -> None:
        self._consumer.close()


@pytest.mark.parametrize(
    ("engine", "spec"),
    [("record", "backlog.records=400"), ("batch", "backlog.bytes=400000")],
    ids=["record-records", "batch-bytes"],
)
def test_a_backlog_is_copied_no_faster_than_the_throttle(
    tmp_path: Path,
    clusters: Clusters,
    make_topic,
    make_group_id,
    engine: str,
    spec: str,
) -> None:
    """400 records/s (record path) or 400 kB/s of 1 kB records (batch path): either way about
    400 records a second, so 2,400 records take about 5 s or more (unthrottled: under 1 s)."""
    src, dst = clusters.source_bootstrap, clusters.target_bootstrap
    topic = make_topic(src, partitions=2)
    rows = [
        {"key": b"k%d" % i, "value": bytes([i % 251]) * VALUE, "partition": i % 2}
        for i in range(RECORDS)
    ]
    # Source batches of about 50 records: a fetch brings at least one whole batch.
    produce(src, topic, rows, **{"batch.size": 50 * (VALUE + 100)})
    fetch = {"max.partition.fetch.bytes": 50 * (VALUE + 100)}
    args = mirror_args(
        tmp_path,
        clusters,
        make_group_id(),
        topic,
        fetch,
        None,
        "--engine",
        engine,
        "--throttle",
        spec,
    )
    watch = Watch(dst, topic)
    try:
        with MirrorProcess(args, tmp_path / "mirror.log") as mirror:
            deadline = time.monotonic() + 60
            while watch.sample() < RECORDS and time.monotonic() < deadline:
                time.sleep(SAMPLE_S)
            assert mirror.stop() == 0, mirror.log
    finally:
        watch.close()
    samples = watch.samples
    assert samples[-1][2] >= RECORDS, f"only {samples[-1][2]} of {RECORDS} copied in 60 s"
    # The first records seen: no more than a bucket's burst and a step's overdraw (an
    # unthrottled copy has everything there at once), then no more than the limit allows.
    first = next(i for i, (_, _, n) in enumerate(samples) if n > 0)
    assert first > 0  # (the mirror starts after the first read)
    t0, n0 = samples[first - 1][0], samples[first][2]
    assert n0 <= ALLOWANCE + LIMIT * (samples[first][1] - t0), f"{n0} records at once ({spec})"
    t1, n1 = samples[-1][1], samples[-1][2]
    assert n1 <= LIMIT * (t1 - t0) + ALLOWANCE, f"{n1} records in {t1 - t0:.1f} s under {spec}"
    # Not held back far below it either (a loaded 2-core machine copies 400/s easily).
    rate = n1 / (t1 - t0)
    assert rate >= LIMIT * 0.4, f"only {rate:.0f} records/s under {spec}"
    assert_same(consume_all(src, topic), consume_all(dst, topic))
