"""Group offset sync (sync.group.offsets.enabled): translated offsets go into target groups
with no active member, only forwards, and never into a group a target consumer committed."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from kmirror.progress.book import PartitionBook, Run
from tests.integration.dr.drtools import commit_group, mm2_config, write_progress
from tests.kafkatools import LOG, Clusters, produce, wait_until
from tests.mirrorproc import MirrorProcess

pytestmark = pytest.mark.integration


def target_group(bootstrap: str, group: str, topic: str) -> tuple[int, str] | None:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "logger": LOG})
    try:
        (tp,) = c.committed([TopicPartition(topic, 0)], timeout=10)
    finally:
        c.close()
    return None if tp.offset < 0 else (tp.offset, tp.metadata or "")


@pytest.mark.parametrize("checkpoints", ["true", "false"])
def test_sync_forward_only_and_never_a_target_group(
    tmp_path: Path, clusters: Clusters, make_topic, unique_name, checkpoints: str
) -> None:
    topic = make_topic(clusters.source_bootstrap, partitions=1)
    target = make_topic(clusters.target_bootstrap, f"A.{topic}", partitions=1)
    produce(clusters.source_bootstrap, topic, [{"value": b"v"}] * 60)
    produce(clusters.target_bootstrap, target, [{"value": b"v"}] * 60)
    mirror = unique_name("mirror")
    write_progress(
        clusters.target_bootstrap, mirror, {(topic, 0): PartitionBook(60, runs=[Run(0, 0, 60)])}
    )
    fresh, owned, ahead = unique_name("fresh"), unique_name("owned"), unique_name("ahead")
    for group, offset in ((fresh, 10), (owned, 20), (ahead, 30)):
        commit_group(clusters.source_bootstrap, group, {(topic, 0): offset})
    commit_group(clusters.target_bootstrap, owned, {(target, 0): 5})  # a consumer on the target
    c = Consumer({"bootstrap.servers": clusters.target_bootstrap, "group.id": ahead, "logger": LOG})
    c.commit(offsets=[TopicPartition(target, 0, 40, metadata="kmirror:A")], asynchronous=False)
    c.close()

    args = mm2_config(tmp_path, clusters, mirror, unique_name("none"),
                      sync_group_offsets_enabled="true",
                      emit_checkpoints_enabled=checkpoints)  # fmt: skip
    with MirrorProcess(["run", *args], tmp_path / "m.log") as m:
        wait_until(lambda: target_group(clusters.target_bootstrap, fresh, target), 60, 0.5,
                   "fresh group synced")  # fmt: skip
        assert m.stop() == 0, m.log  # the sync round that wrote it has finished
    assert target_group(clusters.target_bootstrap, fresh, target) == (10, "kmirror:A")
    assert target_group(clusters.target_bootstrap, owned, target) == (5, "")
    assert target_group(clusters.target_bootstrap, ahead, target) == (40, "kmirror:A")
