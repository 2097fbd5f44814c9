"""MirrorMaker 2 dialect: an `mm2.properties` file (connect-mirror-maker.sh's input).

kmirror runs exactly one replication flow `A->B` of the file. What it takes from the file:

* `clusters`, `<alias>.bootstrap.servers`, `<alias>.<client setting>`, and the `consumer.` /
  `producer.` / `admin.` prefixes at top level, per cluster and (consumer/producer) per flow.
  Unprefixed client settings apply to every cluster, as in MM2; the more specific one wins.
* Flow settings, `A->B.<name>` winning over a top-level `<name>`: `enabled`, `topics`,
  `topics.exclude` (old: `topics.blacklist`), `replication.policy.class` / `.separator`,
  `tasks.max` (-> streams), `sync.topic.configs.enabled` / `.interval.seconds`,
  `refresh.topics.interval.seconds`,
  `replication.factor`, `config.properties.exclude` (old: `.blacklist`),
  `offset.flush.interval.ms` (-> offset commit interval), disaster recovery (config/dr.py):
  `emit.checkpoints.*`, `emit.heartbeats.*`, `sync.group.offsets.*`, `groups`, `groups.exclude`,
  kmirror's own `kmirror.engine`, `kmirror.throttle` (config/throttle.py), kmirror's topic
  mapping keys `kmirror.topic.map`, `kmirror.topic.rules`, `kmirror.topic.mapping.prefix`
  (dialects/topicnames.py; MM2 has no renaming key), and ACL sync (dialects/acls.py):
  `sync.topic.acls.enabled` / `.interval.seconds`, `kmirror.acls.*`.

Deliberate differences from MM2: `refresh.topics.interval.seconds` defaults to 5 s, not 600 s,
because a new topic must be mirrored within 10 s; an absent `replication.factor` means the
source topic's replication factor when the target has that many brokers, else the target
broker's default (-1), not 2. MM2 consumes without a consumer group; kmirror commits
offsets to the group `<A>.consumer.group.id` / `consumer.group.id` / `A->B.consumer.group.id`
(most specific wins), default `kmirror-<A>-<B>`. A plain `group.id` in mm2.properties is
Kafka Connect's worker group and is not used.

Everything else MM2 knows (offset syncs, Connect worker settings, ...) is named in one note;
nothing is ignored silently.

Placeholders: `${env:NAME}`, `${file:path:key}` and `${directory:path:file}` are resolved
like Kafka's config providers; a bare `${NAME}` (a shell template) is taken from the
environment with a note. Any other provider is an error: render the file first.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from typing import Literal, cast

from kmirror.config.dialects.acls import MM2_KEYS as ACL_KEYS
from kmirror.config.dialects.acls import acls_from_mm2
from kmirror.config.dialects.dr import DR_SETTINGS, dr_from_mm2
from kmirror.config.dialects.properties import load_properties
from kmirror.config.dialects.providers import resolve_placeholders
from kmirror.config.dialects.schemas import MM2_FLOW_SETTINGS, is_mm2_cluster_key, schemas_from_mm2
from kmirror.config.dialects.topicnames import MM2_KEYS as TOPIC_NAME_KEYS
from kmirror.config.dialects.topicnames import mapping_from_mm2
from kmirror.config.javaclient.javakeys import StartPolicy
from kmirror.config.javaclient.translate import translate
from kmirror.config.model import (
    DEFAULT_CONFIG_EXCLUDES,
    DEFAULT_ENGINE,
    DEFAULT_NUM_STREAMS,
    DEFAULT_OFFSET_COMMIT_INTERVAL_MS,
    ENGINES,
    ClusterConfig,
    MirrorConfig,
    RenamePolicy,
    TopicSelection,
    split_patterns,
)
from kmirror.config.throttle import parse_throttle
from kmirror.config.values import parse_bool, parse_float, parse_int
from kmirror.errors import ConfigError

_FLOW_SETTINGS = frozenset(
    {
        "enabled",
        "topics",
        "topics.exclude",
        "topics.blacklist",
        "replication.policy.class",
        "replication.policy.separator",
        "tasks.max",
        "sync.topic.configs.enabled",
        "sync.topic.configs.interval.seconds",
        "refresh.topics.interval.seconds",
        "replication.factor",
        "config.properties.exclude",
        "config.properties.blacklist",
        "offset.flush.interval.ms",
        "progress.topic",
        "exactly.once.support",
        "exactly.once.source.support",
        "kmirror.engine",
        "kmirror.throttle",
        *DR_SETTINGS,
        *MM2_FLOW_SETTINGS,
        *TOPIC_NAME_KEYS,
        *ACL_KEYS,
    }
)
# MM2 / Kafka Connect settings kmirror knows about and does not implement.
_MM2_ONLY = re.compile(
    r"(emit\..*|sync\.group\.offsets\..*|sync\.topic\.acls\..*|sync\.topic\.configs\..*"
    r"|refresh\.groups\..*|refresh\.topics\.enabled|groups(\.exclude|\.blacklist)?"
    r"|heartbeats\..*|checkpoints\..*|offset-syncs\..*|.*\.replication\.factor"
    r"|(offset|config|status)\.storage\..*|(key|value|header)\.converter(\..*)?"
    r"|(topic|group)\.filter\.class|config\.property\.filter\.class|connector\.class|name"
    r"|errors\..*|offset\.lag\.max|add\.source\.alias\.to\.metrics|dedicated\.mode\..*"
    r"|consumer\.poll\.timeout\.ms|admin\.timeout\.ms|forwarding\.admin\.class"
    r"|use\.incremental\.alter\.configs|exactly\.once\..*|topic\.creation\..*"
    r"|replication\.policy\..*|(source|target)\.cluster\..*|offset\.flush\.timeout\.ms"
    r"|tasks?\..*|listeners|rest\..*|scheduled\.rebalance\.max\.delay\.ms|group\.id"
    r"|plugin\.path)"
)
_ROLES = ("consumer.", "producer.", "admin.")
_DEFAULT_POLICY = "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"
_POLICIES = {
    _DEFAULT_POLICY: "prefix",
    "org.apache.kafka.connect.mirror.IdentityReplicationPolicy": "identity",
}


def load_mm2(
    path: str,
    *,
    flow: str | None = None,
    clusters: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> MirrorConfig:
    """Load one flow of an mm2.properties file. `flow` ("A->B", --flow) or `clusters`
    (MM2's --clusters: target aliases) choose among several enabled flows."""
    env = os.environ if environ is None else environ
    notes: list[str] = []
    props = resolve_placeholders(load_properties(path), path, env, notes)
    aliases = [a for a in split_patterns(props.get("clusters", "")) if a]
    if len(aliases) < 2:
        raise ConfigError(
            f"{path}: clusters= must list at least two cluster aliases "
            "(e.g. clusters=source, target)"
        )
    src, dst = _pick_flow(props, aliases, path, flow, clusters)
    pair = f"{src}->{dst}"

    def setting(name: str, default: str | None = None) -> str | None:
        return props.get(f"{pair}.{name}", props.get(name, default))

    # `<alias>.schema.registry.*`: the cluster's schema registry, not a client setting.
    registries: dict[str, dict[str, str]] = {"source": {}, "target": {}}
    for key in [k for k in props if is_mm2_cluster_key(k.partition(".")[2])]:
        alias, _, rest = key.partition(".")
        value = props.pop(key)
        if alias in (src, dst):
            registries["source" if alias == src else "target"][rest] = value
    unused: list[str] = []
    skipped: list[str] = []
    layers: dict[tuple[str, str], dict[str, str]] = {
        (a, r): {} for a in (src, dst) for r in ("common", "consumer", "producer", "admin")
    }
    # Specific beats general: apply top-level, then per-cluster, then per-flow keys.
    for key, value in sorted(props.items(), key=lambda kv: _rank(kv[0], aliases)):
        _place(
            key,
            value,
            aliases=aliases,
            flow=(src, dst),
            layers=layers,
            unused=unused,
            skipped=skipped,
        )

    source, group_id, start = _cluster(src, layers, path, notes)
    target, _, _ = _cluster(dst, layers, path, notes)
    group_id = group_id or f"kmirror-{src}-{dst}"

    policy_class = (setting("replication.policy.class") or _DEFAULT_POLICY).strip()
    if policy_class not in _POLICIES:
        raise ConfigError(
            f"{path}: replication.policy.class {policy_class} is not supported: use "
            f"{_DEFAULT_POLICY} (target topic '<source alias>.<topic>') or "
            "org.apache.kafka.connect.mirror.IdentityReplicationPolicy (same name)"
        )
    rename = RenamePolicy(
        kind="prefix" if _POLICIES[policy_class] == "prefix" else "identity",
        source_alias=src,
        separator=setting("replication.policy.separator", ".") or ".",
        target_alias=dst,
        mapping=mapping_from_mm2(setting, path),
    )
    exclude = setting("topics.exclude") or setting("topics.blacklist") or ""
    config_excl = setting("config.properties.exclude") or setting("config.properties.blacklist")
    rf = setting("replication.factor")
    if skipped:
        notes.append(
            f"{path}: mm2.properties settings not implemented by kmirror: "
            f"{', '.join(sorted(set(skipped)))}"
        )
    if unused:
        notes.append(f"{path}: settings not used by the flow {pair}: {', '.join(sorted(unused))}")
    return MirrorConfig(
        source=source,
        target=target,
        group_id=group_id,
        topics=TopicSelection(
            include=split_patterns(setting("topics", ".*") or ".*"),
            exclude=split_patterns(exclude),
        ),
        rename=rename,
        num_streams=parse_int(
            setting("tasks.max") or str(DEFAULT_NUM_STREAMS), "tasks.max", minimum=1
        ),
        offset_commit_interval_ms=parse_int(
            setting("offset.flush.interval.ms") or str(DEFAULT_OFFSET_COMMIT_INTERVAL_MS),
            "offset.flush.interval.ms",
            minimum=1,
        ),
        auto_offset_reset=start,
        sync_topic_configs=parse_bool(
            setting("sync.topic.configs.enabled", "true") or "true", "sync.topic.configs.enabled"
        ),
        replication_factor=-1 if rf is None else parse_int(rf, "replication.factor", minimum=-1),
        config_excludes=split_patterns(config_excl) if config_excl else DEFAULT_CONFIG_EXCLUDES,
        sync_topic_configs_interval_s=parse_float(
            setting("sync.topic.configs.interval.seconds", "600") or "600",
            "sync.topic.configs.interval.seconds",
        ),
        refresh_topics_interval_s=parse_float(
            setting("refresh.topics.interval.seconds", "5") or "5",
            "refresh.topics.interval.seconds",
        ),
        progress_topic_name=setting("progress.topic") or "",
        exactly_once=_exactly_once(setting, path),
        engine=_engine(setting("kmirror.engine")),
        throttle=parse_throttle(setting("kmirror.throttle") or "", f"{pair}.kmirror.throttle"),
        dialect="mm2",
        dr=dr_from_mm2(setting),
        acls=acls_from_mm2(setting, path),
        schemas=schemas_from_mm2(registries, setting, path),
        notes=tuple(notes),
    )


# KIP-618: the worker's exactly.once.source.support (enabled; preparing is the rolling-upgrade
# step, not yet exactly-once) and the connector's exactly.once.support (required, requested).
_EOS_VALUES = {
    "exactly.once.source.support": {"enabled": True, "preparing": False, "disabled": False},
    "exactly.once.support": {"enabled": True, "required": True, "requested": True,
                             "disabled": False},
}  # fmt: skip


def _exactly_once(setting: Callable[[str], str | None], path: str) -> bool:
    on = False
    for name, values in _EOS_VALUES.items():
        value = setting(name)
        if value is None:
            continue
        if value.strip().lower() not in values:
            raise ConfigError(
                f"{path}: {name}={value!r} is not one of {', '.join(values)}; "
                "'enabled' turns exactly-once mirroring on"
            )
        on = on or values[value.strip().lower()]
    return on


def _engine(value: str | None) -> Literal["record", "batch", "auto"]:
    engine = (value or DEFAULT_ENGINE).strip().lower()
    if engine not in ENGINES:
        raise ConfigError(f"kmirror.engine must be record, batch or auto, not {value!r}")
    return cast(Literal["record", "batch", "auto"], engine)


def _rank(key: str, aliases: list[str]) -> int:
    if "->" in key.split(".", 1)[0]:
        return 2
    return 1 if any(key.startswith(a + ".") for a in aliases) else 0


def _place(
    key: str,
    value: str,
    *,
    aliases: list[str],
    flow: tuple[str, str],
    layers: dict[tuple[str, str], dict[str, str]],
    unused: list[str],
    skipped: list[str],
) -> None:
    src, dst = flow
    head = key.split(".", 1)[0]
    if "->" in head:
        pair, _, rest = key.partition(".")
        if pair != f"{src}->{dst}":
            unused.append(key)
        elif rest.startswith("consumer."):
            layers[(src, "consumer")][rest[len("consumer.") :]] = value
        elif rest.startswith("producer."):
            layers[(dst, "producer")][rest[len("producer.") :]] = value
        elif rest not in _FLOW_SETTINGS:
            skipped.append(key)
        return
    alias = max((a for a in aliases if key.startswith(a + ".")), key=len, default=None)
    if alias is None and (
        key in _FLOW_SETTINGS or key == "clusters" or key.startswith("config.providers")
    ):
        return  # read directly (settings) or already applied (config providers)
    if alias is not None and alias not in flow:
        unused.append(key)
        return
    rest = key[len(alias) + 1 :] if alias else key
    targets = [alias] if alias else [src, dst]
    role = next((r[:-1] for r in _ROLES if rest.startswith(r)), "common")
    if role != "common":
        rest = rest[len(role) + 1 :]
    elif _MM2_ONLY.fullmatch(rest) and rest != "bootstrap.servers":
        skipped.append(key)
        return
    for cluster in targets:
        layers[(cluster, role)][rest] = value


def _cluster(
    alias: str, layers: Mapping[tuple[str, str], Mapping[str, str]], path: str, notes: list[str]
) -> tuple[ClusterConfig, str | None, StartPolicy]:
    """The cluster, plus the consumer group and start policy its consumer settings name."""
    where = f"{path} cluster '{alias}'"
    common = translate(layers[(alias, "common")], "common", where)
    parts = {
        r: translate(layers[(alias, r)], r, f"{where} {r}")
        for r in ("consumer", "producer", "admin")
    }
    for t in (common, *parts.values()):
        notes.extend(t.notes)
    if not common.bootstrap_servers:
        raise ConfigError(f"{path}: {alias}.bootstrap.servers is not set (host:port[,...])")
    cluster = ClusterConfig(
        alias=alias,
        bootstrap_servers=common.bootstrap_servers,
        common=common.common,
        consumer={**common.consumer, **parts["consumer"].consumer},
        producer={**common.producer, **parts["producer"].producer},
        admin={**common.admin, **parts["admin"].admin},
    )
    # MM2's source consumer starts new partitions at the beginning; so do we.
    start = parts["consumer"].start_policy or common.start_policy or "earliest"
    return cluster, parts["consumer"].group_id, start


def _pick_flow(
    props: Mapping[str, str],
    aliases: list[str],
    path: str,
    flow: str | None,
    clusters: str | None,
) -> tuple[str, str]:
    enabled = [
        (a, b)
        for a in aliases
        for b in aliases
        if a != b and parse_bool(props.get(f"{a}->{b}.enabled", "false"), f"{a}->{b}.enabled")
    ]
    for key in props:
        head = key.split(".", 1)[0]
        if "->" in head and key.endswith(".enabled") and not set(head.split("->")) <= set(aliases):
            raise ConfigError(
                f"{path}: {key} names a cluster that is not in clusters={','.join(aliases)}"
            )
    names = ", ".join(f"{a}->{b}" for a, b in enabled) or "none"
    if flow:
        src, _, dst = (p.strip() for p in flow.partition("->"))
        if (src, dst) not in enabled:
            raise ConfigError(f"--flow {flow}: not an enabled flow of {path} (enabled: {names})")
        return src, dst
    if clusters:
        wanted = set(split_patterns(clusters))
        enabled = [(a, b) for a, b in enabled if b in wanted]
    if not enabled:
        raise ConfigError(
            f"{path}: no replication flow is enabled: set e.g. "
            f"{aliases[0]}->{aliases[1]}.enabled=true"
        )
    if len(enabled) > 1:
        raise ConfigError(
            f"{path} enables several flows ({names}); kmirror runs one per "
            "process: choose with --flow A->B"
        )
    return enabled[0]
