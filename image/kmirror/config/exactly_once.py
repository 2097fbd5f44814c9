"""Exactly-once settings: the transactional producer of one source partition.

Each source partition has its own transactional producer whose transactional.id is stable for
the mirror's group and the partition, so whichever stream owns the partition next fences the
previous owner with its init_transactions (docs/architecture.md, "Exactly-once"). The rules
here take plain values; MirrorConfig applies them (`transactional_id`,
`transaction_timeout_ms`, `transactional_producer_conf`).
"""

from __future__ import annotations

from kmirror.errors import ConfigError

# The smallest default transaction.timeout.ms (librdkafka's own default), and the largest a
# broker accepts by default (transaction.max.timeout.ms).
TXN_TIMEOUT_MIN_MS = 60_000
BROKER_MAX_TIMEOUT_MS = 900_000
TIMEOUT_KEY = "transaction.timeout.ms"


def transactional_id(group_id: str, topic: str, partition: int) -> str:
    return f"kmirror-{group_id}-{topic}-{partition}"


def timeout_ms(given: object | None, commit_interval_ms: int) -> int:
    """A transaction stays open for one commit interval plus the commit itself; the target
    aborts it after transaction.timeout.ms. A producer file's value (`given`) wins."""
    if given is not None:
        try:
            return int(str(given))
        except ValueError as exc:
            raise ConfigError(f"{TIMEOUT_KEY} must be an integer (ms), not {given!r}") from exc
    return min(max(TXN_TIMEOUT_MIN_MS, commit_interval_ms + 60_000), BROKER_MAX_TIMEOUT_MS)


def check_commit_interval(commit_interval_ms: int, timeout: int) -> None:
    """ConfigError when the commit interval cannot fit in a transaction."""
    if commit_interval_ms >= timeout:
        raise ConfigError(
            f"exactly-once: offset.commit.interval.ms ({commit_interval_ms}) must "
            f"be below the producer's {TIMEOUT_KEY} ({timeout}): each transaction stays open "
            "for one commit interval and the target aborts it after the timeout. Lower the "
            f"interval or raise {TIMEOUT_KEY} (at most the target broker's "
            f"transaction.max.timeout.ms, default {BROKER_MAX_TIMEOUT_MS})"
        )
