"""`kmirror failover` / `kmirror offsets` refuse what they cannot do safely: exit 2, a message
naming the problem and the fix, and nothing written into the group."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import Producer

from kmirror.dr.formats import Checkpoint
from tests.integration.dr.drtools import member, mm2_config
from tests.kafkatools import LOG, Clusters, committed_offsets, create_topic, list_topics, wait_until
from tests.mirrorproc import run_cli

pytestmark = [pytest.mark.integration, pytest.mark.badinput]


def write_checkpoints(bootstrap: str, topic: str, cps: list[Checkpoint]) -> None:
    if topic not in list_topics(bootstrap, internal=True):
        create_topic(bootstrap, topic, 1, {"cleanup.policy": "compact"})
    p = Producer({"bootstrap.servers": bootstrap, "logger": LOG})
    for cp in cps:
        p.produce(topic, cp.value(), cp.key())
    assert p.flush(30) == 0


def test_unknown_group(tmp_path: Path, clusters: Clusters, unique_name) -> None:
    args = mm2_config(tmp_path, clusters, unique_name("mirror"), "x")
    write_checkpoints(clusters.target_bootstrap, "A.checkpoints.internal", [])
    group = unique_name("nobody")
    res = run_cli(["failover", *args, "--group", group])
    assert res.returncode == 2, res.stderr
    assert f"no checkpoints for group {group} in A.checkpoints.internal" in res.stderr
    assert not committed_offsets(clusters.target_bootstrap, group)
    res = run_cli(["offsets", *args, "--group", group])
    assert res.returncode == 2 and f"nothing known about group {group}" in res.stderr


def test_checkpoints_topic_missing(tmp_path: Path, clusters: Clusters, unique_name) -> None:
    alias = unique_name("Z")
    path = tmp_path / "z.properties"
    path.write_text(
        f"clusters={alias}, B\n{alias}.bootstrap.servers={clusters.source_bootstrap}\n"
        f"B.bootstrap.servers={clusters.target_bootstrap}\n{alias}->B.enabled=true\n",
        encoding="utf-8",
    )
    res = run_cli(["failover", "--mm2-config", str(path), "--group", "g"])
    assert res.returncode == 2, res.stderr
    assert f"the checkpoints topic {alias}.checkpoints.internal does not exist" in res.stderr
    assert "emit.checkpoints.enabled=true" in res.stderr


def test_group_active_on_target(
    tmp_path: Path, clusters: Clusters, make_topic, unique_name
) -> None:
    topic = make_topic(clusters.target_bootstrap, partitions=1)
    group = unique_name("busy")
    write_checkpoints(
        clusters.target_bootstrap, "A.checkpoints.internal", [Checkpoint(group, topic, 0, 5, 5)]
    )
    args = mm2_config(tmp_path, clusters, unique_name("mirror"), "x")
    c = member(clusters.target_bootstrap, group)
    try:
        c.subscribe([topic])
        wait_until(lambda: c.poll(0.2) is None and c.assignment(), 30, 0, "member joined")
        res = run_cli(["failover", *args, "--group", group])
    finally:
        c.close()
    assert res.returncode == 2, res.stderr
    assert f"group {group} has 1 active member(s) on the target" in res.stderr
    assert not committed_offsets(clusters.target_bootstrap, group)
    # Once its consumers are gone, the same command moves it.
    res = run_cli(["failover", *args, "--group", group])
    assert res.returncode == 0, res.stderr
    assert f"set {group} {topic}[0]: - -> 5 (source offset 5)" in res.stdout
    assert committed_offsets(clusters.target_bootstrap, group) == {(topic, 0): 5}


def test_dry_run_writes_nothing(
    tmp_path: Path, clusters: Clusters, make_topic, unique_name
) -> None:
    topic = make_topic(clusters.target_bootstrap, partitions=1)
    group = unique_name("dry")
    write_checkpoints(
        clusters.target_bootstrap, "A.checkpoints.internal", [Checkpoint(group, topic, 0, 9, 7)]
    )
    args = mm2_config(tmp_path, clusters, unique_name("mirror"), "x")
    res = run_cli(["failover", *args, "--group", group, "--dry-run"])
    assert res.returncode == 0, res.stderr
    assert f"would set {group} {topic}[0]: - -> 7 (source offset 9)" in res.stdout
    assert "nothing written" in res.stderr
    assert not committed_offsets(clusters.target_bootstrap, group)
