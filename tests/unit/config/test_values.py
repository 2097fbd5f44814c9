from __future__ import annotations

import pytest

from kmirror.config.values import enforce_strict
from kmirror.errors import ConfigError

pytestmark = pytest.mark.unit

NOTES = ["fetch.mn.bytes is not a librdkafka property", "linger.ms=0 is slow"]


def test_strict_lists_every_warning_and_names_who_asked() -> None:
    with pytest.raises(ConfigError) as err:
        enforce_strict(NOTES, {}, flag=True, label="--strict")
    assert str(err.value) == (
        "--strict: 2 configuration warning(s):\n"
        "  - fetch.mn.bytes is not a librdkafka property\n"
        "  - linger.ms=0 is slow"
    )
    with pytest.raises(ConfigError, match=r"^KMIRROR_STRICT: 2 configuration warning"):
        enforce_strict(NOTES, {"KMIRROR_STRICT": "true"})


def test_not_strict_or_nothing_to_report_passes() -> None:
    enforce_strict(NOTES, {})
    enforce_strict(NOTES, {"KMIRROR_STRICT": "false"})
    enforce_strict([], {"KMIRROR_STRICT": "true"}, flag=True)


def test_a_bad_strict_setting_is_an_error() -> None:
    with pytest.raises(ConfigError, match="KMIRROR_STRICT"):
        enforce_strict([], {"KMIRROR_STRICT": "maybe"})
