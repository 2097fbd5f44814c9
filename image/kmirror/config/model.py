"""The one configuration model. Every dialect (MM1 flags, mm2.properties, KUDO parameters,
the container's environment) is parsed into these frozen dataclasses at the edge; the mirror,
the entrypoint and the validation job only ever see this model.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from kmirror.config import clients, oauth
from kmirror.config.schemas import SchemaSettings
from kmirror.config.secret import Secret, unseal
from kmirror.errors import ConfigError

Role = Literal["consumer", "producer", "admin"]
ConfValue = str | Secret

_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")

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


HEARTBEATS_TOPIC = "heartbeats"


@dataclass(frozen=True)
class TopicSelection:
    """Which source topics to mirror: full-match include and exclude regex lists (Java syntax
    subset), like MM1's --whitelist/--blacklist and MM2's topics / topics.exclude."""

    include: tuple[str, ...] = (".*",)
    exclude: tuple[str, ...] = ()
    default_excludes: tuple[str, ...] = DEFAULT_TOPIC_EXCLUDES
    # Mirrored whatever `include` says (MM2 always mirrors heartbeats topics); excludes still win.
    always: tuple[str, ...] = ()
    # Prefix policy: a topic whose name says it came from this cluster (`B.orders`, `C.B.orders`
    # when mirroring into B) is never mirrored back into it (MM2's cycle rule).
    loop_alias: str | None = None
    loop_separator: str = "."
    # Identity policy: only heartbeats topics carry their origin in the name (MM2 likewise).
    loop_heartbeats_only: bool = False

    def __post_init__(self) -> None:
        if not self.include:
            raise ConfigError("the topic whitelist is empty: give --whitelist REGEX (e.g. '.*')")
        compiled_inc = tuple(_compile(p, "whitelist/include") for p in self.include)
        compiled_exc = tuple(
            _compile(p, "blacklist/exclude") for p in self.exclude + self.default_excludes
        )
        object.__setattr__(self, "_inc", compiled_inc + tuple(re.compile(p) for p in self.always))
        object.__setattr__(self, "_exc", compiled_exc)

    def matches(self, topic: str) -> bool:
        inc: tuple[re.Pattern[str], ...] = self._inc  # type: ignore[attr-defined]
        exc: tuple[re.Pattern[str], ...] = self._exc  # type: ignore[attr-defined]
        if self.is_loop(topic):
            return False
        return any(p.fullmatch(topic) for p in inc) and not any(p.fullmatch(topic) for p in exc)

    def is_loop(self, topic: str) -> bool:
        """True when the topic's name says it originated on the cluster we mirror into."""
        if self.loop_alias is None:
            return False
        parts = topic.split(self.loop_separator)
        if self.loop_heartbeats_only and parts[-1] != HEARTBEATS_TOPIC:
            return False
        return self.loop_alias in parts[:-1]

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
    prefixes `<source alias><separator>`. With `heartbeats` (MM2's rules) heartbeats topics are
    prefixed under the identity policy too, as MM2's IdentityReplicationPolicy does, so they
    never loop and show which cluster they crossed from."""

    kind: Literal["identity", "prefix"] = "identity"
    source_alias: str = "source"
    separator: str = "."
    target_alias: str = "target"
    heartbeats: bool = False

    def target_topic(self, source_topic: str) -> str:
        if self.kind == "identity" and not (
            self.heartbeats and source_topic.endswith(HEARTBEATS_TOPIC)
        ):
            return source_topic
        return f"{self.source_alias}{self.separator}{source_topic}"

    def is_heartbeats(self, topic: str) -> bool:
        return topic.rsplit(self.separator, maxsplit=1)[-1] == HEARTBEATS_TOPIC

    @property
    def checkpoints_topic(self) -> str:
        """MM2's `<source alias>.checkpoints.internal` on the target."""
        return f"{self.source_alias}.checkpoints.internal"

    @property
    def remote_heartbeats_topic(self) -> str:
        """Where the source's heartbeats land on the target."""
        return f"{self.source_alias}{self.separator}{HEARTBEATS_TOPIC}"


# MM2's `groups.exclude` default: tools' throw-away groups and Kafka's own.
DEFAULT_GROUP_EXCLUDES: tuple[str, ...] = ("console-consumer-.*", "connect-.*", "__.*")


@dataclass(frozen=True)
class DrConfig:
    """Disaster recovery: MM2's checkpoints, heartbeats and group offset sync (docs/
    disaster-recovery.md). MM2's defaults in the mm2 dialect; off in MM1/KUDO unless asked
    for, so their default stays a plain byte-exact mirror."""

    emit_checkpoints: bool = False
    checkpoints_interval_s: float = 60.0
    emit_heartbeats: bool = False
    heartbeats_interval_s: float = 1.0
    sync_group_offsets: bool = False
    sync_group_offsets_interval_s: float = 60.0
    groups: tuple[str, ...] = (".*",)
    groups_exclude: tuple[str, ...] = DEFAULT_GROUP_EXCLUDES
    # Opt-in header naming the cluster a record was first written to (identity policy loops).
    provenance_header: bool = False

    def __post_init__(self) -> None:
        for value, name in (
            (self.checkpoints_interval_s, "emit.checkpoints.interval.seconds"),
            (self.heartbeats_interval_s, "emit.heartbeats.interval.seconds"),
            (self.sync_group_offsets_interval_s, "sync.group.offsets.interval.seconds"),
        ):
            if value <= 0:
                raise ConfigError(f"{name} must be > 0, not {value}")
        inc = tuple(_compile(p, "groups") for p in self.groups)
        exc = tuple(_compile(p, "groups.exclude") for p in self.groups_exclude)
        object.__setattr__(self, "_inc", inc)
        object.__setattr__(self, "_exc", exc)

    @property
    def enabled(self) -> bool:
        return self.emit_checkpoints or self.emit_heartbeats or self.sync_group_offsets

    def group_matches(self, group: str) -> bool:
        inc: tuple[re.Pattern[str], ...] = self._inc  # type: ignore[attr-defined]
        exc: tuple[re.Pattern[str], ...] = self._exc  # type: ignore[attr-defined]
        return any(p.fullmatch(group) for p in inc) and not any(p.fullmatch(group) for p in exc)


# Defaults every dialect, flag help text and the environment table use (MirrorMaker 1's own).
DEFAULT_NUM_STREAMS = 1
DEFAULT_OFFSET_COMMIT_INTERVAL_MS = 60_000
ENGINES = ("record", "batch", "auto")
PARTITIONINGS = ("same", "hash")
DEFAULT_ENGINE: Literal["record", "batch", "auto"] = "auto"


@dataclass(frozen=True)
class MirrorConfig:
    """Everything one mirror (all its streams) needs. Built once, never mutated."""

    source: ClusterConfig
    target: ClusterConfig
    group_id: str
    topics: TopicSelection = field(default_factory=TopicSelection)
    rename: RenamePolicy = field(default_factory=RenamePolicy)
    num_streams: int = DEFAULT_NUM_STREAMS
    offset_commit_interval_ms: int = DEFAULT_OFFSET_COMMIT_INTERVAL_MS
    abort_on_send_failure: bool = True
    partitioning: Literal["same", "hash"] = "same"
    # How records are copied (kmirror.mirror.engines): "record" hands each record to a producer;
    # "batch" copies source record batches as they are (--partitioning same only); "auto" (the
    # default) batches where they can be copied and pay off, records otherwise.
    engine: Literal["record", "batch", "auto"] = DEFAULT_ENGINE
    # Where a partition without a committed offset starts; "none" = fail instead (Java's
    # auto.offset.reset=none). A committed offset that no longer exists always fails.
    auto_offset_reset: Literal["earliest", "latest", "none"] = "earliest"
    create_topics: bool = True
    sync_topic_configs: bool = True
    sync_topic_configs_interval_s: float = 600.0  # MM2's sync.topic.configs.interval.seconds
    replication_factor: int = -1
    config_excludes: tuple[str, ...] = DEFAULT_CONFIG_EXCLUDES
    refresh_topics_interval_s: float = 5.0
    # The progress book's compacted topic on the target; empty: the default (`progress_topic`).
    progress_topic_name: str = ""
    metrics_port: int = 9404
    log_level: str = "INFO"
    log_json: bool = False
    log_pattern: str | None = None
    dialect: str = "mm1"
    # Transactions on the target holding each partition's progress record (architecture.md).
    exactly_once: bool = False
    dr: DrConfig = field(default_factory=DrConfig)
    schemas: SchemaSettings | None = None  # schema registry mirroring (config/schemas.py)
    # Startup warnings collected while parsing (unknown keys, overridden settings, ...).
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        checks = [
            (self.num_streams >= 1, "num.streams must be >= 1"),
            (self.offset_commit_interval_ms > 0, "offset.commit.interval.ms must be > 0"),
            (self.refresh_topics_interval_s > 0, "the topic refresh interval must be > 0"),
            (
                self.sync_topic_configs_interval_s > 0,
                "sync.topic.configs.interval.seconds must be > 0",
            ),
            (0 <= self.metrics_port <= 65535, "the metrics port must be 0..65535"),
            (
                self.replication_factor == -1 or self.replication_factor >= 1,
                "replication factor must be -1 (the source topic's) or >= 1",
            ),
            (bool(self.group_id.strip()), "group.id is empty: set group.id in the consumer config"),
        ]
        for ok, message in checks:
            if not ok:
                raise ConfigError(message)
        if self.progress_topic_name and not _TOPIC_NAME.fullmatch(self.progress_topic_name):
            raise ConfigError(
                f"progress.topic {self.progress_topic_name!r} is not a valid topic name: use up "
                "to 249 of the characters a-z A-Z 0-9 . _ -"
            )
        if self.exactly_once:
            from kmirror.config import txn  # the exactly-once settings (imports this module)

            txn.check(self)
        if self.partitioning not in PARTITIONINGS:
            raise ConfigError(f"--partitioning must be 'same' or 'hash', not {self.partitioning!r}")
        if self.engine not in ENGINES:
            raise ConfigError(f"--engine must be record, batch or auto, not {self.engine!r}")
        if self.engine == "batch" and not self.keeps_partitions:
            raise ConfigError(
                "--engine batch copies record batches to the same partition number and cannot "
                "re-partition: use --partitioning same, or --engine auto (the record path for "
                "hash partitioning)"
            )
        for p in self.config_excludes:
            _compile(p, "config.properties.exclude")
        # MM2's topic rules follow the rename policy: no topic goes back where it came from,
        # heartbeats always cross (prefixed) when MM2's heartbeat rules apply.
        mm2_heartbeats = self.dialect == "mm2" or self.dr.emit_heartbeats
        rename = self.rename
        if rename.heartbeats != mm2_heartbeats:
            rename = dataclasses.replace(rename, heartbeats=mm2_heartbeats)
            object.__setattr__(self, "rename", rename)
        topics = dataclasses.replace(
            self.topics,
            always=(rf"(.*{re.escape(rename.separator)})?{HEARTBEATS_TOPIC}",)
            if mm2_heartbeats
            else (),
            loop_alias=rename.target_alias if rename.kind == "prefix" or mm2_heartbeats else None,
            loop_separator=rename.separator,
            loop_heartbeats_only=rename.kind == "identity",
        )
        if topics != self.topics:
            object.__setattr__(self, "topics", topics)

    @property
    def keeps_partitions(self) -> bool:
        """--partitioning same: a record keeps its source partition (hash: placed anew)."""
        return self.partitioning == "same"

    # The only places secrets leave their wrapper: right where clients are created (with a
    # token provider's oauth_cb in place of its kmirror.sasl.* settings).
    def consumer_conf(self) -> dict[str, Any]:
        conf = {**clients.CONSUMER_DEFAULTS, **self.source.client_conf("consumer")}
        conf.update(clients.CONSUMER_FORCED)
        if self.exactly_once:
            # Records of aborted source transactions are never copied (librdkafka's default,
            # but a consumer file may say read_uncommitted).
            conf["isolation.level"] = "read_committed"
        conf["group.id"] = self.group_id
        return oauth.attach(unseal(conf))

    def producer_conf(self) -> dict[str, Any]:
        conf = {**clients.PRODUCER_DEFAULTS, **self.target.client_conf("producer")}
        conf.update(clients.PRODUCER_FORCED)
        if not self.keeps_partitions:
            # Same placement as the Java clients' default partitioner.
            conf.setdefault("partitioner", "murmur2_random")
        return oauth.attach(unseal(conf))

    def target_reader_conf(self) -> dict[str, Any]:
        """A consumer of the target (reads the progress topic): assigns, never joins a group,
        never commits."""
        conf = unseal(self.target.client_conf("consumer"))
        conf.update(
            {
                "group.id": f"{self.group_id}.progress-reader",
                "enable.auto.commit": "false",
                "enable.auto.offset.store": "false",
                "enable.partition.eof": "false",
                "auto.offset.reset": "earliest",
                # Only committed progress records count (exactly-once writes them in the
                # transaction with the records they describe).
                "isolation.level": "read_committed",
            }
        )
        return oauth.attach(conf)

    def admin_conf(self, side: Literal["source", "target"]) -> dict[str, Any]:
        cluster = self.source if side == "source" else self.target
        return oauth.attach(unseal(cluster.client_conf("admin")))

    def target_topic(self, source_topic: str) -> str:
        return self.rename.target_topic(source_topic)

    @property
    def progress_topic(self) -> str:
        """Where the progress book is persisted on the target. Ends in `.internal`, so MM2's
        default exclusions (and kmirror's) never mirror it."""
        return self.progress_topic_name or f"kmirror-progress.{self.group_id}.internal"

    def excluded_config(self, name: str) -> bool:
        return any(re.fullmatch(p, name) for p in self.config_excludes)
