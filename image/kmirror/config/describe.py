"""A human summary of a MirrorConfig (`kmirror check`), secrets masked."""

from __future__ import annotations

from collections.abc import Mapping

from kmirror.config.model import DEFAULT_CONFIG_EXCLUDES, ClusterConfig, ConfValue, MirrorConfig
from kmirror.config.secret import mask_config

_DIALECTS = {
    "mm1": "MirrorMaker 1",
    "mm2": "MirrorMaker 2 (mm2.properties)",
    "kudo": "KUDO",
    "direct": "source and target bootstrap servers",
}


def describe(config: MirrorConfig) -> str:
    """Multi-line, stable, safe to print: every secret value appears as ***."""
    c = config
    rename = (
        "identity (same topic names)"
        if c.rename.kind == "identity"
        else f"prefix '{c.rename.source_alias}{c.rename.separator}<topic>'"
    )
    mapping = c.rename.mapping
    if not mapping.empty:
        named = [f"{a}:{b}" for a, b in mapping.explicit] + [str(r) for r in mapping.rules]
        rename += f"; mapped: {', '.join(named)}" + (
            " (prefixed)" if mapping.prefixed and c.rename.kind == "prefix" else ""
        )
    start = {
        "earliest": "earliest",
        "latest": "latest",
        "none": "none (fail when a partition has no committed offset)",
    }[c.auto_offset_reset]
    on_error = "stop (abort.on.send.failure=true)" if c.abort_on_send_failure else "retry"
    excludes = (
        "MM2 defaults"
        if c.config_excludes == DEFAULT_CONFIG_EXCLUDES
        else ", ".join(c.config_excludes) or "none"
    )
    lines = [
        f"dialect:        {_DIALECTS.get(c.dialect, c.dialect)}",
        *_cluster("source", c.source, ("consumer", "admin")),
        *_cluster("target", c.target, ("producer", "admin")),
        f"consumer group: {c.group_id}",
        f"topics:         include {', '.join(c.topics.include)}"
        + (f"; exclude {', '.join(c.topics.exclude)}" if c.topics.exclude else "")
        + f" (always excluded: {', '.join(c.topics.default_excludes)})",
        f"target names:   {rename}",
        f"partitioning:   {c.partitioning}",
        f"engine:         {c.engine}",
        f"start offset:   {start} (for partitions without a committed offset)",
        f"streams:        {c.num_streams}",
        f"commit every:   {c.offset_commit_interval_ms} ms",
        f"on send error:  {on_error}",
        "delivery:       "
        + (
            "exactly-once (target transactions, read with read_committed)"
            if c.exactly_once
            else "at-least-once"
        ),
        f"create topics:  {'yes' if c.create_topics else 'no'}"
        + (
            f", replication factor {c.replication_factor}"
            if c.replication_factor != -1
            else ", the source's replication factor (broker default if the target is smaller)"
        ),
        "sync configs:   "
        + (f"every {c.sync_topic_configs_interval_s:g} s" if c.sync_topic_configs else "no")
        + f" (excluding {excludes})",
        f"topic refresh:  every {c.refresh_topics_interval_s:g} s",
        f"metrics port:   {c.metrics_port or 'disabled'}",
        f"logging:        {c.log_level}, {'json' if c.log_json else 'text'}"
        + (f", pattern {c.log_pattern}" if c.log_pattern else ""),
    ]
    if c.notes:
        lines.append(f"warnings ({len(c.notes)}):")
        lines += [f"  - {n}" for n in c.notes]
    return "\n".join(lines)


def _cluster(side: str, cluster: ClusterConfig, roles: tuple[str, ...]) -> list[str]:
    lines = [
        f"{side + ':':<16}{cluster.alias} at {cluster.bootstrap_servers} "
        f"({cluster.security_protocol})"
    ]
    parts: dict[str, Mapping[str, ConfValue]] = {
        "common": cluster.common,
        "consumer": cluster.consumer,
        "producer": cluster.producer,
        "admin": cluster.admin,
    }
    for name in ("common", *roles):
        if parts[name]:
            shown = ", ".join(f"{k}={v}" for k, v in sorted(mask_config(parts[name]).items()))
            lines.append(f"  {name + ':':<14}{shown}")
    return lines
