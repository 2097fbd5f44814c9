"""The Kubernetes build in the background of a test session (`make test`).

A cold `scripts/k8s/build-binaries` is the long pole of the k8s tests (docs/kubernetes.md:
Times). When the session has k8s tests and the binaries are not cached, tests/conftest.py starts
the build as soon as collection ends, while the Kafka tests (mostly waiting on brokers and
disks) run, and orders the k8s tests last. The build runs under `nice -n 19` (inside
build-binaries), so it takes only CPU the tests leave idle: it slows no test, and uses both
cores when both are idle (`KMIRROR_K8S_BUILD_P=2` unless set). The k8s fixture then waits for
it (`wait`); the session's end stops it if it still runs (a failed or interrupted run leaves
no build behind; the next run starts again from Go's build cache).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
BUILD = REPO_ROOT / "scripts" / "k8s" / "build-binaries"
CACHE = Path(os.environ.get("KMIRROR_CACHE") or Path.home() / ".cache" / "kmirror")
LOG = CACHE / "k8s" / "background-build.log"

_build: subprocess.Popen[bytes] | None = None
_started = 0.0


def cached() -> bool:
    return subprocess.run([str(BUILD), "--check"], check=False).returncode == 0


def start() -> bool:
    """Start the build unless the binaries are cached; True if it was started."""
    global _build, _started
    if _build is not None or cached():
        return False
    LOG.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "KMIRROR_K8S_BUILD_P": os.environ.get("KMIRROR_K8S_BUILD_P", "2")}
    with LOG.open("wb") as out:
        _build = subprocess.Popen(
            [str(BUILD)], stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    _started = time.monotonic()
    return True


def wait(timeout: float = 7200.0) -> str:
    """Wait for a started build; a one-line summary. Raises RuntimeError (with the build's log)
    if it failed, so the k8s test fails on the build's own error instead of building again."""
    if _build is None:
        return "no background build (binaries were cached)"
    t0 = time.monotonic()
    rc = _build.wait(timeout=max(0.0, timeout - (t0 - _started)))
    if rc != 0:
        raise RuntimeError(f"{BUILD} exited {rc}:\n{LOG.read_text()[-6000:]}")
    return (
        f"background Kubernetes build done {time.monotonic() - _started:.0f}s after it started; "
        f"waited {time.monotonic() - t0:.0f}s for it"
    )


def stop() -> None:
    """End a build still running (its whole process group: build-binaries, go, compilers)."""
    if _build is None or _build.poll() is not None:
        return
    os.killpg(_build.pid, signal.SIGTERM)
    try:
        _build.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(_build.pid, signal.SIGKILL)
        _build.wait(timeout=30)
