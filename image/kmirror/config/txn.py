"""Exactly-once settings: the transactional producer of one source partition.

Each source partition has its own transactional producer whose transactional.id is stable for
the mirror's group and the partition, so whichever stream owns the partition next fences the
previous owner with its init_transactions (docs/architecture.md, "Exactly-once").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kmirror.errors import ConfigError

if TYPE_CHECKING:
    from kmirror.config.model import MirrorConfig

# The smallest default transaction.timeout.ms (librdkafka's own default), and the largest a
# broker accepts by default (transaction.max.timeout.ms).
TXN_TIMEOUT_MIN_MS = 60_000
BROKER_MAX_TIMEOUT_MS = 900_000
TIMEOUT_KEY = "transaction.timeout.ms"


def transactional_id(config: MirrorConfig, topic: str, partition: int) -> str:
    return f"kmirror-{config.group_id}-{topic}-{partition}"


def timeout_ms(config: MirrorConfig) -> int:
    """A transaction stays open for one commit interval plus the commit itself; the target
    aborts it after transaction.timeout.ms. A producer file's value wins."""
    given = config.target.producer.get(TIMEOUT_KEY, config.target.common.get(TIMEOUT_KEY))
    if given is not None:
        try:
            return int(str(given))
        except ValueError as exc:
            raise ConfigError(f"{TIMEOUT_KEY} must be an integer (ms), not {given!r}") from exc
    interval = config.offset_commit_interval_ms
    return min(max(TXN_TIMEOUT_MIN_MS, interval + 60_000), BROKER_MAX_TIMEOUT_MS)


def producer_conf(config: MirrorConfig, topic: str, partition: int) -> dict[str, Any]:
    conf = config.producer_conf()
    conf["transactional.id"] = transactional_id(config, topic, partition)
    conf[TIMEOUT_KEY] = str(timeout_ms(config))
    return conf


def check(config: MirrorConfig) -> None:
    """ConfigError when the commit interval cannot fit in a transaction."""
    timeout = timeout_ms(config)
    if config.offset_commit_interval_ms >= timeout:
        raise ConfigError(
            f"exactly-once: offset.commit.interval.ms ({config.offset_commit_interval_ms}) must "
            f"be below the producer's {TIMEOUT_KEY} ({timeout}): each transaction stays open "
            "for one commit interval and the target aborts it after the timeout. Lower the "
            f"interval or raise {TIMEOUT_KEY} (at most the target broker's "
            f"transaction.max.timeout.ms, default {BROKER_MAX_TIMEOUT_MS})"
        )
