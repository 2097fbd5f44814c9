"""The background builds of `make test` (tests/prebuild.py), with a stand-in for
scripts/k8s/build-binaries: started only when the result is not cached, a failed build fails
the fixture that waits for it with the build's own output, and the session's end stops a build
that still runs, with everything it started."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.prebuild import BackgroundBuild

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
    monkeypatch.setenv("FAKE_DIR", str(tmp_path))
    monkeypatch.setenv("FAKE_SLEEP", "0")
    monkeypatch.setenv("FAKE_RC", "0")
    return tmp_path


def _build(fake: Path) -> BackgroundBuild:
    script = str(fake / "build-binaries")
    return BackgroundBuild("fake build", [script], fake / "logs" / "build.log", [script, "--check"])


def test_cached_binaries_start_nothing(fake: Path) -> None:
    (fake / "cached").touch()
    build = _build(fake)
    assert build.start() is False
    assert build.wait() == "no background fake build (cached, or not started)"


def test_a_finished_build_is_waited_for_once(fake: Path) -> None:
    build = _build(fake)
    assert build.start() is True
    assert build.start() is False  # one build per session
    assert build.wait(timeout=60).startswith("background fake build done")
    assert "building in" in build.log.read_text()


def test_a_failed_build_fails_with_its_own_output(
    fake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_RC", "3")
    build = _build(fake)
    build.start()
    with pytest.raises(RuntimeError, match=r"exited 3:\n(.|\n)*compile error: something"):
        build.wait(timeout=60)


def test_stop_ends_a_running_build_and_its_children(
    fake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_SLEEP", "300")
    build = _build(fake)
    build.start()
    child_file = fake / "child"
    deadline = time.monotonic() + 30
    while not child_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    child = int(child_file.read_text())
    build.stop()
    assert build.proc is not None and build.proc.returncode is not None
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
