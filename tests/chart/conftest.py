"""Fixtures of the chart tests. Rendering lives in tests/chart/chartlib.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.chart import chartlib


@pytest.fixture(scope="session")
def helm_template() -> Callable[..., Any]:
    """helm_template(values: dict | path | list of both, expect_fail=False, **kw) -> the parsed
    manifests (chartlib.Rendered), or helm's error message when expect_fail is true."""
    chartlib.require_tool(chartlib.HELM)
    return chartlib.helm_template


@pytest.fixture(scope="session")
def minimal() -> dict[str, Any]:
    """Values with just the two clusters (a fresh copy per use is up to the caller)."""
    return chartlib.MINIMAL
