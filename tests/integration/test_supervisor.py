"""The supervisor's promises against the real clusters: probes that tell the truth, and stream
processes that never outlive their supervisor."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from tests.integration.test_mirror import committed, target_has
from tests.kafkatools import Clusters, end_offsets, produce, wait_until
from tests.mirrorproc import MirrorProcess, mirror_args

pytestmark = pytest.mark.integration


def children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            out += [int(c) for c in (task / "children").read_text().split()]
    return out


def alive(pid: int) -> bool:
    """Running (a zombie has ended: it only waits to be reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def group_members(bootstrap: str, group: str) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    desc = admin.describe_consumer_groups([group], request_timeout=10)[group].result()
    return len(desc.members)


def test_an_idle_stream_is_ready(
    tmp_path: Path, clusters: Clusters, make_topic, make_group_id
) -> None:
    # One partition, two streams: one stream gets nothing, as with more replicas than partitions.
    topic = make_topic(clusters.source_bootstrap, partitions=1)
    args = mirror_args(tmp_path, clusters, make_group_id(), topic, None, None, "--num.streams", "2")
    with MirrorProcess(args, tmp_path / "mirror.log") as mirror:
        mirror.wait_ready(90)
        code, body = mirror.get("/readyz")
        assert (code, body.strip()) == (200, "ready")
        assert mirror.stop() == 0, mirror.log


def test_streams_die_with_a_killed_supervisor(
    tmp_path: Path, clusters: Clusters, make_topic, make_group_id
) -> None:
    topic = make_topic(clusters.source_bootstrap, partitions=2)
    group = make_group_id()
    produce(clusters.source_bootstrap, topic, [{"value": b"r%d" % i} for i in range(100)])
    # A member that is not removed by leaving stays in the group for the whole session timeout:
    # five minutes here, far longer than this test waits for the group to empty.
    consumer = {"session.timeout.ms": 300000, "heartbeat.interval.ms": 3000}
    args = mirror_args(tmp_path, clusters, group, topic, consumer, None, "--num.streams", "2")
    mirror = MirrorProcess(args, tmp_path / "mirror.log").start()
    assert mirror.proc is not None
    streams: list[int] = []
    try:
        mirror.wait_ready(90)
        wait_until(target_has(clusters, topic, 100), 60, 0.5, "the first records copied")
        streams = [p for p in children(mirror.proc.pid) if alive(p)]
        assert len(streams) >= 2, streams
        assert group_members(clusters.source_bootstrap, group) == 2
        os.kill(mirror.proc.pid, signal.SIGKILL)  # the supervisor alone, not its group
        assert mirror.wait(30) == -signal.SIGKILL
        wait_until(
            lambda: not any(alive(p) for p in streams),
            90,
            0.5,
            "every stream process to end after its supervisor was killed",
        )
        wait_until(
            lambda: group_members(clusters.source_bootstrap, group) == 0,
            60,
            1.0,
            "the streams to leave the consumer group",
        )
        # The parent-death signal is the normal stop: flush, commit, leave the group.
        assert "stream 0 stopped cleanly" in mirror.log, mirror.log[-3000:]
        assert "stream 1 stopped cleanly" in mirror.log, mirror.log[-3000:]
        assert committed(clusters, group, topic) == end_offsets(clusters.source_bootstrap, topic)
    finally:
        for pid in streams:  # only if the test failed: nothing may outlive it
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
