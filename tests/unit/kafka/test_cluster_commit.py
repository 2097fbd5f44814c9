"""Cluster.commit (kmirror failover, group sync) against a consumer that answers as a group
coordinator does while it loads: no broker, the answers are driven."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from kmirror.config.model import ClusterConfig, MirrorConfig
from kmirror.errors import ClusterError
from kmirror.kafka import cluster as cluster_module
from kmirror.kafka.cluster import Cluster

pytestmark = pytest.mark.unit


class Answers:
    """A consumer whose commits raise the given errors in turn, then succeed."""

    def __init__(self, *codes: int) -> None:
        self.codes = list(codes)
        self.commits: list[list[TopicPartition]] = []
        self.closed = False

    def commit(self, offsets: list[TopicPartition], asynchronous: bool) -> Any:
        assert asynchronous is False
        self.commits.append(offsets)
        if self.codes:
            raise KafkaException(KafkaError(self.codes.pop(0)))
        return offsets

    def close(self) -> None:
        self.closed = True


def target(consumer: Answers, monkeypatch: pytest.MonkeyPatch, timeout: float = 5.0) -> Cluster:
    config = MirrorConfig(
        source=ClusterConfig("a", "127.0.0.1:1"),
        target=ClusterConfig("b", "127.0.0.1:2"),
        group_id="g",
    )
    c = Cluster(config, "target", timeout=timeout)
    monkeypatch.setattr(c, "_reader", lambda group="": consumer)
    monkeypatch.setattr(cluster_module, "COMMIT_RETRY_S", 0.01)
    return c


def test_a_loading_or_moving_coordinator_is_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    consumer = Answers(
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
    )
    target(consumer, monkeypatch).commit("app", {("t", 0): 11, ("t", 1): 7}, "kmirror")
    assert len(consumer.commits) == 4 and consumer.closed
    assert [(tp.topic, tp.partition, tp.offset) for tp in consumer.commits[-1]] == [
        ("t", 0, 11),
        ("t", 1, 7),
    ]


def test_a_refusal_is_not_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    consumer = Answers(KafkaError.UNKNOWN_MEMBER_ID)
    with pytest.raises(ClusterError, match=r"commit offsets of group app \(is it active"):
        target(consumer, monkeypatch).commit("app", {("t", 0): 1}, "")
    assert len(consumer.commits) == 1 and consumer.closed


def test_a_coordinator_that_never_settles_fails_at_the_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    consumer = Answers(*[KafkaError.COORDINATOR_LOAD_IN_PROGRESS] * 1000)
    with pytest.raises(ClusterError, match=r"within 0\.2s"):
        target(consumer, monkeypatch, timeout=0.2).commit("app", {("t", 0): 1}, "")
    assert 2 <= len(consumer.commits) < 1000 and consumer.closed
