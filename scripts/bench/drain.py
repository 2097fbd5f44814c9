"""One drain: watch a contender copy a workload's backlog and measure it.

Every POLL_S the target's end offsets are read with one ListOffsets request (exactly-once: the
source group's committed offsets, committed right after each transaction). The copy window
opens at the first poll that sees records on the target and closes when every partition holds
the source's records (complete), or, with `max_copy_s`, when the window has lasted that long
(cut: records/s over the window; what was copied must not exceed the source in any
partition). A partition that ever holds more records than its source partition is a
duplicate: the run fails. So does a timeout or a contender that exits on its own.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scripts.bench import kafkaio, procs

POLL_S = 0.1

Mark = tuple[float, int, float]  # (monotonic time, records on the target, CPU seconds)


@dataclass
class Drain:
    source: str
    target: str
    topic: str
    partitions: int
    record_bytes: float
    exactly_once: bool
    group: str
    timeout_s: float
    max_copy_s: float | None
    tick: Callable[[str], None]
    label: str

    def watch(self, tree: procs.Tree, source_end: list[int], res: dict[str, Any]) -> None:
        """Fill `res` with the measurement; res["verified"] is True only if it holds."""
        total = sum(source_end)
        t0 = tree.started
        deadline = t0 + self.timeout_s
        first: Mark | None = None
        before: Mark | None = None  # the last poll that saw nothing on the target
        while True:
            ends, started = self._ends(first is not None)
            now = time.monotonic()
            copied = sum(ends)
            if first is None:
                first, before = open_window(started, before, now, copied, total, tree)
            complete = ends == source_end
            cut = (
                not complete
                and first is not None
                and self.max_copy_s is not None
                and now - first[0] >= self.max_copy_s
            )
            if complete or cut:
                cpu = tree.sample()
                res["peak_rss_drain_mb"] = tree.peak_rss / 2**20
                break
            if any(t > s for t, s in zip(ends, source_end, strict=True)):
                res["error"] = f"target has more records than the source: {ends} > {source_end}"
                return
            if not tree.running():
                res["error"] = f"{self.label} exited with {tree.returncode} before the end"
                return
            if now > deadline:
                res["error"] = f"timeout: {copied:,}/{total:,} after {now - t0:.0f}s"
                res["target_end"] = ends
                return
            self.tick(f"{self.label}: {copied:,}/{total:,} on the target ({now - t0:.1f} s)")
            time.sleep(POLL_S)
        assert first is not None
        if complete and self.exactly_once:
            counted = kafkaio.count_committed(self.target, self.topic, self.partitions)
            if counted != source_end:
                res["error"] = f"read_committed counts {counted} != source {source_end}"
                res["target_end"] = counted
                return
        t_first, n_first, cpu_first = first
        copy_s = max(now - t_first, 1e-6)
        n = copied - n_first
        if n <= 0:
            # Exactly-once: records written but none committed within the window.
            res["error"] = f"nothing copied within the {copy_s:.1f} s window"
            res["target_end"] = ends
            return
        res.update(
            {
                "verified": True,
                "complete": complete,
                "target_end": ends,
                "copied": copied,
                "first_record_s": round(t_first - t0, 3),
                "wall_s": round(now - t0, 3),
                "copy_s": round(copy_s, 3),
                "rate_rps": n / copy_s,
                "rate_mbps": n * self.record_bytes / copy_s / 1e6,
                "cpu_s_total": cpu,
                "cpu_s_copy": cpu - cpu_first,
                "cpu_s_per_m": (cpu - cpu_first) / max(n, 1) * 1e6,
                "cpu_s_per_m_with_startup": cpu / max(copied, 1) * 1e6,
            }
        )

    def _ends(self, started: bool) -> tuple[list[int], bool]:
        """(what counts as copied per partition, whether anything reached the target)."""
        if self.exactly_once:
            # Target offsets count transaction markers too: what is committed is known from
            # the group (verified at the end). The window opens at the first record written,
            # committed or not.
            ends = kafkaio.committed(self.source, self.group, self.topic, self.partitions)
            return ends, started or bool(
                sum(kafkaio.end_offsets(self.target, self.topic, self.partitions))
            )
        ends = kafkaio.end_offsets(self.target, self.topic, self.partitions)
        return ends, sum(ends) > 0


def open_window(
    started: bool, before: Mark | None, now: float, copied: int, total: int, tree: procs.Tree
) -> tuple[Mark | None, Mark | None]:
    """(where the copy window opens, or None yet; the last poll that saw nothing). The window
    opens at the first poll that sees records -- or at the poll before it, when that first poll
    already sees all of them (a smoke run's backlog can be copied within one 100 ms poll): the
    rate is then a lower bound instead of 0."""
    if not started:
        return None, (now, 0, tree.sample())
    if before is not None and copied == total:
        return before, before
    return (now, copied, tree.sample()), before
