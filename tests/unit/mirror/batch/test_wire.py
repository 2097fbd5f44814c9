"""The batch path's link to a cluster, without a broker: what a send to a broker that left the
metadata gives back."""

from __future__ import annotations

import kafka.errors as kerrors
import pytest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest

from kmirror.kafka.wire import SLOW_STEP_S, Link, selector

pytestmark = pytest.mark.unit


def test_a_broker_gone_from_the_metadata_is_a_failed_send_not_an_exception() -> None:
    """Transaction coordinators are remembered by node id. When that broker dies (kill -9 of
    one of three), the next metadata no longer lists it, and kafka-python's send raised
    UnknownBrokerIdError straight through the copier: the stream crashed (exit 1) instead of
    finding the coordinator again. A failed future is what every caller already handles."""
    net = selector()
    link = Link(net, "target", {"bootstrap_servers": ["127.0.0.1:9"]})
    try:
        future = link.send(2, FindCoordinatorRequest(key="t", key_type=1, version=3))
        assert future.failed()
        assert isinstance(future.exception, kerrors.UnknownBrokerIdError)
    finally:
        link.close()
        net.close()


def test_decoding_a_large_fetch_response_is_not_a_stuck_event_loop() -> None:
    """kafka-python warned at every loop step over 0.1 s: the copier's decoding of a fetch
    response of small batches takes that long on a busy machine, a dozen warnings a second
    while catching up. Only a step of seconds is worth a warning."""
    net = selector()
    try:
        assert net.config["slow_task_threshold_secs"] == SLOW_STEP_S >= 1.0
    finally:
        net.close()
