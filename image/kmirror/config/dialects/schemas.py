"""Schema mirroring settings (config/schemas.py) from each dialect.

mm2.properties carries them per cluster (`<alias>.schema.registry.url`, ...) and per flow
(`[A->B.]schema.registry.id.mode`, ...). Every dialect also takes the flags and their
KMIRROR_SCHEMA_* variables, which win over the file. Passwords and tokens come only from
files (the variables name them) or mm2's config providers (`${file:...}`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kmirror.config import env as envvars
from kmirror.config.model import split_patterns
from kmirror.config.schemas import DEFAULT_SYNC_INTERVAL_S, RegistryEndpoint, SchemaSettings
from kmirror.config.secret import Secret, reveal
from kmirror.errors import ConfigError

SIDES = ("source", "target")
# (value name, flag or None, environment variable, is a file holding a credential)
_VALUES: tuple[tuple[str, str | None, str, bool], ...] = (
    *(
        (f"{side}_{name}", flag and f"--schema-registry-{side}-{flag}",
         f"KMIRROR_SCHEMA_REGISTRY_{side.upper()}_{var}", secret)
        for side in SIDES
        for name, flag, var, secret in (
            ("url", "url", "URL", False),
            ("basic_auth_user", "basic-auth-user", "BASIC_AUTH_USER", False),
            ("basic_auth_password", None, "BASIC_AUTH_PASSWORD_FILE", True),
            ("bearer_token", None, "BEARER_TOKEN_FILE", True),
            ("ssl_ca_location", "ssl-ca-location", "SSL_CA_LOCATION", False),
        )
    ),
    ("id_mode", "--schema-id-mode", "KMIRROR_SCHEMA_ID_MODE", False),
    ("subjects", "--schema-subjects", "KMIRROR_SCHEMA_SUBJECTS", False),
    ("subjects_exclude", "--schema-subjects-exclude", "KMIRROR_SCHEMA_SUBJECTS_EXCLUDE", False),
    ("sync_interval_s", "--schema-sync-interval-s", "KMIRROR_SCHEMA_SYNC_INTERVAL_S", False),
    ("unknown_id", "--schema-unknown-id", "KMIRROR_SCHEMA_UNKNOWN_ID", False),
)  # fmt: skip
# For kmirror.config.dialects.options: option name -> (flag, help).
FLAG_HELP: dict[str, tuple[str, str]] = {
    f"schema_{name}": (flag, f"schema mirroring: {envvars.BY_NAME[var].description}")
    for name, flag, var, _ in _VALUES
    if flag is not None
}
# mm2.properties: per-cluster keys after `<alias>.schema.registry.`, and per-flow keys.
_MM2_CLUSTER = {
    "url": "url",
    "basic.auth.user.info": "basic_auth_user_info",
    "bearer.auth.token": "bearer_token",
    "ssl.ca.location": "ssl_ca_location",
}
_MM2_FLOW = {
    "schema.registry.id.mode": "id_mode",
    "schema.registry.subjects": "subjects",
    "schema.registry.subjects.exclude": "subjects_exclude",
    "schema.registry.sync.interval.seconds": "sync_interval_s",
    "schema.registry.unknown.id": "unknown_id",
}
MM2_FLOW_SETTINGS = frozenset(_MM2_FLOW)


def is_mm2_cluster_key(rest: str) -> bool:
    """`rest` (a key after its cluster alias) is a schema registry setting of that cluster."""
    return rest.removeprefix("schema.registry.") in _MM2_CLUSTER


def schemas_from_mm2(
    cluster_keys: Mapping[str, Mapping[str, str]],
    setting: Callable[[str], str | None],
    where: str,
) -> SchemaSettings | None:
    """`cluster_keys`: per side ("source"/"target"), the cluster's schema.registry.* keys
    (without the alias prefix); `setting` reads flow settings (A->B. first)."""
    values: dict[str, str | Secret | None] = {}
    for side in SIDES:
        keys = cluster_keys.get(side, {})
        for key, value in keys.items():
            name = _MM2_CLUSTER[key.removeprefix("schema.registry.")]
            if name == "basic_auth_user_info":
                user, password = split_user_info(value, f"{where}: {side} {key}")
                values[f"{side}_basic_auth_user"] = user
                values[f"{side}_basic_auth_password"] = password
            else:
                values[f"{side}_{name}"] = Secret(value) if name == "bearer_token" else value
    for key, name in _MM2_FLOW.items():
        values[name] = setting(key)
    return from_values(values, where)


def schemas_from_flags(
    args: Mapping[str, Any], environ: Mapping[str, str], base: SchemaSettings | None
) -> SchemaSettings | None:
    """Flags win over KMIRROR_SCHEMA_* variables, which win over the dialect's (`base`)."""
    given: dict[str, str | Secret | None] = {}
    for name, flag, var, secret in _VALUES:
        raw = args.get(f"schema_{name}") if flag else None
        if isinstance(raw, str) and raw.strip():
            given[name] = raw.strip()
        elif environ.get(var, "").strip():
            given[name] = (
                Secret(envvars.read_secret_file(var, environ) or "")
                if secret
                else environ[var].strip()
            )
    if not given:
        return base
    return from_values({**_values_of(base), **given}, "--schema-* / KMIRROR_SCHEMA_*")


def _values_of(settings: SchemaSettings | None) -> dict[str, str | Secret | None]:
    if settings is None:
        return {}
    out: dict[str, str | Secret | None] = {}
    for side, end in (("source", settings.source), ("target", settings.target)):
        out |= {
            f"{side}_url": end.url,
            f"{side}_basic_auth_user": end.basic_auth_user,
            f"{side}_basic_auth_password": end.basic_auth_password,
            f"{side}_bearer_token": end.bearer_token,
            f"{side}_ssl_ca_location": end.ssl_ca_location,
        }
    return out | {
        "id_mode": settings.id_mode,
        "subjects": ",".join(settings.subjects),
        "subjects_exclude": ",".join(settings.subjects_exclude),
        "sync_interval_s": str(settings.sync_interval_s),
        "unknown_id": settings.unknown_id,
    }


def from_values(values: Mapping[str, str | Secret | None], where: str) -> SchemaSettings | None:
    """Settings from flat values named `source_url`, `target_basic_auth_user`, ..., `id_mode`,
    `subjects`, `subjects_exclude`, `sync_interval_s`, `unknown_id` (None or "" = not given).
    None when no source URL is given (schema mirroring off)."""

    def text(name: str) -> str:
        value = values.get(name)
        return "" if value is None else reveal(value).strip()

    def secret(name: str) -> Secret | None:
        value = values.get(name)
        if value is None or not reveal(value):
            return None
        return value if isinstance(value, Secret) else Secret(value)

    if not text("source_url") and not text("target_url"):
        return None
    if not text("source_url") or not text("target_url"):
        raise ConfigError(
            f"{where}: schema mirroring needs both registry URLs (source and target); "
            f"only the {'source' if text('source_url') else 'target'} one is set"
        )
    ends = {
        side: RegistryEndpoint(
            side,
            text(f"{side}_url"),
            basic_auth_user=text(f"{side}_basic_auth_user"),
            basic_auth_password=secret(f"{side}_basic_auth_password"),
            bearer_token=secret(f"{side}_bearer_token"),
            ssl_ca_location=text(f"{side}_ssl_ca_location"),
        )
        for side in ("source", "target")
    }
    interval = text("sync_interval_s")
    try:
        seconds = float(interval) if interval else DEFAULT_SYNC_INTERVAL_S
    except ValueError:
        raise ConfigError(
            f"{where}: schema sync interval must be seconds, not {interval!r}"
        ) from None
    return SchemaSettings(
        source=ends["source"],
        target=ends["target"],
        id_mode=text("id_mode").lower() or "translate",  # type: ignore[arg-type]  # checked
        subjects=split_patterns(text("subjects") or ".*"),
        subjects_exclude=split_patterns(text("subjects_exclude")),
        sync_interval_s=seconds,
        unknown_id=text("unknown_id").lower() or "fail",  # type: ignore[arg-type]  # checked
    )


def split_user_info(user_info: str | Secret, where: str) -> tuple[str, Secret]:
    """`user:password` (the Confluent clients' basic.auth.user.info) -> (user, Secret)."""
    user, sep, password = reveal(user_info).partition(":")
    if not sep or not user:
        raise ConfigError(f"{where}: basic.auth.user.info must be user:password")
    return user, Secret(password)
