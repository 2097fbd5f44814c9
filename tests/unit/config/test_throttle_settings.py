"""The throttle settings' text and JSON forms."""

from __future__ import annotations

import pytest

from kmirror.config.throttle import (
    Rate,
    Rates,
    ThrottleSettings,
    parse_throttle,
    throttle_from_json,
)
from kmirror.errors import ConfigError

pytestmark = pytest.mark.unit


def test_text_form_round_trips() -> None:
    spec = "backlog.bytes=10485760,tail.records=20000,orders:backlog.bytes=1048576"
    settings = parse_throttle(spec, "--throttle")
    assert settings.flow == Rates(Rate(bytes_per_s=10485760), Rate(records_per_s=20000))
    assert settings.topic("orders") == Rates(backlog=Rate(bytes_per_s=1048576))
    assert settings.topic("other") is None and settings.limited
    assert parse_throttle(settings.spec(), "x") == settings
    assert throttle_from_json(settings.to_json()) == settings
    assert not parse_throttle("", "x").limited and ThrottleSettings().spec() == ""


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("backlog.bytes", "cannot read"),
        ("live.bytes=5", "cannot read"),
        ("backlog.kb=5", "cannot read"),
        ("backlog.bytes=ten", "not a number"),
        ("backlog.bytes=0", "positive"),
        ("tail.records=-3", "positive"),
        ("tail.records=inf", "positive"),
    ],
)
def test_bad_text_names_the_setting_and_the_form(spec: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says) as exc:
        parse_throttle(spec, "--throttle")
    assert "--throttle" in str(exc.value) and "backlog.bytes=" in str(exc.value)


def test_bad_json_is_refused() -> None:
    for doc in ([], {"flows": {}}, {"flow": {"backlog": {"bytes": 5}}}, {"topics": {"t": 3}}):
        with pytest.raises(ConfigError):
            throttle_from_json(doc)
