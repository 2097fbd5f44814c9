"""Reading a topic to its end (kmirror.kafka.topicreader), the way the progress topic is read:
from where the last read stopped, to what a read_committed reader can read now."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer

from kmirror.config.model import ClusterConfig, MirrorConfig
from kmirror.kafka.topicreader import TopicReader
from tests.conftest import MakeTopic
from tests.kafkatools import LOG, Clusters, unique

pytestmark = pytest.mark.integration


def _config(clusters: Clusters) -> MirrorConfig:
    return MirrorConfig(
        source=ClusterConfig("source", clusters.source_bootstrap),
        target=ClusterConfig("target", clusters.target_bootstrap),
        group_id=unique("g"),
    )


def _produce(bootstrap: str, topic: str, keys: list[bytes], **conf: str) -> Producer:
    p = Producer({"bootstrap.servers": bootstrap, "logger": LOG, **conf})
    if "transactional.id" in conf:
        p.init_transactions(30)
        p.begin_transaction()
    for key in keys:
        p.produce(topic, b"v-" + key, key)
    p.flush(30)
    return p


def test_a_missing_topic_reads_as_none(clusters: Clusters) -> None:
    reader = TopicReader(_config(clusters), "target", unique("missing"), "g")
    try:
        assert reader.read(10) is None
    finally:
        reader.close()


def test_reads_go_on_from_where_the_last_stopped(clusters: Clusters, make_topic: MakeTopic) -> None:
    topic = make_topic(clusters.target_bootstrap, partitions=2)
    _produce(clusters.target_bootstrap, topic, [b"a", b"b", b"c"])
    reader = TopicReader(_config(clusters), "target", topic, "g")
    try:
        first = reader.read(30)
        assert first is not None and sorted(first) == [
            (b"a", b"v-a"),
            (b"b", b"v-b"),
            (b"c", b"v-c"),
        ]
        assert reader.read(30) == []
        _produce(clusters.target_bootstrap, topic, [b"d"])
        assert reader.read(30) == [(b"d", b"v-d")]
    finally:
        reader.close()


def test_an_open_transaction_ends_a_read_and_the_next_one_goes_on_after_it(
    clusters: Clusters, make_topic: MakeTopic
) -> None:
    bootstrap = clusters.target_bootstrap
    topic = make_topic(bootstrap)
    _produce(bootstrap, topic, [b"before"])
    open_txn = _produce(bootstrap, topic, [b"inside"], **{"transactional.id": unique("tx")})
    _produce(bootstrap, topic, [b"after"])  # committed, but behind the open transaction
    reader = TopicReader(_config(clusters), "target", topic, "g")
    try:
        assert reader.read(30) == [(b"before", b"v-before")]  # the last stable offset
        open_txn.commit_transaction(30)
        # commit_transaction returns once the coordinator has decided; the commit marker that
        # moves the last stable offset reaches the partition a moment later, and until then
        # a read finds nothing new (by design: the doc of TopicReader).
        got: list[tuple[bytes, bytes | None]] = []
        deadline = time.monotonic() + 30
        while len(got) < 2 and time.monotonic() < deadline:
            got += reader.read(30) or []
            time.sleep(0.1)
        assert got == [(b"inside", b"v-inside"), (b"after", b"v-after")]
        assert reader.read(30) == []  # past the commit marker, no record there
    finally:
        reader.close()
