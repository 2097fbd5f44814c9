"""The one configuration model. Every dialect (MM1 flags, mm2.properties, KUDO parameters,
the container's environment) is parsed into these frozen dataclasses at the edge; the mirror,
the entrypoint and the validation job only ever see this model.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from kmirror.config import oauth
from kmirror.config.secret import Secret, unseal
from kmirror.errors import ConfigError

Role = Literal["consumer", "producer", "admin"]
ConfValue = str | Secret

# MM2's DefaultTopicFilter excludes these; internal topics never make sense on a target.
DEFAULT_TOPIC_EXCLUDES: tuple[str, ...] = (r".*[\-\.]internal", r".*\.replica", r"__.*")

# MM2's DefaultConfigPropertyFilter `config.properties.exclude`: settings that belong to the
# target cluster's operator, not to the copy.
DEFAULT_CONFIG_EXCLUDES: tuple[str, ...] = (
    r"follower\.replication\.throttled\.replicas",
    r"leader\.replication\.throttled\.replicas",
    r"message\.timestamp\.difference\.max\.ms",
    r"message\.timestamp\.type",
    r"unclean\.leader\.election\.enable",
    r"min\.insync\.replicas",
    r"confluent\..*",
)

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


@dataclass(frozen=True)
class ClusterConfig:
    """How to reach one cluster. All keys are librdkafka keys (dialects translate Java keys)."""

    alias: str
    bootstrap_servers: str
    common: Mapping[str, ConfValue] = field(default_factory=dict)
    consumer: Mapping[str, ConfValue] = field(default_factory=dict)
    producer: Mapping[str, ConfValue] = field(default_factory=dict)
    admin: Mapping[str, ConfValue] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.bootstrap_servers.strip():
            raise ConfigError(
                f"cluster '{self.alias}' has no bootstrap servers: set its bootstrap.servers "
                "(host:port[,host:port])"
            )
        for server in self.bootstrap_servers.split(","):
            host, _, port = server.strip().rpartition(":")
            if not host or not port.isdigit():
                raise ConfigError(
                    f"cluster '{self.alias}': bootstrap server '{server.strip()}' is not host:port"
                )
        for name in ("common", "consumer", "producer", "admin"):
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))
            if name != "common":
                conf = {**self.common, **getattr(self, name)}
                oauth.check(conf, self.bootstrap_servers, f"cluster '{self.alias}'")

    def __reduce__(self) -> tuple[Any, ...]:
        # MappingProxyType does not pickle; stream processes receive the config by pickle.
        return (
            ClusterConfig,
            (
                self.alias,
                self.bootstrap_servers,
                dict(self.common),
                dict(self.consumer),
                dict(self.producer),
                dict(self.admin),
            ),
        )

    def client_conf(self, role: Role) -> dict[str, ConfValue]:
        """Sealed librdkafka config for one client role (secrets still wrapped)."""
        extra = {"consumer": self.consumer, "producer": self.producer, "admin": self.admin}[role]
        return {"bootstrap.servers": self.bootstrap_servers, **self.common, **extra}

    @property
    def security_protocol(self) -> str:
        return str(self.common.get("security.protocol", "plaintext")).upper()


@dataclass(frozen=True)
class TopicSelection:
    """Which source topics to mirror: full-match include and exclude regex lists (Java syntax
    subset), like MM1's --whitelist/--blacklist and MM2's topics / topics.exclude."""

    include: tuple[str, ...] = (".*",)
    exclude: tuple[str, ...] = ()
    default_excludes: tuple[str, ...] = DEFAULT_TOPIC_EXCLUDES

    def __post_init__(self) -> None:
        if not self.include:
            raise ConfigError("the topic whitelist is empty: give --whitelist REGEX (e.g. '.*')")
        compiled_inc = tuple(_compile(p, "whitelist/include") for p in self.include)
        compiled_exc = tuple(
            _compile(p, "blacklist/exclude") for p in self.exclude + self.default_excludes
        )
        object.__setattr__(self, "_inc", compiled_inc)
        object.__setattr__(self, "_exc", compiled_exc)

    def matches(self, topic: str) -> bool:
        inc: tuple[re.Pattern[str], ...] = self._inc  # type: ignore[attr-defined]
        exc: tuple[re.Pattern[str], ...] = self._exc  # type: ignore[attr-defined]
        return any(p.fullmatch(topic) for p in inc) and not any(p.fullmatch(topic) for p in exc)

    def select(self, topics: list[str] | set[str]) -> list[str]:
        return sorted(t for t in topics if self.matches(t))


def split_patterns(value: str) -> tuple[str, ...]:
    """MM1 and MM2 accept comma-separated lists; MM1 also strips quotes and spaces."""
    parts = [p.strip().strip("'\"").strip() for p in value.split(",")]
    return tuple(p for p in parts if p)


def _compile(pattern: str, what: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ConfigError(
            f"invalid {what} regex {pattern!r}: {exc}. Topic patterns are regular expressions "
            "matched against the whole topic name, e.g. 'orders|payments' or 'app\\..*'"
        ) from exc


@dataclass(frozen=True)
class RenamePolicy:
    """Target topic naming: MM1/KUDO keep names (identity); MM2's DefaultReplicationPolicy
    prefixes `<source alias><separator>`."""

    kind: Literal["identity", "prefix"] = "identity"
    source_alias: str = "source"
    separator: str = "."

    def target_topic(self, source_topic: str) -> str:
        if self.kind == "identity":
            return source_topic
        return f"{self.source_alias}{self.separator}{source_topic}"


@dataclass(frozen=True)
class MirrorConfig:
    """Everything one mirror (all its streams) needs. Built once, never mutated."""

    source: ClusterConfig
    target: ClusterConfig
    group_id: str
    topics: TopicSelection = field(default_factory=TopicSelection)
    rename: RenamePolicy = field(default_factory=RenamePolicy)
    num_streams: int = 1
    offset_commit_interval_ms: int = 60_000
    abort_on_send_failure: bool = True
    partitioning: Literal["same", "hash"] = "same"
    # Where a partition without a committed offset starts; "none" = fail instead (Java's
    # auto.offset.reset=none). A committed offset that no longer exists always fails.
    auto_offset_reset: Literal["earliest", "latest", "none"] = "earliest"
    create_topics: bool = True
    sync_topic_configs: bool = True
    replication_factor: int = -1
    config_excludes: tuple[str, ...] = DEFAULT_CONFIG_EXCLUDES
    refresh_topics_interval_s: float = 5.0
    metrics_port: int = 9404
    log_level: str = "INFO"
    log_json: bool = False
    log_pattern: str | None = None
    dialect: str = "mm1"
    # Startup warnings collected while parsing (unknown keys, overridden settings, ...).
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        checks = [
            (self.num_streams >= 1, "num.streams must be >= 1"),
            (self.offset_commit_interval_ms > 0, "offset.commit.interval.ms must be > 0"),
            (self.refresh_topics_interval_s > 0, "the topic refresh interval must be > 0"),
            (0 <= self.metrics_port <= 65535, "the metrics port must be 0..65535"),
            (
                self.replication_factor == -1 or self.replication_factor >= 1,
                "replication factor must be -1 (broker default) or >= 1",
            ),
            (bool(self.group_id.strip()), "group.id is empty: set group.id in the consumer config"),
        ]
        for ok, message in checks:
            if not ok:
                raise ConfigError(message)
        if self.partitioning not in ("same", "hash"):
            raise ConfigError(f"--partitioning must be 'same' or 'hash', not {self.partitioning!r}")
        for p in self.config_excludes:
            _compile(p, "config.properties.exclude")

    # The only places secrets leave their wrapper: right where clients are created (with a
    # token provider's oauth_cb in place of its kmirror.sasl.* settings).
    def consumer_conf(self) -> dict[str, Any]:
        conf = {**CONSUMER_DEFAULTS, **self.source.client_conf("consumer")}
        conf.update(CONSUMER_FORCED)
        conf["group.id"] = self.group_id
        return oauth.attach(unseal(conf))

    def producer_conf(self) -> dict[str, Any]:
        conf = {**PRODUCER_DEFAULTS, **self.target.client_conf("producer")}
        conf.update(PRODUCER_FORCED)
        if self.partitioning == "hash":
            # Same placement as the Java clients' default partitioner.
            conf.setdefault("partitioner", "murmur2_random")
        return oauth.attach(unseal(conf))

    def admin_conf(self, side: Literal["source", "target"]) -> dict[str, Any]:
        cluster = self.source if side == "source" else self.target
        return oauth.attach(unseal(cluster.client_conf("admin")))

    def target_topic(self, source_topic: str) -> str:
        return self.rename.target_topic(source_topic)

    def excluded_config(self, name: str) -> bool:
        return any(re.fullmatch(p, name) for p in self.config_excludes)
