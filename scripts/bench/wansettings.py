"""The WAN benchmark's settings (scripts/bench/wan.py): the link, the source broker and how
each contender is tuned for a high-latency link, as each one's documentation tells users.
docs/benchmarks.md ("WAN") lists every value here with its reason; change both together.

Apache Kafka's documentation (Operations, "Datacenters") says the producer, consumer and broker
batch well enough for high-latency links but that the TCP socket buffers may need to grow; the
Kafka and MM2 tuning guides (e.g. Red Hat's Streams for Apache Kafka, "Handling high volumes of
messages") raise the consumer's fetch.max.bytes / max.partition.fetch.bytes so that each round
trip carries more. Both contenders get the same fetch sizes and socket policy.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from scripts.bench.contenders import Contender

# Jitter (Toxiproxy's attribute: ± this much) as a fraction of the round trip.
JITTER_FRACTION = 0.1

# Bytes per partition per fetch: 1 MB is the default of both clients; at 100 ms a partition
# then moves at most 10 MB/s. 4 MB x 8 partitions is 32 MB per round trip for each.
PARTITION_FETCH_BYTES = str(4 * 1024 * 1024)
FETCH_MAX_BYTES = str(50 * 1024 * 1024)

# The source broker's socket buffers: -1 is the OS default, i.e. Linux's autotuning (Kafka's
# defaults, 100 KB each, cap a connection at 100 KB per round trip on a real WAN).
SOURCE_BROKER: Mapping[str, str] = MappingProxyType(
    {"socket.send.buffer.bytes": "-1", "socket.receive.buffer.bytes": "-1"}
)

# MM2's source consumer (src<run>.consumer.*), over MM2_CONSUMER (fetch.max.wait.ms=100,
# max.poll.records=5000). Its producer writes to the local target: MM2_PRODUCER unchanged.
MM2_WAN_CONSUMER: Mapping[str, str] = MappingProxyType(
    {
        "max.partition.fetch.bytes": PARTITION_FETCH_BYTES,
        "fetch.max.bytes": FETCH_MAX_BYTES,  # the default, written out
        # The Java default, 64 KB, sets SO_RCVBUF, which on Linux turns the window's
        # autotuning off: 64 KB per round trip. -1 leaves it to the OS.
        "receive.buffer.bytes": "-1",
        # The default: a larger minimum only makes live records wait for fetch.max.wait.ms; a
        # backlog's fetches are full anyway.
        "fetch.min.bytes": "1",
    }
)

# kmirror's consumer.properties (librdkafka names; the batch path reads
# max.partition.fetch.bytes too and always asks for 50 MB per fetch).
KMIRROR_WAN_CONSUMER: Mapping[str, str] = MappingProxyType(
    {
        "max.partition.fetch.bytes": PARTITION_FETCH_BYTES,
        "fetch.max.bytes": FETCH_MAX_BYTES,  # librdkafka's default, written out
        # librdkafka's default, written out: 0 leaves SO_RCVBUF to the OS (autotuning). The
        # batch path's sockets never set it.
        "socket.receive.buffer.bytes": "0",
    }
)


def contenders() -> list[Contender]:
    """kmirror (default engine, one stream) and MM2 (one task), tuned for the link."""
    return [
        Contender("kmirror-1", "kmirror", 1, consumer=KMIRROR_WAN_CONSUMER),
        Contender("mm2-1", "mm2", 1, consumer=MM2_WAN_CONSUMER),
    ]


def link_description() -> dict[str, object]:
    return {
        "proxy": "Toxiproxy 2.5.0 (kafka-local --proxy), latency toxic on both directions",
        "each_way": "RTT/2",
        "jitter": f"± {JITTER_FRACTION:.0%} of the RTT (half each way)",
        "where": "mirror -> source only; the target is local to the mirror",
        "harness": "loaders, offsets and the latency producer use the source broker directly",
    }
