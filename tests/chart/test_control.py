"""The control API and throttles in the chart: the token Secret mounted and named to the image in
both modes, the throttle handed over, and what kmirror loads from the rendered pod."""

from __future__ import annotations

from typing import Any

import pytest

from kmirror.entrypoint.render import build_plan, plan_config
from tests.chart import chartlib
from tests.chart.chartlib import MINIMAL

pytestmark = pytest.mark.chart

T = chartlib.helm_template
CONTROL = {"control": {"enabled": True, "existingSecret": "ops-token", "tokenKey": "t"}}
TOKEN = "/etc/kmirror/secrets/control/token"


def mirror(docs: chartlib.Rendered) -> dict[str, Any]:
    return chartlib.container(docs.deployment, "mirror")


@pytest.mark.parametrize(
    "mode",
    [
        {},
        {
            "mm2Config": {"enabled": True, "existingSecret": "mm2"},
            "validation": {"test": {"enabled": False}, "hook": {"enabled": False}},
        },
    ],
    ids=["values", "mm2Config"],
)
def test_the_token_secret_is_mounted_and_named_in_every_mode(mode: dict[str, Any]) -> None:
    docs = T([MINIMAL, CONTROL, mode])
    c = mirror(docs)
    env = chartlib.resolve_env(c, docs)
    assert env["KMIRROR_CONTROL_TOKEN_FILE"] == TOKEN
    assert chartlib.mounted_secret_files(docs.deployment, c)[TOKEN] == chartlib.SecretRef(
        "ops-token", "t"
    )


def test_off_by_default_and_the_throttle_reaches_the_loaded_config() -> None:
    docs = T(MINIMAL)
    env = chartlib.resolve_env(mirror(docs), docs)
    assert "KMIRROR_CONTROL_TOKEN_FILE" not in env and "KMIRROR_THROTTLE" not in env
    env = T([MINIMAL, {"throttle": "backlog.bytes=10485760,t:tail.records=5"}]).configmap
    config = plan_config(build_plan(env))  # what the entrypoint hands to the mirror
    assert config.throttle.spec() == "backlog.bytes=10485760,t:tail.records=5"


def test_enabled_without_a_secret_says_what_to_set() -> None:
    err = T([MINIMAL, {"control": {"enabled": True}}], expect_fail=True)
    assert "control.existingSecret" in err and "create secret generic" in err


def test_a_malformed_throttle_is_refused_by_the_schema() -> None:
    err = T([MINIMAL, {"throttle": "fast please"}], expect_fail=True)
    assert "/throttle" in err
