"""Disaster-recovery settings (DrConfig) from each dialect.

mm2.properties carries MM2's own keys with MM2's defaults (checkpoints and heartbeats on, group
sync off). MM1 and KUDO have no such keys: flags and KMIRROR_* variables switch the features on,
and every one defaults to off so that their default stays a plain byte-exact mirror.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kmirror.config.model import DEFAULT_GROUP_EXCLUDES, DrConfig, split_patterns
from kmirror.config.values import parse_bool, parse_float

# (mm2.properties key, DrConfig field, MM2's default, flag, environment variable)
_KEYS: tuple[tuple[str, str, str, str, str], ...] = (
    ("emit.checkpoints.enabled", "emit_checkpoints", "true",
     "--emit-checkpoints", "KMIRROR_EMIT_CHECKPOINTS"),
    ("emit.checkpoints.interval.seconds", "checkpoints_interval_s", "60",
     "--emit-checkpoints-interval-s", "KMIRROR_EMIT_CHECKPOINTS_INTERVAL_SECONDS"),
    ("emit.heartbeats.enabled", "emit_heartbeats", "true",
     "--emit-heartbeats", "KMIRROR_EMIT_HEARTBEATS"),
    ("emit.heartbeats.interval.seconds", "heartbeats_interval_s", "1",
     "--emit-heartbeats-interval-s", "KMIRROR_EMIT_HEARTBEATS_INTERVAL_SECONDS"),
    ("sync.group.offsets.enabled", "sync_group_offsets", "false",
     "--sync-group-offsets", "KMIRROR_SYNC_GROUP_OFFSETS"),
    ("sync.group.offsets.interval.seconds", "sync_group_offsets_interval_s", "60",
     "--sync-group-offsets-interval-s", "KMIRROR_SYNC_GROUP_OFFSETS_INTERVAL_SECONDS"),
    ("groups", "groups", ".*", "--groups", "KMIRROR_GROUPS"),
    ("groups.exclude", "groups_exclude", ", ".join(DEFAULT_GROUP_EXCLUDES),
     "--groups-exclude", "KMIRROR_GROUPS_EXCLUDE"),
    # kmirror's own (docs/disaster-recovery.md): off in every dialect, the copy stays byte-exact.
    ("provenance.header.enabled", "provenance_header", "false",
     "--provenance-header", "KMIRROR_PROVENANCE_HEADER"),
)  # fmt: skip
DR_SETTINGS: frozenset[str] = frozenset(k for k, *_ in _KEYS) | {"groups.blacklist"}
# For the options (kmirror.config.dialects.options): field -> (flag, help).
FLAG_HELP: Mapping[str, tuple[str, str]] = {
    field: (flag, f"disaster recovery: MM2's {key} (off unless given in MM1/KUDO mode)")
    for key, field, _, flag, _ in _KEYS
}
ENV_NAMES: Mapping[str, str] = {field: var for _, field, _, _, var in _KEYS}


def _convert(field: str, text: str, name: str) -> Any:
    if field in ("groups", "groups_exclude"):
        return split_patterns(text)
    if field.endswith("_s"):
        return parse_float(text, name)
    return parse_bool(text, name)


def dr_from_mm2(setting: Callable[[str], str | None]) -> DrConfig:
    """MM2's keys, flow-specific first, with MM2's defaults."""
    values: dict[str, Any] = {}
    for key, field, default, _, _ in _KEYS:
        raw = setting(key)
        if raw is None and key == "groups.exclude":
            raw = setting("groups.blacklist")
        values[field] = _convert(field, default if raw is None else raw, key)
    return DrConfig(**values)


def dr_from_flags(given: Mapping[str, Any], environ: Mapping[str, str], base: DrConfig) -> DrConfig:
    """Flags (by field, converted but for the group patterns' text: Options.given()) win over
    KMIRROR_* variables, which win over the dialect's values (`base`)."""
    values: dict[str, Any] = {}
    for _, field, _, flag, var in _KEYS:
        value = given.get(field)
        if isinstance(value, str):
            value = _convert(field, value, flag)
        elif value is None and environ.get(var, "").strip():
            value = _convert(field, environ[var].strip(), var)
        if value is not None:
            values[field] = value
    return DrConfig(**{**_fields(base), **values}) if values else base


def _fields(dr: DrConfig) -> dict[str, Any]:
    return {k: getattr(dr, k) for k in DrConfig.__dataclass_fields__}
