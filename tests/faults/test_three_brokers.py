"""Production-shaped faults on three-broker clusters (RF 3, min.insync.replicas=2), the mirror
connected through Toxiproxy (tests/faults/cluster3.py): leaders moved by a preferred-leader
election and by partition reassignments, the leader of a mirrored partition killed with kill -9,
a rolling restart of every target broker, 100 ms of round trip with jitter.

Each scenario runs on both engines (the record path, librdkafka's producer; the batch path,
which speaks the protocol itself: its own leaders, epochs and sequences) and both guarantees,
with a producer writing 2,000 records/s to the source throughout, and ends with the record by
record comparison of tests/faults/harness.py: 0 missing, 0 duplicates under --exactly-once,
every partition caught up after the fault. The mirror must ride every fault out by itself: an
exit fails the scenario (a Deployment would restart it, but none of these faults is a reason
to give up).

The short tier (marker `faults`, in `make test`) runs one engine x guarantee per scenario but
the leader kill and the rolling restart (minutes each here); the full tier (`slow`,
`make test-faults`) all four of each, with more faults each, and the validation job confirms
each exactly-once run.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.faults import harness
from tests.faults.cluster3 import LINGER_MS3, RATE3, Clusters3
from tests.faults.harness import PARTITIONS, Load, Mirror, Progress, Result, mirror_args, topic_name
from tests.faults.test_faults import CATCH_UP_S, _finish, _seed
from tests.kafkatools import create_topic, delete_topic, wait_until

Record = Callable[[Result], None]

ENGINES = ("record", "batch")


def matrix(short: tuple[str, bool] | None) -> Any:
    """mode, engine, exactly-once: every combination in the full tier, `short` (if any) in
    make test."""
    params = []
    for engine in ENGINES:
        for eos in (False, True):
            tag = f"{engine}-{'eos' if eos else 'alo'}"
            if (engine, eos) == short:
                params.append(
                    pytest.param("short", engine, eos, marks=pytest.mark.faults, id=f"short-{tag}")
                )
            params.append(
                pytest.param("full", engine, eos, marks=pytest.mark.slow, id=f"full-{tag}")
            )
    return pytest.mark.parametrize(("mode", "engine", "eos"), params, indirect=["mode"])


@contextlib.contextmanager
def guarantee(eos: bool) -> Iterator[None]:
    """harness.EXACTLY_ONCE for the scenario: --exactly-once, and a duplicate fails it."""
    harness.EXACTLY_ONCE = eos
    try:
        yield
    finally:
        harness.EXACTLY_ONCE = False


class Scenario:
    """One run: the topic, the load, the mirror (through the proxies), the faults."""

    def __init__(
        self, name: str, mode: str, engine: str, eos: bool, three: Clusters3, tmp_path: Path
    ) -> None:
        self.three = three
        self.mode = mode
        self.rnd = random.Random(_seed())
        suffix = f"{engine}-eos" if eos else engine
        self.res = Result(f"{name}-{suffix}", mode, 0)
        self.topic = topic_name(name)
        self.group = self.topic.replace("faults-", "g-", 1)
        direct = three.direct
        self.progress = Progress(direct, self.group, self.topic)
        self.load = Load(direct.source_bootstrap, self.topic, rate=RATE3, linger_ms=LINGER_MS3)
        args = mirror_args(
            tmp_path,
            three.proxied,
            self.group,
            self.topic,
            extra=("--engine", engine),
        )
        self.mirror = Mirror(args, tmp_path)
        self.started = time.monotonic()

    def target_leaders(self) -> dict[int, int]:
        return {p: v[0] for p, v in self.three.partitions("target", self.topic).items()}

    def fault(
        self, inject: Callable[[], object], what: str, heal: Callable[[], object] | None = None
    ) -> None:
        """Inject one fault while the load runs. Recovery: from the end of `inject` until
        everything the source held when it began is committed (the mirror commits only what
        the target acknowledged). `heal` (a killed broker started again) runs after that, and
        the mirror must catch up once more: no partition stays stuck when the broker is back."""
        time.sleep(self.rnd.uniform(2.0, 4.0))
        goal = self.progress.source_end()
        t0 = time.monotonic()
        detail = inject()
        end = time.monotonic()
        self.res.faults += 1
        done: dict[str, Any] = {"what": what, "took_s": round(end - t0, 1), "detail": detail}
        self.res.details.setdefault("faults", []).append(done)
        self.caught_up(goal, what)
        self.res.recovery_s.append(round(time.monotonic() - end, 2))
        if heal is not None:
            done["heal"] = heal()
            goal, healed = self.progress.source_end(), time.monotonic()
            self.caught_up(goal, f"{what}, healed")
            done["caught_up_after_heal_s"] = round(time.monotonic() - healed, 2)

    def caught_up(self, goal: dict[int, int], what: str) -> None:
        """Wait until the group committed `goal`; fail at once if the mirror exits."""
        deadline = time.monotonic() + CATCH_UP_S
        while not self.progress.reached(goal):
            log = self.mirror.logs()[-3000:] if not self.mirror.running() else ""
            assert not log, f"the mirror exited after {what}:\n{log}"
            assert time.monotonic() < deadline, f"not caught up {CATCH_UP_S:.0f}s after {what}"
            time.sleep(0.25)

    def run(self, faults: Callable[[Scenario], None], record: Record) -> Result:
        source = self.three.bootstrap("source")
        try:
            create_topic(source, self.topic, PARTITIONS, replication_factor=3, timeout=120)
            self.load.start()
            wait_until(lambda: sum(self.progress.source_end().values()) > 0, 60, 0.2, "load")
            self.mirror.start()
            self.mirror.proc.wait_ready(120)  # type: ignore[union-attr]
            replicas = {p: v[1] for p, v in self.three.partitions("target", self.topic).items()}
            assert all(len(r) == 3 for r in replicas.values()), replicas  # RF follows the source
            faults(self)
            assert self.mirror.running(), self.mirror.logs()[-3000:]
            _finish(
                self.res,
                self.three.direct,
                self.topic,
                self.load,
                self.progress,
                [self.mirror],
                self.started,
            )
        finally:
            self.load.kill()
            self.mirror.cleanup()
            self.progress.close()
            record(self.res)
            for side in ("source", "target"):
                with contextlib.suppress(Exception):
                    delete_topic(self.three.bootstrap(side), self.topic, timeout=10, wait=False)
        assert self.res.mirror_exits == [0], self.res.mirror_exits  # one clean stop, at the end
        return self.res


# --------------------------------------------------------------------------- leaders moved


def _move_leaders(s: Scenario, kind: str) -> dict[str, Any]:
    """Leaders of every target partition moved by `kind`:
    rotate: the replica lists reordered by a reassignment, then a preferred-leader election;
    shrink: a reassignment that drops each partition's leader from its replicas;
    grow: the dropped broker added back as the preferred replica, then an election."""
    three, topic = s.three, s.topic
    before = three.partitions("target", topic)
    if kind == "rotate":
        three.reassign("target", topic, {p: r[1:] + r[:1] for p, (_, r, _) in before.items()})
    elif kind == "shrink":
        three.reassign(
            "target", topic, {p: [b for b in r if b != lead] for p, (lead, r, _) in before.items()}
        )
    else:
        missing = {p: [b for b in (1, 2, 3) if b not in r] for p, (_, r, _) in before.items()}
        three.reassign("target", topic, {p: missing[p] + r for p, (_, r, _) in before.items()})
    elections = three.elect_preferred("target", topic) if kind != "shrink" else 0
    after = s.target_leaders()
    moved = sum(1 for p, (lead, _, _) in before.items() if after[p] != lead)
    assert moved == len(before), f"{kind}: leaders {before} -> {after}"
    leaders = {p: v[0] for p, v in before.items()}
    return {"kind": kind, "leaders_before": leaders, "after": after, "elections": elections}


@matrix(short=("batch", False))
def test_leaders_move_on_the_target(
    mode: str, engine: str, eos: bool, three: Clusters3, tmp_path: Path, fault_results3: Record
) -> None:
    """Preferred-leader elections and partition reassignments on the target while mirroring:
    every leader moves (short: once; full: rotate, shrink, grow, rotate)."""
    kinds = ["rotate"] if mode == "short" else ["rotate", "shrink", "grow", "rotate"]

    def faults(s: Scenario) -> None:
        for kind in kinds:
            s.fault(lambda k=kind: _move_leaders(s, k), f"leaders moved ({kind})")

    with guarantee(eos):
        Scenario("leaders", mode, engine, eos, three, tmp_path).run(faults, fault_results3)


# --------------------------------------------------------------------------- kill -9


def _kill_leader(s: Scenario) -> dict[str, Any]:
    partition = s.rnd.randrange(PARTITIONS)
    node = s.target_leaders()[partition]
    s.three.kill("target", node)
    return {"partition": partition, "killed": node, "at": time.monotonic()}


def _restart_killed(s: Scenario, down_s: float) -> dict[str, Any]:
    """Start the killed broker again once it has been down `down_s` (past the 9 s of
    broker.session.timeout.ms: the controller fenced it and moved its leaders), and wait until
    every replica is in sync."""
    killed = s.res.details["faults"][-1]["detail"]
    time.sleep(max(0.0, killed["at"] + down_s - time.monotonic()))
    killed["leaders_while_down"] = s.target_leaders()
    killed["down_s"] = round(time.monotonic() - killed.pop("at"), 1)
    s.three.start("target", killed["killed"])
    return {"in_sync_after_s": round(s.three.in_sync("target"), 1)}


@matrix(short=None)  # a kill, 15 s down, catch-up: ~2 minutes here; the full tier covers it
def test_target_leader_killed(
    mode: str, engine: str, eos: bool, three: Clusters3, tmp_path: Path, fault_results3: Record
) -> None:
    """kill -9 of the target broker leading a mirrored partition (short: once; full: three
    times): the mirror copies on with 2 of 3 replicas; the broker comes back after 15 s.
    Recovery is measured from the kill."""
    kills = 1 if mode == "short" else 3

    def faults(s: Scenario) -> None:
        for _ in range(kills):
            s.fault(
                lambda: _kill_leader(s), "target leader kill -9", lambda: _restart_killed(s, 15)
            )

    with guarantee(eos):
        Scenario("leader-kill9", mode, engine, eos, three, tmp_path).run(faults, fault_results3)


# --------------------------------------------------------------------------- rolling restart


@matrix(short=None)  # three broker restarts: 2-3 minutes here, too long for make test
def test_target_rolling_restart(
    mode: str, engine: str, eos: bool, three: Clusters3, tmp_path: Path, fault_results3: Record
) -> None:
    """Every target broker restarted in turn (clean stop, start, wait until in sync), as an
    upgrade does. Recovery is measured from the end of the roll."""

    def faults(s: Scenario) -> None:
        s.fault(lambda: s.three.roll("target"), "target rolling restart")

    with guarantee(eos):
        Scenario("rolling-restart", mode, engine, eos, three, tmp_path).run(faults, fault_results3)


# --------------------------------------------------------------------------- latency


def _slow_network(s: Scenario, seconds: float) -> dict[str, Any]:
    """100 ms of round trip, ± 40 ms of jitter, on every connection of the mirror to both
    clusters for `seconds`."""
    for side in ("source", "target"):
        proxy = s.three.toxiproxy(side)
        for name in s.three.proxies(side):
            proxy.latency(name, rtt_ms=100, jitter_ms=40)
    lag = []
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        time.sleep(2)
        end, done = s.progress.source_end(), s.progress.committed()
        lag.append(sum(end.values()) - sum(max(done.get(p, 0), 0) for p in end))
    for side in ("source", "target"):
        s.three.toxiproxy(side).reset()
    return {
        "rtt_ms": 100,
        "jitter_ms": 40,
        "seconds": seconds,
        "lag_max": max(lag),
        "lag_last": lag[-1],
    }


@matrix(short=("record", True))
def test_100ms_round_trip_with_jitter(
    mode: str, engine: str, eos: bool, three: Clusters3, tmp_path: Path, fault_results3: Record
) -> None:
    """The mirror 100 ms (± 40 ms) of round trip away from both clusters for 10 s (full: 60 s)."""
    seconds = 10.0 if mode == "short" else 60.0

    def faults(s: Scenario) -> None:
        s.fault(lambda: _slow_network(s, seconds), "100 ms RTT")

    with guarantee(eos):
        Scenario("rtt-100ms", mode, engine, eos, three, tmp_path).run(faults, fault_results3)
