"""The acknowledged writer of kmirror's own topics (progress book, control, schema ID map): it
answers only for what the target acknowledged. Against an address where no broker listens."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError

from kmirror.config.model import ClusterConfig, MirrorConfig
from kmirror.kafka.writer import AckedWriter

pytestmark = pytest.mark.unit


def unreachable_target() -> MirrorConfig:
    return MirrorConfig(
        source=ClusterConfig("source", "127.0.0.1:1"),
        target=ClusterConfig("target", "127.0.0.1:1"),
        group_id="g",
    )


def test_records_the_target_never_acknowledged_are_an_error_with_their_count() -> None:
    writer = AckedWriter(unreachable_target())
    try:
        failure = writer.send("t", [(b"k1", b"v"), (b"k2", None)], timeout=0.5)
        assert failure is not None and failure.code() == KafkaError._MSG_TIMED_OUT
        assert "2 record(s) not acknowledged" in failure.str()
        why = writer.write("t", [(b"k3", b"v")], timeout=0.2)
        assert why is not None and "record(s) not acknowledged" in why
    finally:
        writer.close(0)
