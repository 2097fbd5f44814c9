"""Pause, resume and drain through the control API, on the real clusters while records flow:
what a paused or drained topic has on the target, and that nothing is missing afterwards."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.integration.controlapi import ok, status, token_file, wait_applied
from tests.integration.feeder import Feeder
from tests.integration.test_mirror import target_has
from tests.kafkatools import Clusters, consume_all, end_offsets, wait_until
from tests.mirrorproc import MirrorProcess, mirror_args

pytestmark = pytest.mark.integration

SETTLE_S = 2.0  # acknowledgements of records handed over before the pause took hold
WATCH_S = 4.0  # how long a stopped topic is watched for records arriving anyway


def values(bootstrap: str, topic: str) -> dict[int, list[bytes]]:
    out: dict[int, list[bytes]] = {}
    for r in consume_all(bootstrap, topic, timeout=60):
        out.setdefault(r.partition, []).append(r.value or b"")
    return out


def assert_nothing_missing(clusters: Clusters, topic: str) -> None:
    """Every source record is on the target in its partition, in order (a record copied twice
    after a kill is at-least-once's duplicate: allowed, and only right after the original)."""
    src, dst = values(clusters.source_bootstrap, topic), values(clusters.target_bootstrap, topic)
    for partition, records in src.items():
        copied = dst.get(partition, [])
        deduped = [v for i, v in enumerate(copied) if v not in copied[max(i - 5000, 0) : i]]
        assert deduped == records, f"{topic}[{partition}]: {len(records)} vs {len(deduped)}"


def mirror_with_control(
    tmp_path: Path, clusters: Clusters, group: str, topics: list[str], *extra: str
) -> list[str]:
    args = mirror_args(tmp_path, clusters, group, "|".join(topics), None, None, *extra)
    return [*args, "--control-token-file", str(token_file(tmp_path))]


def test_pause_resume_and_a_killed_mirror_restarts_paused(
    tmp_path: Path, clusters: Clusters, make_topic, make_group_id
) -> None:
    src, dst = clusters.source_bootstrap, clusters.target_bootstrap
    paused, other = (make_topic(src, partitions=2) for _ in range(2))
    feeder = Feeder(src, [paused, other])
    feeder.start()
    args = mirror_with_control(tmp_path, clusters, make_group_id(), [paused, other])
    try:
        with MirrorProcess(args, tmp_path / "mirror.log") as mirror:
            wait_until(target_has(clusters, paused, 200), 60, 0.5, "the copy under way")
            doc = ok(mirror, "POST", f"/topics/{paused}/pause")
            assert doc["flows"][0]["paused"] and doc["flows"][0]["selected"]
            wait_applied(mirror, "the pause applied by every stream")
            time.sleep(SETTLE_S)
            held = end_offsets(dst, paused)
            before = sum(end_offsets(dst, other).values())
            time.sleep(WATCH_S)
            assert end_offsets(dst, paused) == held, "a paused topic kept growing"
            assert sum(end_offsets(dst, other).values()) > before, "the other topic stopped"
            rows = [r for r in status(mirror)["partitions"] if r["topic"] == paused]
            assert rows and all(r["paused"] and r["held"] for r in rows), rows
            assert all(r["lag"] > 0 for r in rows)  # the source goes on
            mirror.kill()  # kill -9: no final commit, no goodbye
        with MirrorProcess(args, tmp_path / "mirror2.log") as mirror:
            mirror.wait_ready()
            before = sum(end_offsets(dst, other).values())
            time.sleep(WATCH_S)
            assert end_offsets(dst, paused) == held, "the restarted mirror copied a paused topic"
            assert sum(end_offsets(dst, other).values()) > before
            assert status(mirror)["control"]["paused"] == [paused]
            ok(mirror, "POST", f"/topics/{paused}/resume")
            wait_applied(mirror, "the resume applied")
            feeder.stop_and_flush()
            for topic in (paused, other):
                total = sum(end_offsets(src, topic).values())
                wait_until(target_has(clusters, topic, total), 90, 0.5, f"{topic} caught up")
            assert mirror.stop() == 0, mirror.log
    finally:
        feeder.stop_and_flush()
    assert_nothing_missing(clusters, paused)
    assert_nothing_missing(clusters, other)


@pytest.mark.parametrize("engine", ["record", "batch"])
def test_drain_stops_at_the_source_end_it_captured(
    tmp_path: Path, clusters: Clusters, make_topic, make_group_id, engine: str
) -> None:
    src, dst = clusters.source_bootstrap, clusters.target_bootstrap
    topic = make_topic(src, partitions=2)
    feeder = Feeder(src, [topic], rate=300)
    feeder.start()
    args = mirror_with_control(tmp_path, clusters, make_group_id(), [topic], "--engine", engine)
    try:
        with MirrorProcess(args, tmp_path / "mirror.log") as mirror:
            wait_until(target_has(clusters, topic, 200), 60, 0.5, "the copy under way")
            started = ok(mirror, "POST", "/drain")["flows"][0]
            ends = {(t, p): e for t, p, e in started["ends"]}
            assert set(ends) == {(topic, 0), (topic, 1)}

            def complete() -> bool:
                return bool(ok(mirror, "GET", "/drain")["flows"][0]["drain"]["complete"])

            wait_until(complete, 60, 0.5, "the drain complete")
            # Exactly the captured ends on the target (no record before them missing, none
            # after them copied), while the source goes on.
            assert end_offsets(dst, topic) == {p: e for (_, p), e in ends.items()}
            time.sleep(WATCH_S)
            assert end_offsets(dst, topic) == {p: e for (_, p), e in ends.items()}
            assert sum(end_offsets(src, topic).values()) > sum(ends.values())
            rows = status(mirror)["partitions"]
            assert all(r["held"] and r["committed"] == ends[(topic, r["partition"])] for r in rows)
            # Nothing missing up to the ends, byte for byte.
            source = values(src, topic)
            target = values(dst, topic)
            for (_, p), end in ends.items():
                assert target.get(p, []) == source[p][:end]
            # Cancelled: the mirror copies again and catches up.
            ok(mirror, "DELETE", "/drain")
            feeder.stop_and_flush()
            total = sum(end_offsets(src, topic).values())
            wait_until(target_has(clusters, topic, total), 90, 0.5, "caught up after the drain")
            assert mirror.stop() == 0, mirror.log
    finally:
        feeder.stop_and_flush()
    assert_nothing_missing(clusters, topic)
