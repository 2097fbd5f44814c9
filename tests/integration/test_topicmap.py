"""Topic mapping rules on real clusters: an explicit map and regex rules mirror byte for byte
into the mapped names, `check` and `status` show them, and a mapping that would mix two topics
or loop is refused before anything is created or committed."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from tests.integration.test_mirror import assert_same, sample_records, target_has
from tests.kafkatools import (
    Clusters,
    committed_offsets,
    consume_all,
    list_topics,
    produce,
    wait_until,
)
from tests.mirrorproc import MirrorProcess, mirror_args, run_cli

pytestmark = pytest.mark.integration


def test_map_and_rules_copy_byte_exact_into_the_mapped_names(
    tmp_path: Path, clusters: Clusters, make_topic, unique_name
) -> None:
    run = uuid.uuid4().hex[:8]
    orders = make_topic(clusters.source_bootstrap, f"{run}-orders", partitions=2)
    billing = make_topic(clusters.source_bootstrap, f"team-{run}.billing", partitions=3)
    plain = make_topic(clusters.source_bootstrap, f"{run}-plain")
    sources = {orders: 2, billing: 3, plain: 1}
    expected = {orders: f"shop.{run}.orders.v2", billing: f"a-{run}.billing", plain: plain}
    for topic, partitions in sources.items():
        produce(clusters.source_bootstrap, topic, sample_records(200, partitions))
    args = mirror_args(
        tmp_path, clusters, unique_name("g"), f"{run}-.*|team-{run}\\..*", None, None,
        "--topic-map", f"{orders}:{expected[orders]}",
        # Java's $1 and Python's \1 both work; the map wins over a rule that also matches.
        "--topic-rules", f"^team-{run}\\.(.*)$ -> a-{run}.$1; ^{run}-(orders)$ -> never.\\1",
    )[1:]  # fmt: skip

    res = run_cli(["check", *args])
    assert res.returncode == 0, res.stderr
    assert f"{orders} -> {expected[orders]}  (map)" in res.stdout
    assert f"{billing} -> {expected[billing]}  (rule 1)" in res.stdout
    assert f"{plain} -> {plain}  (identity)" in res.stdout

    with MirrorProcess(["run", *args], tmp_path / "mirror.log") as m:
        for dst in expected.values():
            wait_until(target_has(clusters, dst, 200), 90, message=f"{dst} caught up")
        assert m.stop() == 0, m.log
    for src, dst in expected.items():
        assert_same(consume_all(clusters.source_bootstrap, src),
                    consume_all(clusters.target_bootstrap, dst))  # fmt: skip
    assert f"never.{run}-orders" not in list_topics(clusters.target_bootstrap)

    res = run_cli(["status", *args, "--json"])
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)["partitions"]
    assert {(r["topic"], r["target_topic"]) for r in rows} == set(expected.items())
    assert sum(r["lag"] for r in rows) == 0


@pytest.mark.parametrize(
    ("rules", "fragment"),
    [
        ("^(?:eu|us)-{run}$ -> {run}", "eu-{run} and us-{run} both map to the target topic {run}"),
        ("^(.*-{run})$ -> m.$1", "loop: rule 1 maps eu-{run} to m.eu-{run}"),
    ],
    ids=["two-onto-one", "loop"],
)
def test_colliding_or_looping_rules_start_nothing(
    tmp_path: Path, clusters: Clusters, make_topic, unique_name, rules: str, fragment: str
) -> None:
    run = uuid.uuid4().hex[:8]
    for region in ("eu", "us"):
        topic = make_topic(clusters.source_bootstrap, f"{region}-{run}")
        produce(clusters.source_bootstrap, topic, sample_records(10, 1))
    group = unique_name("g")
    args = mirror_args(tmp_path, clusters, group, f".*{run}.*", None, None,
                       "--topic-rules", rules.format(run=run))[1:]  # fmt: skip
    for command in ("check", "run"):
        res = run_cli([command, *args], timeout=90)
        assert res.returncode == 2, res.stdout + res.stderr
        assert fragment.format(run=run) in res.stderr
    assert not {t for t in list_topics(clusters.target_bootstrap) if run in t}
    assert committed_offsets(clusters.source_bootstrap, group) == {}
