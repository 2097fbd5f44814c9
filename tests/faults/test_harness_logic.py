"""The harness's own reading of the clusters without a broker: a lag sample that times out is
a failed check (KafkaException, which a fault's hold skips), not a crash of the scenario."""

from __future__ import annotations

from typing import Any, cast

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException

from tests.kafkatools import _watermarks

pytestmark = pytest.mark.unit


class TimesOut:
    """confluent-kafka's get_watermark_offsets answers None when its timeout passes."""

    def get_watermark_offsets(self, *args: Any, **kwargs: Any) -> None:
        return None


def test_a_watermark_timeout_is_a_kafka_error() -> None:
    with pytest.raises(KafkaException) as caught:
        _watermarks(cast(Consumer, TimesOut()), "t", [0, 1])
    assert caught.value.args[0].code() == KafkaError._TIMED_OUT
    assert "t[0]" in caught.value.args[0].str()
