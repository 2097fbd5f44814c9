"""Progress lines for long runs: a daemon thread polls Spark's status tracker and writes to
stderr, every second on a terminal (one line, rewritten), else every `interval` seconds."""

from __future__ import annotations

import sys
import threading
import time
from types import TracebackType
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class Progress:
    def __init__(
        self,
        spark: SparkSession | None,
        interval: float = 30.0,
        stream: TextIO | None = None,
        tty: bool | None = None,
        enabled: bool = True,
    ) -> None:
        self._spark = spark
        self._stream = stream or sys.stderr
        self._tty = self._stream.isatty() if tty is None else tty
        self._interval = 1.0 if self._tty else max(0.1, interval)
        self._enabled = enabled
        self._phase = "starting"
        self._started = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_len = 0
        self.lines = 0  # how many progress lines were written (tests look at it)

    def phase(self, name: str) -> None:
        self._phase = name
        if self._enabled and not self._tty:
            self._write(self._line(None))

    def attach(self, spark: SparkSession) -> None:
        self._spark = spark

    def __enter__(self) -> Progress:
        if self._enabled:
            self._thread = threading.Thread(target=self._run, name="kmirror-progress",
                                            daemon=True)  # fmt: skip
            self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._tty and self._last_len:
            self._stream.write("\n")
            self._stream.flush()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self._write(self._line(self._tasks()))
            except Exception:  # the JVM may be going away at shutdown; progress is optional
                return

    def _tasks(self) -> tuple[int, int, int, int] | None:
        """(active stages, tasks done, tasks running, tasks total) of the running stages."""
        if self._spark is None:
            return None
        tracker = self._spark.sparkContext.statusTracker()
        done = running = total = 0
        stages = tracker.getActiveStageIds()
        for sid in stages:
            info = tracker.getStageInfo(sid)
            if info is not None:
                done += info.numCompletedTasks
                running += info.numActiveTasks
                total += info.numTasks
        return len(stages), done, running, total

    def _line(self, tasks: tuple[int, int, int, int] | None) -> str:
        elapsed = time.monotonic() - self._started
        text = f"[kmirror-validate {elapsed:6.0f}s] {self._phase}"
        if tasks is not None and tasks[0]:
            stages, done, running, total = tasks
            text += f": {done}/{total} tasks done, {running} running ({stages} stages)"
        return text

    def _write(self, line: str) -> None:
        self.lines += 1
        if self._tty:
            pad = max(0, self._last_len - len(line))
            self._stream.write("\r" + line + " " * pad)
            self._last_len = len(line)
        else:
            self._stream.write(line + "\n")
        self._stream.flush()
