"""Options -> the one config model, whichever dialect the user speaks.

Three ways in, never mixed: MirrorMaker 1 files (--consumer.config/--producer.config),
an mm2.properties file (--mm2.config), or KUDO parameters (flags or MIRROR_MAKER_* variables).
Options common to all of them (--partitioning, --rename-policy, logging, ...) are applied last,
over the dialect's values; KMIRROR_* variables stand in for options that are not given.
The options themselves, their flags and types: kmirror.config.dialects.options.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from typing import Any

from kmirror.config import env as envvars
from kmirror.config.control import ControlSettings
from kmirror.config.dialects import dr
from kmirror.config.dialects.acls import acls_from_flags
from kmirror.config.dialects.kudo import load_kudo, load_pair
from kmirror.config.dialects.log4j import FORMATS, check_level, read_log4j
from kmirror.config.dialects.mm1 import load_mm1
from kmirror.config.dialects.mm2 import load_mm2
from kmirror.config.dialects.options import FIELDS, Options
from kmirror.config.dialects.schemas import schemas_from_flags
from kmirror.config.dialects.topicnames import mapping_from_flags
from kmirror.config.model import ENGINES, PARTITIONINGS, MirrorConfig, RenamePolicy
from kmirror.config.throttle import parse_throttle
from kmirror.config.values import enforce_strict, parse_bool, parse_float, parse_int
from kmirror.errors import ConfigError

_HOW = (
    "give one of: (1) MirrorMaker 1: --consumer.config FILE --producer.config FILE "
    "--whitelist REGEX; (2) MirrorMaker 2: --mm2.config mm2.properties [--flow A->B]; "
    "(3) KUDO: --this-bootstrap-servers, --external-bootstrap-servers and "
    "--external-cluster-type SOURCE|DESTINATION (or the MIRROR_MAKER_* environment variables)"
)
_KUDO_ENV = (
    "MIRROR_MAKER_THIS_BOOTSTRAP_SERVERS",
    "MIRROR_MAKER_EXTERNAL_BOOTSTRAP_SERVERS",
    "MIRROR_MAKER_EXTERNAL_CLUSTER_TYPE",
)
_UNSUPPORTED = ("message_handler", "message_handler_args", "rebalance_listener",
                "rebalance_listener_args")  # fmt: skip


def load_config(
    options: Options,
    environ: Mapping[str, str] | None = None,
    *,
    clusters: tuple[str, str] | None = None,
) -> MirrorConfig:
    """Detect the dialect, build the model, apply the common options, enforce --strict.

    `clusters` (source, target bootstrap servers) stands in for a dialect: kmirror-validate's
    --source/--target-bootstrap-servers, with the sides' security from the environment."""
    env = os.environ if environ is None else environ
    o = options
    dialect = "direct" if clusters is not None else _dialect(o, env)
    # The options MirrorMaker 1 and KUDO share (mm2.properties carries its own).
    shared: dict[str, Any] = {
        "whitelist": o.whitelist,
        "blacklist": o.blacklist,
        "num_streams": o.num_streams,
        "offset_commit_interval_ms": o.offset_commit_interval_ms,
        "abort_on_send_failure": o.abort_on_send_failure,
        "group_id": o.group_id,
    }
    notes: list[str] = []
    if dialect == "mm1":
        if o.new_consumer:
            notes.append("--new.consumer has no effect (kmirror always uses the new consumer)")
        config = load_mm1(o.consumer_config, o.producer_config, **shared)
    elif dialect == "mm2":
        assert o.mm2_config is not None  # _dialect says so
        config = load_mm2(o.mm2_config, flow=o.flow, clusters=o.clusters, environ=env)
        if o.abort_on_send_failure is not None:
            config = dataclasses.replace(config, abort_on_send_failure=o.abort_on_send_failure)
    elif clusters is not None:
        config = load_pair(*clusters, **shared, environ=env, dialect="direct")
    else:
        config = load_kudo(
            o.this_bootstrap_servers,
            o.external_bootstrap_servers,
            o.external_cluster_type,
            **shared,
            environ=env,
        )
    config = _common(config, o, env, notes)
    enforce_strict(config.notes, env, o.strict, "--strict")
    return config


def _dialect(options: Options, env: Mapping[str, str]) -> str:
    kinds = {
        "MirrorMaker 1": options.flags("mm1"),
        "MirrorMaker 2": options.flags("mm2"),
        "KUDO": options.flags("kudo"),
    }
    present = {k: v for k, v in kinds.items() if v}
    if len(present) > 1:
        listed = "; ".join(f"{k}: {', '.join(v)}" for k, v in present.items())
        raise ConfigError(f"flags of different dialects cannot be mixed ({listed}). {_HOW}")
    for name in _UNSUPPORTED:
        if getattr(options, name) is not None:
            raise ConfigError(
                f"{FIELDS[name].metadata['flag']}: MirrorMaker handlers and listeners are Java "
                "classes, which kmirror cannot run (it copies records byte-exact); remove the flag"
            )
    given = options.flags()
    shared = [
        f
        for f in ("--whitelist", "--blacklist", "--num.streams", "--offset.commit.interval.ms")
        if f in given
    ]
    if "MirrorMaker 2" in present:
        if shared:
            raise ConfigError(
                f"{', '.join(shared)} cannot be combined with --mm2.config: set A->B.topics, "
                "A->B.topics.exclude, tasks.max and offset.flush.interval.ms in the file"
            )
        if options.mm2_config is None:
            flags = ", ".join(present["MirrorMaker 2"])
            raise ConfigError(f"{flags} need --mm2.config FILE (the mm2.properties to run)")
        return "mm2"
    if "MirrorMaker 1" in present:
        return "mm1"
    if "KUDO" in present or any(env.get(n, "").strip() for n in _KUDO_ENV):
        return "kudo"
    raise ConfigError(f"no configuration given: {_HOW}")


def _common(
    config: MirrorConfig, o: Options, env: Mapping[str, str], notes: list[str]
) -> MirrorConfig:
    def pick(name: str, var: str, parse: Callable[[str, str], Any] = _as_text) -> Any:
        # The option, else the variable only if it is really set: a documented default must
        # not override what the dialect (e.g. mm2's prefix policy) decided.
        value = getattr(o, name)
        text = _text(env.get(var))
        return parse(text, var) if value is None and text is not None else value

    changes: dict[str, Any] = {}
    for name, var, allowed in (
        ("partitioning", "KMIRROR_PARTITIONING", PARTITIONINGS),
        ("engine", "KMIRROR_ENGINE", ENGINES),
    ):
        value = pick(name, var)
        if value is not None:
            changes[name] = _choice(value, allowed, FIELDS[name].metadata["flag"])
    kind = pick("rename_policy", "KMIRROR_RENAME_POLICY")
    alias = pick("source_alias", "KMIRROR_SOURCE_ALIAS")
    target_alias = pick("target_alias", "KMIRROR_TARGET_ALIAS")
    mapping = mapping_from_flags(o.given(), env, config.rename.mapping)
    if kind is not None or alias is not None or target_alias is not None:
        changes["rename"] = RenamePolicy(
            kind="prefix"
            if _choice(kind or config.rename.kind, ("identity", "prefix"), "--rename-policy")
            == "prefix"
            else "identity",
            source_alias=alias or config.rename.source_alias,
            separator=config.rename.separator,
            target_alias=target_alias or config.rename.target_alias,
            mapping=mapping,
        )
    elif mapping is not config.rename.mapping:
        changes["rename"] = dataclasses.replace(config.rename, mapping=mapping)
    changes["dr"] = dr.dr_from_flags(o.given(), env, config.dr)
    changes["acls"] = acls_from_flags(o.given(), env, config.acls)
    changes["schemas"] = schemas_from_flags(o.given(), env, config.schemas)
    if config.dialect == "mm2" and o.group_id is not None:
        changes["group_id"] = o.group_id
    settings: tuple[tuple[str, str, str, Callable[[str, str], Any]], ...] = (
        ("replication_factor", "replication_factor", "KMIRROR_REPLICATION_FACTOR",
         lambda v, n: parse_int(v, n, minimum=-1)),
        ("progress_topic_name", "progress_topic", "KMIRROR_PROGRESS_TOPIC", _as_text),
        ("metrics_port", "metrics_port", "KMIRROR_METRICS_PORT",
         lambda v, n: parse_int(v, n, minimum=0)),
        ("sync_topic_configs_interval_s", "sync_topic_configs_interval_s",
         "KMIRROR_SYNC_TOPIC_CONFIGS_INTERVAL_S", parse_float),
    )  # fmt: skip
    for field, name, var, parse in settings:
        value = pick(name, var, parse)
        if value is not None:
            changes[field] = value
    changes.update(_control(config, pick))
    if o.refresh_topics_interval_s is not None:
        changes["refresh_topics_interval_s"] = o.refresh_topics_interval_s
    changes.update(_logging(o, env, notes))
    if o.no_create_topics:
        changes["create_topics"] = False
    if o.exactly_once or parse_bool(envvars.get("EXACTLY_ONCE", env), "EXACTLY_ONCE"):
        changes["exactly_once"] = True
    if o.mm2_metric_names or parse_bool(
        envvars.get("KMIRROR_MM2_METRIC_NAMES", env), "KMIRROR_MM2_METRIC_NAMES"
    ):
        changes["mm2_metric_names"] = True
    return dataclasses.replace(config, **changes, notes=config.notes + tuple(notes))


def _control(config: MirrorConfig, pick: Callable[..., Any]) -> dict[str, Any]:
    """The control API's credentials and the throttles: the options, else KMIRROR_* variables,
    else what the dialect said (mm2's per-flow `kmirror.throttle`)."""
    control = ControlSettings(
        **{
            name: pick(f"control_{name}", f"KMIRROR_CONTROL_{name.upper()}")
            for name in ("token_file", "tls_cert", "tls_key", "tls_client_ca")
        }
    )
    control.check()
    spec = pick("throttle", "KMIRROR_THROTTLE")
    throttle = config.throttle if spec is None else parse_throttle(spec, "--throttle")
    return {"control": control, "throttle": throttle}


def _logging(o: Options, env: Mapping[str, str], notes: list[str]) -> dict[str, Any]:
    """Level, format and pattern: the options, else a log4j file's, else the environment's."""
    out: dict[str, Any] = {}
    level = None
    if o.log4j_config is not None:  # a path, or the entrypoint's rendered file
        level, out["log_pattern"], log_notes = read_log4j(o.log4j_config)
        notes += log_notes
    level = o.log_level or level or envvars.get("LOG_LEVEL", env)
    out["log_level"] = check_level(level, "--log-level / LOG_LEVEL")
    log_format = o.log_format or envvars.get("KMIRROR_LOG_FORMAT", env)
    out["log_json"] = _choice(log_format, FORMATS, "--log-format") == "json"
    return out


def _choice(value: str, allowed: tuple[str, ...], flag: str) -> str:
    if value.strip().lower() not in allowed:
        raise ConfigError(f"{flag} must be {' or '.join(allowed)}, not {value!r}")
    return value.strip().lower()


def _as_text(value: str, name: str) -> str:
    return value


def _text(value: object) -> str | None:
    """A flag's or variable's text; None when absent or blank."""
    if not isinstance(value, str):
        return None
    return value.strip() or None
