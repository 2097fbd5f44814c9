"""`kmirror status` against the real clusters: what a person (or a script) sees per partition."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kmirror.progress.book import PartitionBook
from kmirror.progress.codec import encode_record
from tests.integration.test_mirror import target_has
from tests.kafkatools import Clusters, list_topics, produce, wait_until
from tests.mirrorproc import MirrorProcess, mirror_args, run_cli

pytestmark = pytest.mark.integration


def status(args: list[str]) -> dict[tuple[str, int], dict[str, object]]:
    result = run_cli(["status", *args[1:], "--json"], timeout=120)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    return {(r["topic"], r["partition"]): r for r in doc["partitions"]}


def test_status_table_and_json(
    tmp_path: Path, clusters: Clusters, make_topic, make_group_id
) -> None:
    src = clusters.source_bootstrap
    topic = make_topic(src, partitions=2)
    group = make_group_id()
    produce(src, topic, [{"value": b"r%d" % i, "partition": i % 2} for i in range(30)])
    args = mirror_args(tmp_path, clusters, group, topic)
    with MirrorProcess(args, tmp_path / "mirror.log") as mirror:
        wait_until(target_has(clusters, topic, 30), 60, 0.5, "the records copied")
        assert mirror.stop() == 0, mirror.log

    # Stopped after copying everything: committed = copied (the mirror's progress record) =
    # source end = target end, no lag.
    before = set(list_topics(clusters.target_bootstrap))
    assert f"kmirror-progress.{group}.internal" in before
    rows = status(args)
    assert set(rows) == {(topic, 0), (topic, 1)}
    for p in (0, 1):
        row = rows[(topic, p)]
        assert (
            row["source_end"],
            row["copied"],
            row["committed"],
            row["target_end"],
            row["lag"],
        ) == (15, 15, 15, 15, 0)
    # Reading only: nothing appeared on the target.
    assert set(list_topics(clusters.target_bootstrap)) == before

    # New source records while the mirror is down: lag counts them.
    produce(src, topic, [{"value": b"n%d" % i, "partition": 0} for i in range(5)])
    rows = status(args)
    assert rows[(topic, 0)]["source_end"] == 20
    assert rows[(topic, 0)]["lag"] == 5 and rows[(topic, 1)]["lag"] == 0

    # A newer progress record (as a mirror that copied further without committing yet writes
    # it): copied comes from it, and the lag is measured to it, ahead of the committed offset.
    key, value = encode_record(topic, 0, PartitionBook(acked=18))
    produce(
        clusters.target_bootstrap,
        f"kmirror-progress.{group}.internal",
        [{"key": key, "value": value}],
    )
    rows = status(args)
    assert (rows[(topic, 0)]["copied"], rows[(topic, 0)]["committed"]) == (18, 15)
    assert rows[(topic, 0)]["lag"] == 2

    text = run_cli(["status", *args[1:]], timeout=120)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0].split() == [
        "topic", "partition", "source", "end", "copied", "committed", "target", "end", "lag"
    ]  # fmt: skip
    assert lines[1].split() == [topic, "0", "20", "18", "15", "15", "2"]
    assert lines[2].split() == [topic, "1", "15", "15", "15", "15", "0"]
    assert lines[-1].startswith("total lag 2 record(s)")
