"""Progress on stderr: one line per step with the elapsed time; on a TTY, an in-place counter
while a step waits."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.t0 = time.monotonic()
        self.tty = self.stream.isatty()
        self._inplace = False
        self._last = 0.0

    def elapsed(self) -> str:
        s = int(time.monotonic() - self.t0)
        return f"{s // 60:02d}:{s % 60:02d}"

    def line(self, text: str) -> None:
        self._clear()
        self.stream.write(f"[{self.elapsed()}] {text}\n")
        self.stream.flush()

    def tick(self, text: str) -> None:
        """A transient status (TTY only, at most ~5 per second)."""
        if not self.tty:
            return
        now = time.monotonic()
        if now - self._last < 0.2:
            return
        self._last = now
        self.stream.write(f"\r\x1b[2K[{self.elapsed()}]   {text}")
        self.stream.flush()
        self._inplace = True

    def _clear(self) -> None:
        if self._inplace:
            self.stream.write("\r\x1b[2K")
            self._inplace = False
