"""ACL sync settings (kmirror.config.acls) from each dialect.

mm2.properties carries MM2's keys with MM2's defaults (`sync.topic.acls.enabled=true`, every
600 s, MM2's narrow scope); kmirror's wider scope and its other settings are `kmirror.acls.*`
keys. MM1 and KUDO take flags and KMIRROR_* variables, off unless given. Flags win over
variables, which win over the file. Any of the settings given makes the sync `explicit`: a target
that cannot take ACLs then stops the start instead of being a warning.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kmirror.config.acls import (
    DEFAULT_INTERVAL_S,
    SCOPES,
    AclSyncConfig,
    check_principal,
    parse_principal_map,
)
from kmirror.config.values import parse_bool, parse_float
from kmirror.errors import ConfigError

# (mm2.properties key, AclSyncConfig field, MM2's default, flag, environment variable, help)
_KEYS: tuple[tuple[str, str, str, str, str, str], ...] = (
    ("sync.topic.acls.enabled", "enabled", "true", "--sync-topic-acls", "KMIRROR_SYNC_TOPIC_ACLS",
     "ACL sync: MM2's sync.topic.acls.enabled (off unless given in MM1/KUDO mode)"),
    ("sync.topic.acls.interval.seconds", "interval_s", str(int(DEFAULT_INTERVAL_S)),
     "--sync-topic-acls-interval-s", "KMIRROR_SYNC_TOPIC_ACLS_INTERVAL_SECONDS",
     "ACL sync: MM2's sync.topic.acls.interval.seconds (600)"),
    ("kmirror.acls.scope", "scope", "mm2", "--acl-scope", "KMIRROR_ACL_SCOPE",
     "ACL sync: mm2 (MM2's: literal topic ACLs, no ALLOW WRITE) or full (literal and prefixed "
     "topic ACLs, group and transactional-ID ACLs)"),
    ("kmirror.acls.principal.map", "principals", "", "--acl-principal-map",
     "KMIRROR_ACL_PRINCIPAL_MAP",
     "ACL sync: source principal -> target principal; ... (e.g. 'User:alice@A -> User:alice')"),
    ("kmirror.acls.deny.write", "deny_write", "false", "--acl-deny-write",
     "KMIRROR_ACL_DENY_WRITE",
     "ACL sync: DENY WRITE on mirrored target topics for all but the mirror (read-only copies)"),
    ("kmirror.acls.mirror.principal", "mirror_principal", "", "--acl-mirror-principal",
     "KMIRROR_ACL_MIRROR_PRINCIPAL",
     "ACL sync: the mirror's principal on the target (default User:<target SASL user>)"),
)  # fmt: skip
MM2_KEYS: frozenset[str] = frozenset(k for k, *_ in _KEYS)
# For the options (kmirror.config.dialects.options): option field -> (flag, help).
FLAG_HELP: Mapping[str, tuple[str, str]] = {
    flag[2:].replace("-", "_"): (flag, text) for _, _, _, flag, _, text in _KEYS
}


def _convert(field: str, text: str, where: str) -> Any:
    if field in ("enabled", "deny_write"):
        return parse_bool(text, where)
    if field == "interval_s":
        return parse_float(text, where)
    if field == "principals":
        return parse_principal_map(text, where)
    if field == "scope":
        if text.strip().lower() not in SCOPES:
            raise ConfigError(f"{where} must be mm2 or full, not {text!r}")
        return text.strip().lower()
    return check_principal(text.strip(), where) if text.strip() else ""


def acls_from_mm2(setting: Callable[[str], str | None], path: str) -> AclSyncConfig:
    """MM2's keys, flow-specific first, with MM2's defaults (on, every 600 s, MM2's scope)."""
    values: dict[str, Any] = {}
    given: set[str] = set()
    for key, field, default, *_ in _KEYS:
        raw = setting(key)
        if raw is not None:
            given.add(field)
        values[field] = _convert(field, default if raw is None else raw, f"{path}: {key}")
    return AclSyncConfig(**values, explicit=_explicit(given))


def _explicit(given: set[str]) -> bool:
    """Asked for: switched on by name, or one of kmirror's own settings given (an interval
    alone keeps MM2's lenient default)."""
    return bool(given - {"interval_s"})


def acls_from_flags(
    given: Mapping[str, Any], environ: Mapping[str, str], base: AclSyncConfig
) -> AclSyncConfig:
    """Flags (Options.given(), by option field) win over KMIRROR_* variables, which win over
    the dialect's settings (`base`)."""
    values: dict[str, Any] = {}
    for _, field, _, flag, var, _ in _KEYS:
        value = given.get(flag[2:].replace("-", "_"))
        if isinstance(value, str):
            values[field] = _convert(field, value, flag)
        elif isinstance(value, bool | float):
            values[field] = value
        elif environ.get(var, "").strip():
            values[field] = _convert(field, environ[var], var)
    if not values:
        return base
    current = {f: getattr(base, f) for f in AclSyncConfig.__dataclass_fields__}
    explicit = base.explicit or _explicit(set(values))
    return AclSyncConfig(**{**current, **values, "explicit": explicit})
