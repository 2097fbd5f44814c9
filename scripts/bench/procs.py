"""A contender's processes: started and stopped by scripts.kmirrorproc.ProcessGroup (own process
group, SIGTERM then SIGKILL to the group), with the CPU and RSS of the whole tree sampled
(psutil)."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import psutil

from scripts.kmirrorproc import ProcessGroup, kill_all

__all__ = ["SAMPLE_INTERVAL_S", "Tree", "kill_all"]

SAMPLE_INTERVAL_S = 0.2


class Tree(ProcessGroup):
    """A started process and everything below it. CPU is user+system, summed per pid with the
    last value seen, so a child that exits between samples keeps what it used."""

    def __init__(
        self,
        cmd: Sequence[str],
        log_path: Path,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> None:
        super().__init__(cmd, log_path, env, cwd)
        self.started = time.monotonic()
        self.start()
        self._root = psutil.Process(self.pid)
        self._procs: dict[int, psutil.Process] = {self.pid: self._root}
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

    # Not ProcessGroup.stop's form: the benchmark (and branches built on it) takes the exit code
    # (None when it had to be killed) and the seconds the stop took.
    def stop(self, grace_s: float = 15.0) -> tuple[int | None, float]:  # type: ignore[override]
        """SIGTERM the root, SIGKILL the group after grace_s. Returns (exit code, seconds)."""
        t0 = time.monotonic()
        self._stop.set()
        code = self.terminate(grace_s)
        self._thread.join(2)
        return code, time.monotonic() - t0
