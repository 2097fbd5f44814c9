"""Builds in the background of a test session (`make test`): the Kubernetes binaries and the
two container images.

Both are long CPU work that only some tests need (a cold `scripts/k8s/build-binaries`: docs/
kubernetes.md, Times; `scripts/build-image`: a minute or more whenever the sources changed,
as on every CI run). When the session has tests that need one, tests/conftest.py starts it as
soon as collection ends, while the Kafka tests (mostly waiting on brokers and disks) run, and
orders those tests after the others (images, then Kubernetes). Each build runs under
`nice -n 19`, so it takes only CPU the tests leave idle: it slows no test, and uses both cores
when both are idle. The fixture that needs the result then waits for it (`wait`); the
session's end stops a build that still runs (a failed or interrupted run leaves no build
behind; the next run starts again from the build's own caches).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("KMIRROR_CACHE") or Path.home() / ".cache" / "kmirror")


class BackgroundBuild:
    """One build command, started at most once per session."""

    def __init__(
        self,
        what: str,
        command: list[str],
        log: Path,
        check: list[str] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.what = what  # for messages: "Kubernetes build"
        self.command = command
        self.log = log
        self.check = check  # exits 0 when the result is cached: nothing to start
        self.env = env or {}
        self.proc: subprocess.Popen[bytes] | None = None
        self.started = 0.0

    def cached(self) -> bool:
        return self.check is not None and subprocess.run(self.check, check=False).returncode == 0

    def start(self) -> bool:
        """Start the build unless it runs already or its result is cached; True if started."""
        if self.proc is not None or self.cached():
            return False
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                ["nice", "-n", "19", *self.command],
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, **self.env},
                start_new_session=True,
            )
        self.started = time.monotonic()
        return True

    def wait(self, timeout: float = 7200.0) -> str:
        """Wait for a started build; a one-line summary. Raises RuntimeError (with the build's
        log) if it failed, so the test fails on the build's own error instead of building
        again."""
        if self.proc is None:
            return f"no background {self.what} (cached, or not started)"
        t0 = time.monotonic()
        rc = self.proc.wait(timeout=max(0.0, timeout - (t0 - self.started)))
        if rc != 0:
            raise RuntimeError(f"{self.command[0]} exited {rc}:\n{self.log.read_text()[-6000:]}")
        return (
            f"background {self.what} done {time.monotonic() - self.started:.0f}s after it "
            f"started; waited {time.monotonic() - t0:.0f}s for it"
        )

    def stop(self) -> None:
        """End a build still running (its whole process group: the script and its children)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)


_K8S_BUILD = str(REPO_ROOT / "scripts" / "k8s" / "build-binaries")
# Both cores when idle (the script's default is one job at a time).
KUBERNETES = BackgroundBuild(
    "Kubernetes build",
    [_K8S_BUILD],
    CACHE / "k8s" / "background-build.log",
    check=[_K8S_BUILD, "--check"],
    env={"KMIRROR_K8S_BUILD_P": os.environ.get("KMIRROR_K8S_BUILD_P", "2")},
)
# No check: scripts/build-image itself finds an image up to date in a second.
IMAGES = BackgroundBuild(
    "image build",
    [str(REPO_ROOT / "scripts" / "build-image")],
    CACHE / "podman" / "background-build.log",
)
