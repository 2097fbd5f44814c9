"""Where a confluent-kafka message sits, typed.

librdkafka sets the topic, partition and offset of every fetched record and of every delivery
report; its type stubs make them optional because error events (``m.error()`` set) carry none.
The mirror reads them only from records and reports, so this one accessor states that once
instead of narrowing the types at every call.
"""

from __future__ import annotations

from typing import cast

from confluent_kafka import Message


def position(m: Message) -> tuple[str, int, int]:
    """(topic, partition, offset) of a fetched record or a delivery report (not of an error
    event, where librdkafka sets none of them)."""
    return cast("tuple[str, int, int]", (m.topic(), m.partition(), m.offset()))
