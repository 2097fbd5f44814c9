"""The soak's arithmetic without a broker (tests/faults/soakstats.py): the slope it judges
leaks by, the rate it loads the source at, and its verdict, which must say what the harness's
exact record-by-record verdict says."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from dataclasses import replace

import psutil
import pytest

from tests.faults.harness import verdict
from tests.faults.report import soak_table
from tests.faults.soak import ROTATION, Settings, capacity_of, tree_usage
from tests.faults.soakstats import (
    MB,
    Sample,
    collect,
    hashed_verdict,
    planned_rate,
    slope,
    summarize,
)
from tests.kafkatools import TIMESTAMP_CREATE_TIME, Rec

pytestmark = pytest.mark.unit


def test_slope_is_the_least_squares_fit() -> None:
    assert slope([(0, 1), (1, 3), (2, 5), (3, 7)]) == pytest.approx(2.0)
    # Noise around a flat line: about zero; around a line of slope -0.5: about -0.5.
    rnd = random.Random(3)
    flat = [(float(x), 100 + rnd.uniform(-5, 5)) for x in range(1000)]
    assert abs(slope(flat)) < 0.01
    assert slope([(x, y - 0.5 * x) for x, y in flat]) == pytest.approx(-0.5, abs=0.01)
    # Nothing to fit: no slope rather than a division by zero.
    assert slope([]) == slope([(1, 5)]) == slope([(2, 1), (2, 9)]) == 0.0


def _sample(t: float, rss_mb: float, fds: int, lag: int | None = 10) -> Sample:
    return Sample(t=t, rss_bytes=int(rss_mb * MB), fds=fds, processes=2, lag=lag)


def test_summary_leaves_the_warm_up_out_of_the_slopes() -> None:
    """A mirror that grows while it starts (connections, buffers) and then stays flat has no
    leak; one that keeps growing by 1 MB and 1 descriptor every 6 minutes has 10 of each per
    hour."""
    warm = [_sample(t, 20 + t / 10, 10 + int(t // 60)) for t in range(0, 300, 10)]
    flat = [_sample(t, 50, 15, lag=None if t == 900 else 100) for t in range(300, 3600, 10)]
    s = summarize(warm + flat, warmup_s=300)
    assert s["rss_slope_mb_per_h"] == 0.0 and s["fd_slope_per_h"] == 0.0
    assert (s["rss_mb_first"], s["rss_mb_max"], s["fds_max"]) == (50.0, 50.0, 15)
    assert s["window_s"] == 3290.0 and s["lag_max"] == 100 and s["lag_samples_failed"] == 1
    leak = [_sample(t, 50 + t / 360, 15 + t // 360) for t in range(300, 3600, 10)]
    s = summarize(warm + leak, warmup_s=300)
    assert s["rss_slope_mb_per_h"] == pytest.approx(10.0, abs=0.05)
    assert s["fd_slope_per_h"] == pytest.approx(10.0, abs=0.5)


def test_rate_is_the_fraction_of_capacity_unless_the_disk_cannot_hold_it() -> None:
    rate, why = planned_rate(10_000, 0.7, 600, disk_bytes=100e9)
    assert rate == 7000 and "70% of the measured capacity" in why
    # An hour at 7,000 records/s is 7000 * 3600 * 130 B on six replicas: 19.7 GB.
    rate, why = planned_rate(10_000, 0.7, 3600, disk_bytes=8e9)
    assert rate == 2849 and "disk budget" in why and "8.0 GB" in why


def _rec(p: int, off: int, seq: int) -> Rec:
    return Rec("t", p, off, b"%010d" % seq, b"v%d" % seq, [("load", b"x")], 1000 + seq, 1)


def _check(src: list[Rec], dst: list[Rec]) -> None:
    """The hashed verdict equals the exact one on the same records (its sample of missing
    records names partition and offset, without the key)."""
    hashed, exact = hashed_verdict(collect(src), collect(dst)), verdict(src, dst)
    assert hashed.missing_sample == [m.split(":")[0] for m in exact.missing_sample]
    assert replace(hashed, missing_sample=[]) == replace(exact, missing_sample=[])


def test_verdict_on_hashes_is_the_exact_verdict() -> None:
    src = [_rec(p, i, 2 * i + p) for p in (0, 1) for i in range(50)]
    _check(src, [])
    _check([], src)
    exact = [_rec(r.partition, r.offset + 7, int(r.key or b"0")) for r in src]
    _check(src, exact)
    assert hashed_verdict(collect(src), collect(exact)).missing == 0
    # At-least-once: a replayed range (duplicates), a lost record, one the source never had.
    replay = exact[:30] + exact[20:30] + exact[31:50] + [_rec(0, 99, 1001)] + exact[50:]
    v = hashed_verdict(collect(src), collect(replay))
    assert (v.missing, v.duplicates, v.extra, v.order_violations) == (1, 10, 1, 0)
    assert v.missing_sample == ["0@30"]
    _check(src, replay)
    # Out of order: two records of partition 1 swapped.
    swapped = [*exact[:60], exact[61], exact[60], *exact[62:]]
    assert hashed_verdict(collect(src), collect(swapped)).order_violations == 1
    _check(src, swapped)
    # A different timestamp (or any other byte of the content) is another record.
    other_ts = [
        Rec(r.topic, r.partition, r.offset, r.key, r.value, r.headers, r.timestamp + 1,
            TIMESTAMP_CREATE_TIME) if r.offset == 10 else r
        for r in exact
    ]  # fmt: skip
    v = hashed_verdict(collect(src), collect(other_ts))
    assert (v.missing, v.extra) == (2, 2)
    _check(src, other_ts)


def test_capacity_is_the_rate_between_the_first_commit_and_the_end() -> None:
    # Joined and fetched for 2 s, then 10,000 records a second until 50,000.
    points = [(0.5, 0), (1.0, 0), (2.0, 10_000), (3.0, 20_000), (6.0, 50_000)]
    assert capacity_of(points, 50_000)["records_per_s"] == 10_000
    # All copied within one commit interval: the whole run's average (too short to tell more).
    assert capacity_of([(0.4, 0), (1.6, 30_000)], 30_000)["records_per_s"] == 18_750


def test_settings_name_the_variable_that_is_wrong(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in os.environ if n.startswith("KMIRROR_SOAK_")]:
        monkeypatch.delenv(name)
    s = Settings.from_env()
    assert (s.seconds, s.every_s, s.hold_s, s.rate, s.share) == (3600, 300, 60, 0, 0.7)
    monkeypatch.setenv("KMIRROR_SOAK_MINUTES", "4")
    monkeypatch.setenv("KMIRROR_SOAK_FAULT_EVERY_S", "60")
    s = Settings.from_env()
    assert (s.seconds, s.every_s, s.hold_s) == (240, 60, 12)
    for name, bad in [("KMIRROR_SOAK_MINUTES", "an hour"), ("KMIRROR_SOAK_LOAD", "70")]:
        monkeypatch.setenv(name, bad)
        with pytest.raises(ValueError, match=f"{name}='{bad}': want a number from"):
            Settings.from_env()
        monkeypatch.delenv(name)
    monkeypatch.setenv("KMIRROR_SOAK_ENGINE", "fast")
    with pytest.raises(ValueError, match="KMIRROR_SOAK_ENGINE='fast': want auto, record or batch"):
        Settings.from_env()


def test_the_report_shows_the_slopes_and_says_whether_they_were_judged() -> None:
    samples = [_sample(t, 50 + t / 3600, 15) for t in range(0, 3600, 10)]
    summary = {**summarize(samples, 300), "slopes_judged": True, "load_records_per_s": 6990}
    doc = {
        "created": "2026-11-27T14:00:00Z",
        "git": "abc1234",
        "host": {"cpus": 2},
        "settings": {"seconds": 3600, "every_s": 300, "hold_s": 60, "engine": "auto", "eos": False},
        "load_average": {"start": 1.5, "mean": 3.2, "max": 6.1, "end": 2.0},
        "capacity": {"records_per_s": 10_000},
        "rate": {"records_per_s": 7000, "why": "70% of the measured capacity"},
        "summary": summary,
        "result": {
            "faults": 1,
            "produced": 25_200_000,
            "missing": 0,
            "duplicates": 12,
            "mirror_exits": [0],
            "details": {"faults": [{"what": "target leaders moved (rotate)"}]},
        },
    }
    text = soak_table(doc)
    assert "| 10000 | 7000 / 6990 | 70% of the measured capacity | 1 | 1.0 | 0.0 |" in text
    assert "load average 1.5 at the start, mean 3.2, peak 6.1" in text
    assert "after a warm-up of 300 s (judged)" in text
    assert "faults: target leaders moved (rotate)" in text
    doc["summary"] = {**summary, "slopes_judged": False}
    assert "(reported only, window under 30 min)" in soak_table(doc)


def test_tree_usage_counts_the_children_and_their_descriptors() -> None:
    """The mirror's streams are child processes: their memory and descriptors count.

    Measured on a tree of its own (a parent holding one child with 50 open descriptors), not on
    pytest's: pytest's tree holds the brokers of other tests, whose descriptors come and go."""
    child = (
        "import os, sys; fs = [os.open(os.devnull, 0) for _ in range(50)]; "
        "print('ready', flush=True); sys.stdin.read()"
    )
    hold = (
        "import subprocess, sys; "
        f"sys.exit(subprocess.Popen([sys.executable, '-c', {child!r}]).wait())"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", hold], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert parent.stdout is not None and parent.stdout.readline() == "ready\n"
        own = psutil.Process(parent.pid)
        rss, fds, n = tree_usage(parent.pid)
        assert n == 2
        assert fds >= own.num_fds() + 50
        assert rss > own.memory_info().rss
    finally:
        parent.communicate("", timeout=30)
    assert parent.returncode == 0


def test_faults_to_rotate_through_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KMIRROR_SOAK_FAULTS", raising=False)
    assert Settings.from_env().faults == tuple(ROTATION) and len(ROTATION) == 11
    monkeypatch.setenv("KMIRROR_SOAK_FAULTS", " half-open, target-kill9 ")
    assert Settings.from_env().faults == ("half-open", "target-kill9")
    monkeypatch.setenv("KMIRROR_SOAK_FAULTS", "half-open,kill")
    with pytest.raises(ValueError, match="KMIRROR_SOAK_FAULTS: unknown kill; known: target-lea"):
        Settings.from_env()
