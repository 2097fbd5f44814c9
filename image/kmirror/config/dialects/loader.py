"""Command-line flags -> the one config model, whichever dialect the user speaks.

Three ways in, never mixed: MirrorMaker 1 files (--consumer.config/--producer.config),
an mm2.properties file (--mm2.config), or KUDO parameters (flags or MIRROR_MAKER_* variables).
Flags common to all of them (--partitioning, --rename-policy, logging, ...) are applied last,
over the dialect's values; KMIRROR_* variables stand in for flags that are not given.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Mapping
from typing import Any

from kmirror.config import env as envvars
from kmirror.config.dialects import dr
from kmirror.config.dialects.kudo import load_kudo, load_pair
from kmirror.config.dialects.log4j import FORMATS, check_level, read_log4j
from kmirror.config.dialects.mm1 import load_mm1
from kmirror.config.dialects.mm2 import load_mm2
from kmirror.config.dialects.properties import PropertiesFile
from kmirror.config.dialects.schemas import schemas_from_flags
from kmirror.config.model import (
    DEFAULT_NUM_STREAMS,
    DEFAULT_OFFSET_COMMIT_INTERVAL_MS,
    ENGINES,
    PARTITIONINGS,
    MirrorConfig,
    RenamePolicy,
)
from kmirror.config.values import enforce_strict, parse_bool, parse_float, parse_int
from kmirror.errors import ConfigError

__all__ = ["CHOOSING_FLAGS", "DIALECT_FLAGS", "load_config"]

# (flag, dest, help) of each dialect: which flags given tell the dialect apart. Values are
# parsed by load_config, so that every error is a ConfigError naming the flag, and "not given"
# (None) can be told apart from a default. kmirror.cli.flags puts them on the command line.
_MM1 = (
    ("--consumer.config", "consumer_config", "MM1: consumer .properties (source cluster)"),
    ("--producer.config", "producer_config", "MM1: producer .properties (target cluster)"),
    ("--message.handler", "message_handler", "MM1: not supported (Java class)"),
    ("--message.handler.args", "message_handler_args", "MM1: not supported"),
    ("--rebalance.listener", "rebalance_listener", "MM1: not supported (Java class)"),
    ("--rebalance.listener.args", "rebalance_listener_args", "MM1: not supported"),
)
_SHARED = (  # MirrorMaker 1 and KUDO
    ("--num.streams", "num_streams", f"number of stream processes (default {DEFAULT_NUM_STREAMS})"),
    (
        "--offset.commit.interval.ms",
        "offset_commit_interval_ms",
        f"offset commit interval (default {DEFAULT_OFFSET_COMMIT_INTERVAL_MS})",
    ),
)
_MM2 = (
    ("--mm2.config", "mm2_config", "MM2: mm2.properties file"),
    ("--clusters", "clusters", "MM2: run the flow that targets these cluster aliases"),
    ("--flow", "flow", "MM2: the flow to run, A->B, when several are enabled"),
)
_KUDO = (
    ("--this-bootstrap-servers", "this_bootstrap_servers", "KUDO: the cluster kmirror runs by"),
    ("--external-bootstrap-servers", "external_bootstrap_servers", "KUDO: the other cluster"),
    (
        "--external-cluster-type",
        "external_cluster_type",
        "KUDO: SOURCE or DESTINATION (the role of the external cluster)",
    ),
)
_KUDO_ENV = (
    "MIRROR_MAKER_THIS_BOOTSTRAP_SERVERS",
    "MIRROR_MAKER_EXTERNAL_BOOTSTRAP_SERVERS",
    "MIRROR_MAKER_EXTERNAL_CLUSTER_TYPE",
)
DIALECT_FLAGS: tuple[tuple[str, str, str], ...] = (*_MM1, *_SHARED, *_MM2, *_KUDO)
# The flags that choose a dialect (MM1/KUDO share the others).
CHOOSING_FLAGS: tuple[tuple[str, str, str], ...] = (*_MM1, *_MM2, *_KUDO)
_HOW = (
    "give one of: (1) MirrorMaker 1: --consumer.config FILE --producer.config FILE "
    "--whitelist REGEX; (2) MirrorMaker 2: --mm2.config mm2.properties [--flow A->B]; "
    "(3) KUDO: --this-bootstrap-servers, --external-bootstrap-servers and "
    "--external-cluster-type SOURCE|DESTINATION (or the MIRROR_MAKER_* environment variables)"
)


def load_config(
    args: argparse.Namespace,
    environ: Mapping[str, str] | None = None,
    *,
    clusters: tuple[str, str] | None = None,
) -> MirrorConfig:
    """Detect the dialect, build the model, apply the common flags, enforce --strict.

    `clusters` (source, target bootstrap servers) stands in for a dialect: kmirror-validate's
    --source/--target-bootstrap-servers, with the sides' security from the environment."""
    env = os.environ if environ is None else environ
    a: dict[str, Any] = vars(args)
    given = {flag: a.get(dest) for flag, dest in _flags() if a.get(dest) not in (None, False)}
    dialect = "direct" if clusters is not None else _dialect(given, env)
    abort = a.get("abort_on_send_failure")
    abort_flag = None if abort is None else parse_bool(abort, "--abort.on.send.failure")
    # The flags MirrorMaker 1 and KUDO share (mm2.properties carries its own).
    shared: dict[str, Any] = {
        "whitelist": a.get("whitelist"),
        "blacklist": a.get("blacklist"),
        "num_streams": _opt_int(a, "num_streams", "--num.streams", 1),
        "offset_commit_interval_ms": _opt_int(
            a, "offset_commit_interval_ms", "--offset.commit.interval.ms", 1
        ),
        "abort_on_send_failure": abort_flag,
        "group_id": _text(a.get("group_id")),
    }
    notes: list[str] = []
    if dialect == "mm1":
        if a.get("new_consumer"):
            notes.append("--new.consumer has no effect (kmirror always uses the new consumer)")
        config = load_mm1(a.get("consumer_config"), a.get("producer_config"), **shared)
    elif dialect == "mm2":
        config = load_mm2(
            a["mm2_config"],
            flow=_text(a.get("flow")),
            clusters=_text(a.get("clusters")),
            environ=env,
        )
        if abort_flag is not None:
            config = dataclasses.replace(config, abort_on_send_failure=abort_flag)
    elif clusters is not None:
        config = load_pair(*clusters, **shared, environ=env, dialect="direct")
    else:
        config = load_kudo(
            a.get("this_bootstrap_servers"),
            a.get("external_bootstrap_servers"),
            a.get("external_cluster_type"),
            **shared,
            environ=env,
        )
    config = _common(config, a, env, notes)
    enforce_strict(config.notes, env, bool(a.get("strict")), "--strict")
    return config


def _flags() -> list[tuple[str, str]]:
    extra = [
        ("--whitelist", "whitelist"),
        ("--blacklist", "blacklist"),
        ("--new.consumer", "new_consumer"),
    ]
    return [(f, d) for f, d, _ in DIALECT_FLAGS] + extra


def _dialect(given: Mapping[str, Any], env: Mapping[str, str]) -> str:
    kinds = {
        "MirrorMaker 1": [f for f, _, _ in _MM1 if f in given]
        + (["--new.consumer"] if "--new.consumer" in given else []),
        "MirrorMaker 2": [f for f, _, _ in _MM2 if f in given],
        "KUDO": [f for f, _, _ in _KUDO if f in given],
    }
    present = {k: v for k, v in kinds.items() if v}
    if len(present) > 1:
        listed = "; ".join(f"{k}: {', '.join(v)}" for k, v in present.items())
        raise ConfigError(f"flags of different dialects cannot be mixed ({listed}). {_HOW}")
    for flag in ("--message.handler", "--message.handler.args", "--rebalance.listener",
                 "--rebalance.listener.args"):  # fmt: skip
        if flag in given:
            raise ConfigError(
                f"{flag}: MirrorMaker handlers and listeners are Java classes, which kmirror "
                "cannot run (it copies records byte-exact); remove the flag"
            )
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
        if "--mm2.config" not in given:
            flags = ", ".join(present["MirrorMaker 2"])
            raise ConfigError(f"{flags} need --mm2.config FILE (the mm2.properties to run)")
        return "mm2"
    if "MirrorMaker 1" in present:
        return "mm1"
    if "KUDO" in present or any(env.get(n, "").strip() for n in _KUDO_ENV):
        return "kudo"
    raise ConfigError(f"no configuration given: {_HOW}")


def _common(
    config: MirrorConfig, a: Mapping[str, Any], env: Mapping[str, str], notes: list[str]
) -> MirrorConfig:
    def pick(dest: str, var: str) -> str | None:
        # The flag, else the variable only if it is really set: a documented default must
        # not override what the dialect (e.g. mm2's prefix policy) decided.
        return _text(a.get(dest)) or _text(env.get(var))

    changes: dict[str, Any] = {}
    partitioning = pick("partitioning", "KMIRROR_PARTITIONING")
    if partitioning is not None:
        changes["partitioning"] = _choice(partitioning, PARTITIONINGS, "--partitioning")
    engine = pick("engine", "KMIRROR_ENGINE")
    if engine is not None:
        changes["engine"] = _choice(engine, ENGINES, "--engine")
    kind = pick("rename_policy", "KMIRROR_RENAME_POLICY")
    alias = pick("source_alias", "KMIRROR_SOURCE_ALIAS")
    target_alias = pick("target_alias", "KMIRROR_TARGET_ALIAS")
    if kind is not None or alias is not None or target_alias is not None:
        changes["rename"] = RenamePolicy(
            kind="prefix"
            if _choice(kind or config.rename.kind, ("identity", "prefix"), "--rename-policy")
            == "prefix"
            else "identity",
            source_alias=alias or config.rename.source_alias,
            separator=config.rename.separator,
            target_alias=target_alias or config.rename.target_alias,
        )
    changes["dr"] = dr.dr_from_flags(a, env, config.dr)
    changes["schemas"] = schemas_from_flags(a, env, config.schemas)
    rf = pick("replication_factor", "KMIRROR_REPLICATION_FACTOR")
    if rf is not None:
        changes["replication_factor"] = parse_int(rf, "--replication-factor", minimum=-1)
    if config.dialect == "mm2" and _text(a.get("group_id")):
        changes["group_id"] = _text(a.get("group_id"))
    progress = pick("progress_topic", "KMIRROR_PROGRESS_TOPIC")
    if progress is not None:
        changes["progress_topic_name"] = progress
    port = pick("metrics_port", "KMIRROR_METRICS_PORT")
    if port is not None:
        changes["metrics_port"] = parse_int(port, "--metrics-port", minimum=0)
    level, pattern = None, None
    log4j = a.get("log4j_config")  # a path, or the entrypoint's rendered file
    if isinstance(log4j, PropertiesFile) or _text(log4j):
        level, pattern, log_notes = read_log4j(a["log4j_config"])
        notes += log_notes
        changes["log_pattern"] = pattern
    level = _text(a.get("log_level")) or level or envvars.get("LOG_LEVEL", env)
    changes["log_level"] = check_level(level, "--log-level / LOG_LEVEL")
    log_format = _text(a.get("log_format")) or envvars.get("KMIRROR_LOG_FORMAT", env)
    changes["log_json"] = _choice(log_format, FORMATS, "--log-format") == "json"
    interval = _text(a.get("refresh_topics_interval_s"))
    if interval is not None:
        changes["refresh_topics_interval_s"] = parse_float(interval, "--refresh-topics-interval-s")
    sync = pick("sync_topic_configs_interval_s", "KMIRROR_SYNC_TOPIC_CONFIGS_INTERVAL_S")
    if sync is not None:
        changes["sync_topic_configs_interval_s"] = parse_float(
            sync, "--sync-topic-configs-interval-s"
        )
    if a.get("no_create_topics"):
        changes["create_topics"] = False
    if a.get("exactly_once") or parse_bool(envvars.get("EXACTLY_ONCE", env), "EXACTLY_ONCE"):
        changes["exactly_once"] = True
    return dataclasses.replace(config, **changes, notes=config.notes + tuple(notes))


def _choice(value: str, allowed: tuple[str, ...], flag: str) -> str:
    if value.strip().lower() not in allowed:
        raise ConfigError(f"{flag} must be {' or '.join(allowed)}, not {value!r}")
    return value.strip().lower()


def _opt_int(a: Mapping[str, Any], dest: str, flag: str, minimum: int) -> int | None:
    value = _text(a.get(dest))
    return None if value is None else parse_int(value, flag, minimum=minimum)


def _text(value: object) -> str | None:
    """A flag's or variable's text; None when absent or blank."""
    if not isinstance(value, str):
        return None
    return value.strip() or None
