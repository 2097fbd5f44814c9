"""The control API of a running mirror against the real clusters: live status, refusals.
(Pause, resume and drain: test_pause_drain.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.controlapi import TOKEN, call, ok, status, token_file
from tests.integration.test_mirror import target_has
from tests.kafkatools import Clusters, end_offsets, list_topics, produce, wait_until
from tests.mirrorproc import REPO_ROOT, MirrorProcess, mirror_args, run_cli

pytestmark = pytest.mark.integration


def test_status_is_live_and_calls_without_the_token_change_nothing(
    tmp_path: Path, clusters: Clusters, make_topic, make_group_id
) -> None:
    """The issue's case: 10,000 records of two topics copied, no commit yet (60 s interval).
    `kmirror status` asks the running mirror and says copied = source end, lag 0, while the
    committed lag still counts them; a call without the token or with a wrong one is refused
    with 401 and leaves no trace."""
    src = clusters.source_bootstrap
    topics = [make_topic(src, partitions=2) for _ in range(2)]
    for topic in topics:
        produce(src, topic, [{"value": b"v%d" % i, "partition": i % 2} for i in range(5000)])
    group = make_group_id()
    token = token_file(tmp_path)
    args = mirror_args(tmp_path, clusters, group, "|".join(topics), commit_interval_ms=60_000)
    args += ["--control-token-file", str(token)]
    with MirrorProcess(args, tmp_path / "mirror.log") as mirror:
        for topic in topics:
            wait_until(target_has(clusters, topic, 5000), 60, 0.5, "the records copied")

        def copied() -> bool:
            rows = status(mirror)["partitions"]
            return len(rows) == 4 and all(r["copied"] == r["source_end"] for r in rows)

        wait_until(copied, 15, 0.5, "the live status saying every record is copied")
        cli = run_cli(["status", *args[1:], "--metrics-port", str(mirror.metrics_port), "--json"])
        assert cli.returncode == 0, cli.stderr
        doc = json.loads(cli.stdout)
        assert doc["lag"] == 0 and doc["committed_lag"] == 10_000, doc
        for row in doc["partitions"]:
            assert row["live"] and row["copied"] == row["source_end"] == 2500
            assert row["committed"] is None and row["committed_lag"] == 2500
        text = run_cli(["status", *args[1:], "--metrics-port", str(mirror.metrics_port)])
        assert text.returncode == 0 and "total lag 0 record(s)" in text.stdout, text

        # Refused: no token, a wrong one, a wrong scheme. Nothing is paused or drained after.
        before = status(mirror)["control"]
        for token_value, header_path in ((None, "/status"), ("wrong", "/status"),
                                         ("wrong", f"/topics/{topics[0]}/pause"),
                                         (None, "/drain"), ("wrong", "/throttle")):  # fmt: skip
            method = "GET" if header_path in ("/status",) else "POST"
            if header_path == "/throttle":
                method = "PUT"
            code, answer = call(mirror, method, header_path, {"spec": "backlog.bytes=1"},
                                token=token_value)  # fmt: skip
            assert code == 401, (method, header_path, code, answer)
            assert "unauthorized" in answer["error"] and TOKEN not in json.dumps(answer)
        after = status(mirror)["control"]
        assert after == before and after["paused"] == [] and after["drain"] is None
        assert after["throttle_set_at_run_time"] is False
        assert f"kmirror-control.{group}.internal" in list_topics(clusters.target_bootstrap)
        assert sum(end_offsets(clusters.target_bootstrap, f"kmirror-control.{group}.internal")
                   .values()) == 0  # fmt: skip
        metrics = mirror.get("/metrics")[1]
        assert 'kmirror_control_requests_total{action="pause",outcome="unauthorized"} 1.0' in (
            metrics
        )
        assert TOKEN not in mirror.log

        served = ok(mirror, "GET", "/openapi.json")
        committed = json.loads((REPO_ROOT / "docs" / "control-api.json").read_text())
        assert served == committed
        assert mirror.stop() == 0, mirror.log
