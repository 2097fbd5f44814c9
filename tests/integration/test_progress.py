"""The progress book persisted on the target: exact source->target runs that survive restarts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource

from tests.integration.test_mirror import committed, sample_records, target_has
from tests.kafkatools import (
    Clusters,
    consume_all,
    create_topic,
    delete_topic,
    end_offsets,
    produce,
    wait_until,
)
from tests.mirrorproc import MirrorProcess, mirror_args

pytestmark = pytest.mark.integration


def progress(clusters: Clusters, topic: str, source_topic: str) -> dict[int, dict[str, object]]:
    """The latest progress record per source partition (what compaction keeps)."""
    latest: dict[int, dict[str, object]] = {}
    for r in consume_all(clusters.target_bootstrap, topic):
        key = json.loads(r.key or b"{}")
        if key["topic"] == source_topic:
            latest[int(key["partition"])] = json.loads(r.value or b"{}")
    return latest


def test_runs_name_exact_target_offsets_and_survive_a_restart(
    tmp_path: Path, clusters: Clusters, make_topic, unique_name
) -> None:
    topic = make_topic(clusters.source_bootstrap, partitions=2)
    # The target topic already holds 7 records in partition 0: the copies land behind them.
    make_topic(clusters.target_bootstrap, topic, partitions=2)
    produce(clusters.target_bootstrap, topic, [{"partition": 0, "value": b"x"}] * 7)
    group = unique_name("g")
    store = f"kmirror-progress.{group}.internal"
    produce(clusters.source_bootstrap, topic, sample_records(300, 2))
    args = mirror_args(tmp_path, clusters, group, topic)
    try:
        with MirrorProcess(args, tmp_path / "m1.log") as m:
            wait_until(target_has(clusters, topic, 307), 60)
            assert m.stop() == 0, m.log
        book = progress(clusters, store, topic)
        assert book[0] == {"format": 1, "acked": 150, "runs": [[0, 7, 150]]}
        assert book[1] == {"format": 1, "acked": 150, "runs": [[0, 0, 150]]}
        assert committed(clusters, group, topic) == {0: 150, 1: 150}

        # Another writer between the two runs of the mirror: the next copies land after it.
        produce(clusters.target_bootstrap, topic, [{"partition": 1, "value": b"y"}] * 5)
        produce(clusters.source_bootstrap, topic, sample_records(100, 2))
        with MirrorProcess(args, tmp_path / "m2.log") as m:
            wait_until(target_has(clusters, topic, 412), 60)
            assert m.stop() == 0, m.log
        book = progress(clusters, store, topic)
        # Partition 0 continues its run (loaded at assignment, extended); partition 1 keeps
        # its first run and starts a second one after the foreign records.
        assert book[0]["runs"] == [[0, 7, 200]]
        assert book[1]["runs"] == [[0, 0, 150], [150, 155, 50]]
        assert end_offsets(clusters.target_bootstrap, topic) == {0: 207, 1: 205}

        admin = AdminClient({"bootstrap.servers": clusters.target_bootstrap})
        res = ConfigResource(ConfigResource.Type.TOPIC, store)
        configs = admin.describe_configs([res])[res].result(timeout=30)
        assert configs["cleanup.policy"].value == "compact"
    finally:
        delete_topic(clusters.target_bootstrap, store, wait=False)


def test_progress_topic_name_can_be_set(
    tmp_path: Path, clusters: Clusters, make_topic, unique_name
) -> None:
    topic = make_topic(clusters.source_bootstrap, partitions=1)
    store = unique_name("my-progress")
    produce(clusters.source_bootstrap, topic, sample_records(10, 1))
    args = [*mirror_args(tmp_path, clusters, unique_name("g"), topic), "--progress-topic", store]
    try:
        with MirrorProcess(args, tmp_path / "m.log") as m:
            wait_until(target_has(clusters, topic, 10), 60)
            assert m.stop() == 0, m.log
        assert progress(clusters, store, topic)[0]["acked"] == 10
    finally:
        delete_topic(clusters.target_bootstrap, store, wait=False)


@pytest.mark.parametrize("engine", ["record", "batch"])
def test_refused_sends_are_retried_from_the_last_commit_and_nothing_is_missing(
    engine: str, tmp_path: Path, clusters: Clusters, make_topic, unique_name
) -> None:
    """abort.on.send.failure=false: while the target topic is gone (deleted by an operator),
    sends fail and the stream rewinds and re-sends from its last commit; /healthz stays
    healthy. Once the topic is back, every record since that commit is there, the commit covers
    the source and the progress record names the new target offsets. On either path (the batch
    path forgets its unacknowledged batches and starts a new producer session)."""
    topic = make_topic(clusters.source_bootstrap, partitions=2)
    group = unique_name("g")
    store = f"kmirror-progress.{group}.internal"
    produce(clusters.source_bootstrap, topic, sample_records(200, 2))
    args = [
        *mirror_args(tmp_path, clusters, group, topic, None, {"message.timeout.ms": 2000}),
        "--abort.on.send.failure",
        "false",
        "--engine",
        engine,
    ]
    try:
        with MirrorProcess(args, tmp_path / "m.log") as m:
            wait_until(lambda: committed(clusters, group, topic) == {0: 100, 1: 100}, 60)
            delete_topic(clusters.target_bootstrap, topic)
            produce(clusters.source_bootstrap, topic, sample_records(200, 2))
            wait_until(lambda: "send failed, retrying" in m.log, 60)
            assert m.get("/healthz")[0] == 200
            create_topic(clusters.target_bootstrap, topic, 2)
            wait_until(lambda: committed(clusters, group, topic) == {0: 200, 1: 200}, 120)
            assert m.stop() == 0, m.log
        src = consume_all(clusters.source_bootstrap, topic)
        dst = consume_all(clusters.target_bootstrap, topic)
        after_commit = {r.content() for r in src if r.offset >= 100}
        assert after_commit <= {r.content() for r in dst}
        book = progress(clusters, store, topic)
        for p in (0, 1):
            # The re-copy into the new topic is a run of its own: source 100.. at target 0..
            assert book[p]["acked"] == 200
            assert book[p]["runs"][-1] == [100, 0, 100]  # type: ignore[index]
    finally:
        delete_topic(clusters.target_bootstrap, store, wait=False)
