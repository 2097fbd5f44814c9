"""The background Kubernetes build of `make test` (tests/k8s/prebuild.py), with a stand-in
for scripts/k8s/build-binaries: started only when the binaries are not cached, a failed build
fails the k8s fixture with the build's own output, and the session's end stops a build that
still runs, with everything it started."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.k8s import prebuild

pytestmark = pytest.mark.unit

# --check: exit 0 if CACHED exists; otherwise "build": a child process (as go is), then RC.
FAKE_BUILD = """#!/usr/bin/env bash
if [[ ${1:-} == --check ]]; then [[ -e $FAKE_DIR/cached ]]; exit; fi
echo "building in $$"
sleep "$FAKE_SLEEP" &
echo $! >"$FAKE_DIR/child"
wait
echo "compile error: something" >&2
exit "$FAKE_RC"
"""


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    script = tmp_path / "build-binaries"
    script.write_text(FAKE_BUILD)
    script.chmod(0o755)
    monkeypatch.setattr(prebuild, "BUILD", script)
    monkeypatch.setattr(prebuild, "LOG", tmp_path / "logs" / "build.log")
    # Also under `make test`, where the session's real build is in these globals.
    monkeypatch.setattr(prebuild, "_build", None)
    monkeypatch.setattr(prebuild, "_started", 0.0)
    monkeypatch.setenv("FAKE_DIR", str(tmp_path))
    monkeypatch.setenv("FAKE_SLEEP", "0")
    monkeypatch.setenv("FAKE_RC", "0")
    return tmp_path


def test_cached_binaries_start_nothing(fake: Path) -> None:
    (fake / "cached").touch()
    assert prebuild.start() is False
    assert prebuild.wait() == "no background build (binaries were cached)"


def test_a_finished_build_is_waited_for_once(fake: Path) -> None:
    assert prebuild.start() is True
    assert prebuild.start() is False  # one build per session
    assert prebuild.wait(timeout=60).startswith("background Kubernetes build done")
    assert "building in" in prebuild.LOG.read_text()


def test_a_failed_build_fails_with_its_own_output(
    fake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_RC", "3")
    prebuild.start()
    with pytest.raises(RuntimeError, match=r"exited 3:\n(.|\n)*compile error: something"):
        prebuild.wait(timeout=60)


def test_stop_ends_a_running_build_and_its_children(
    fake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_SLEEP", "300")
    prebuild.start()
    child_file = fake / "child"
    deadline = time.monotonic() + 30
    while not child_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    child = int(child_file.read_text())
    prebuild.stop()
    assert prebuild._build is not None and prebuild._build.returncode is not None
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child), "the build's child outlived stop()"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie waits only for its (dead) parent's reaper: it runs nothing any more.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"
