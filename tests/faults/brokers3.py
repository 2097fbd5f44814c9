"""Broker faults the 3-broker scenarios inject on either side (tests/faults/test_three_brokers.py
on the target, test_three_source.py on the source): leaders moved by reassignments and
preferred-leader elections, the leader of a mirrored partition killed with kill -9, every broker
restarted in turn. Each returns the faults of a scenario for tests/faults/scenario3.py's play().
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from tests.faults.harness import PARTITIONS
from tests.faults.scenario3 import Scenario

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


# --------------------------------------------------------------------------- rolling restart


def rolled(side: str) -> Callable[[Scenario], None]:
    """Every broker of `side` restarted in turn (clean stop, start, wait until in sync), as an
    upgrade does. Recovery is measured from the end of the roll."""

    def faults(s: Scenario) -> None:
        s.fault(lambda: s.three.roll(side), f"{side} rolling restart")

    return faults
