"""What a user asked for, before a dialect turns it into the model: the options of `kmirror run`
(and of check, status, offsets, failover, kmirror-validate), each declared once here with its
type, its flag and its help.

`load_config` takes an `Options`. The command line builds one from its flags
(`Options.from_flags`: argparse only parses, every value is converted here with an error
naming the flag); the container entrypoint builds one from the environment directly
(kmirror.entrypoint.render), its rendered files in memory as `PropertiesFile`s. None means
"not given": the dialect's value, or a KMIRROR_* variable, stands (kmirror.config.dialects.
loader). `argv()` writes the options back as the `kmirror run` command line that loads the
same configuration (the entrypoint logs it for people to rerun).
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from kmirror.config.dialects import acls, dr, schemas, topicnames
from kmirror.config.dialects.properties import PropertiesFile
from kmirror.config.model import DEFAULT_NUM_STREAMS, DEFAULT_OFFSET_COMMIT_INTERVAL_MS
from kmirror.config.values import parse_bool, parse_float, parse_int

Dialect = Literal["mm1", "mm2", "kudo"]
File = str | PropertiesFile  # a path, or a file already in memory (the entrypoint's)


def _opt(
    flag: str,
    help: str,
    metavar: str = "VALUE",
    *,
    aliases: tuple[str, ...] = (),
    dialect: Dialect | None = None,
    minimum: int | None = None,
    default: Any = None,
) -> Any:
    meta = {"flag": flag, "help": help, "metavar": metavar, "aliases": aliases,
            "dialect": dialect, "minimum": minimum}  # fmt: skip
    return field(default=default, metadata=meta)


def _dr(name: str) -> Any:
    flag, help_text = dr.FLAG_HELP[name]
    return _opt(flag, help_text, "SECONDS" if name.endswith("_s") else "BOOL")


def _names(name: str, metavar: str) -> Any:
    """A topic mapping flag (kmirror.config.dialects.topicnames names and documents it)."""
    flag, help_text = topicnames.FLAG_HELP[name]
    return _opt(flag, help_text, metavar)


def _acl(name: str, metavar: str) -> Any:
    """An ACL sync flag (kmirror.config.dialects.acls names and documents it)."""
    flag, help_text = acls.FLAG_HELP[name]
    return _opt(flag, help_text, metavar)


def _schema(name: str, metavar: str = "VALUE") -> Any:
    """A schema mirroring flag (kmirror.config.dialects.schemas names and documents it)."""
    flag, help_text = schemas.FLAG_HELP[name]
    return _opt(flag, help_text, metavar)


@dataclass(frozen=True)
class Options:
    # MirrorMaker 1 (and the switch its users still pass)
    consumer_config: File | None = _opt(
        "--consumer.config", "MM1: consumer .properties (source cluster)", "FILE", dialect="mm1"
    )
    producer_config: File | None = _opt(
        "--producer.config", "MM1: producer .properties (target cluster)", "FILE", dialect="mm1"
    )
    message_handler: str | None = _opt(
        "--message.handler", "MM1: not supported (Java class)", "CLASS", dialect="mm1"
    )
    message_handler_args: str | None = _opt(
        "--message.handler.args", "MM1: not supported", dialect="mm1"
    )
    rebalance_listener: str | None = _opt(
        "--rebalance.listener", "MM1: not supported (Java class)", "CLASS", dialect="mm1"
    )
    rebalance_listener_args: str | None = _opt(
        "--rebalance.listener.args", "MM1: not supported", dialect="mm1"
    )
    new_consumer: bool = _opt(
        "--new.consumer", "MM1: accepted and ignored", dialect="mm1", default=False
    )
    # MirrorMaker 1 and KUDO (mm2.properties carries its own)
    whitelist: str | None = _opt(
        "--whitelist", "MM1/KUDO: topics to mirror (regex or comma list)", "REGEX",
        aliases=("--include",),
    )  # fmt: skip
    blacklist: str | None = _opt(
        "--blacklist", "MM1/KUDO: topics never to mirror", "REGEX", aliases=("--exclude",)
    )
    num_streams: int | None = _opt(
        "--num.streams", f"number of stream processes (default {DEFAULT_NUM_STREAMS})", "N",
        minimum=1,
    )  # fmt: skip
    offset_commit_interval_ms: int | None = _opt(
        "--offset.commit.interval.ms",
        f"offset commit interval (default {DEFAULT_OFFSET_COMMIT_INTERVAL_MS})", "MS", minimum=1,
    )  # fmt: skip
    # MirrorMaker 2
    mm2_config: str | None = _opt(
        "--mm2.config", "MM2: mm2.properties file", "FILE", aliases=("--mm2-config",),
        dialect="mm2",
    )  # fmt: skip
    clusters: str | None = _opt(
        "--clusters", "MM2: run the flow that targets these cluster aliases", "ALIAS,...",
        dialect="mm2",
    )  # fmt: skip
    flow: str | None = _opt(
        "--flow", "MM2: the flow to run, A->B, when several are enabled", "A->B", dialect="mm2"
    )
    # KUDO
    this_bootstrap_servers: str | None = _opt(
        "--this-bootstrap-servers", "KUDO: the cluster kmirror runs by", "HOST:PORT,...",
        dialect="kudo",
    )  # fmt: skip
    external_bootstrap_servers: str | None = _opt(
        "--external-bootstrap-servers", "KUDO: the other cluster", "HOST:PORT,...",
        dialect="kudo",
    )  # fmt: skip
    external_cluster_type: str | None = _opt(
        "--external-cluster-type",
        "KUDO: SOURCE or DESTINATION (the role of the external cluster)",
        "SOURCE|DESTINATION", dialect="kudo",
    )  # fmt: skip
    # Every dialect: applied over whatever the dialect decided
    abort_on_send_failure: bool | None = _opt(
        "--abort.on.send.failure",
        "true (default): stop when the target refuses a record; false: keep retrying", "BOOL",
    )  # fmt: skip
    partitioning: str | None = _opt(
        "--partitioning", "same (default): keep the source partition; hash", "same|hash"
    )
    engine: str | None = _opt(
        "--engine",
        "auto (default): record batches where they can be copied and pay off, records "
        "otherwise; batch: copy source record batches as they are (--partitioning same); "
        "record: copy record by record",
        "record|batch|auto",
    )
    rename_policy: str | None = _opt(
        "--rename-policy", "identity (same topic names) or prefix (<alias>.topic)",
        "identity|prefix",
    )  # fmt: skip
    source_alias: str | None = _opt(
        "--source-alias", "alias used by the prefix rename policy", "ALIAS"
    )
    topic_map: str | None = _names("topic_map", "SOURCE:TARGET,...")
    topic_rules: str | None = _names("topic_rules", "'REGEX -> NAME;...'")
    topic_mapping_prefix: bool | None = _names("topic_mapping_prefix", "BOOL")
    target_alias: str | None = _opt(
        "--target-alias",
        "alias of the target cluster (prefix policy: `<alias>.*` topics never go back)", "ALIAS",
    )  # fmt: skip
    replication_factor: int | None = _opt(
        "--replication-factor",
        "replication factor of created topics (-1 = the source topic's when the target has "
        "enough brokers, else the broker default)", "N", minimum=-1,
    )  # fmt: skip
    group_id: str | None = _opt(
        "--group-id", "consumer group (overrides the dialect's group.id)", "GROUP"
    )
    progress_topic: str | None = _opt(
        "--progress-topic",
        "compacted target topic holding the mirror's progress "
        "(default kmirror-progress.<group.id>.internal)", "TOPIC",
    )  # fmt: skip
    metrics_port: int | None = _opt(
        "--metrics-port", "port of /metrics, /healthz (0 disables)", "PORT", minimum=0
    )
    mm2_metric_names: bool = _opt(
        "--mm2-metric-names",
        "also export MirrorMaker 2's metric names per target partition, for dashboards made for "
        "MM2 (also KMIRROR_MM2_METRIC_NAMES=true)",
        default=False,
    )  # fmt: skip
    log_level: str | None = _opt("--log-level", "DEBUG, INFO, WARN, ERROR", "LEVEL")
    log_format: str | None = _opt("--log-format", "text or json", "text|json")
    log4j_config: File | None = _opt(
        "--log4j-config", "log4j properties file: root level and pattern", "FILE"
    )
    refresh_topics_interval_s: float | None = _opt(
        "--refresh-topics-interval-s", "seconds between topic list refreshes (default 5)",
        "SECONDS",
    )  # fmt: skip
    sync_topic_configs_interval_s: float | None = _opt(
        "--sync-topic-configs-interval-s",
        "seconds between topic config syncs (MM2 sync.topic.configs.interval.seconds; 600)",
        "SECONDS",
    )  # fmt: skip
    # Operating a running mirror (docs/control.md): the control API's credentials, throttles
    control_token_file: str | None = _opt(
        "--control-token-file",
        "turn the control API on: the bearer token is this file's content (a mounted Secret)",
        "FILE",
    )
    control_tls_cert: str | None = _opt(
        "--control-tls-cert", "serve the metrics port with TLS: certificate (PEM)", "FILE"
    )
    control_tls_key: str | None = _opt(
        "--control-tls-key", "serve the metrics port with TLS: private key (PEM)", "FILE"
    )
    control_tls_client_ca: str | None = _opt(
        "--control-tls-client-ca",
        "turn the control API on with mutual TLS: client certificates must be signed by this CA",
        "FILE",
    )
    throttle: str | None = _opt(
        "--throttle",
        "copy rate limits per second, per flow or per topic, for the backlog and the tail: "
        "[TOPIC:]backlog|tail.bytes|records=N,...",
        "SPEC",
    )
    reload_on_change: bool = _opt(
        "--reload-on-change",
        "reload the configuration, as on SIGHUP, when a file it was read from changes (a "
        "mounted ConfigMap's update; also KMIRROR_RELOAD_ON_CHANGE=true)",
        default=False,
    )  # fmt: skip
    # Disaster recovery (kmirror.config.dialects.dr: MM2's keys, off unless given in MM1/KUDO)
    emit_checkpoints: bool | None = _dr("emit_checkpoints")
    checkpoints_interval_s: float | None = _dr("checkpoints_interval_s")
    emit_heartbeats: bool | None = _dr("emit_heartbeats")
    heartbeats_interval_s: float | None = _dr("heartbeats_interval_s")
    sync_group_offsets: bool | None = _dr("sync_group_offsets")
    sync_group_offsets_interval_s: float | None = _dr("sync_group_offsets_interval_s")
    groups: str | None = _opt(*dr.FLAG_HELP["groups"], "REGEX")
    groups_exclude: str | None = _opt(*dr.FLAG_HELP["groups_exclude"], "REGEX")
    provenance_header: bool | None = _dr("provenance_header")
    # ACL sync (kmirror.config.dialects.acls: MM2's keys, off unless given in MM1/KUDO)
    sync_topic_acls: bool | None = _acl("sync_topic_acls", "BOOL")
    sync_topic_acls_interval_s: float | None = _acl("sync_topic_acls_interval_s", "SECONDS")
    acl_scope: str | None = _acl("acl_scope", "mm2|full")
    acl_principal_map: str | None = _acl("acl_principal_map", "'FROM -> TO;...'")
    acl_deny_write: bool | None = _acl("acl_deny_write", "BOOL")
    acl_mirror_principal: str | None = _acl("acl_mirror_principal", "User:NAME")
    # Schema registry mirroring (kmirror.config.dialects.schemas; credentials only from files)
    schema_source_url: str | None = _schema("schema_source_url", "URL")
    schema_source_basic_auth_user: str | None = _schema("schema_source_basic_auth_user", "USER")
    schema_source_ssl_ca_location: str | None = _schema("schema_source_ssl_ca_location", "FILE")
    schema_target_url: str | None = _schema("schema_target_url", "URL")
    schema_target_basic_auth_user: str | None = _schema("schema_target_basic_auth_user", "USER")
    schema_target_ssl_ca_location: str | None = _schema("schema_target_ssl_ca_location", "FILE")
    schema_id_mode: str | None = _schema("schema_id_mode", "translate|preserve")
    schema_subjects: str | None = _schema("schema_subjects", "REGEX")
    schema_subjects_exclude: str | None = _schema("schema_subjects_exclude", "REGEX")
    schema_sync_interval_s: str | None = _schema("schema_sync_interval_s", "SECONDS")
    schema_unknown_id: str | None = _schema("schema_unknown_id", "fail|copy")
    # Switches
    no_create_topics: bool = _opt(
        "--no-create-topics", "never create topics on the target (missing ones are an error)",
        default=False,
    )  # fmt: skip
    exactly_once: bool = _opt(
        "--exactly-once",
        "write the target in transactions: every source record exactly once for read_committed "
        "readers, on either --engine (also EXACTLY_ONCE=true; mm2: exactly.once.support=enabled)",
        default=False,
    )  # fmt: skip
    strict: bool = _opt(
        "--strict", "every configuration warning is an error (also KMIRROR_STRICT)",
        default=False,
    )  # fmt: skip

    @classmethod
    def from_flags(cls, values: Mapping[str, object]) -> Options:
        """Options from parsed command-line values by field name (text, or True for a given
        switch); a value that does not convert is a ConfigError naming its flag."""
        hints = _hints()
        out: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            raw = values.get(f.name)
            if raw is None or raw is False or (isinstance(raw, str) and not raw.strip()):
                continue
            out[f.name] = _convert(raw, hints[f.name], f.metadata)
        return cls(**out)

    def given(self) -> dict[str, Any]:
        """The options that were given, by field name (a switch when on; `false` is given)."""
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if getattr(self, f.name) is not None and getattr(self, f.name) is not f.default
        }

    def over(self, base: Options) -> Options:
        """These options where given, `base`'s elsewhere."""
        return dataclasses.replace(base, **self.given())

    def flags(self, dialect: Dialect | None = None) -> list[str]:
        """The flags given (of one dialect's options, when named)."""
        return [
            f.metadata["flag"]
            for f in dataclasses.fields(self)
            if f.name in self.given() and (dialect is None or f.metadata["dialect"] == dialect)
        ]

    def files(self) -> tuple[str, ...]:
        """The configuration files given by path, which a reload reads again (a file in
        memory is the entrypoint's, rendered from the environment)."""
        return tuple(v for n in FILE_OPTIONS if isinstance(v := getattr(self, n), str))

    def argv(self) -> list[str]:
        """These options as `kmirror run` flags (a file in memory by the path it names)."""
        argv: list[str] = []
        for name, value in self.given().items():
            flag = FIELDS[name].metadata["flag"]
            if FIELDS[name].default is False:  # a switch
                argv.append(flag)
            elif isinstance(value, bool):
                argv += [flag, str(value).lower()]
            else:
                argv += [flag, str(value)]
        return argv


FIELDS: Mapping[str, dataclasses.Field[Any]] = {f.name: f for f in dataclasses.fields(Options)}
# The options naming a file the configuration is read from.
FILE_OPTIONS = ("mm2_config", "consumer_config", "producer_config", "log4j_config")


def _hints() -> dict[str, Any]:
    """Field name -> the type a given value has (`int | None` -> int)."""
    out = {}
    for name, hint in typing.get_type_hints(Options).items():
        args = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
        out[name] = args[0] if len(args) == 1 else str  # File: the path's text
    return out


def _convert(raw: object, kind: Any, meta: Mapping[str, Any]) -> Any:
    if kind is bool and raw is True:  # a switch
        return True
    if isinstance(raw, PropertiesFile):
        return raw
    text, flag = str(raw).strip(), meta["flag"]
    if kind is int:
        return parse_int(text, flag, minimum=meta["minimum"])
    if kind is float:
        return parse_float(text, flag)
    if kind is bool:
        return parse_bool(text, flag)
    return text
