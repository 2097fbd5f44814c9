"""Exactly-once on the batch path (`--engine batch --exactly-once`) against the real clusters:
source batches arrive byte for byte inside the target's transactions, a read_committed
consumer sees each source record once, aborted source transactions are not copied, a
compacted stretch moves to the record path's transactions at the exact offset, and a
partition's transactional id fences its previous owner whichever path either of them runs.

kill -9 and the SIGSTOP zombie on this path: test_exactly_once.py's scenarios, parametrized
by engine there."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import KafkaException, Producer

from kmirror.config.model import MirrorConfig
from kmirror.kafka import clients
from kmirror.mirror.batch.copier import BatchCopier
from kmirror.mirror.batch.fencing import Fenced
from kmirror.mirror.batch.guarantee import BatchExactlyOnce
from kmirror.mirror.batch.records import HEADER_SIZE, TRANSACTIONAL_MASK, Batch
from kmirror.mirror.record_transactions import FENCED
from kmirror.progress.book import ProgressBook
from tests.conftest import MakeTopic
from tests.integration.batchcopy import mirror_config, raw_batches
from tests.integration.test_batch_copier import _transactions, records
from tests.integration.test_engine import tiny_and_large_batches
from tests.integration.test_exactly_once import assert_exactly_once, committed_all, eos_args
from tests.kafkatools import (
    Clusters,
    compacted_source,
    consume_all,
    end_offsets,
    produce,
    wait_until,
)
from tests.mirrorproc import MirrorProcess

pytestmark = pytest.mark.integration


def run_batch_eos(tmp_path: Path, clusters: Clusters, group: str, topic: str) -> MirrorProcess:
    args = [*eos_args(tmp_path, clusters, group, topic), "--engine", "batch"]
    return MirrorProcess(args, tmp_path / "mirror.log")


def mirror_until_committed(tmp_path: Path, clusters: Clusters, group: str, topic: str) -> str:
    """Mirror the topic to its end with the batch path under exactly-once; the mirror's log."""
    with run_batch_eos(tmp_path, clusters, group, topic) as m:
        wait_until(lambda: committed_all(clusters, group, topic), 90, 0.3, "all committed")
        assert m.stop() == 0, m.log
    return m.log


def test_batches_arrive_byte_for_byte_inside_transactions(
    tmp_path: Path, clusters: Clusters, make_topic: MakeTopic, unique_name: Callable[[str], str]
) -> None:
    topic = make_topic(clusters.source_bootstrap, partitions=2)
    produce(clusters.source_bootstrap, topic, records(3000), **{"compression.type": "lz4"})
    log = mirror_until_committed(tmp_path, clusters, unique_name("g"), topic)
    assert "the record path continues" not in log, log
    assert_exactly_once(clusters, topic)
    for p in (0, 1):
        source = raw_batches(clusters.source_bootstrap, topic, p)
        target = [b for b in raw_batches(clusters.target_bootstrap, topic, p) if not b.is_control]
        assert_whole_batches(source, target)
        assert all(b.attributes & TRANSACTIONAL_MASK for b in target)
        assert {b.codec for b in target} == {"lz4"}


def assert_whole_batches(source: list[Batch], target: list[Batch]) -> None:
    """Each target batch is a run of whole consecutive source batches: one source batch
    forwarded as it came (every byte after the header: records, compression, timestamps), or
    several merged (their records, already compared by assert_exactly_once). Which source
    batches are merged depends on how many waited for a produce slot together - a commit
    point holds staged batches back, so a run of several is normal."""
    remaining = list(source)
    for stored in target:
        run: list[Batch] = []
        records = 0
        while records < stored.record_count:
            assert remaining, f"target batch at {stored.base_offset} has records no source has"
            run.append(remaining.pop(0))
            records += run[-1].record_count
        assert records == stored.record_count, (
            f"target batch at {stored.base_offset} splits a source batch"
        )
        if len(run) == 1:
            assert bytes(stored.data[HEADER_SIZE:]) == bytes(run[0].data[HEADER_SIZE:])
    assert not remaining, f"{len(remaining)} source batch(es) never reached the target"


def test_aborted_source_transactions_are_not_copied(
    tmp_path: Path, clusters: Clusters, make_topic: MakeTopic, unique_name: Callable[[str], str]
) -> None:
    topic = make_topic(clusters.source_bootstrap, partitions=2)
    _transactions(clusters.source_bootstrap, topic, [(300, True), (200, False), (300, True)])
    produce(clusters.source_bootstrap, topic, records(100))
    mirror_until_committed(tmp_path, clusters, unique_name("g"), topic)
    assert_exactly_once(clusters, topic)
    # Not even inside an aborted transaction of ours: they were never sent.
    everything = consume_all(clusters.target_bootstrap, topic, isolation_level="read_uncommitted")
    assert len(everything) == 700
    assert not [r for r in everything if r.value and r.value.startswith(b"aborted")]


def test_compacted_stretch_moves_to_the_record_path_transactions_at_the_exact_offset(
    tmp_path: Path, clusters: Clusters, make_topic: MakeTopic, unique_name: Callable[[str], str]
) -> None:
    topic = compacted_source(clusters.source_bootstrap, make_topic)
    src = consume_all(clusters.source_bootstrap, topic)
    log = mirror_until_committed(tmp_path, clusters, unique_name("g"), topic)
    assert "record path's transactional producer continues" in log, log
    dst = consume_all(clusters.target_bootstrap, topic, isolation_level="read_committed")
    # The target compacts too (the topic's configs are copied), so it may hold fewer: what it
    # holds is the source's records in source order, none twice, the latest of each key there.
    assert len({r.content() for r in dst}) == len(dst)
    order = {r.content(): i for i, r in enumerate(src)}
    assert [order[r.content()] for r in dst] == sorted(order[r.content()] for r in dst)
    latest = {(r.partition, r.key): r.content() for r in src}
    assert {r.content() for r in dst} >= set(latest.values())


# -- fencing, driven directly: two owners of one partition -------------------------------------


def _eos_copier(config: MirrorConfig, book: ProgressBook) -> tuple[BatchCopier, BatchExactlyOnce]:
    """The batch copier under exactly-once, and its guarantee (open, commit)."""
    txn = BatchExactlyOnce(config, Fenced(book))
    return BatchCopier(config, book, guarantee=txn), txn


def _copy_to_end(source: str, copier: BatchCopier, book: ProgressBook, key: tuple[str, int]) -> int:
    end = end_offsets(source, key[0])[key[1]]
    deadline = time.monotonic() + 60
    while book[key].acked < end:
        assert time.monotonic() < deadline, f"copying {key} stalled at {book[key].acked}"
        copier.step(0.1)
    assert copier.flush(10)
    return end


def _record_path_producer(config: MirrorConfig, key: tuple[str, int]) -> Producer:
    """What the record path's exactly-once producer (RecordExactlyOnce) runs for the partition."""
    producer = clients.transactional_producer(config, key)
    producer.init_transactions(30)
    return producer


@pytest.mark.parametrize("fencer", ["batch", "record"])
def test_the_next_owner_fences_the_first_and_nothing_of_it_becomes_visible(
    clusters: Clusters, make_topic: MakeTopic, fencer: str
) -> None:
    src = make_topic(clusters.source_bootstrap, partitions=2)
    dst = make_topic(clusters.target_bootstrap, name=src, partitions=2)
    produce(clusters.source_bootstrap, src, records(1000))
    config = mirror_config(clusters.source_bootstrap, clusters.target_bootstrap)
    make_topic(clusters.target_bootstrap, name=config.progress_topic, partitions=1)
    key = (src, 0)
    a_book = ProgressBook()
    a, a_txn = _eos_copier(config, a_book)
    b_book = ProgressBook()
    b: BatchCopier | None = None
    try:
        a_txn.open([key])
        a.assign({key: (dst, 0)})
        end = _copy_to_end(
            clusters.source_bootstrap, a, a_book, key
        )  # all of partition 0, in A's open transaction
        if fencer == "batch":
            b, b_txn = _eos_copier(config, b_book)
            b_txn.open([key])
        else:
            _record_path_producer(config, key)
        # A is a zombie now: its commit fails as fenced, it drops the partition.
        assert a_txn.commit(a_book, [key], 30) == {}
        assert a_book.get(*key) is None
        assert consume_all(clusters.target_bootstrap, dst) == []
        if b is not None:
            # The new owner copies from the (absent) committed position: every record once.
            b.assign({key: (dst, 0)})
            _copy_to_end(clusters.source_bootstrap, b, b_book, key)
            assert b_txn.commit(b_book, [key], 30) == {key: end}
            source = [r.content() for r in consume_all(clusters.source_bootstrap, src)]
            target = [r.content() for r in consume_all(clusters.target_bootstrap, dst)]
            assert target == [c for c in source if c[0] == 0]
    finally:
        a.close()
        if b is not None:
            b.close()


def test_a_batch_path_owner_fences_a_record_path_producer(
    clusters: Clusters, make_topic: MakeTopic
) -> None:
    src = make_topic(clusters.source_bootstrap, partitions=1)
    dst = make_topic(clusters.target_bootstrap, name=src, partitions=1)
    config = mirror_config(clusters.source_bootstrap, clusters.target_bootstrap)
    key = (src, 0)
    zombie = _record_path_producer(config, key)
    zombie.begin_transaction()
    zombie.produce(dst, b"zombie", partition=0)
    zombie.flush(30)
    owner, owner_txn = _eos_copier(config, ProgressBook())
    try:
        owner_txn.open([key])  # fences the record-path producer and aborts its transaction
        with pytest.raises(KafkaException) as info:
            zombie.commit_transaction(30)
        assert info.value.args[0].code() in FENCED
        assert consume_all(clusters.target_bootstrap, dst) == []
    finally:
        owner.close()


def test_tiny_batches_are_merged_inside_the_transactions(
    tmp_path: Path, clusters: Clusters, make_topic: MakeTopic, unique_name: Callable[[str], str]
) -> None:
    topic = tiny_and_large_batches(clusters, make_topic)
    group = unique_name("g")
    args = [*eos_args(tmp_path, clusters, group, topic), "--engine", "auto"]
    with MirrorProcess(args, tmp_path / "mirror.log") as m:
        wait_until(lambda: committed_all(clusters, group, topic), 90, 0.3, "all committed")
        assert m.stop() == 0, m.log
    assert "transactional producer continues" not in m.log, m.log  # stayed on the batch path
    assert_exactly_once(clusters, topic)
    stored = [b for b in raw_batches(clusters.target_bootstrap, topic, 0) if not b.is_control]
    assert len(stored) < 60 and all(b.is_transactional for b in stored)  # 600 merged
