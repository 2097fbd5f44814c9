"""Production-shaped faults of the TARGET on three-broker clusters (RF 3, min.insync.replicas=2),
the mirror connected through Toxiproxy (tests/faults/cluster3.py): leaders moved by a
preferred-leader election and by partition reassignments, the leader of a mirrored partition
killed with kill -9, a rolling restart of every target broker, the target below
min.insync.replicas for a minute, 100 ms of round trip with jitter. The source's faults are in
test_three_source.py, the network's in test_three_network.py.

Each scenario runs on both engines (the record path, librdkafka's producer; the batch path,
which speaks the protocol itself: its own leaders, epochs and sequences) and both guarantees,
with a producer writing 2,000 records/s to the source throughout, and ends with the checks of
tests/faults/scenario3.py: 0 missing, 0 duplicates under --exactly-once, every partition caught
up after the fault and its saw-tooth back, and the mirror never exits.

The short tier (marker `faults`, in `make test`) runs one engine x guarantee per scenario but
the leader kill, the rolling restart and the minute below min.insync.replicas (minutes each
here); the full tier (`slow`, `make test-faults`) all four of each, with more faults each, and
the validation job confirms each exactly-once run.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, Producer

from tests.faults.brokers3 import leader_killed, leaders_moved, rolled
from tests.faults.cluster3 import QUIET, Clusters3
from tests.faults.scenario3 import RIDE_OUT, Record, Scenario, matrix, play
from tests.kafkatools import create_topic, delete_topic


@matrix(short=("batch", False))
def test_leaders_move_on_the_target(
    mode: str, engine: str, eos: bool, three: Clusters3, tmp_path: Path, fault_results3: Record
) -> None:
    """Preferred-leader elections and partition reassignments on the target while mirroring:
    every leader moves (short: once; full: rotate, shrink, grow, rotate)."""
    play("leaders", mode, engine, eos, three, tmp_path, fault_results3, leaders_moved("target"))


@matrix(short=None)  # a kill, 15 s down, catch-up: ~2 minutes here; the full tier covers it
def test_target_leader_killed(
    mode: str, engine: str, eos: bool, three: Clusters3, tmp_path: Path, fault_results3: Record
) -> None:
    """kill -9 of the target broker leading a mirrored partition (short: once; full: three
    times): the mirror copies on with 2 of 3 replicas; the broker comes back after 15 s.
    Recovery is measured from the kill."""
    faults = leader_killed("target")
    play("leader-kill9", mode, engine, eos, three, tmp_path, fault_results3, faults)


@matrix(short=None)  # three broker restarts: 2-3 minutes here, too long for make test
def test_target_rolling_restart(
    mode: str, engine: str, eos: bool, three: Clusters3, tmp_path: Path, fault_results3: Record
) -> None:
    """Every target broker restarted in turn (clean stop, start, wait until in sync), as an
    upgrade does. Recovery is measured from the end of the roll."""
    play("rolling-restart", mode, engine, eos, three, tmp_path, fault_results3, rolled("target"))


# --------------------------------------------------------------------------- min.insync.replicas

BELOW_MIN_ISR_S = 60.0


def _refused(bootstrap: str, topic: str) -> str:
    """What the target answers one acks=all record now: the error's name, or "" when it is
    written (no retries: the broker's first answer is the one reported)."""
    answers: list[KafkaError | None] = []
    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": False,
            "retries": 0,
            "message.timeout.ms": 20_000,
            "logger": QUIET,
        }
    )
    p.produce(topic, b"probe", partition=0, on_delivery=lambda err, _msg: answers.append(err))
    p.flush(30)
    err = answers[0] if answers else None
    return "" if err is None else str(err.name())


def below_min_isr(s: Scenario, seconds: float) -> dict[str, Any]:
    """The target below min.insync.replicas for `seconds`: one broker stopped cleanly (every
    partition's in-sync replicas: 2) and the mirrored topic's min.insync.replicas raised to 3,
    so every produce to it is refused with NOT_ENOUGH_REPLICAS. A probe topic set up the same
    way shows the answer (the mirrored topic itself must not get a probe record); the lag
    shows the mirror wrote nothing meanwhile. Then min.insync.replicas is 2 again; the broker
    comes back in the healing step."""
    three, target = s.three, s.three.bootstrap("target")
    probe = f"{s.topic}-probe"
    create_topic(target, probe, 1, replication_factor=3, config={"min.insync.replicas": "3"})
    node = s.rnd.choice([1, 2, 3])
    three.stop_broker("target", node)
    three.set_topic_config("target", s.topic, {"min.insync.replicas": "3"})
    try:
        answer = _refused(target, probe)
        assert answer == "NOT_ENOUGH_REPLICAS", f"the probe got {answer or 'written'}"
        held = s.hold(seconds)
    finally:
        three.set_topic_config("target", s.topic, {"min.insync.replicas": None})
        delete_topic(target, probe, wait=False)
    # Nothing was committed for most of the minute: the lag grew by what the load wrote.
    assert held["lag_max"] > s.rate * seconds / 2, held
    return {"stopped": node, "seconds": seconds, "probe": answer, **held, "at": time.monotonic()}


def start_stopped(s: Scenario) -> dict[str, Any]:
    stopped = s.res.details["faults"][-1]["detail"]
    stopped["restored_to_healed_s"] = round(time.monotonic() - stopped.pop("at"), 1)
    s.three.start("target", stopped["stopped"])
    return {"in_sync_after_s": round(s.three.in_sync("target"), 1)}


@matrix(short=None)  # a minute of outage: the full tier only
def test_target_below_min_insync_replicas(
    mode: str, engine: str, eos: bool, three: Clusters3, tmp_path: Path, fault_results3: Record
) -> None:
    """Every produce to the mirrored topic refused with NOT_ENOUGH_REPLICAS for 60 s (one of
    three target brokers stopped, the topic's min.insync.replicas raised to 3), then accepted
    again: the mirror (abort.on.send.failure=false, RIDE_OUT) waits, loses nothing, writes
    nothing twice under --exactly-once, and catches up without a restart. Recovery is measured
    from min.insync.replicas restored; the stopped broker then comes back and the mirror must
    catch up once more."""

    def faults(s: Scenario) -> None:
        s.fault(
            lambda: below_min_isr(s, BELOW_MIN_ISR_S),
            "target below min.insync.replicas",
            lambda: start_stopped(s),
        )

    play("below-min-isr", mode, engine, eos, three, tmp_path, fault_results3, faults, RIDE_OUT)


# --------------------------------------------------------------------------- latency


def slow_network(s: Scenario, seconds: float) -> dict[str, Any]:
    """100 ms of round trip, ± 40 ms of jitter, on every connection of the mirror to both
    clusters for `seconds`."""
    for side in ("source", "target"):
        proxy = s.three.toxiproxy(side)
        for name in s.three.proxies(side):
            proxy.latency(name, rtt_ms=100, jitter_ms=40)
    held = s.hold(seconds)
    for side in ("source", "target"):
        s.three.toxiproxy(side).reset()
    return {"rtt_ms": 100, "jitter_ms": 40, "seconds": seconds, **held}


@matrix(short=("record", True))
def test_100ms_round_trip_with_jitter(
    mode: str, engine: str, eos: bool, three: Clusters3, tmp_path: Path, fault_results3: Record
) -> None:
    """The mirror 100 ms (± 40 ms) of round trip away from both clusters for 10 s (full: 60 s)."""
    seconds = 10.0 if mode == "short" else 60.0

    def faults(s: Scenario) -> None:
        s.fault(lambda: slow_network(s, seconds), "100 ms RTT")

    play("rtt-100ms", mode, engine, eos, three, tmp_path, fault_results3, faults)
