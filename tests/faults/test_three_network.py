"""The network between the mirror and the clusters broken with Toxiproxy (tests/faults/
scenario3.py; the brokers stay up and keep replicating among themselves, around the proxies):

* the source partitioned from the mirror for a minute: every source proxy disabled (open
  connections closed, new ones refused), then enabled again;
* a half-open connection to a target leader: the proxy of the broker leading a mirrored
  partition stops passing bytes either way while every connection stays open (no FIN, no RST;
  new connections are accepted and hear nothing): a peer that died silently;
* connection resets: every connection of the mirror to both clusters reset (TCP RST) whenever
  it carries a byte in short pulses, in either direction, so requests are lost before the broker
  saw them and responses after it acted on them.

The pass is scenario3's: nothing missing, nothing twice under --exactly-once, every partition
caught up and moving again, and no exit. Full tier only (`make test-faults`): each holds its
fault for a minute, and make test has no minutes to spare.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from scripts.toxiproxy import STREAMS
from tests.faults.cluster3 import Clusters3
from tests.faults.harness import PARTITIONS
from tests.faults.scenario3 import RIDE_OUT, Record, Scenario, matrix, play

PARTITIONED_S = 60.0
HALF_OPEN_S = 60.0
RESETS_S = 60.0
PULSE_S = 0.3  # how long each pulse resets whatever passes


def source_partitioned(s: Scenario, seconds: float) -> dict[str, Any]:
    proxy = s.three.toxiproxy("source")
    names = s.three.proxies("source")
    for name in names:
        proxy.set_enabled(name, False)
    try:
        held = s.hold(seconds)
    finally:
        for name in names:
            proxy.set_enabled(name, True)
    # The mirror read nothing meanwhile: the lag grew by what the load wrote.
    assert held["lag_max"] > s.rate * seconds / 2, held
    return {"seconds": seconds, **held}


@matrix(short=None)  # a minute of outage: the full tier only
def test_source_partitioned_from_the_mirror(
    mode: str, engine: str, eos: bool, three: Clusters3, tmp_path: Path, fault_results3: Record
) -> None:
    """No connection from the mirror to any source broker for 60 s (the group coordinator
    included: the mirror's member is dropped from the group after the session timeout); then
    the network is back and the mirror rejoins and copies on by itself."""

    def faults(s: Scenario) -> None:
        s.fault(lambda: source_partitioned(s, PARTITIONED_S), "source partitioned")

    play("src-partitioned", mode, engine, eos, three, tmp_path, fault_results3, faults)


def half_open(s: Scenario, seconds: float) -> dict[str, Any]:
    partition = s.rnd.randrange(PARTITIONS)
    node = s.leaders("target")[partition]
    name = s.three.quorums["target"].node_name(node)
    proxy = s.three.toxiproxy("target")
    proxy.half_open(name)
    try:
        held = s.hold(seconds)
    finally:
        proxy.clear(name)
    led = [p for p, lead in s.leaders("target").items() if lead == node]
    # The partitions it leads took nothing meanwhile (and the others may wait for them).
    assert held["lag_max"] > s.rate / PARTITIONS * seconds / 2, held
    return {"partition": partition, "broker": node, "led": led, "seconds": seconds, **held}


@matrix(short=None)  # make test is at its budget; the full tier runs it
def test_half_open_connection_to_a_target_leader(
    mode: str, engine: str, eos: bool, three: Clusters3, tmp_path: Path, fault_results3: Record
) -> None:
    """The connections to the target broker leading a mirrored partition go silent for 60 s:
    bytes stop both ways, nothing is closed. The broker itself stays in the cluster and keeps
    its leaderships, so only the mirror's side of the network notices. The records for that
    broker outlive message.timeout.ms: the mirror runs with abort.on.send.failure=false
    (RIDE_OUT) and must resend them by itself."""

    def faults(s: Scenario) -> None:
        s.fault(lambda: half_open(s, HALF_OPEN_S), "half-open target leader")

    play("half-open", mode, engine, eos, three, tmp_path, fault_results3, faults, RIDE_OUT)


def resets(s: Scenario, seconds: float) -> dict[str, Any]:
    """Pulses of PULSE_S, 1-4 s apart, during which every connection of the mirror (both
    clusters, both directions) is reset as soon as a byte passes."""
    pulses = 0
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        for side in ("source", "target"):
            proxy = s.three.toxiproxy(side)
            for name in s.three.proxies(side):
                for stream in STREAMS:
                    proxy.reset_peer(name, stream=stream)
        time.sleep(PULSE_S)
        for side in ("source", "target"):
            s.three.toxiproxy(side).reset()
        pulses += 1
        time.sleep(s.rnd.uniform(1.0, 4.0))
    return {"seconds": seconds, "pulses": pulses, "pulse_s": PULSE_S}


@matrix(short=None)
def test_connection_resets(
    mode: str, engine: str, eos: bool, three: Clusters3, tmp_path: Path, fault_results3: Record
) -> None:
    """Connections reset (TCP RST) in pulses for 60 s, on both clusters, in both directions."""

    def faults(s: Scenario) -> None:
        s.fault(lambda: resets(s, RESETS_S), "connection resets")

    play("resets", mode, engine, eos, three, tmp_path, fault_results3, faults)
