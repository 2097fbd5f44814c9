"""The configuration flags of `kmirror run`, `check`, `status`, `offsets`, `failover` and
`kmirror-validate`: every dialect's flags and the common ones, on an argparse parser.

The dialects' own flags (and how they are told apart) live with the loader; the flags common
to every dialect are listed here. kmirror.config.dialects.loader.load_config reads them all by
their dest names.
"""

from __future__ import annotations

import argparse

from kmirror.config.dialects import dr, schemas
from kmirror.config.dialects.loader import DIALECT_FLAGS

__all__ = ["add_config_arguments"]

# (flag, dest, help), applied over whatever the dialect decided.
_COMMON = (
    (
        "--abort.on.send.failure",
        "abort_on_send_failure",
        "true (default): stop when the target refuses a record; false: keep retrying",
    ),
    ("--partitioning", "partitioning", "same (default): keep the source partition; hash"),
    (
        "--engine",
        "engine",
        "auto (default): record batches where they can be copied and pay off, records "
        "otherwise; batch: copy source record batches as they are (--partitioning same); "
        "record: copy record by record",
    ),
    ("--rename-policy", "rename_policy", "identity (same topic names) or prefix (<alias>.topic)"),
    ("--source-alias", "source_alias", "alias used by the prefix rename policy"),
    (
        "--target-alias",
        "target_alias",
        "alias of the target cluster (prefix policy: `<alias>.*` topics never go back)",
    ),
    (
        "--replication-factor",
        "replication_factor",
        "replication factor of created topics (-1 = the source topic's when the target has "
        "enough brokers, else the broker default)",
    ),
    ("--group-id", "group_id", "consumer group (overrides the dialect's group.id)"),
    (
        "--progress-topic",
        "progress_topic",
        "compacted target topic holding the mirror's progress "
        "(default kmirror-progress.<group.id>.internal)",
    ),
    ("--metrics-port", "metrics_port", "port of /metrics, /healthz (0 disables)"),
    ("--log-level", "log_level", "DEBUG, INFO, WARN, ERROR"),
    ("--log-format", "log_format", "text or json"),
    ("--log4j-config", "log4j_config", "log4j properties file: root level and pattern"),
    (
        "--refresh-topics-interval-s",
        "refresh_topics_interval_s",
        "seconds between topic list refreshes (default 5)",
    ),
    (
        "--sync-topic-configs-interval-s",
        "sync_topic_configs_interval_s",
        "seconds between topic config syncs (MM2 sync.topic.configs.interval.seconds; 600)",
    ),
)
_METAVARS = {
    "consumer_config": "FILE", "producer_config": "FILE", "mm2_config": "FILE",
    "log4j_config": "FILE", "message_handler": "CLASS", "rebalance_listener": "CLASS",
    "num_streams": "N", "offset_commit_interval_ms": "MS", "abort_on_send_failure": "BOOL",
    "this_bootstrap_servers": "HOST:PORT,...", "external_bootstrap_servers": "HOST:PORT,...",
    "external_cluster_type": "SOURCE|DESTINATION", "partitioning": "same|hash",
    "engine": "record|batch|auto",
    "rename_policy": "identity|prefix", "source_alias": "ALIAS", "replication_factor": "N",
    "group_id": "GROUP", "progress_topic": "TOPIC", "metrics_port": "PORT", "log_level": "LEVEL",
    "log_format": "text|json", "refresh_topics_interval_s": "SECONDS", "clusters": "ALIAS,...",
    "flow": "A->B", "target_alias": "ALIAS", "groups": "REGEX", "groups_exclude": "REGEX",
    "checkpoints_interval_s": "SECONDS", "heartbeats_interval_s": "SECONDS",
    "sync_group_offsets_interval_s": "SECONDS", "emit_checkpoints": "BOOL",
    "emit_heartbeats": "BOOL", "sync_group_offsets": "BOOL",
    "sync_topic_configs_interval_s": "SECONDS",
}  # fmt: skip


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """Add every dialect's flags and the common ones (load_config reads them by dest)."""
    group = parser.add_argument_group("configuration (MirrorMaker 1, MirrorMaker 2 or KUDO)")
    group.add_argument(
        "--whitelist",
        "--include",
        dest="whitelist",
        metavar="REGEX",
        help="MM1/KUDO: topics to mirror (regex or comma list)",
    )
    group.add_argument(
        "--blacklist",
        "--exclude",
        dest="blacklist",
        metavar="REGEX",
        help="MM1/KUDO: topics never to mirror",
    )
    group.add_argument(
        "--new.consumer", dest="new_consumer", action="store_true", help="MM1: accepted and ignored"
    )
    for flag, dest, text in (*DIALECT_FLAGS, *_COMMON, *dr.FLAGS, *schemas.FLAGS):
        aliases = [flag, "--mm2-config"] if flag == "--mm2.config" else [flag]
        group.add_argument(*aliases, dest=dest, metavar=_METAVARS.get(dest, "VALUE"), help=text)
    group.add_argument(
        "--no-create-topics",
        dest="no_create_topics",
        action="store_true",
        help="never create topics on the target (missing ones are an error)",
    )
    group.add_argument(
        "--exactly-once",
        dest="exactly_once",
        action="store_true",
        help="write the target in transactions: every source record exactly once for "
        "read_committed readers, on either --engine (also EXACTLY_ONCE=true; mm2: "
        "exactly.once.support=enabled)",
    )
    group.add_argument(
        "--strict",
        dest="strict",
        action="store_true",
        help="every configuration warning is an error (also KMIRROR_STRICT)",
    )
