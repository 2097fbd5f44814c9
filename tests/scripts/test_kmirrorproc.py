"""The shared runner: MirrorMaker 1 files and argv, and a process group that really stops."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest

from scripts.kmirrorproc import ProcessGroup, mm1_args
from tests.kafkatools import wait_until

pytestmark = pytest.mark.unit


def test_mm1_args_writes_both_files(tmp_path: Path) -> None:
    args = mm1_args(
        tmp_path,
        "src:9092",
        "dst:9092",
        "g1",
        "a|b",
        consumer={"auto.offset.reset": "earliest"},
        producer={"linger.ms": 5},
        extra=["--num.streams", "2"],
        prefix="m-",
    )
    assert args == [
        "run",
        "--consumer.config",
        str(tmp_path / "m-consumer.properties"),
        "--producer.config",
        str(tmp_path / "m-producer.properties"),
        "--whitelist",
        "a|b",
        "--offset.commit.interval.ms",
        "1000",
        "--num.streams",
        "2",
    ]
    assert (tmp_path / "m-consumer.properties").read_text() == (
        "bootstrap.servers=src:9092\ngroup.id=g1\nauto.offset.reset=earliest\n"
    )
    assert (tmp_path / "m-producer.properties").read_text() == (
        "bootstrap.servers=dst:9092\nlinger.ms=5\n"
    )
    no_interval = mm1_args(tmp_path, "s", "t", "g", ".*", commit_interval_ms=None)
    assert "--offset.commit.interval.ms" not in no_interval


def test_terminate_kills_the_whole_group_and_keeps_the_log(tmp_path: Path) -> None:
    # A parent that ignores SIGTERM, with a child: after terminate() neither may run.
    script = (
        "import signal, subprocess, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        "print('child', child.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    p = ProcessGroup([sys.executable, "-c", script], tmp_path / "p.log").start()
    wait_until(lambda: "child" in p.log, 60, 0.05, "the child's pid in the log")
    child = int(p.log.split()[1])
    assert p.terminate(0.5) is None  # SIGTERM ignored: the group was killed
    assert p.returncode == -signal.SIGKILL
    wait_until(lambda: not _running(child), 30, 0.05, f"child {child} gone")


def _running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's reaping is up to whoever is PID 1)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")
