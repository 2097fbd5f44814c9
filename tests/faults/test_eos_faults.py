"""The fault scenarios again with --exactly-once: 0 missing AND 0 duplicates, in order, for a
read_committed consumer of the target (harness.compare reads read_committed).

Each test runs the at-least-once scenario of test_faults.py with harness.EXACTLY_ONCE set:
the mirrors get --exactly-once, the scenario is recorded as `<name>-eos`, and _finish fails it
on any duplicate or order violation. Restarts the lead's clusters (markers faults/slow):

    KMIRROR_SOURCE_BOOTSTRAP=127.0.0.1:19092 KMIRROR_TARGET_BOOTSTRAP=127.0.0.1:29092 \\
        pytest -m faults tests/faults/test_eos_faults.py
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import KafkaLocal, MakeTopic
from tests.faults import harness, test_faults
from tests.faults.conftest import FULL_ONLY, MODES
from tests.faults.harness import Result
from tests.kafkatools import Clusters


@pytest.fixture
def exactly_once() -> Iterator[None]:
    harness.EXACTLY_ONCE = True
    try:
        yield
    finally:
        harness.EXACTLY_ONCE = False


Record = Callable[[Result], None]


@MODES
def test_kill9_at_random_moments_eos(
    mode: str, clusters: Clusters, make_topic: MakeTopic, target_cleanup: list[str],
    tmp_path: Path, fault_results: Record, exactly_once: None,
) -> None:  # fmt: skip
    test_faults.test_kill9_at_random_moments(
        mode, clusters, make_topic, target_cleanup, tmp_path, fault_results
    )


@FULL_ONLY
def test_target_broker_restarts_eos(
    mode: str, clusters: Clusters, kafka_local: KafkaLocal, make_topic: MakeTopic,
    target_cleanup: list[str], tmp_path: Path, fault_results: Record, exactly_once: None,
) -> None:  # fmt: skip
    test_faults.test_target_broker_restarts(
        mode, clusters, kafka_local, make_topic, target_cleanup, tmp_path, fault_results
    )


@FULL_ONLY
def test_two_mirrors_in_one_group_one_killed_eos(
    mode: str, clusters: Clusters, make_topic: MakeTopic, target_cleanup: list[str],
    tmp_path: Path, fault_results: Record, exactly_once: None,
) -> None:  # fmt: skip
    test_faults.test_two_mirrors_in_one_group_one_killed(
        mode, clusters, make_topic, target_cleanup, tmp_path, fault_results
    )


@FULL_ONLY
def test_stream_process_killed_eos(
    mode: str, clusters: Clusters, make_topic: MakeTopic, target_cleanup: list[str],
    tmp_path: Path, fault_results: Record, exactly_once: None,
) -> None:  # fmt: skip
    test_faults.test_stream_process_killed(
        mode, clusters, make_topic, target_cleanup, tmp_path, fault_results
    )


@FULL_ONLY
def test_target_down_eos(
    mode: str, clusters: Clusters, kafka_local: KafkaLocal, make_topic: MakeTopic,
    target_cleanup: list[str], tmp_path: Path, fault_results: Record, exactly_once: None,
) -> None:  # fmt: skip
    """The target cluster stopped under the mirror (120 s in the full tier) with the default
    abort.on.send.failure=true: whatever the mirror does meanwhile (exit, be restarted as a
    Deployment would), once the target is back every record is there once."""
    res = test_faults._target_down(
        True, mode, clusters, kafka_local, make_topic, target_cleanup, tmp_path, fault_results
    )
    assert res.mirror_exits[-1] == 0, res.mirror_exits  # the final stop was clean
