"""The soak's arithmetic (tests/faults/test_soak.py), pure and broker-free so that
tests/faults/test_soak_logic.py can check it: the least-squares slope of a resource over the
run, the summary of the samples, the load's rate, and the record-by-record verdict computed on
content hashes.

Why hashes: an hour of load is tens of millions of records, too many to hold as records (the
harness's `compare` keeps every record of both sides in memory, several hundred bytes each).
The verdict here keeps 16 bytes per record (its content's hash and its offset) and computes
exactly what harness.verdict computes: missing, extra, duplicates, partitions out of order.
Two different contents share a 64-bit hash with a probability of about n²/2⁶⁵ (under 10⁻⁴ for
50 M records): the one way this verdict could differ from the exact one.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tests.faults.harness import Verdict
from tests.kafkatools import Rec

MB = 2**20
HOUR_S = 3600.0
# One load record on a broker's disk: key (10 B), value (92 B), one header, the record's own
# overhead, its share of a batch of about 100 (tests/faults/harness.py's Load).
RECORD_DISK_BYTES = 130
REPLICAS = 3  # every topic of the 3-broker clusters (tests/faults/cluster3.py)
SIDES = 2  # the source and the target each hold every record


@dataclass(frozen=True)
class Sample:
    """One look at the mirror, `t` seconds into the soak."""

    t: float
    rss_bytes: int  # the mirror's process tree: supervisor and stream children
    fds: int  # open file descriptors of that tree
    processes: int
    lag: int | None  # records on the source not committed yet; None: the check failed


def slope(points: Sequence[tuple[float, float]]) -> float:
    """The least-squares slope of y over x (0.0 with fewer than two distinct x)."""
    n = len(points)
    if n < 2:
        return 0.0
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if sxx == 0:
        return 0.0
    return sum((x - mx) * (y - my) for x, y in points) / sxx


def summarize(samples: Sequence[Sample], warmup_s: float) -> dict[str, Any]:
    """RSS and descriptors over the run: their slopes per hour after the warm-up (the first
    connections, buffers and caches are not a leak), first, last and peak values; the lag's
    peak over the whole run."""
    after = [s for s in samples if s.t >= warmup_s]
    lags = [s.lag for s in samples if s.lag is not None]
    rss = [s.rss_bytes / MB for s in after]
    fds = [s.fds for s in after]
    return {
        "samples": len(samples),
        "warmup_s": warmup_s,
        "window_s": round(after[-1].t - after[0].t, 1) if after else 0.0,
        "rss_slope_mb_per_h": round(slope([(s.t / HOUR_S, s.rss_bytes / MB) for s in after]), 2),
        "fd_slope_per_h": round(slope([(s.t / HOUR_S, float(s.fds)) for s in after]), 2),
        "rss_mb_first": round(rss[0], 1) if rss else None,
        "rss_mb_last": round(rss[-1], 1) if rss else None,
        "rss_mb_max": round(max(rss), 1) if rss else None,
        "fds_first": fds[0] if fds else None,
        "fds_last": fds[-1] if fds else None,
        "fds_max": max(fds) if fds else None,
        "processes_max": max((s.processes for s in samples), default=0),
        "lag_max": max(lags, default=None),
        "lag_samples_failed": sum(1 for s in samples if s.lag is None),
    }


def planned_rate(
    capacity: float, fraction: float, seconds: float, disk_bytes: float
) -> tuple[int, str]:
    """The load's records/s: `fraction` of the measured capacity, unless the disk cannot hold
    that much for `seconds` (every record is on REPLICAS brokers of each of SIDES clusters and
    nothing expires before the final comparison); then what the disk holds. With the reason."""
    wanted = int(capacity * fraction)
    held = int(disk_bytes / (seconds * RECORD_DISK_BYTES * REPLICAS * SIDES))
    if held < wanted:
        return held, (
            f"the disk budget: {disk_bytes / 1e9:.1f} GB hold {held} records/s for "
            f"{seconds / 60:.0f} min, less than {fraction:.0%} of {capacity:.0f}"
        )
    return wanted, f"{fraction:.0%} of the measured capacity ({capacity:.0f} records/s)"


# --------------------------------------------------------------------------- the verdict


@dataclass
class Hashes:
    """One partition of one side as read back: each record's content hash and offset, in
    offset order."""

    hashes: array[int] = field(default_factory=lambda: array("q"))
    offsets: array[int] = field(default_factory=lambda: array("q"))


def collect(records: Iterable[Rec]) -> dict[int, Hashes]:
    """Per partition, the hash of every record's content (Rec.content: everything a faithful
    mirror preserves). Each partition's records must come in offset order (iter_records)."""
    out: dict[int, Hashes] = {}
    for r in records:
        h = out.get(r.partition)
        if h is None:
            h = out[r.partition] = Hashes()
        h.hashes.append(hash(r.content()))
        h.offsets.append(r.offset)
    return out


def _arr(h: Hashes | None) -> np.ndarray[Any, np.dtype[np.int64]]:
    if h is None:
        return np.zeros(0, dtype=np.int64)
    return np.frombuffer(h.hashes, dtype=np.int64)


def hashed_verdict(src: Mapping[int, Hashes], dst: Mapping[int, Hashes]) -> Verdict:
    """harness.verdict on hashes: the source's records are unique (the load's keys are
    sequence numbers); missing: a source record the target lacks; extra: a target record the
    source never had; duplicates: copies beyond the first; a partition is out of order when
    the first copies of its records on the target are not in source order."""
    produced = mirrored = missing = extra = duplicates = order = 0
    sample: list[str] = []
    for p in sorted(set(src) | set(dst)):
        s, t = _arr(src.get(p)), _arr(dst.get(p))
        produced, mirrored = produced + len(s), mirrored + len(t)
        on_target = np.isin(s, t)
        lost = np.flatnonzero(~on_target)
        missing += len(lost)
        if len(lost) and len(sample) < 10:
            offsets = src[p].offsets
            sample += [f"{p}@{offsets[i]}" for i in lost[: 10 - len(sample)]]
        extra += int((~np.isin(t, s)).sum())
        _, first, counts = np.unique(t, return_index=True, return_counts=True)
        duplicates += int((counts - 1).sum())
        if p in src:
            firsts = t[np.sort(first)]
            got = firsts[np.isin(firsts, s)]
            order += 0 if np.array_equal(s[on_target], got) else 1
    return Verdict(
        produced=produced,
        mirrored=mirrored,
        missing=missing,
        duplicates=duplicates,
        extra=extra,
        order_violations=order,
        missing_sample=sample,
    )
