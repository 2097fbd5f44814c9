"""The duplicate policy: an at-least-once mirror's duplicates are reported but pass
(--duplicates allow), an exactly-once mirror's fail (--duplicates fail)."""

from __future__ import annotations

import json

import pytest

from kmirror_validate.report import Example, PartitionResult, Report, TopicResult

pytestmark = pytest.mark.unit


def _replayed(allowed: bool, **changes: int) -> PartitionResult:
    """Complete and in order, 2 records copied twice (a restart replayed them)."""
    fields = dict(partition=0, source_count=10, target_count=12, matched=10, duplicates=2,
                  differs=0, order_violations=0, count_extra=2) | changes  # fmt: skip
    return PartitionResult(
        **fields,  # type: ignore[arg-type]
        examples={"duplicate": [Example(source_offset=4, target_offset=10)]},
        duplicates_allowed=allowed,
    )


@pytest.mark.parametrize("policy", ["allow", "fail"])
def test_duplicates_pass_only_when_allowed(policy: str) -> None:
    part = _replayed(policy == "allow")
    report = Report("digest", [TopicResult("t", "t", [part])], duplicates=policy)  # type: ignore[arg-type]
    assert report.ok is (policy == "allow")
    doc = json.loads(report.dumps())
    assert doc["duplicates"] == policy
    assert doc["totals"]["duplicates"] == 2
    assert "duplicates_allowed" not in doc["topics"][0]["partitions"][0]
    # Reported either way, in the summary too.
    line = "  t/0: 2 duplicates" + (" (allowed)" if policy == "allow" else "")
    assert any(x.startswith(line) for x in report.summary().splitlines())


def test_allowed_duplicates_do_not_hide_other_problems() -> None:
    assert not _replayed(True, missing=1).ok
    assert not _replayed(True, count_extra=3).ok  # one more surplus record than duplicates


@pytest.mark.parametrize("allowed", [True, False])
def test_count_mode_cannot_tell_duplicates_from_extra_records(allowed: bool) -> None:
    counted = PartitionResult(0, source_count=10, target_count=12, count_extra=2, extra=2,
                              duplicates_allowed=allowed)  # fmt: skip
    assert counted.ok is allowed
    assert not PartitionResult(0, source_count=10, target_count=9, count_missing=1, missing=1,
                               duplicates_allowed=allowed).ok  # fmt: skip
