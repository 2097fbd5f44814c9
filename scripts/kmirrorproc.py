"""Run kmirror (or any tool) as a subprocess the way users and the image do: shared by the tests
(tests/mirrorproc.py, tests/faults), the benchmark (scripts/bench) and the demo.

- ``mm1_args`` writes the MirrorMaker 1 consumer/producer files and returns the ``run`` argv.
- ``ProcessGroup`` starts a command in its own session (so a kill reaches the supervisor's
  stream processes too), appends its output to a log file and stops it SIGTERM-then-SIGKILL.
- ``run_to_end`` runs a command to completion and records how long it took.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

REPO_ROOT = Path(__file__).resolve().parent.parent
KMIRROR_MODULE = "kmirror.cli.main"
KMIRROR = [sys.executable, "-m", KMIRROR_MODULE]

# Every process group started here and not reaped yet: kill_all() ends them on abnormal exit.
_LIVE: dict[int, subprocess.Popen[bytes]] = {}


def write_properties(path: Path, conf: Mapping[str, object]) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in conf.items()), encoding="utf-8")
    return path


def mm1_args(
    workdir: Path,
    source: str,
    target: str,
    group: str,
    whitelist: str,
    *,
    consumer: Mapping[str, object] | None = None,
    producer: Mapping[str, object] | None = None,
    commit_interval_ms: int | None = 1000,
    extra: Sequence[str] = (),
    prefix: str = "",
) -> list[str]:
    """`run --consumer.config … --producer.config … --whitelist …` with the two files written to
    workdir (named `<prefix>consumer.properties` / `<prefix>producer.properties`). A commit
    interval of None leaves kmirror's default (60 s) in place."""
    cprops = write_properties(
        workdir / f"{prefix}consumer.properties",
        {"bootstrap.servers": source, "group.id": group, **(consumer or {})},
    )
    pprops = write_properties(
        workdir / f"{prefix}producer.properties",
        {"bootstrap.servers": target, **(producer or {})},
    )
    args = ["run", "--consumer.config", str(cprops), "--producer.config", str(pprops)]
    args += ["--whitelist", whitelist]
    if commit_interval_ms is not None:
        args += ["--offset.commit.interval.ms", str(commit_interval_ms)]
    return [*args, *extra]


class ProcessGroup:
    """`cmd` in its own process group, stdout and stderr appended to `log_path`."""

    def __init__(
        self,
        cmd: Sequence[str],
        log_path: Path,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = REPO_ROOT,
    ) -> None:
        self.cmd = list(cmd)
        self.log_path = log_path
        self.env = {**os.environ, **(env or {})}
        self.cwd = cwd
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    def start(self) -> ProcessGroup:
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in wait()
        self.proc = subprocess.Popen(
            self.cmd,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=self.env,
            cwd=self.cwd,
            start_new_session=True,
        )
        _LIVE[self.proc.pid] = self.proc
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None, "not started"
        return self.proc.pid

    @property
    def returncode(self) -> int | None:
        return None if self.proc is None else self.proc.returncode

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig: int) -> None:
        assert self.proc is not None, "not started"
        self.proc.send_signal(sig)

    def wait(self, timeout: float | None = 60.0) -> int:
        """The exit code; raises subprocess.TimeoutExpired if it is still running."""
        assert self.proc is not None, "not started"
        code = self.proc.wait(timeout)
        _LIVE.pop(self.proc.pid, None)
        if self._log is not None:
            self._log.close()
        return code

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM and wait: the graceful path (flush, commit, exit 0)."""
        self.signal(signal.SIGTERM)
        return self.wait(timeout)

    def kill(self) -> int:
        """SIGKILL the whole process group (supervisor and streams): a crash."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        return self.wait(30)

    def terminate(self, grace_s: float) -> int | None:
        """SIGTERM, then SIGKILL the group after grace_s (Kubernetes' way); the group's
        stragglers are killed after a clean exit too. The exit code, or None if it had to be
        killed (`returncode` then holds the signal)."""
        with contextlib.suppress(ProcessLookupError):
            self.signal(signal.SIGTERM)
        code: int | None
        try:
            code = self.wait(grace_s)
        except subprocess.TimeoutExpired:
            code = None
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        if code is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.wait(10)
        return code

    @property
    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.splitlines()[-lines:])
        except OSError:
            return ""


def kill_all() -> None:
    """Kill every process group still running (used on abnormal exit)."""
    for pid, proc in list(_LIVE.items()):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(5)
        _LIVE.pop(pid, None)


def run_to_end(
    cmd: Sequence[str], env: Mapping[str, str], timeout: float, cwd: Path = REPO_ROOT
) -> subprocess.CompletedProcess[str]:
    """`cmd` to completion with exactly `env`, output captured; `.elapsed` holds the seconds."""
    started = time.monotonic()
    result = subprocess.run(
        list(cmd),
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(env),
        cwd=cwd,
        check=False,
    )
    result.elapsed = time.monotonic() - started  # type: ignore[attr-defined]
    return result
