"""The soak's parts (tests/faults/test_soak.py): its settings, the measurement of the mirror's
single-stream capacity, the rotation of the 3-broker suite's faults, the sampler that watches
the mirror's memory, descriptors and lag, and the verdict streamed from both clusters.

The faults are the 3-broker scenarios' own injections (tests/faults/brokers3.py,
test_three_brokers.py, test_three_network.py), each through Scenario.fault: so after each one
the soak checks what those scenarios check (everything the source held when it began is
committed within CATCH_UP_S, again after the healing step, and the mirror never exits).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from tests.faults.brokers3 import kill_leader, move_leaders, restart_killed, rolled
from tests.faults.cluster3 import LINGER_MS3, QUIET, Clusters3
from tests.faults.harness import PARTITIONS, Load, Mirror, Progress, Verdict, mirror_args
from tests.faults.harness import topic_name as fault_topic
from tests.faults.scenario3 import CHECK_ERRORS, Scenario, lag
from tests.faults.soakstats import Sample, collect, hashed_verdict
from tests.faults.test_three_brokers import below_min_isr, slow_network, start_stopped
from tests.faults.test_three_network import half_open, resets, source_partitioned
from tests.kafkatools import Clusters, create_topic, delete_topic, iter_records

# A leak the soak fails on, after the warm-up: 20 MB/h is half a GB a day, which would take a
# mirror past the chart's default memory limit (1 GiB, chart/kmirror/values.yaml) within two
# days, while the RSS of a healthy mirror moves by a few MB with its buffers' high-water
# marks; 10 descriptors
# an hour is one socket or file lost every six minutes, i.e. at least one per fault (a fault
# every 5 minutes), the pattern a leaked connection per reconnect makes.
RSS_SLOPE_MAX_MB_H = 20.0
FD_SLOPE_MAX_H = 10.0
# A slope over a few minutes measures the warm-up's tail and the faults' noise, not a leak: the
# thresholds are judged when the window after the warm-up is at least this long.
SLOPE_MIN_WINDOW_S = 1800.0
KILL_DOWN_S = 15.0  # a killed broker is started again after this (past its session timeout)
CAPACITY_TIMEOUT_S = 300.0
READ_TIMEOUT_S = 3600.0  # the final read of an hour's records (a deadline, not a wait)


# --------------------------------------------------------------------------- settings


def _env(name: str, default: float, low: float, high: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not low <= value <= high:
        raise ValueError(
            f"{name}={raw!r}: want a number from {low:g} to {high:g} (unset: {default:g})"
        )
    return value


@dataclass(frozen=True)
class Settings:
    """What the environment asks of the soak (docs/reliability.md, Soak)."""

    seconds: float  # KMIRROR_SOAK_MINUTES (60)
    every_s: float  # KMIRROR_SOAK_FAULT_EVERY_S (300): a fault every so often
    hold_s: float  # KMIRROR_SOAK_FAULT_HOLD_S: how long an outage or toxic lasts (every/5, ≤ 60)
    rate: int  # KMIRROR_SOAK_RATE: records/s; 0 (default): measure the capacity, take a share
    share: float  # KMIRROR_SOAK_LOAD (0.7): that share of the capacity
    disk_bytes: float  # KMIRROR_SOAK_DISK_GB (8): what the soak's records may take on disk
    capacity_records: int  # KMIRROR_SOAK_CAPACITY_RECORDS (1,000,000): the backlog measured
    sample_s: float  # KMIRROR_SOAK_SAMPLE_S (10)
    engine: str  # KMIRROR_SOAK_ENGINE (auto)
    eos: bool  # KMIRROR_SOAK_EOS=1: --exactly-once (0 duplicates then)
    faults: tuple[str, ...]  # KMIRROR_SOAK_FAULTS: names of ROTATION, in turn (all)

    @classmethod
    def from_env(cls) -> Settings:
        every = _env("KMIRROR_SOAK_FAULT_EVERY_S", 300, 30, 3600)
        engine = os.environ.get("KMIRROR_SOAK_ENGINE", "").strip() or "auto"
        if engine not in ("auto", "record", "batch"):
            raise ValueError(f"KMIRROR_SOAK_ENGINE={engine!r}: want auto, record or batch")
        return cls(
            seconds=_env("KMIRROR_SOAK_MINUTES", 60, 1, 24 * 60) * 60,
            every_s=every,
            hold_s=_env("KMIRROR_SOAK_FAULT_HOLD_S", min(60.0, every / 5), 1, every),
            rate=int(_env("KMIRROR_SOAK_RATE", 0, 0, 10_000_000)),
            share=_env("KMIRROR_SOAK_LOAD", 0.7, 0.01, 1.0),
            disk_bytes=_env("KMIRROR_SOAK_DISK_GB", 8, 0.1, 1000) * 1e9,
            capacity_records=int(_env("KMIRROR_SOAK_CAPACITY_RECORDS", 1e6, 1000, 1e8)),
            sample_s=_env("KMIRROR_SOAK_SAMPLE_S", 10, 1, 600),
            engine=engine,
            eos=os.environ.get("KMIRROR_SOAK_EOS", "").strip() == "1",
            faults=rotation(os.environ.get("KMIRROR_SOAK_FAULTS", "")),
        )


# --------------------------------------------------------------------------- capacity


def measure_capacity(
    three: Clusters3, tmp_path: Path, settings: Settings, flags: tuple[str, ...]
) -> dict[str, Any]:
    """The mirror's single-stream copy rate on these clusters, through the proxies, with the
    soak's own settings: a backlog of `capacity_records` load records written first, then one
    mirror copies it; the rate is what its commits advance per second between its first
    commit and the one that reaches the end (the group join and the first fetches left out)."""
    source, topic = three.bootstrap("source"), fault_topic("soak-capacity")
    group = topic.replace("faults-", "g-", 1)
    create_topic(source, topic, PARTITIONS, replication_factor=3, timeout=120)
    load = Load(source, topic, rate=0, backlog=settings.capacity_records, linger_ms=LINGER_MS3)
    progress = Progress(three.direct, group, topic)
    extra = ("--engine", settings.engine, *flags)
    args = mirror_args(tmp_path, three.proxied, group, topic, extra=extra, name="capacity")
    mirror = Mirror(args, tmp_path, name="capacity")
    try:
        total = load.start().stop()["acked"]
        assert total > 0, f"the capacity run's backlog was not written: {load.result}"
        mirror.start().wait_ready(120)
        t0 = time.monotonic()
        points: list[tuple[float, int]] = []
        while not points or points[-1][1] < total:
            assert mirror.running(), f"the capacity run's mirror exited:\n{mirror.logs()[-3000:]}"
            assert time.monotonic() - t0 < CAPACITY_TIMEOUT_S, f"capacity run: {points[-3:]}"
            with contextlib.suppress(*CHECK_ERRORS):
                done = progress.committed()
                points.append((time.monotonic() - t0, sum(max(v, 0) for v in done.values())))
            time.sleep(0.2)
        mirror.stop(60)
    finally:
        load.kill()
        mirror.cleanup()
        progress.close()
        for side in ("source", "target"):
            with contextlib.suppress(Exception):
                delete_topic(three.bootstrap(side), topic, timeout=10, wait=False)
    return capacity_of(points, total)


def capacity_of(points: list[tuple[float, int]], total: int) -> dict[str, Any]:
    """records/s between the first commit and the end; the whole run's average when those
    two are less than a second apart (the copy took one commit interval: too short to tell)."""
    first = next((t, c) for t, c in points if c > 0)
    last = points[-1]
    window = last[0] - first[0]
    rate = (last[1] - first[1]) / window if window >= 1.0 else total / last[0]
    return {"records": total, "copy_s": round(last[0], 2), "window_s": round(window, 2),
            "records_per_s": round(rate)}  # fmt: skip


# --------------------------------------------------------------------------- the faults

Inject = Callable[[Scenario, float], None]


def _kill(side: str) -> Inject:
    def inject(s: Scenario, _hold: float) -> None:
        s.fault(
            lambda: kill_leader(s, side),
            f"{side} leader kill -9",
            lambda: restart_killed(s, side, KILL_DOWN_S),
        )

    return inject


def _moved(side: str) -> Inject:
    def inject(s: Scenario, _hold: float) -> None:
        s.fault(lambda: move_leaders(s, side, "rotate"), f"{side} leaders moved (rotate)")

    return inject


def _rolled(side: str) -> Inject:
    return lambda s, _hold: rolled(side)(s)


def _held(what: str, fn: Callable[[Scenario, float], object], heal: Any = None) -> Inject:
    """A fault that lasts `hold` seconds (a toxic, an outage); `heal`: its healing step."""

    def inject(s: Scenario, hold: float) -> None:
        s.fault(lambda: fn(s, hold), what, None if heal is None else lambda: heal(s))

    return inject


# One of each kind of the 3-broker suite, alternating sides and brokers with network: eleven
# faults, which an hour with a fault every 5 minutes runs once each (at 5, 10, ... 55 min).
ROTATION: dict[str, Inject] = {
    "target-leaders": _moved("target"),
    "source-kill9": _kill("source"),
    "rtt": _held("100 ms RTT", slow_network),
    "resets": _held("connection resets", resets),
    "target-roll": _rolled("target"),
    "source-partitioned": _held("source partitioned", source_partitioned),
    "target-kill9": _kill("target"),
    "source-leaders": _moved("source"),
    "half-open": _held("half-open target leader", half_open),
    "source-roll": _rolled("source"),
    "target-min-isr": _held("target below min.insync.replicas", below_min_isr, start_stopped),
}


def rotation(raw: str) -> tuple[str, ...]:
    """KMIRROR_SOAK_FAULTS: the faults to rotate through, in order ("": all of ROTATION)."""
    names = tuple(n.strip() for n in raw.split(",") if n.strip()) or tuple(ROTATION)
    unknown = [n for n in names if n not in ROTATION]
    if unknown:
        raise ValueError(
            f"KMIRROR_SOAK_FAULTS: unknown {', '.join(unknown)}; known: {', '.join(ROTATION)}"
        )
    return names


# --------------------------------------------------------------------------- sampling


def tree_usage(pid: int) -> tuple[int, int, int]:
    """RSS (bytes), open descriptors and processes of `pid` and everything below it (the
    supervisor and its stream children); processes that end meanwhile are left out."""
    root = psutil.Process(pid)
    rss = fds = n = 0
    for proc in [root, *root.children(recursive=True)]:
        try:
            with proc.oneshot():
                rss += proc.memory_info().rss
                fds += proc.num_fds()
        except psutil.Error:
            continue
        n += 1
    return rss, fds, n


class Sampler:
    """Every `every_s` seconds: the mirror's tree (tree_usage), the lag, the source's end and
    the machine's load average. A thread with its own Progress client (the scenario's is the
    main thread's)."""

    def __init__(self, s: Scenario, every_s: float) -> None:
        self.scenario = s
        self.every_s = every_s
        self.samples: list[Sample] = []
        self.loads: list[float] = []  # the machine's 1-minute load average
        self.produced: list[tuple[float, float]] = []  # (t, records on the source)
        self.errors: list[str] = []  # what a sample raised besides CHECK_ERRORS (none expected)
        self.t0 = time.monotonic()
        self._progress = Progress(s.three.direct, s.group, s.topic)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="soak-sampler", daemon=True)

    def start(self) -> Sampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)
        self._progress.close()

    def _run(self) -> None:
        while True:
            try:
                self.sample()
            except Exception as exc:  # a thread's error would vanish: kept for the results
                self.errors.append(f"{time.monotonic() - self.t0:.0f}s: {exc!r}")
            if self._stop.wait(self.every_s):
                return

    def sample(self) -> None:
        proc = self.scenario.mirror.proc
        if proc is None or not proc.running():
            return
        try:
            rss, fds, n = tree_usage(proc.pid)
        except psutil.Error:
            return
        behind: int | None = None
        t = round(time.monotonic() - self.t0, 1)
        with contextlib.suppress(*CHECK_ERRORS):
            end = self._progress.source_end()
            self.produced.append((t, float(sum(end.values()))))
            behind = lag(end, self._progress.committed())
        self.samples.append(Sample(t, rss, fds, n, behind))
        self.loads.append(os.getloadavg()[0])


def streamed_compare(clusters: Clusters, topic: str) -> Verdict:
    """harness.compare for an hour of records: both sides read once, kept as content hashes
    (tests/faults/soakstats.py)."""
    src = collect(iter_records(clusters.source_bootstrap, topic, READ_TIMEOUT_S, logger=QUIET))
    dst = collect(iter_records(clusters.target_bootstrap, topic, READ_TIMEOUT_S, logger=QUIET))
    return hashed_verdict(src, dst)
