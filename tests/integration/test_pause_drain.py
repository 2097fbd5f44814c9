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
from tests.mirrorproc import QUICK_REJOIN, MirrorProcess, mirror_args

pytestmark = pytest.mark.integration

SETTLE_S = 2.0  # acknowledgements of records handed over before the pause took hold
WATCH_S = 3.0  # how long a stopped topic is watched for records arriving anyway

Records = dict[int, list[tuple[bytes | None, bytes | None]]]  # partition -> (key, value)s


def records(bootstrap: str, topic: str) -> Records:
    out: Records = {}
    for r in consume_all(bootstrap, topic, timeout=60):
        out.setdefault(r.partition, []).append((r.key, r.value))
    return out


def assert_nothing_missing(clusters: Clusters, topic: str) -> None:
    """Every source record is on the target in its partition, in order (a record copied twice
    after a kill is at-least-once's duplicate: allowed, and only right after the original)."""
    src, dst = records(clusters.source_bootstrap, topic), records(clusters.target_bootstrap, topic)
    for partition, want in src.items():
        copied = dst.get(partition, [])
        deduped = [v for i, v in enumerate(copied) if v not in copied[max(i - 5000, 0) : i]]
        assert deduped == want, f"{topic}[{partition}]: {len(want)} vs {len(deduped)}"


def mirror_with_control(
    tmp_path: Path, clusters: Clusters, group: str, topics: list[str], *extra: str
) -> list[str]:
    # A killed member leaves the group after the session timeout: the broker's least, not 45 s.
    args = mirror_args(tmp_path, clusters, group, "|".join(topics), QUICK_REJOIN, None, *extra)
    return [*args, "--control-token-file", str(token_file(tmp_path))]


def pause_and_watch(
    mirror: MirrorProcess, clusters: Clusters, paused: str, other: str
) -> dict[int, int]:
    """Pause `paused` while records flow into both topics: its target end offsets stop (they
    are returned) while `other`'s grow, and the status says the topic is paused and held."""
    dst = clusters.target_bootstrap
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
    return held


def catch_up(mirror: MirrorProcess, clusters: Clusters, feeder: Feeder, *topics: str) -> None:
    """The feeder stops; the mirror copies everything and stops cleanly."""
    feeder.stop_and_flush()
    for topic in topics:
        total = sum(end_offsets(clusters.source_bootstrap, topic).values())
        wait_until(target_has(clusters, topic, total), 90, 0.5, f"{topic} caught up")
    assert mirror.stop() == 0, mirror.log


def drain_and_watch(mirror: MirrorProcess, clusters: Clusters, topics: list[str]) -> None:
    """Drain while records flow: the drain completes with exactly the captured ends on the
    target (none missing before them, none copied after them), committed, and stays there."""
    src, dst = clusters.source_bootstrap, clusters.target_bootstrap
    started = ok(mirror, "POST", "/drain")["flows"][0]
    ends = {(t, p): e for t, p, e in started["ends"]}
    assert set(ends) == {(t, p) for t in topics for p in (0, 1)}

    def complete() -> bool:
        return bool(ok(mirror, "GET", "/drain")["flows"][0]["drain"]["complete"])

    def on_target() -> dict[tuple[str, int], int]:
        return {(t, p): e for t in topics for p, e in end_offsets(dst, t).items()}

    wait_until(complete, 60, 0.5, "the drain complete")
    assert on_target() == ends
    time.sleep(WATCH_S)
    assert on_target() == ends
    assert sum(sum(end_offsets(src, t).values()) for t in topics) > sum(ends.values())
    doc = status(mirror)
    assert doc["control"]["drain"]["complete"], doc["control"]  # `kmirror status`: "drained"
    rows = doc["partitions"]
    assert all(r["held"] and r["committed"] == ends[(r["topic"], r["partition"])] for r in rows)
    for topic in topics:  # byte for byte up to the ends
        source, target = records(src, topic), records(dst, topic)
        assert target == {p: source[p][: ends[(topic, p)]] for p in source}, topic
    ok(mirror, "DELETE", "/drain")  # cancelled: the mirror copies again


# The record-path twin in the long tier: the gate is one collaborator of both paths.
@pytest.mark.parametrize("engine", [pytest.param("record", marks=pytest.mark.slow), "batch"])
def test_pause_resume_and_drain_while_records_flow(
    tmp_path: Path, clusters: Clusters, make_topic, make_group_id, engine: str
) -> None:
    """A paused topic stops on the target while the other goes on, and resumes exactly where
    it stopped; a drain stops at exactly the source ends it captured; after the drain is
    cancelled the mirror catches up: byte for byte, in order, not one record twice."""
    src = clusters.source_bootstrap
    paused, other = (make_topic(src, partitions=2) for _ in range(2))
    feeder = Feeder(src, [paused, other], rate=150)
    feeder.start()
    group = make_group_id()
    args = mirror_with_control(tmp_path, clusters, group, [paused, other], "--engine", engine)
    try:
        with MirrorProcess(args, tmp_path / "mirror.log") as mirror:
            wait_until(target_has(clusters, paused, 200), 60, 0.5, "the copy under way")
            pause_and_watch(mirror, clusters, paused, other)
            ok(mirror, "POST", f"/topics/{paused}/resume")
            wait_applied(mirror, "the resume applied")
            drain_and_watch(mirror, clusters, [paused, other])
            catch_up(mirror, clusters, feeder, paused, other)
    finally:
        feeder.stop_and_flush()
    for topic in (paused, other):
        assert records(clusters.target_bootstrap, topic) == records(src, topic), topic


@pytest.mark.slow  # two start-ups and a session timeout: about 40 s
def test_a_killed_paused_mirror_restarts_paused(
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
            held = pause_and_watch(mirror, clusters, paused, other)
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
            catch_up(mirror, clusters, feeder, paused, other)
    finally:
        feeder.stop_and_flush()
    assert_nothing_missing(clusters, paused)
    assert_nothing_missing(clusters, other)
