"""Drive the batch copier against the real clusters, and read raw batches back."""

from __future__ import annotations

import time
from collections.abc import Mapping

from kafka.protocol.producer.produce import ProduceRequest

from kmirror.config.model import ClusterConfig, MirrorConfig
from kmirror.kafka.wire import Link, selector
from kmirror.kafka.wireconf import connection_args
from kmirror.mirror.batch.copier import BatchCopier, Fallback
from kmirror.mirror.batch.fetcher import Fetcher
from kmirror.mirror.batch.producer import PRODUCE_VERSION
from kmirror.mirror.batch.records import Batch
from kmirror.progress.book import ProgressBook
from tests.kafkatools import Clusters, Rec, consume_all, end_offsets, unique


def mirror_config(
    source: str,
    target: str,
    source_conf: Mapping[str, str] | None = None,
    target_conf: Mapping[str, str] | None = None,
) -> MirrorConfig:
    return MirrorConfig(
        source=ClusterConfig("source", source, common=source_conf or {}),
        target=ClusterConfig("target", target, common=target_conf or {}),
        group_id=unique("batch"),
    )


def copy_all(
    config: MirrorConfig, src_end: str, topic: str, target_topic: str, timeout: float = 60.0
) -> tuple[ProgressBook, dict[tuple[str, int], Fallback]]:
    """Copy every partition of topic from offset 0 until the book has acknowledged the
    source's end offsets (or the partition fell back to the record path)."""
    ends = end_offsets(src_end, topic)
    book = ProgressBook()
    copier = BatchCopier(config, book)
    fallbacks: dict[tuple[str, int], Fallback] = {}
    try:
        copier.assign({(topic, p): (target_topic, 0) for p in ends})
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            copier.step(0.1)
            fallbacks.update(copier.take_fallbacks())
            todo = [p for p, end in ends.items() if book[(topic, p)].acked < end]
            if all((topic, p) in fallbacks for p in todo):
                break
        assert copier.flush(10)
    finally:
        copier.close()
    return book, fallbacks


def raw_batches(bootstrap: str, topic: str, partition: int, timeout: float = 30.0) -> list[Batch]:
    """Every stored batch of a partition, as the broker keeps it (codec, attributes)."""
    end = end_offsets(bootstrap, topic)[partition]
    net = selector()
    link = Link(net, "check", connection_args({"bootstrap.servers": bootstrap}, "check", 1 << 26))
    fetcher = Fetcher(
        link, "check", max_wait_ms=100, max_bytes=1 << 25, partition_max_bytes=1 << 24
    )
    out: list[Batch] = []
    try:
        link.bootstrap(10)
        fetcher.add((topic, partition), 0)
        deadline = time.monotonic() + timeout
        while True:
            assert time.monotonic() < deadline, f"reading {topic}[{partition}] raw batches"
            fetcher.send(lambda key: True)
            net.poll(timeout_ms=100)
            for fetched in fetcher.take():
                out.extend(batch for batch, _ in fetched.batches)
            if (fetcher.position((topic, partition)) or 0) >= end:
                break
    finally:
        link.close()
        net.close()
    return out


def produce_raw(bootstrap: str, topic: str, partition: int, batch: bytes) -> int:
    """Send one v2 batch with Produce v9 (acks=all), as the batch path's producer session does,
    and return the base offset where it landed; AssertionError naming the broker's error
    code when refused."""
    net = selector()
    link = Link(net, "check", connection_args({"bootstrap.servers": bootstrap}, "check", 1 << 26))
    try:
        link.bootstrap(10)
        link.want({topic})
        deadline = time.monotonic() + 30
        while (node := link.leader(topic, partition)) is None:
            assert time.monotonic() < deadline, f"no leader for {topic}[{partition}]"
            link.refresh()
            net.poll(timeout_ms=100)
        data = ProduceRequest.TopicProduceData.PartitionProduceData(index=partition, records=batch)
        request = ProduceRequest(
            transactional_id=None,
            acks=-1,
            timeout_ms=30_000,
            topic_data=[ProduceRequest.TopicProduceData(name=topic, partition_data=[data])],
            version=PRODUCE_VERSION,
        )
        future = link.send(node, request)
        while not future.is_done:
            assert time.monotonic() < deadline, f"no produce response from {topic}[{partition}]"
            net.poll(timeout_ms=100, future=future)
        assert future.succeeded(), future.exception
        (part,) = future.value.responses[0].partition_responses
        assert part.error_code == 0, (part.error_code, part.error_message, part.record_errors)
        return int(part.base_offset)
    finally:
        link.close()
        net.close()


def copied_exactly(
    clusters: Clusters, topic: str, target_topic: str
) -> tuple[ProgressBook, list[Rec], list[Rec]]:
    """Copy `topic` with the batch path alone (nothing falls back to the record path) and
    check the outcome every batch-path test wants: the target holds the source's records byte
    for byte, in order, and the book maps each source offset to where its copy landed.
    Returns the book and the (source, target) records for the test's own checks."""
    config = mirror_config(clusters.source_bootstrap, clusters.target_bootstrap)
    book, fallbacks = copy_all(config, clusters.source_bootstrap, topic, target_topic)
    assert fallbacks == {}
    source = consume_all(clusters.source_bootstrap, topic)
    target = consume_all(clusters.target_bootstrap, target_topic)
    assert [r.content() for r in target] == [r.content() for r in source]
    assert_translates(book, topic, source, target)
    return book, source, target


def assert_translates(book: ProgressBook, topic: str, src: list[Rec], dst: list[Rec]) -> None:
    """The i-th copied record of each partition: the book maps its source offset to the
    target offset where it landed."""
    for s, d in zip(src, dst, strict=True):
        assert book[(topic, s.partition)].translate(s.offset) == d.offset, (s, d)


__all__ = [
    "Clusters",
    "assert_translates",
    "copy_all",
    "mirror_config",
    "produce_raw",
    "raw_batches",
]
