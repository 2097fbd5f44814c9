"""Every environment variable kmirror reads, in one place, each documented.

The container entrypoint renders the config templates from these, the KUDO dialect falls back
to them when a flag is absent, and the Helm chart sets them. `kmirror env-docs` prints this table
(docs/configuration.md is generated from it).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from kmirror.config import schemas, sides
from kmirror.config.model import DEFAULT_NUM_STREAMS, DEFAULT_OFFSET_COMMIT_INTERVAL_MS
from kmirror.config.secret import read_secret_text
from kmirror.errors import ConfigError


@dataclass(frozen=True)
class EnvVar:
    name: str
    description: str
    default: str | None = None
    secret_file: bool = False  # names a file whose content is a credential


def _side(side: sides.Side, who: str) -> list[EnvVar]:
    return [
        EnvVar(f"{side}_{v.suffix}", f"{who}: {v.description}", v.default, v.secret_file)
        for v in sides.SIDE_VARS
    ]


ENV_VARS: tuple[EnvVar, ...] = (
    # Seed names (the MirrorMaker-on-Kubernetes recipe users already run).
    EnvVar("SOURCE_CLUSTER_BOOTSTRAP_SERVERS", "Source cluster bootstrap servers (host:port,...)"),
    EnvVar(
        "SOURCE_CLUSTER_CONSUMER_GROUP", "Consumer group the mirror uses on the source", "kmirror"
    ),
    EnvVar("SINK_CLUSTER_BOOTSTRAP_SERVERS", "Target cluster bootstrap servers (host:port,...)"),
    EnvVar("WHITELISTED_TOPICS", "Topics to mirror: regex or comma-separated list", ".*"),
    EnvVar("BLACKLISTED_TOPICS", "Topics never to mirror: regex or comma-separated list", ""),
    EnvVar(
        "NUM_STREAMS", "Consumer/producer worker processes per replica", str(DEFAULT_NUM_STREAMS)
    ),
    EnvVar("LOG_LEVEL", "Root log level: DEBUG, INFO, WARN, ERROR", "INFO"),
    # KUDO operator parameter names (this cluster + external cluster).
    EnvVar(
        "MIRROR_MAKER_THIS_BOOTSTRAP_SERVERS",
        "KUDO style: bootstrap servers of the cluster the mirror runs beside",
    ),
    EnvVar(
        "MIRROR_MAKER_EXTERNAL_BOOTSTRAP_SERVERS",
        "KUDO style: bootstrap servers of the other cluster",
    ),
    EnvVar(
        "MIRROR_MAKER_EXTERNAL_CLUSTER_TYPE",
        "KUDO style: SOURCE (external is the source) or DESTINATION (external is the target)",
    ),
    EnvVar(
        "MIRROR_MAKER_TOPIC_WHITELIST",
        "KUDO style: topics to mirror (overrides WHITELISTED_TOPICS)",
    ),
    EnvVar("MIRROR_MAKER_NUM_STREAMS", "KUDO style: number of streams (overrides NUM_STREAMS)"),
    EnvVar(
        "MIRROR_MAKER_OFFSET_COMMIT_INTERVAL",
        "Offset commit interval in ms",
        str(DEFAULT_OFFSET_COMMIT_INTERVAL_MS),
    ),
    EnvVar(
        "MIRROR_MAKER_ABORT_ON_SEND_FAILURE",
        "true: exit non-zero when the target refuses a record; false: retry forever",
        "true",
    ),
    # Security, per side. Passwords only ever come from files (mounted secrets).
    *_side(sides.SOURCE, "Source"),
    *_side(sides.TARGET, "Target"),
    # kmirror's own knobs.
    EnvVar(
        "KMIRROR_RENAME_POLICY",
        "identity (same names) or prefix (<alias>.<topic>, like MM2)",
        "identity",
    ),
    EnvVar("KMIRROR_SOURCE_ALIAS", "Alias used by the prefix rename policy", "source"),
    EnvVar(
        "KMIRROR_TARGET_ALIAS",
        "Alias of the target cluster: the prefix policy never mirrors `<alias>.*` topics back "
        "into it; heartbeat keys",
        "target",
    ),
    # Topic mapping rules (docs/migrations.md): kmirror's own, in every dialect.
    EnvVar(
        "KMIRROR_TOPIC_MAP",
        "Target names of single topics: SOURCE:TARGET,... (e.g. orders:shop.orders.v2); "
        "wins over the rules",
        "",
    ),
    EnvVar(
        "KMIRROR_TOPIC_RULES",
        "Ordered regex rules REGEX -> REPLACEMENT;... matched against the whole source "
        "topic name, back-references $1 or \\1 (e.g. ^team-a\\.(.*)$ -> a.$1)",
        "",
    ),
    EnvVar(
        "KMIRROR_TOPIC_MAPPING_PREFIX",
        "true: the prefix rename policy also prefixes mapped names; false: a mapped name is "
        "the target name",
        "false",
    ),
    # ACL sync (docs/migrations.md): MM2's settings and kmirror's, off by default here.
    EnvVar("KMIRROR_SYNC_TOPIC_ACLS", "MM2's `sync.topic.acls.enabled`", "false"),
    EnvVar(
        "KMIRROR_SYNC_TOPIC_ACLS_INTERVAL_SECONDS",
        "MM2's `sync.topic.acls.interval.seconds`",
        "600",
    ),
    EnvVar(
        "KMIRROR_ACL_SCOPE",
        "mm2 (MM2's: literal topic ACLs of mirrored topics, ALLOW WRITE left out) or full "
        "(literal and prefixed topic ACLs, group and transactional-ID ACLs)",
        "mm2",
    ),
    EnvVar(
        "KMIRROR_ACL_PRINCIPAL_MAP",
        "Source principal -> target principal, ';' between entries (e.g. User:alice@A -> "
        "User:alice); others keep their names",
        "",
    ),
    EnvVar(
        "KMIRROR_ACL_DENY_WRITE",
        "true: DENY WRITE on mirrored target topics for every principal but the mirror's "
        "(read-only copies)",
        "false",
    ),
    EnvVar(
        "KMIRROR_ACL_MIRROR_PRINCIPAL",
        "The mirror's principal on the target, exempt from KMIRROR_ACL_DENY_WRITE",
        "User:<SINK_CLUSTER_SASL_USERNAME>",
    ),
    # Disaster recovery (docs/disaster-recovery.md): MM2's settings, off by default here.
    EnvVar("KMIRROR_EMIT_CHECKPOINTS", "MM2's `emit.checkpoints.enabled`", "false"),
    EnvVar(
        "KMIRROR_EMIT_CHECKPOINTS_INTERVAL_SECONDS",
        "MM2's `emit.checkpoints.interval.seconds`",
        "60",
    ),
    EnvVar("KMIRROR_EMIT_HEARTBEATS", "MM2's `emit.heartbeats.enabled`", "false"),
    EnvVar(
        "KMIRROR_EMIT_HEARTBEATS_INTERVAL_SECONDS", "MM2's `emit.heartbeats.interval.seconds`", "1"
    ),
    EnvVar("KMIRROR_SYNC_GROUP_OFFSETS", "MM2's `sync.group.offsets.enabled`", "false"),
    EnvVar(
        "KMIRROR_SYNC_GROUP_OFFSETS_INTERVAL_SECONDS",
        "MM2's `sync.group.offsets.interval.seconds`",
        "60",
    ),
    EnvVar("KMIRROR_GROUPS", "MM2's `groups`: consumer groups whose offsets follow the data", ".*"),
    EnvVar(
        "KMIRROR_PROVENANCE_HEADER",
        "true: copies carry a `kmirror.origin` header and records that came from the target "
        "are not copied back (two-way identity mirroring)",
        "false",
    ),
    EnvVar(
        "KMIRROR_GROUPS_EXCLUDE",
        "MM2's `groups.exclude`",
        "console-consumer-.*, connect-.*, __.*",
    ),
    EnvVar(
        "EXACTLY_ONCE",
        "true: write the target in transactions with the mirror's progress, so read_committed "
        "consumers see every source record exactly once (--exactly-once; either engine)",
        "false",
    ),
    EnvVar("KMIRROR_PARTITIONING", "same (source partition number) or hash (re-partition)", "same"),
    EnvVar(
        "KMIRROR_ENGINE",
        "record (copy record by record), batch (copy source record batches as they are; "
        "partitioning same) or auto (batches where they pay off, records otherwise)",
        "auto",
    ),
    EnvVar(
        "KMIRROR_REPLICATION_FACTOR",
        "Replication factor of topics created on the target (-1 = the source topic's when the "
        "target has enough brokers, else the target broker's default)",
        "-1",
    ),
    EnvVar(
        "KMIRROR_SYNC_TOPIC_CONFIGS_INTERVAL_S",
        "Seconds between topic config syncs, source to target (MM2: "
        "sync.topic.configs.interval.seconds)",
        "600",
    ),
    EnvVar(
        "KMIRROR_PROGRESS_TOPIC",
        "Compacted target topic holding the mirror's progress",
        "kmirror-progress.<group.id>.internal",
    ),
    EnvVar("KMIRROR_METRICS_PORT", "Port of /metrics, /healthz and /readyz (0 disables)", "9404"),
    EnvVar(
        "KMIRROR_MM2_METRIC_NAMES",
        "true: /metrics also has MirrorMaker 2's metric names, per target partition, for "
        "dashboards made for MM2 (--mm2-metric-names; docs/monitoring.md)",
        "false",
    ),
    # The control API on the metrics port (docs/control.md): off without a credential.
    EnvVar(
        "KMIRROR_CONTROL_TOKEN_FILE",
        "Turns the control API on: file holding its bearer token (a mounted Secret)",
        "",
        secret_file=True,
    ),
    EnvVar("KMIRROR_CONTROL_TLS_CERT", "Metrics port over TLS: certificate file (PEM)", ""),
    EnvVar("KMIRROR_CONTROL_TLS_KEY", "Metrics port over TLS: private key file (PEM)", ""),
    EnvVar(
        "KMIRROR_CONTROL_TLS_CLIENT_CA",
        "Turns the control API on with mutual TLS: CA file client certificates must be signed by",
        "",
    ),
    EnvVar(
        "KMIRROR_RELOAD_ON_CHANGE",
        "true: reload the configuration, as on SIGHUP, when a file it was read from changes "
        "(--reload-on-change; docs/control.md)",
        "false",
    ),
    EnvVar(
        "KMIRROR_THROTTLE",
        "Copy rate limits: [TOPIC:]backlog|tail.bytes|records=N,... (per second; docs/control.md)",
        "",
    ),
    EnvVar("KMIRROR_LOG_FORMAT", "text or json (one JSON object per line)", "text"),
    EnvVar("KMIRROR_EXTRA_CONSUMER_PROPERTIES", "Extra consumer .properties lines, appended", ""),
    EnvVar("KMIRROR_EXTRA_PRODUCER_PROPERTIES", "Extra producer .properties lines, appended", ""),
    EnvVar("KMIRROR_STRICT", "true: every configuration warning is an error", "false"),
    EnvVar("KMIRROR_ENV_FILE", "Optional .env file loaded before rendering", "/etc/kmirror/.env"),
    EnvVar(
        "KMIRROR_TEMPLATE_DIR",
        "Directory of the config templates (mount your own here)",
        "built-in templates",
    ),
    EnvVar("KMIRROR_CONFIG_DIR", "Writable directory the rendered files go to", "/tmp/kmirror"),
    # Schema registry mirroring (docs/schemas.md).
    *(EnvVar(n, d, v, n.endswith("_FILE")) for n, d, v in schemas.ENV_DOCS),
    # The validation job (kmirror-validate).
    EnvVar(
        "KMIRROR_SPARK_JARS",
        "kmirror-validate: directory of the spark-sql-kafka-0-10 "
        "connector jars (the validate image sets it)",
        "",
    ),
    EnvVar(
        "KMIRROR_CACHE",
        "Development cache (jars, local clusters); kmirror-validate falls "
        "back to its jars/spark-kafka-<pyspark version>/ when KMIRROR_SPARK_JARS is unset",
        "~/.cache/kmirror",
    ),
)

BY_NAME: Mapping[str, EnvVar] = {v.name: v for v in ENV_VARS}


def get(name: str, environ: Mapping[str, str] | None = None) -> str:
    """The variable's value, or its documented default; a variable without one must be set."""
    env = os.environ if environ is None else environ
    var = BY_NAME[name]
    value = env.get(name)
    if value is None or value == "":
        if var.default is None:
            raise ConfigError(f"environment variable {name} is not set: {var.description}")
        return var.default
    return value


def read_secret_file(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """Content of the file a *_FILE variable names (trailing newline stripped), or None."""
    path = get(name, environ)
    return read_secret_text(path, name) if path else None
