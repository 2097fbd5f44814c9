"""The validation job on an exactly-once mirror: reading the target with read_committed, a
mirror that was killed mid-copy (its open transaction aborted on the target) is OK with zero
duplicates, also under --duplicates fail."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from kmirror_validate import cli
from tests.conftest import MakeTopic
from tests.integration.test_exactly_once import committed_all, eos_args, load, target_end
from tests.kafkatools import Clusters, unique, wait_until
from tests.mirrorproc import MirrorProcess
from tests.spark.test_cli import SPARK

pytestmark = pytest.mark.spark


def test_exactly_once_mirror_validates_ok_with_zero_duplicates(
    tmp_path: Path,
    clusters: Clusters,
    make_topic: MakeTopic,
    spark: SparkSession,
    capsys: pytest.CaptureFixture[str],
) -> None:
    topic = make_topic(clusters.source_bootstrap, unique("eos-validate"), partitions=2)
    group = unique("g")
    args = eos_args(tmp_path, clusters, group, topic)
    with load(clusters, topic, 4000, 2), MirrorProcess(args, tmp_path / "m1.log") as m:
        wait_until(lambda: target_end(clusters, topic) >= 1500, 90, 0.05)
        assert m.kill() == -signal.SIGKILL
    with MirrorProcess(args, tmp_path / "m2.log") as m:
        # Up first: the killed mirror may have committed everything already, and a SIGTERM
        # before the new one runs its handlers would end it like any process (-15).
        m.wait_ready()
        wait_until(lambda: committed_all(clusters, group, topic), 90, 0.3)
        assert m.stop() == 0, m.log
    common = ["--source-bootstrap-servers", clusters.source_bootstrap,
              "--target-bootstrap-servers", clusters.target_bootstrap, "--topics", topic,
              "--exactly-once", *SPARK]  # fmt: skip
    code = cli.main([*common, "--duplicates", "fail", "--json", "--no-progress"])
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert code == 0, err[-3000:]
    assert doc["ok"] is True and doc["isolation_level"] == "read_committed"
    totals = doc["totals"]
    assert (totals["matched"], totals["duplicates"], totals["missing"]) == (4000, 0, 0), totals
    assert "kmirror-validate: OK" in err
