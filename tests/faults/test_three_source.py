"""Production-shaped faults of the SOURCE on three-broker clusters (tests/faults/scenario3.py):
every source broker restarted in turn, leaders moved by preferred-leader elections and
partition reassignments, the leader of a mirrored partition killed with kill -9.

What moves here is where the mirror reads: the fetch sessions and leader epochs of the record
path's consumer (librdkafka) and of the batch path's own fetcher, the group coordinator (on
the source: its __consumer_offsets partition moves with the brokers), and, under
--exactly-once, nothing of the target's transactions. The load producer writes to the source
around the proxies throughout (it buffers while a partition has no leader).

Full tier only (`make test-faults`): the target's short scenarios already run these code paths'
twins, and make test has no minutes to spare.
"""

from __future__ import annotations

from pathlib import Path

from tests.faults.brokers3 import leader_killed, leaders_moved, rolled
from tests.faults.cluster3 import Clusters3
from tests.faults.scenario3 import Record, matrix, play


@matrix(short=None)
def test_source_rolling_restart(
    mode: str, engine: str, eos: bool, three: Clusters3, tmp_path: Path, fault_results3: Record
) -> None:
    """Every source broker restarted in turn (clean stop, start, wait until in sync), as an
    upgrade does: the group coordinator moves with the brokers. Recovery is measured from the
    end of the roll."""
    faults = rolled("source")
    play("src-rolling-restart", mode, engine, eos, three, tmp_path, fault_results3, faults)


@matrix(short=None)
def test_leaders_move_on_the_source(
    mode: str, engine: str, eos: bool, three: Clusters3, tmp_path: Path, fault_results3: Record
) -> None:
    """Preferred-leader elections and partition reassignments on the source while mirroring:
    every leader of the mirrored topic moves four times (rotate, shrink, grow, rotate)."""
    play("src-leaders", mode, engine, eos, three, tmp_path, fault_results3, leaders_moved("source"))


@matrix(short=None)
def test_source_leader_killed(
    mode: str, engine: str, eos: bool, three: Clusters3, tmp_path: Path, fault_results3: Record
) -> None:
    """kill -9 of the source broker leading a mirrored partition, three times: the mirror reads
    on from the new leaders; the broker comes back after 15 s. Recovery is measured from the
    kill."""
    faults = leader_killed("source")
    play("src-leader-kill9", mode, engine, eos, three, tmp_path, fault_results3, faults)
