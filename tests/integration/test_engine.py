"""`kmirror run --engine batch` against the real clusters: the batch path copies, hands
partitions it cannot copy byte for byte to the record path mid-topic, and the target holds the
source's records byte for byte either way."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import MakeTopic
from tests.integration.batchcopy import raw_batches
from tests.integration.test_batch_copier import _transactions, records
from tests.integration.test_mirror import assert_same
from tests.kafkatools import (
    Clusters,
    compacted_source,
    consume_all,
    end_offsets,
    produce,
    wait_until,
)
from tests.mirrorproc import QUICK_REJOIN, MirrorProcess, mirror_args

pytestmark = pytest.mark.integration


def holds(clusters: Clusters, topic: str, count: int) -> Callable[[], bool]:
    def check() -> bool:
        return len(consume_all(clusters.target_bootstrap, topic)) >= count

    return check


def run_batch(tmp_path: Path, clusters: Clusters, group: str, topic: str) -> list[str]:
    return [*mirror_args(tmp_path, clusters, group, topic, QUICK_REJOIN), "--engine", "batch"]


def test_compacted_source_moves_to_the_record_path_mid_topic(
    tmp_path: Path, clusters: Clusters, make_topic: MakeTopic, unique_name: Callable[[str], str]
) -> None:
    topic = compacted_source(clusters.source_bootstrap, make_topic)
    src = consume_all(clusters.source_bootstrap, topic)
    args = run_batch(tmp_path, clusters, unique_name("g"), topic)
    with MirrorProcess(args, tmp_path / "mirror.log") as m:
        wait_until(holds(clusters, topic, len(src)), 90, message="target caught up")
        assert m.stop() == 0, m.log
    assert "the record path continues" in m.log, m.log
    assert_same(src, consume_all(clusters.target_bootstrap, topic))


def test_transactional_source_with_aborts(
    tmp_path: Path, clusters: Clusters, make_topic: MakeTopic, unique_name: Callable[[str], str]
) -> None:
    topic = make_topic(clusters.source_bootstrap, partitions=2)
    _transactions(clusters.source_bootstrap, topic, [(300, True), (200, False), (300, True)])
    produce(clusters.source_bootstrap, topic, records(100))
    src = consume_all(clusters.source_bootstrap, topic)
    assert len(src) == 700
    args = run_batch(tmp_path, clusters, unique_name("g"), topic)
    with MirrorProcess(args, tmp_path / "mirror.log") as m:
        wait_until(holds(clusters, topic, len(src)), 90, message="target caught up")
        assert m.stop() == 0, m.log
    dst = consume_all(clusters.target_bootstrap, topic)
    assert_same(src, dst)
    assert not [r for r in dst if r.value and r.value.startswith(b"aborted")]


def test_lz4_source_arrives_still_lz4(
    tmp_path: Path, clusters: Clusters, make_topic: MakeTopic, unique_name: Callable[[str], str]
) -> None:
    topic = make_topic(clusters.source_bootstrap, partitions=2)
    produce(clusters.source_bootstrap, topic, records(4000), **{"compression.type": "lz4"})
    src = consume_all(clusters.source_bootstrap, topic)
    args = run_batch(tmp_path, clusters, unique_name("g"), topic)
    with MirrorProcess(args, tmp_path / "mirror.log") as m:
        wait_until(holds(clusters, topic, len(src)), 90, message="target caught up")
        assert m.stop() == 0, m.log
    assert_same(src, consume_all(clusters.target_bootstrap, topic))
    for p in (0, 1):
        assert {b.codec for b in raw_batches(clusters.target_bootstrap, topic, p)} == {"lz4"}


def test_kill9_then_restart_copies_everything_byte_for_byte(
    tmp_path: Path, clusters: Clusters, make_topic: MakeTopic, unique_name: Callable[[str], str]
) -> None:
    topic = make_topic(clusters.source_bootstrap, partitions=2)
    produce(clusters.source_bootstrap, topic, records(20000))
    src = consume_all(clusters.source_bootstrap, topic)
    args = run_batch(tmp_path, clusters, unique_name("g"), topic)
    with MirrorProcess(args, tmp_path / "m1.log") as m:
        wait_until(lambda: sum(end_offsets(clusters.target_bootstrap, topic).values()) > 0, 60)
        m.kill()
    want = {r.content() for r in src}

    def complete() -> bool:
        return want <= {r.content() for r in consume_all(clusters.target_bootstrap, topic)}

    with MirrorProcess(args, tmp_path / "m2.log") as m:
        wait_until(complete, 90, interval=1.0, message="target caught up")
        m.wait_ready(60)
        assert m.stop() == 0, m.log
    dst = consume_all(clusters.target_bootstrap, topic)
    # At-least-once: a re-copy after the kill may repeat records, never lose or change one.
    for p in (0, 1):
        mine = [r.content() for r in src if r.partition == p]
        assert _in_order(mine, [r.content() for r in dst if r.partition == p])


def _in_order(src: list[object], dst: list[object]) -> bool:
    """Every source record appears in the target in source order (duplicates between)."""
    it = iter(dst)
    return all(any(d == s for d in it) for s in src)


def tiny_and_large_batches(clusters: Clusters, make_topic: MakeTopic) -> str:
    """A source topic whose partition 0 holds 600 one-record batches (merged on the target) and
    partition 1 3,000 records in large batches (copied as they are, or merged when a slot frees
    only after several)."""
    topic = make_topic(clusters.source_bootstrap, partitions=2)
    tiny = [r | {"partition": 0} for r in records(600)]
    produce(clusters.source_bootstrap, topic, tiny, **{"linger.ms": 0, "batch.num.messages": 1})
    produce(clusters.source_bootstrap, topic, [r | {"partition": 1} for r in records(3000)])
    return topic


def test_auto_merges_a_partition_of_tiny_batches_on_the_batch_path(
    tmp_path: Path, clusters: Clusters, make_topic: MakeTopic, unique_name: Callable[[str], str]
) -> None:
    topic = tiny_and_large_batches(clusters, make_topic)
    src = consume_all(clusters.source_bootstrap, topic)
    source_batches = [len(raw_batches(clusters.source_bootstrap, topic, p)) for p in (0, 1)]
    assert source_batches[0] == 600 and source_batches[1] < 30, source_batches
    args = [*mirror_args(tmp_path, clusters, unique_name("g"), topic), "--engine", "auto"]
    with MirrorProcess(args, tmp_path / "mirror.log") as m:
        wait_until(holds(clusters, topic, len(src)), 90, message="target caught up")
        assert m.stop() == 0, m.log
    assert_same(src, consume_all(clusters.target_bootstrap, topic))
    assert "the record path continues" not in m.log, m.log  # no partition left the batch path
    target_batches = [len(raw_batches(clusters.target_bootstrap, topic, p)) for p in (0, 1)]
    assert target_batches[0] < source_batches[0] // 10  # the one-record batches, merged
    assert target_batches[1] <= source_batches[1]
