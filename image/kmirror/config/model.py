"""The one configuration model. Every dialect (MM1 flags, mm2.properties, KUDO parameters,
the container's environment) is parsed into these frozen dataclasses at the edge; the mirror,
the entrypoint and the validation job only ever see this model.

MirrorConfig is the whole mirror; its parts have modules of their own (cluster.py: how to reach
a cluster, topics.py: which topics and their target names, dr.py: disaster recovery) and are
importable from here too.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from kmirror.config import clients, oauth
from kmirror.config.acls import AclSyncConfig
from kmirror.config.cluster import ClusterConfig, ConfValue, Role
from kmirror.config.control import ControlSettings
from kmirror.config.dr import DEFAULT_GROUP_EXCLUDES, DrConfig
from kmirror.config.exactly_once import (
    TIMEOUT_KEY,
    check_commit_interval,
    timeout_ms,
    transactional_id,
)
from kmirror.config.schemas import SchemaSettings
from kmirror.config.secret import unseal
from kmirror.config.throttle import ThrottleSettings
from kmirror.config.topics import (
    DEFAULT_TOPIC_EXCLUDES,
    HEARTBEATS_TOPIC,
    RenamePolicy,
    TopicSelection,
    check_names,
    compile_pattern,
    split_patterns,
)
from kmirror.errors import ConfigError

__all__ = [
    "DEFAULT_CONFIG_EXCLUDES",
    "DEFAULT_ENGINE",
    "DEFAULT_GROUP_EXCLUDES",
    "DEFAULT_NUM_STREAMS",
    "DEFAULT_OFFSET_COMMIT_INTERVAL_MS",
    "DEFAULT_TOPIC_EXCLUDES",
    "ENGINES",
    "HEARTBEATS_TOPIC",
    "PARTITIONINGS",
    "ClusterConfig",
    "ConfValue",
    "DrConfig",
    "MirrorConfig",
    "RenamePolicy",
    "Role",
    "TopicSelection",
    "split_patterns",
]

_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")

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
    # How records are copied (kmirror.mirror.engine): "record" hands each record to a producer;
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
    # Also export MirrorMaker 2's metric names (kmirror.metrics.mm2), for dashboards made for it.
    mm2_metric_names: bool = False
    log_level: str = "INFO"
    log_json: bool = False
    log_pattern: str | None = None
    dialect: str = "mm1"
    # Transactions on the target holding each partition's progress record (architecture.md).
    exactly_once: bool = False
    dr: DrConfig = field(default_factory=DrConfig)
    acls: AclSyncConfig = field(default_factory=AclSyncConfig)  # ACL sync (config/acls.py)
    schemas: SchemaSettings | None = None  # schema registry mirroring (config/schemas.py)
    # The control API on the metrics port (config/control.py; off without a credential).
    control: ControlSettings = field(default_factory=ControlSettings)
    throttle: ThrottleSettings = field(default_factory=ThrottleSettings)  # config/throttle.py
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
        derived = [self.control_topic] + ([] if self.progress_topic_name else [self.progress_topic])
        invalid = [name for name in derived if not _TOPIC_NAME.fullmatch(name)]
        if invalid:
            # Found here, not when the first stream creates the topic and exits.
            raise ConfigError(
                f"group.id {self.group_id!r} cannot name kmirror's topics on the target "
                f"({', '.join(map(repr, invalid))}): a topic name has up to 249 of the "
                "characters a-z A-Z 0-9 . _ -. Choose a group.id of those characters"
            )
        if self.progress_topic_name and not _TOPIC_NAME.fullmatch(self.progress_topic_name):
            raise ConfigError(
                f"progress.topic {self.progress_topic_name!r} is not a valid topic name: use up "
                "to 249 of the characters a-z A-Z 0-9 . _ -"
            )
        if self.exactly_once:
            check_commit_interval(self.offset_commit_interval_ms, self.transaction_timeout_ms())
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
            compile_pattern(p, "config.properties.exclude")
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

    def transactional_producer_conf(self, topic: str, partition: int) -> dict[str, Any]:
        """producer_conf() for one source partition's transactions (exactly-once)."""
        conf = self.producer_conf()
        conf["transactional.id"] = self.transactional_id(topic, partition)
        conf[TIMEOUT_KEY] = str(self.transaction_timeout_ms())
        return conf

    def admin_conf(self, side: Literal["source", "target"]) -> dict[str, Any]:
        cluster = self.source if side == "source" else self.target
        return oauth.attach(unseal(cluster.client_conf("admin")))

    def transactional_id(self, topic: str, partition: int) -> str:
        return transactional_id(self.group_id, topic, partition)

    def transaction_timeout_ms(self) -> int:
        """transaction.timeout.ms of the transactional producers (kmirror.config.exactly_once)."""
        given = self.target.producer.get(TIMEOUT_KEY, self.target.common.get(TIMEOUT_KEY))
        return timeout_ms(given, self.offset_commit_interval_ms)

    def target_topic(self, source_topic: str) -> str:
        """The one mapping from a source topic to its target topic (RenamePolicy)."""
        return self.rename.target_topic(source_topic)

    def source_topic(self, target_topic: str, sources: Iterable[str]) -> str | None:
        """The same mapping backwards, among candidate source topics (RenamePolicy)."""
        return self.rename.source_topic(target_topic, sources)

    def target_names(self, sources: Iterable[str]) -> dict[str, str]:
        """Selected source topic -> target topic, refusing collisions and loops (TopicError,
        config.topics.check_names): what the mirror subscribes to and `kmirror check` shows."""
        reserved = [self.progress_topic, self.rename.checkpoints_topic]
        if self.dr.emit_heartbeats:
            reserved.append(HEARTBEATS_TOPIC)
        same = self.source.servers == self.target.servers
        return check_names(self.topics, self.rename, sources, same_cluster=same, reserved=reserved)

    @property
    def progress_topic(self) -> str:
        """Where the progress book is persisted on the target. Ends in `.internal`, so MM2's
        default exclusions (and kmirror's) never mirror it."""
        return self.progress_topic_name or f"kmirror-progress.{self.group_id}.internal"

    @property
    def flow(self) -> str:
        """The flow's name, `source->target` by cluster alias (MM2's `A->B`): the `flow` label
        of the metrics and the key of a flow in the control API."""
        return f"{self.source.alias}->{self.target.alias}"

    @property
    def control_topic(self) -> str:
        """Where paused topics, a drain and throttles set at run time are kept on the target
        (kmirror.control.store), beside the progress topic."""
        return f"kmirror-control.{self.group_id}.internal"

    def excluded_config(self, name: str) -> bool:
        return any(re.fullmatch(p, name) for p in self.config_excludes)
