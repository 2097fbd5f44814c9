"""read_committed over raw batches: aborted transactions and markers are not copied."""

from __future__ import annotations

import pytest

from kmirror.mirror.batch.readcommitted import committed
from kmirror.mirror.batch.records import split
from tests.unit.mirror.batch.helpers import build, marker

pytestmark = pytest.mark.unit


def _kept(data: bytes, aborted: list[tuple[int, int]]) -> list[tuple[int, bool]]:
    batches, _ = split(data)
    return [(b.base_offset, keep) for b, keep in committed(batches, aborted)]


def test_aborted_transaction_is_dropped_and_committed_one_kept() -> None:
    log = (
        build([0, 1], base_offset=0, producer_id=1, transactional=True)  # aborted
        + build([0, 1], base_offset=2, producer_id=2, transactional=True)  # committed
        + marker(4, 1, abort=True)
        + marker(5, 2, abort=False)
        + build([0], base_offset=6, producer_id=3)  # idempotent, not transactional
    )
    assert _kept(log, [(1, 0)]) == [(0, False), (2, True), (4, False), (5, False), (6, True)]


def test_a_producer_is_aborted_only_from_its_first_offset_to_its_abort_marker() -> None:
    log = (
        build([0], base_offset=0, producer_id=1, transactional=True)  # committed earlier txn
        + marker(1, 1, abort=False)
        + build([0], base_offset=2, producer_id=1, transactional=True)  # aborted txn
        + marker(3, 1, abort=True)
        + build([0], base_offset=4, producer_id=1, transactional=True)  # next txn, committed
        + marker(5, 1, abort=False)
    )
    assert _kept(log, [(1, 2)]) == [
        (0, True),
        (1, False),
        (2, False),
        (3, False),
        (4, True),
        (5, False),
    ]


def test_aborted_list_for_another_producer_changes_nothing() -> None:
    log = build([0, 1], base_offset=0, producer_id=5, transactional=True) + marker(
        2, 5, abort=False
    )
    assert _kept(log, [(6, 0)]) == [(0, True), (2, False)]
