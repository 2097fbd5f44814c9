"""A contender's processes: start in their own process group, sample CPU and RSS of the whole
tree (psutil), stop (SIGTERM, then SIGKILL to the group)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

import psutil

SAMPLE_INTERVAL_S = 0.2

# Every process group this harness started and has not reaped: killed on any exit.
_LIVE: dict[int, subprocess.Popen[bytes]] = {}


class Tree:
    """A started process and everything below it. CPU is user+system, summed per pid with the
    last value seen, so a child that exits between samples keeps what it used."""

    def __init__(
        self,
        cmd: Sequence[str],
        log_path: Path,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.cmd = list(cmd)
        self.log_path = log_path
        self._log: IO[bytes] = open(log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            self.cmd,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
            cwd=cwd,
            start_new_session=True,
        )
        _LIVE[self.proc.pid] = self.proc
        self._root = psutil.Process(self.proc.pid)
        self._procs: dict[int, psutil.Process] = {self.proc.pid: self._root}
        self._cpu: dict[int, float] = {}
        self.peak_rss = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sampler, daemon=True)
        self._thread.start()

    # -- sampling --------------------------------------------------------------------------

    def sample(self) -> float:
        """Take a sample now; returns the tree's CPU seconds so far."""
        with self._lock:
            try:
                kids = self._root.children(recursive=True)
            except psutil.Error:
                kids = []
            for k in kids:
                self._procs.setdefault(k.pid, k)
            rss = 0
            for pid, pr in list(self._procs.items()):
                try:
                    with pr.oneshot():
                        t = pr.cpu_times()
                        mem = pr.memory_info().rss
                except psutil.Error:
                    continue
                self._cpu[pid] = t.user + t.system
                rss += mem
            self.peak_rss = max(self.peak_rss, rss)
            return sum(self._cpu.values())

    def _sampler(self) -> None:
        while not self._stop.wait(SAMPLE_INTERVAL_S):
            self.sample()

    @property
    def cpu_s(self) -> float:
        with self._lock:
            return sum(self._cpu.values())

    @property
    def process_count(self) -> int:
        return len(self._procs)

    # -- lifecycle -------------------------------------------------------------------------

    def running(self) -> bool:
        return self.proc.poll() is None

    def stop(self, grace_s: float = 15.0) -> tuple[int | None, float]:
        """SIGTERM the root, SIGKILL the group after grace_s. Returns (exit code, seconds)."""
        t0 = time.monotonic()
        self._stop.set()
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(signal.SIGTERM)
        code: int | None
        try:
            code = self.proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            code = None
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # stragglers of a clean exit, too
        if code is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(10)
        _LIVE.pop(self.proc.pid, None)
        self._thread.join(2)
        self._log.close()
        return code, time.monotonic() - t0

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


def kill_all() -> None:
    """Kill every process group still running (used on abnormal exit)."""
    for pid, proc in list(_LIVE.items()):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(5)
        _LIVE.pop(pid, None)
