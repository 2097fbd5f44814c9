"""`kmirror-validate` as a process: exit codes 0 / 1 / 2, the JSON on stdout or in a file, the
summary and progress on stderr."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from kmirror_validate import cli
from tests.conftest import MakeTopic
from tests.kafkatools import Clusters, produce, unique
from tests.spark.conftest import copy_topic

pytestmark = pytest.mark.spark

SPARK = ["--master", "local[2]", "--spark-conf", "spark.ui.enabled=false",
         "--spark-conf", "spark.sql.shuffle.partitions=2"]  # fmt: skip


def run_cli(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kmirror_validate", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_unreachable_cluster_exits_2_in_bounded_time() -> None:
    started = time.monotonic()
    r = run_cli("--source-bootstrap-servers", "127.0.0.1:1", "--target-bootstrap-servers",
                "127.0.0.1:2", "--topics", "t", "--connect-timeout", "3", "--json")  # fmt: skip
    assert r.returncode == 2, r.stderr[-2000:]
    assert time.monotonic() - started < 60
    doc = json.loads(r.stdout)
    assert doc["ok"] is False
    assert doc["error"]["type"] == "ClusterError"
    assert "source cluster at 127.0.0.1:1" in r.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "no configuration given"),
        (["--source-bootstrap-servers", "h:1"], "give both"),
        (["--source-bootstrap-servers", "h:1", "--target-bootstrap-servers", "h:2",
          "--mm2.config", "x"], "cannot be combined"),
        (["--source-bootstrap-servers", "h:1", "--target-bootstrap-servers", "h:2",
          "--sample-fraction", "0"], "--sample-fraction"),
        (["--source-bootstrap-servers", "h:1", "--target-bootstrap-servers", "h:2",
          "--spark-conf", "novalue"], "KEY=VALUE"),
        (["--source-bootstrap-servers", "h:1", "--target-bootstrap-servers", "h:2",
          "--since", "yesterday"], "--since 'yesterday': give an ISO 8601 time"),
        (["--source-bootstrap-servers", "h:1", "--target-bootstrap-servers", "h:2",
          "--last", "0"], "--last must be >= 1"),
    ],
)  # fmt: skip
def test_bad_configuration_exits_2(args: list[str], message: str) -> None:
    r = run_cli(*args)
    assert r.returncode == 2
    assert message in r.stderr


@pytest.mark.integration
def test_match_then_mismatch(
    tmp_path: Path,
    clusters: Clusters,
    make_topic: MakeTopic,
    spark: SparkSession,
    capsys: pytest.CaptureFixture[str],
) -> None:
    topic = make_topic(clusters.source_bootstrap, unique("cli"), partitions=2)
    renamed = make_topic(clusters.target_bootstrap, f"src.{topic}", partitions=2)
    now = int(time.time() * 1000)
    produce(clusters.source_bootstrap, topic, [
        {"key": b"k%d" % i, "value": b"v%d" % i, "headers": [("h", b"x")], "timestamp": now + i}
        for i in range(50)
    ])  # fmt: skip
    copy_topic(clusters, topic, target_topic=renamed)
    common = ["--source-bootstrap-servers", clusters.source_bootstrap,
              "--target-bootstrap-servers", clusters.target_bootstrap, "--topics", topic,
              "--rename-policy", "prefix", "--source-alias", "src", *SPARK]  # fmt: skip

    # Exit 0 in this process (the session fixture saves a JVM start; main() leaves a session
    # it did not create running) ...
    assert cli.main([*common, "--json", "--progress-interval", "1"]) == 0
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert doc["schema"] == "kmirror-validate/v1"
    assert (doc["ok"], doc["mode"], doc["totals"]["matched"]) == (True, "digest", 50)
    assert doc["topics"][0]["target_topic"] == renamed
    assert "kmirror-validate: OK (digest mode" in err
    assert "[kmirror-validate" in err  # progress lines (stderr is not a terminal)

    # ... exit 1 as a process.
    produce(clusters.source_bootstrap, topic, [{"key": b"late", "value": b"x", "partition": 1}])
    report = tmp_path / "report.json"
    bad = run_cli(*common, "--mode", "count", "--json-out", str(report), "--no-progress")
    assert bad.returncode == 1, bad.stderr[-3000:]
    doc = json.loads(report.read_text())
    assert doc["ok"] is False
    assert [p["count_missing"] for p in doc["topics"][0]["partitions"]] == [0, 1]
    assert f"{topic}/1: 1 missing" in bad.stderr
    assert "[kmirror-validate" not in bad.stderr
    # Spark starts quietly (kmirror_validate/sparklog.py): none of its start-up chatter.
    for chatter in ("default log4j profile", "Setting default log level", "NativeCodeLoader",
                    "resolves to a loopback address", "Using incubator modules"):  # fmt: skip
        assert chatter not in bad.stderr, bad.stderr[-3000:]
