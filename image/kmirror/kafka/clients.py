"""The one place kmirror creates Kafka clients.

Every client gets its settings from the config model (bootstrap servers, security, secrets
unsealed only here, a token provider's `oauth_cb`), librdkafka's log lines routed through
Python logging (`kmirror.librdkafka`, levels set by kmirror.logsetup) instead of raw stderr,
and librdkafka statistics only where someone reads them (a `stats_cb`). Callers add their
callbacks and the few settings that are theirs as `overrides` (a value of None removes a
setting; a `logger` there replaces kmirror's). Nothing here connects: librdkafka connects in
the background, and the batch path's `Link` on its first request.

    consumer             the mirror's group member on the source (the model's consumer settings)
    reader               a consumer that assigns and never joins its group or commits on its own:
                         reads topics, watermarks, a group's committed offsets
    producer             a producer of the target with the mirror's settings (idempotent, acks=all)
    transactional_producer   the same, for one source partition's transactions (exactly-once)
    source_producer      a producer of the source with its cluster settings (MM2's heartbeats)
    admin                an admin client of either cluster
    link                 the batch path's kafka-python connections to one cluster
    probe_producer / probe_consumer   offline clients for asking librdkafka about its settings
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from kmirror.config.model import MirrorConfig
from kmirror.kafka.wireconf import connection_args
from kmirror.partitions import SourcePartition

if TYPE_CHECKING:
    from kmirror.kafka.wire import Link

Side = Literal["source", "target"]
RDKAFKA_LOG = logging.getLogger("kmirror.librdkafka")
Overrides = Mapping[str, Any] | None

# A consumer that only reads what it assigns: never commits, never stores offsets, starts a
# partition without a position at its beginning, and sees only committed transactions.
READER: Mapping[str, Any] = MappingProxyType(
    {
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        "isolation.level": "read_committed",
    }
)


def _conf(base: Mapping[str, Any], overrides: Overrides) -> Any:
    conf = {"logger": RDKAFKA_LOG, **base}
    for key, value in (overrides or {}).items():
        if value is None:
            conf.pop(key, None)
        else:
            conf[key] = value
    if "stats_cb" not in conf:
        conf.pop("statistics.interval.ms", None)
    return conf


def consumer(config: MirrorConfig, overrides: Overrides = None) -> Consumer:
    """The mirror's member of its consumer group on the source."""
    return Consumer(_conf(config.consumer_conf(), overrides))


def reader(config: MirrorConfig, side: Side, group: str, overrides: Overrides = None) -> Consumer:
    """A consumer of `side` that assigns partitions itself. `group` is the group whose
    committed offsets it reads or writes (commit() of a group without live members); it never
    joins it."""
    return Consumer(reader_conf(config, side, group, overrides))


def reader_conf(
    config: MirrorConfig, side: Side, group: str, overrides: Overrides = None
) -> dict[str, Any]:
    """The settings of `reader`: the side's cluster settings, READER, the group id."""
    base = {**config.admin_conf(side), **READER, "group.id": group}
    conf: dict[str, Any] = _conf(base, overrides)
    return conf


def producer(config: MirrorConfig, overrides: Overrides = None) -> Producer:
    """A producer of the target with the mirror's settings (idempotent, acks=all, ...)."""
    return Producer(_conf(config.producer_conf(), overrides))


def transactional_producer(
    config: MirrorConfig, key: SourcePartition, overrides: Overrides = None
) -> Producer:
    """The target producer of one source partition's transactions (its transactional.id is
    stable for the group and the partition: kmirror.config.exactly_once)."""
    return Producer(_conf(config.transactional_producer_conf(*key), overrides))


def source_producer(config: MirrorConfig, overrides: Overrides = None) -> Producer:
    """A producer of the source with its cluster settings only (MM2's reverse heartbeats)."""
    return Producer(_conf(config.admin_conf("source"), overrides))


def admin(config: MirrorConfig, side: Side, overrides: Overrides = None) -> AdminClient:
    return AdminClient(_conf(config.admin_conf(side), overrides))


def link(net: Any, config: MirrorConfig, side: Side, max_response_bytes: int) -> Link:
    """kafka-python connections to one cluster on the shared selector `net` (the batch path),
    with the same settings and security as the librdkafka clients of that side."""
    # kafka-python is imported only by a mirror that runs the batch path, not by every
    # command that loads a configuration (the probes below are used while parsing one).
    from kmirror.kafka.wire import Link

    conf = config.consumer_conf() if side == "source" else config.producer_conf()
    return Link(net, side, connection_args(conf, side, max_response_bytes))


def probe_producer(conf: Mapping[str, Any]) -> Producer:
    """A producer of `conf` exactly as given (no cluster, no logger added): asks librdkafka
    whether it accepts settings (kmirror.config.javaclient.librdkafka)."""
    return Producer(dict(conf))


def probe_consumer(conf: Mapping[str, Any]) -> Consumer:
    """A consumer of `conf` exactly as given, for the same probes."""
    return Consumer(dict(conf))
