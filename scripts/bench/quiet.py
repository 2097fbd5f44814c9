"""Start every measured run on a quiet machine, with the backlog it reads in the page cache.

The quiet machine: in session 20's whole `make bench` the runs that started right after the
latency and sustained phases (load average 5-9) included some at half the rate of the same
contender elsewhere, and which contender drew such a start decided ratios like the
exactly-once cost. The load average trails the machine by a minute, so the test here is the
CPU time itself: `/proc/stat`, busy including I/O wait (the brokers' disks are part of the
machine a mirror needs), sampled each second until a few samples in a row are under a
threshold, or a cap passes. Every run records how long it waited and how busy the machine was
when it started, so a run that started on a busy machine (the cap) shows in the JSON. In
session 21's two runs every wait was 3-8 s: the CPU was idle, the slow runs had the cause
below, and the wait stays as a guard.

The backlog: session 21's first run showed the first 100 B drain of each repetition at
about 40-60 % of the later ones whichever contender drew it (kmirror 732,869 first against
1,856,514 and 1,773,305; exactly-once 1,099,800 first against 1,906,327), on a quiet CPU.
Between two drains of one workload the others copy about 16 GB through the target broker and
read their own backlogs, more than the 20 GB page cache keeps beside them: the first reader of
a workload read its backlog from disk, the next ones from memory. So each drain first reads its
source topic's log files (the bench's own cluster: the files are on this machine), as a backlog
just produced would be: about 10 s for a backlog that left the cache, under a second otherwise.
The next run's first drains of repetitions 2 and 3 then ran at full speed; those of repetition
1, right after the preloads, did not. Not the dirty pages the preloads left: session 22
measured 0-4 MB before every drain (`dirty_mb_at_start`); the uncounted warm-up round
(run.py) takes that slow start instead, in full in one run and in part in the other.

The disk: each run also starts with nothing left to write (`flush_disk`: one sync(2), how long
it took and how much was dirty before it, in the JSON), so the kernel's write-back of the
preloads or of the last run's copy does not share the disk with the next run. The bench's
brokers delete a deleted topic's files at once (scripts/bench/clusters.py), so the last run's
copy is gone, not written back, before that sync.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

PROC_STAT = Path("/proc/stat")
PROC_MEMINFO = Path("/proc/meminfo")
READ_CHUNK_B = 8 << 20


@dataclass(frozen=True)
class Quiet:
    """When the machine counts as quiet: `samples` one-second samples in a row with less than
    `busy_below` of all CPUs busy, waiting at most `max_wait_s` (with the two idle brokers the
    last sample's median was 2.5 % over session 21's 99 starts)."""

    busy_below: float = 0.20
    samples: int = 3
    sample_s: float = 1.0
    max_wait_s: float = 90.0


def cpu_times(stat: Path = PROC_STAT) -> tuple[int, int]:
    """(all jiffies, idle jiffies) of the machine; I/O wait counts as busy."""
    fields = stat.read_text().splitlines()[0].split()
    if fields[:1] != ["cpu"]:
        raise RuntimeError(f"{stat} does not start with the machine's cpu line: {fields[:1]}")
    values = [int(v) for v in fields[1:]]
    # user nice system idle iowait irq softirq steal (guest time is inside user already)
    return sum(values[:8]), values[3]


def dirty_mb(meminfo: Path = PROC_MEMINFO) -> int:
    """Page cache not yet on disk (Dirty + Writeback), MB: recorded at each run's start, for
    the first repetition's slow drains after the preloads (docs/benchmarks.md, session 21)."""
    kb = 0
    for line in meminfo.read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in ("Dirty", "Writeback"):
            kb += int(rest.split()[0])
    return kb // 1024


def flush_disk(
    sync: Callable[[], None] = os.sync, meminfo: Path = PROC_MEMINFO
) -> dict[str, float]:
    """Write every dirty page to disk before a run; what was dirty and how long it took."""
    dirty = dirty_mb(meminfo)
    started = time.monotonic()
    sync()
    return {"dirty_mb_at_start": dirty, "sync_s": round(time.monotonic() - started, 1)}


def busy_sampler(stat: Path = PROC_STAT) -> Callable[[float], float]:
    """A function that sleeps `seconds` and returns the busy fraction over them."""

    def sample(seconds: float) -> float:
        total0, idle0 = cpu_times(stat)
        time.sleep(seconds)
        total1, idle1 = cpu_times(stat)
        total = total1 - total0
        return 1.0 - (idle1 - idle0) / total if total > 0 else 0.0

    return sample


def wait_quiet(
    policy: Quiet = Quiet(),
    sample: Callable[[float], float] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, float | bool]:
    """Wait for a quiet machine; what it took: seconds waited, the last sample, quiet or not."""
    sample = sample or busy_sampler()
    started = clock()
    calm = 0
    while True:
        busy = sample(policy.sample_s)
        calm = calm + 1 if busy < policy.busy_below else 0
        waited = clock() - started
        if calm >= policy.samples or waited >= policy.max_wait_s:
            return {
                "settle_s": round(waited, 1),
                "busy_at_start": round(busy, 3),
                "quiet_at_start": calm >= policy.samples,
            }


def warm_backlog(data_dir: Path, topic: str) -> dict[str, float]:
    """Read every log segment of `topic` under a broker's `data_dir` once (into the page
    cache); how long it took and how much it read."""
    started = time.monotonic()
    read = 0
    segments = sorted(
        f
        for d in data_dir.glob(f"{topic}-*")
        if d.name[len(topic) + 1 :].isdigit()  # not topic-x-0: another topic's partition
        for f in d.glob("*.log")
    )
    if not segments:
        raise RuntimeError(f"no log segments of {topic} under {data_dir}: nothing to warm")
    buf = bytearray(READ_CHUNK_B)
    for segment in segments:
        with segment.open("rb", buffering=0) as f:
            while n := f.readinto(buf):
                read += n
    return {"warm_s": round(time.monotonic() - started, 1), "warm_mb": round(read / 2**20)}
