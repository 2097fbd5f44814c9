"""The Java client properties that need more than librdkafka's own table: renamed keys (with
their unit conversions), Java-only keys and why they mean nothing here, the assignor and
auto.offset.reset names. kmirror.config.javaclient.translate applies them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Literal

StartPolicy = Literal["earliest", "latest", "none"]


def _kbytes(value: str) -> str:
    return str(max(1, -(-int(value) // 1024)))  # Java bytes -> librdkafka KiB, rounded up


def _os_default(value: str) -> str:
    return "0" if value.strip() == "-1" else value  # Java -1 = OS default; librdkafka uses 0


RENAMES: Mapping[str, tuple[str, Callable[[str], str] | None]] = {
    "max.request.size": ("message.max.bytes", None),
    "buffer.memory": ("queue.buffering.max.kbytes", _kbytes),
    "delivery.timeout.ms": ("message.timeout.ms", None),
    "fetch.max.wait.ms": ("fetch.wait.max.ms", None),
    "receive.buffer.bytes": ("socket.receive.buffer.bytes", _os_default),
    "send.buffer.bytes": ("socket.send.buffer.bytes", _os_default),
}

_BYTES = "kmirror copies keys, values and headers as raw bytes"
_METRICS = "kmirror exports its own Prometheus metrics"
_TLS = "librdkafka uses OpenSSL, which negotiates TLS 1.2 or newer"
_LOGIN = "librdkafka refreshes SASL credentials itself"
_PARTITIONER = "records keep their source partition (--partitioning same) or are placed by the "
_PARTITIONER += "Java default murmur2 hash (--partitioning hash)"
# Java-only keys with nothing to translate to: accepted, each with a note saying why.
JAVA_ONLY: Mapping[str, str] = {
    "key.serializer": _BYTES,
    "value.serializer": _BYTES,
    "key.deserializer": _BYTES,
    "value.deserializer": _BYTES,
    "exclude.internal.topics": "internal topics are never mirrored (built-in topic excludes)",
    "max.poll.records": "librdkafka fetches by size (fetch.max.bytes)",
    "default.api.timeout.ms": "kmirror passes explicit timeouts to every call",
    "max.block.ms": "kmirror waits for queue space itself",
    "ssl.protocol": _TLS,
    "ssl.enabled.protocols": _TLS,
    "ssl.keymanager.algorithm": _TLS,
    "ssl.trustmanager.algorithm": _TLS,
    "ssl.secure.random.implementation": _TLS,
    "client.dns.lookup": "librdkafka tries every address a host name resolves to",
    "metric.reporters": _METRICS,
    "metrics.num.samples": _METRICS,
    "metrics.recording.level": _METRICS,
    "metrics.sample.window.ms": _METRICS,
    "auto.include.jmx.reporter": _METRICS,
    "partitioner.class": _PARTITIONER,
    "partitioner.ignore.keys": _PARTITIONER,
    "partitioner.adaptive.partitioning.enable": _PARTITIONER,
    "partitioner.availability.timeout.ms": _PARTITIONER,
    "sasl.login.refresh.window.factor": _LOGIN,
    "sasl.login.refresh.window.jitter": _LOGIN,
    "sasl.login.refresh.min.period.seconds": _LOGIN,
    "sasl.login.refresh.buffer.seconds": _LOGIN,
    "sasl.login.connect.timeout.ms": _LOGIN,
    "sasl.login.read.timeout.ms": _LOGIN,
    "sasl.login.retry.backoff.ms": _LOGIN,
    "sasl.login.retry.backoff.max.ms": _LOGIN,
    "sasl.kerberos.ticket.renew.window.factor": _LOGIN,
    "sasl.kerberos.ticket.renew.jitter": _LOGIN,
    "compression.gzip.level": "use compression.level",
    "compression.lz4.level": "use compression.level",
    "compression.zstd.level": "use compression.level",
    "internal.leave.group.on.close": "librdkafka always leaves the group on close",
    "metadata.max.idle.ms": "librdkafka refreshes metadata per topic.metadata.refresh.interval.ms",
    "socket.connection.setup.timeout.max.ms": "see socket.connection.setup.timeout.ms",
}

ASSIGNORS = {
    "RangeAssignor": "range",
    "RoundRobinAssignor": "roundrobin",
    "CooperativeStickyAssignor": "cooperative-sticky",
    "StickyAssignor": "cooperative-sticky",
    "range": "range",
    "roundrobin": "roundrobin",
    "cooperative-sticky": "cooperative-sticky",
}
START: Mapping[str, StartPolicy] = {
    "earliest": "earliest",
    "smallest": "earliest",
    "beginning": "earliest",
    "latest": "latest",
    "largest": "latest",
    "end": "latest",
    "none": "none",
    "error": "none",
}
