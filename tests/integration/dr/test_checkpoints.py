"""Checkpoints: kmirror writes MM2's checkpoints from its exact translation, and Apache Kafka's
own RemoteClusterUtils reads them and gives the same offsets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kmirror.progress.book import PartitionBook, Run
from tests.integration.dr.drtools import commit_group, java_translate, mm2_config, write_progress
from tests.kafkatools import Clusters, produce, wait_until
from tests.mirrorproc import MirrorProcess, run_cli

pytestmark = pytest.mark.integration


def test_java_remote_cluster_utils_reads_kmirror_checkpoints(
    tmp_path: Path, clusters: Clusters, make_topic, unique_name
) -> None:
    topic = make_topic(clusters.source_bootstrap, partitions=2)
    produce(
        clusters.source_bootstrap, topic, [{"partition": i % 2, "value": b"v"} for i in range(40)]
    )
    mirror_group, group = unique_name("mirror"), unique_name("app")
    # Progress as the mirror persists it: partition 0 has a gap (source 10..11 were never
    # copied, e.g. a transaction marker and an aborted record), partition 1 landed at 100.
    p0 = PartitionBook(acked=20, runs=[Run(0, 0, 10), Run(12, 10, 8)])
    p1 = PartitionBook(acked=20, runs=[Run(0, 100, 20)])
    write_progress(clusters.target_bootstrap, mirror_group, {(topic, 0): p0, (topic, 1): p1})
    commit_group(clusters.source_bootstrap, group, {(topic, 0): 11, (topic, 1): 7})
    expected = {(f"A.{topic}", 0): 10, (f"A.{topic}", 1): 107}

    # The mirror copies nothing here (its topic list matches no topic): only the checkpoint
    # emitter works, from the progress written above and the group's committed offsets.
    args = mm2_config(tmp_path, clusters, mirror_group, unique_name("none"))

    def checkpoints() -> dict[tuple[str, int], int] | None:
        res = run_cli(["offsets", *args, "--group", group, "--json"])
        if res.returncode != 0:
            return None
        rows = json.loads(res.stdout)["partitions"]
        got = {(r["target_topic"], r["partition"]): r["checkpoint"] for r in rows}
        return got if got == expected else None

    with MirrorProcess(["run", *args], tmp_path / "m.log") as m:
        wait_until(checkpoints, 60, 0.5, "checkpoints emitted")
        assert m.stop() == 0, m.log
    rows = json.loads(run_cli(["offsets", *args, "--group", group, "--json"]).stdout)["partitions"]
    assert {(r["target_topic"], r["partition"]): r["translated"] for r in rows} == expected
    assert {(r["target_topic"], r["partition"]): r["source_committed"] for r in rows} == {
        (f"A.{topic}", 0): 11,
        (f"A.{topic}", 1): 7,
    }
    assert java_translate(clusters.target_bootstrap, "A", group) == expected
