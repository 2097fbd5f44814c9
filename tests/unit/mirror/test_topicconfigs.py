"""Topic config drift: what the target lacks of the source's overrides."""

from __future__ import annotations

import pytest

from kmirror.mirror.topicconfigs import drift

pytestmark = pytest.mark.unit


def test_drift_is_the_source_values_the_target_lacks() -> None:
    source = {"retention.ms": "1000", "cleanup.policy": "compact"}
    target = {"retention.ms": "2000", "cleanup.policy": "compact", "segment.ms": "60000"}
    assert drift(source, target) == {"retention.ms": "1000"}
    assert drift(source, {}) == source
    # Target-only overrides (a longer retention on a DR cluster) are not drift.
    assert drift({}, target) == {}
