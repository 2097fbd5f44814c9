"""Fixtures of the fault suite: the short/full switch and the results file.

Every scenario runs in two variants: `short` (marker `faults`, part of `make test`) and `full`
(marker `slow`, run by `make test-faults`, which sets KMIRROR_FAULTS=full; without that
variable the full variants skip, so a bare `pytest tests/faults` stays short).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import pytest

from tests.faults.cluster3 import RATE3, Clusters3, running_pair
from tests.faults.harness import RATE, Result, full_mode, write_results
from tests.kafkatools import Clusters, delete_topic

MODES = pytest.mark.parametrize(
    "mode",
    [
        pytest.param("short", marks=pytest.mark.faults, id="short"),
        pytest.param("full", marks=pytest.mark.slow, id="full"),
    ],
    indirect=True,
)
# A scenario only the full tier runs (make test-faults): make test keeps one of each kind
# (kill -9, a broker restart, a target outage, two mirrors in a group, a killed stream) and,
# under exactly-once, kill -9; the other exactly-once twins run in the full tier.
FULL_ONLY = pytest.mark.parametrize(
    "mode", [pytest.param("full", marks=pytest.mark.slow, id="full")], indirect=True
)


@pytest.fixture
def mode(request: pytest.FixtureRequest) -> str:
    value: str = request.param
    if value == "full" and not full_mode():
        pytest.skip("full fault scenario: set KMIRROR_FAULTS=full (make test-faults)")
    return value


def _collect(stem: str, rate: int) -> Iterator[Callable[[Result], None]]:
    """record(result): collected and written to bench/results/<stem>-<mode>.json at the end."""
    collected: dict[str, list[Result]] = {}

    def record(result: Result) -> None:
        collected.setdefault(result.mode, []).append(result)

    yield record
    for mode, results in collected.items():
        path = write_results(results, mode, stem, rate)
        print(f"\n[{stem}] {len(results)} scenario(s) written to {path}")
        for r in results:
            print(
                f"[{stem}] {r.scenario:<22} produced={r.produced} mirrored={r.mirrored} "
                f"missing={r.missing} duplicates={r.duplicates} recovery={r.summary()}"
            )


@pytest.fixture(scope="session")
def fault_results() -> Iterator[Callable[[Result], None]]:
    """The single-broker scenarios' results (faults-<mode>.json)."""
    yield from _collect("faults", RATE)


@pytest.fixture(scope="session")
def fault_results3() -> Iterator[Callable[[Result], None]]:
    """The 3-broker scenarios' results (faults3-<mode>.json), at their own load (RATE3)."""
    yield from _collect("faults3", RATE3)


@pytest.fixture
def target_cleanup(clusters: Clusters) -> Iterator[list[str]]:
    """Topics the mirror created on the target; deleted after the test."""
    names: list[str] = []
    yield names
    for name in names:
        with contextlib.suppress(Exception):
            delete_topic(clusters.target_bootstrap, name, timeout=10, wait=False)


@pytest.fixture(scope="package")
def clusters3() -> Iterator[Clusters3]:
    """The 3-broker pair, started by the first test of tests/faults that asks and stopped after
    its last (cluster3.running_pair)."""
    yield from running_pair()


@pytest.fixture
def three(clusters3: Clusters3) -> Iterator[Clusters3]:
    """The 3-broker pair for one scenario; afterwards every broker runs again, the proxies
    are clean and every replica is in sync, whatever the scenario left behind."""
    try:
        yield clusters3
    finally:
        clusters3.restore()
