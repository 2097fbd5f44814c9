"""The validation job's word on a fault scenario under --exactly-once: the harness counts, the
job (kmirror-validate, local Spark, the target read with read_committed, duplicates fail)
confirms. Full tier only: a Spark start costs about half a minute per scenario."""

from __future__ import annotations

import json
from typing import Any

from tests.kafkatools import Clusters
from tests.spark.test_cli import SPARK, run_cli


def confirm_exactly_once(clusters: Clusters, topic: str) -> dict[str, Any]:
    """Run the validation job over the scenario's topic; its totals. Raises AssertionError
    unless it says OK with 0 missing and 0 duplicates."""
    proc = run_cli(
        *("--source-bootstrap-servers", clusters.source_bootstrap),
        *("--target-bootstrap-servers", clusters.target_bootstrap),
        *("--topics", topic, "--exactly-once", "--duplicates", "fail"),
        *("--json", "--no-progress", *SPARK),
    )
    assert proc.returncode == 0, f"validation job exit {proc.returncode}:\n{proc.stderr[-3000:]}"
    doc = json.loads(proc.stdout)
    totals: dict[str, Any] = doc["totals"]
    assert doc["ok"] is True and doc["isolation_level"] == "read_committed", doc
    assert (totals["missing"], totals["duplicates"]) == (0, 0), totals
    return totals
