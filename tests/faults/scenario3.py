"""One 3-broker fault scenario (tests/faults/test_three_*.py): a source topic written to at
RATE3 throughout, the real `kmirror run` connected through the proxies, faults injected one
after another, then the record-by-record verdict of tests/faults/harness.py.

What every scenario asserts, whatever its fault:

* after each fault, everything the source held when it began is committed (the mirror
  commits only what the target acknowledged) within CATCH_UP_S, and again after its healing
  step (a broker started again): no partition stays behind;
* after the last fault, the lag is back to its saw-tooth: every partition's committed
  offset moves on during a short window (`steady`), and the lag stays bounded;
* the mirror never exits (one clean stop, at the end): none of these faults is a reason to
  give up, and a Deployment's restart would hide a mirror that cannot recover by itself;
* 0 missing, 0 extra, and under --exactly-once 0 duplicates and 0 order violations
  (read_committed); the validation job confirms every full-tier exactly-once run.

The fault operations both sides share live here too: leaders moved by reassignments and
preferred-leader elections, the leader of a mirrored partition killed with kill -9.
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
# After the last fault: how long the lag is watched, and the most it may be then (10 s of
# load: the saw-tooth of a 1 s commit interval is 1-3 s of it on this machine).
STEADY_S = {"short": 5.0, "full": 10.0}
STEADY_LAG_MAX = RATE3 * 10


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

    def leaders(self, side: str) -> dict[int, int]:
        return {p: v[0] for p, v in self.three.partitions(side, self.topic).items()}

    def lag(self) -> int:
        """Records on the source not committed yet (all partitions)."""
        end, done = self.progress.source_end(), self.progress.committed()
        return sum(end.values()) - sum(max(done.get(p, 0), 0) for p in end)

    def hold(self, seconds: float, step: float = 2.0) -> dict[str, int]:
        """Let a fault last `seconds`, sampling the lag: its peak and its last value."""
        lags = []
        t0 = time.monotonic()
        while time.monotonic() - t0 < seconds:
            time.sleep(min(step, max(0.0, seconds - (time.monotonic() - t0))))
            with contextlib.suppress(Exception):  # a fault may slow the check, not fail it
                lags.append(self.lag())
        return {"lag_max": max(lags, default=-1), "lag_last": lags[-1] if lags else -1}

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
            self.assert_running(what)
            assert time.monotonic() < deadline, f"not caught up {CATCH_UP_S:.0f}s after {what}"
            time.sleep(0.25)

    def assert_running(self, what: str) -> None:
        if not self.mirror.running():
            raise AssertionError(f"the mirror exited after {what}:\n{self.mirror.logs()[-3000:]}")

    def steady(self) -> None:
        """The lag's saw-tooth after the last fault: over STEADY_S, every partition's committed
        offset moves on (none is stuck) and the lag stays under STEADY_LAG_MAX. First the
        backlog a long fault left (a minute of load) is copied: until the group committed
        what the source holds now."""
        seconds = STEADY_S[self.mode]
        t0 = time.monotonic()
        self.caught_up(self.progress.source_end(), "the backlog of the last fault")
        drained_s = round(time.monotonic() - t0, 2)
        first = self.progress.committed()
        lags = []
        t0 = time.monotonic()
        while time.monotonic() - t0 < seconds:
            time.sleep(0.5)
            self.assert_running("the last fault")
            lags.append(self.lag())
        last = self.progress.committed()
        stuck = sorted(p for p in first if last.get(p, -1) <= first[p])
        self.res.details["steady"] = {
            "drained_s": drained_s,
            "seconds": seconds,
            "lag_max": max(lags),
            "stuck": stuck,
        }
        assert not stuck, f"partitions {stuck} committed nothing for {seconds:.0f}s: {first}"
        assert max(lags) < STEADY_LAG_MAX, f"lag {lags} after the last fault"

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
            self.steady()
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


def play(
    name: str,
    mode: str,
    engine: str,
    eos: bool,
    three: Clusters3,
    tmp_path: Path,
    record: Record,
    faults: Callable[[Scenario], None],
) -> Result:
    """Run one scenario under its guarantee."""
    with guarantee(eos):
        return Scenario(name, mode, engine, eos, three, tmp_path).run(faults, record)


# --------------------------------------------------------------------------- leaders moved


def move_leaders(s: Scenario, side: str, kind: str) -> dict[str, Any]:
    """Leaders of every partition of the side's topic moved by `kind`:
    rotate: the replica lists reordered by a reassignment, then a preferred-leader election;
    shrink: a reassignment that drops each partition's leader from its replicas;
    grow: the dropped broker added back as the preferred replica, then an election."""
    three, topic = s.three, s.topic
    before = three.partitions(side, topic)
    if kind == "rotate":
        three.reassign(side, topic, {p: r[1:] + r[:1] for p, (_, r, _) in before.items()})
    elif kind == "shrink":
        three.reassign(
            side, topic, {p: [b for b in r if b != lead] for p, (lead, r, _) in before.items()}
        )
    else:
        missing = {p: [b for b in (1, 2, 3) if b not in r] for p, (_, r, _) in before.items()}
        three.reassign(side, topic, {p: missing[p] + r for p, (_, r, _) in before.items()})
    elections = three.elect_preferred(side, topic) if kind != "shrink" else 0
    after = s.leaders(side)
    moved = sum(1 for p, (lead, _, _) in before.items() if after[p] != lead)
    assert moved == len(before), f"{kind}: leaders {before} -> {after}"
    leaders = {p: v[0] for p, v in before.items()}
    return {"kind": kind, "leaders_before": leaders, "after": after, "elections": elections}


LEADER_MOVES = {"short": ["rotate"], "full": ["rotate", "shrink", "grow", "rotate"]}


def leaders_moved(side: str) -> Callable[[Scenario], None]:
    """The faults of a leaders-moved scenario on `side` (short: once; full: rotate, shrink,
    grow, rotate)."""

    def faults(s: Scenario) -> None:
        for kind in LEADER_MOVES[s.mode]:
            s.fault(lambda k=kind: move_leaders(s, side, k), f"{side} leaders moved ({kind})")

    return faults


# --------------------------------------------------------------------------- kill -9


def kill_leader(s: Scenario, side: str) -> dict[str, Any]:
    partition = s.rnd.randrange(PARTITIONS)
    node = s.leaders(side)[partition]
    s.three.kill(side, node)
    return {"partition": partition, "killed": node, "at": time.monotonic()}


def restart_killed(s: Scenario, side: str, down_s: float) -> dict[str, Any]:
    """Start the killed broker again once it has been down `down_s` (past the 9 s of
    broker.session.timeout.ms: the controller fenced it and moved its leaders), and wait until
    every replica is in sync."""
    killed = s.res.details["faults"][-1]["detail"]
    time.sleep(max(0.0, killed["at"] + down_s - time.monotonic()))
    killed["leaders_while_down"] = s.leaders(side)
    killed["down_s"] = round(time.monotonic() - killed.pop("at"), 1)
    s.three.start(side, killed["killed"])
    return {"in_sync_after_s": round(s.three.in_sync(side), 1)}


KILLS = {"short": 1, "full": 3}


def leader_killed(side: str, down_s: float = 15.0) -> Callable[[Scenario], None]:
    """kill -9 of the broker leading a random mirrored partition on `side` (short: once;
    full: three times), started again after `down_s`."""

    def faults(s: Scenario) -> None:
        for _ in range(KILLS[s.mode]):
            s.fault(
                lambda: kill_leader(s, side),
                f"{side} leader kill -9",
                lambda: restart_killed(s, side, down_s),
            )

    return faults
