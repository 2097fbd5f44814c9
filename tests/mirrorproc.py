"""Run the real `kmirror` command as a subprocess, the way users and the image do."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

from tests.kafkatools import wait_until

REPO_ROOT = Path(__file__).resolve().parent.parent
KMIRROR = [sys.executable, "-m", "kmirror.cli.main"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_properties(path: Path, conf: Mapping[str, object]) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in conf.items()), encoding="utf-8")
    return path


class MirrorProcess:
    """`kmirror <args>` in the background with its stderr captured to a file."""

    def __init__(
        self,
        args: Sequence[str],
        log_path: Path,
        env: Mapping[str, str] | None = None,
        metrics_port: int | None = None,
    ) -> None:
        self.metrics_port = free_port() if metrics_port is None else metrics_port
        self.args = [*args]
        if "--metrics-port" not in self.args and args and args[0] == "run":
            self.args += ["--metrics-port", str(self.metrics_port)]
        self.log_path = log_path
        self.env = {**os.environ, **(env or {})}
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> MirrorProcess:
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in wait()
        self.proc = subprocess.Popen(
            [*KMIRROR, *self.args],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=self.env,
            cwd=REPO_ROOT,
            start_new_session=True,
        )
        return self

    def __enter__(self) -> MirrorProcess:
        return self.start()

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.proc and self.proc.poll() is None:
            self.kill()

    @property
    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def signal(self, sig: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    def wait(self, timeout: float = 60.0) -> int:
        assert self.proc is not None
        code = self.proc.wait(timeout)
        self._log.close()
        return code

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM and wait: the graceful path (flush, commit, exit 0)."""
        self.signal(signal.SIGTERM)
        return self.wait(timeout)

    def kill(self) -> int:
        """SIGKILL the whole process group (supervisor and streams): a crash."""
        assert self.proc is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        return self.wait(30)

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def get(self, path: str, timeout: float = 2.0) -> tuple[int, str]:
        import urllib.error
        import urllib.request

        try:
            with urllib.request.urlopen(
                f"http://127.0.0.1:{self.metrics_port}{path}", timeout=timeout
            ) as r:
                return int(r.status), r.read().decode()
        except urllib.error.HTTPError as e:
            return int(e.code), e.read().decode()

    def wait_ready(self, timeout: float = 60.0) -> None:
        def ready() -> bool:
            if not self.running():
                raise AssertionError(f"kmirror exited early:\n{self.log}")
            try:
                return self.get("/readyz")[0] == 200
            except OSError:
                return False

        wait_until(ready, timeout, 0.3)


def run_cli(
    args: Sequence[str], timeout: float = 120.0, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `kmirror <args>` to completion."""
    started = time.monotonic()
    result = subprocess.run(
        [*KMIRROR, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        cwd=REPO_ROOT,
        check=False,
    )
    result.elapsed = time.monotonic() - started  # type: ignore[attr-defined]
    return result
