"""The two local clusters work and are distinct: the ground every mirror test stands on."""

from __future__ import annotations

import pytest

from tests.conftest import KafkaLocal, MakeTopic
from tests.kafkatools import (
    TIMESTAMP_CREATE_TIME,
    Clusters,
    Rec,
    cluster_id,
    consume_all,
    end_offsets,
    list_topics,
    produce,
)

pytestmark = pytest.mark.integration

CREATE_TIME_MS = 1_600_000_000_123  # 2020-09-13, far from "now": proves it is not broker time
# Records that old are past the default retention (7 days): the broker's next retention check
# (also right after a restart) would delete them before they are read back.
KEEP = {"retention.ms": "-1"}


def test_record_reads_back_byte_for_byte(clusters: Clusters, make_topic: MakeTopic) -> None:
    src = clusters.source_bootstrap
    topic = make_topic(src, partitions=3, config=KEEP)
    key = bytes(range(256))
    value = b"\x00\xff" + bytes(range(255, -1, -1)) * 4 + b"\x00"
    headers: list[tuple[str, bytes | None]] = [
        ("trace", b"\x00\x01\xfe\xff"),
        ("dup", b"first"),
        ("empty", b""),
        ("dup", b"second"),
        ("null", None),
        ("dup", b"\x80third"),
    ]
    full = {"key": key, "value": value, "headers": headers, "partition": 2}
    tombstone = {"key": None, "value": None, "partition": 0}
    delivered = produce(
        src,
        topic,
        [{**full, "timestamp": CREATE_TIME_MS}, {**tombstone, "timestamp": CREATE_TIME_MS + 1}],
    )
    assert delivered == [(2, 0), (0, 0)]

    recs = consume_all(src, topic)

    assert recs == [
        Rec(topic, 0, 0, None, None, [], CREATE_TIME_MS + 1, TIMESTAMP_CREATE_TIME),
        Rec(topic, 2, 0, key, value, headers, CREATE_TIME_MS, TIMESTAMP_CREATE_TIME),
    ]
    # Exact types too: bytes stay bytes, a null header value stays None (not b"").
    assert type(recs[1].key) is bytes
    assert recs[1].headers[4] == ("null", None)
    assert end_offsets(src, topic) == {0: 1, 1: 0, 2: 1}


def test_target_is_a_different_cluster(clusters: Clusters, make_topic: MakeTopic) -> None:
    assert clusters.source_bootstrap != clusters.target_bootstrap
    source_id = cluster_id(clusters.source_bootstrap)
    target_id = cluster_id(clusters.target_bootstrap)
    assert source_id
    assert target_id
    assert source_id != target_id

    topic = make_topic(clusters.source_bootstrap)
    assert topic in list_topics(clusters.source_bootstrap)
    assert topic not in list_topics(clusters.target_bootstrap)


@pytest.mark.slow
def test_target_stop_and_start_keeps_data(
    clusters: Clusters, make_topic: MakeTopic, kafka_local: KafkaLocal
) -> None:
    tgt = clusters.target_bootstrap
    topic = make_topic(tgt, config=KEEP)
    produce(tgt, topic, [{"key": b"k", "value": b"v", "timestamp": CREATE_TIME_MS}])
    target_id = cluster_id(tgt)

    kafka_local.stop("target")
    assert not kafka_local.is_healthy("target")
    kafka_local.start("target")

    assert cluster_id(tgt) == target_id
    assert [r.content() for r in consume_all(tgt, topic)] == [
        (0, b"k", b"v", (), CREATE_TIME_MS, TIMESTAMP_CREATE_TIME)
    ]
