"""The fault suite's results file without a broker: a run that writes some scenarios keeps the
other rows of an earlier run, and every row keeps the run (commit, time) that made it, so the
table in docs/reliability.md says where each row comes from."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest

from tests.faults import harness
from tests.faults.harness import Result, write_results
from tests.faults.report import table

pytestmark = pytest.mark.unit


def test_rows_of_an_earlier_run_keep_their_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(harness, "RESULTS_DIR", tmp_path)
    old_row = {**asdict(Result("leaders-batch", "full", 2, 10, 10, 0)), "catch_up_s": 1.0}
    old_row.update(recovery_median_s=None, recovery_max_s=None)
    earlier = {
        "mode": "full",
        "created": "2026-11-20T10:00:00Z",
        "git": "aaaaaaa",
        "host": {"cpus": 2},
        "rate_records_per_s": 500,
        "commit_interval_ms": 1000,
        "session_timeout_ms": 6000,
        "scenarios": [old_row],
    }
    (tmp_path / "faults3-full.json").write_text(json.dumps(earlier))

    path = write_results([Result("src-leaders-batch", "full", 2, 20, 20, 0)], "full", "faults3")
    doc = json.loads(path.read_text())
    runs = {s["scenario"]: (s["git"], s["created"]) for s in doc["scenarios"]}
    assert runs["leaders-batch"] == ("aaaaaaa", "2026-11-20T10:00:00Z")
    assert runs["src-leaders-batch"] == (doc["git"], doc["created"])

    text = table(doc)
    assert "each row names its run" in text
    assert "| 2026-11-20T10:00:00Z (git aaaaaaa) |" in text  # the kept row's own run
    assert f"| {doc['created']} (git {doc['git']}) |" in text

    # A file of one run: no run column.
    one = write_results([Result("kill9", "full", 30, 10, 10, 0)], "full", "faults")
    single = table(json.loads(one.read_text()))
    assert "each row names its run" not in single and "| run |" not in single
