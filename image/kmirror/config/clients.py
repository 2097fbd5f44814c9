"""The librdkafka settings kmirror puts on every client it creates: the ones the delivery
guarantee depends on (forced over any user config) and the ones tuned for copying batches (a
user's producer/consumer config overrides them). MirrorConfig applies them where clients are
made; translate.py warns when a user file sets a forced one; the benchmarks use the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

# Settings the delivery guarantee depends on. They win over anything a user config says;
# the dialect parsers warn when they override a user's value.
CONSUMER_FORCED: Mapping[str, str] = MappingProxyType(
    {
        # Offsets are committed by the mirror, only for records the target acknowledged.
        "enable.auto.commit": "false",
        "enable.auto.offset.store": "false",
        # A committed offset that no longer exists is an error, never a silent jump.
        "auto.offset.reset": "error",
        "enable.partition.eof": "false",
    }
)
PRODUCER_FORCED: Mapping[str, str] = MappingProxyType(
    {
        # Per-partition order and no duplicates from internal retries.
        "enable.idempotence": "true",
        "acks": "all",
    }
)
# Defaults tuned for copying batches; a user's producer/consumer config overrides them.
CONSUMER_DEFAULTS: Mapping[str, str] = MappingProxyType(
    {
        "fetch.min.bytes": "1",
        "fetch.wait.max.ms": "100",
        "queued.max.messages.kbytes": "65536",
        "statistics.interval.ms": "5000",
    }
)
PRODUCER_DEFAULTS: Mapping[str, str] = MappingProxyType(
    {
        "linger.ms": "10",
        "batch.num.messages": "10000",
        "batch.size": "1000000",
        "queue.buffering.max.messages": "1000000",
        "queue.buffering.max.kbytes": "1048576",
        # Long enough to ride out a leader election, short enough that a dead target is
        # reported (and, with abort.on.send.failure, ends the process) within a minute.
        "message.timeout.ms": "60000",
        # Topics are created by the mirror with the source's layout, never by a metadata
        # request with the broker's defaults (one partition would misplace records).
        "allow.auto.create.topics": "false",
        "statistics.interval.ms": "5000",
    }
)
