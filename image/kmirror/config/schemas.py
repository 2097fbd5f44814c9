"""Schema mirroring settings: the two schema registries, the ID mode, which subjects.

Off unless registry URLs are given. Every dialect builds `SchemaSettings` (dialects/schemas.py)
from its own names (docs/schemas.md has the table):

* flags / KMIRROR_SCHEMA_* variables: `--schema-registry-source-url` (also `-target-`),
  `--schema-id-mode`, `--schema-subjects`, `--schema-subjects-exclude`,
  `--schema-sync-interval-s`, `--schema-unknown-id`; credentials only from variables naming
  files (`KMIRROR_SCHEMA_REGISTRY_SOURCE_BASIC_AUTH_PASSWORD_FILE`, `..._BEARER_TOKEN_FILE`);
* mm2.properties: per cluster `<alias>.schema.registry.url`, `.basic.auth.user.info`
  (user:password), `.bearer.auth.token`, `.ssl.ca.location`; per flow `schema.registry.id.mode`,
  `schema.registry.subjects`, `.subjects.exclude`, `.sync.interval.seconds`, `.unknown.id`.

The key names follow the Confluent serializers' (`schema.registry.url`, `basic.auth.user.info`,
`bearer.auth.token`); MM2 itself has none. Credentials are `Secret`s: they print as ***.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from kmirror.config.secret import Secret, reveal
from kmirror.errors import ConfigError

IdMode = Literal["preserve", "translate"]
ID_MODES: tuple[str, ...] = ("translate", "preserve")
UNKNOWN_ID_POLICIES: tuple[str, ...] = ("fail", "copy")
DEFAULT_SYNC_INTERVAL_S = 30.0
# What every endpoint carries, as (suffix of the settings below, what it is).
ENDPOINT_FIELDS: tuple[tuple[str, str], ...] = (
    ("url", "URL of the Confluent-compatible API (Apicurio: .../apis/ccompat/v7)"),
    ("basic_auth_user", "HTTP basic user"),
    ("basic_auth_password", "HTTP basic password (only from a file)"),
    ("bearer_token", "bearer token (only from a file)"),
    ("ssl_ca_location", "PEM file of the CA that signed the registry's certificate"),
)


@dataclass(frozen=True)
class RegistryEndpoint:
    """How to reach one schema registry."""

    side: str
    url: str
    basic_auth_user: str = ""
    basic_auth_password: Secret | None = None
    bearer_token: Secret | None = None
    ssl_ca_location: str = ""

    def __post_init__(self) -> None:
        if not re.match(r"https?://[^/\s]+", self.url):
            raise ConfigError(
                f"{self.side} schema registry URL {self.url!r} is not http(s)://host[:port][/path]"
            )
        if bool(self.basic_auth_user) != (self.basic_auth_password is not None):
            raise ConfigError(
                f"{self.side} schema registry: basic auth needs both a user and a password file"
            )
        if self.basic_auth_user and self.bearer_token is not None:
            raise ConfigError(
                f"{self.side} schema registry: give basic auth or a bearer token, not both"
            )
        if "@" in self.url.split("//", 1)[1].split("/", 1)[0]:
            raise ConfigError(
                f"{self.side} schema registry URL carries credentials: give them as basic auth "
                "settings (a password file) instead, so they are never logged"
            )

    def client_conf(self) -> dict[str, Any]:
        """confluent_kafka.schema_registry settings. The only place the credentials leave their
        wrapper: call it where the client is created."""
        conf: dict[str, Any] = {"url": self.url, "timeout": 10, "max.retries": 2}
        if self.basic_auth_password is not None:
            conf["basic.auth.user.info"] = (
                f"{self.basic_auth_user}:{reveal(self.basic_auth_password)}"
            )
        if self.bearer_token is not None:
            conf["bearer.auth.credentials.source"] = "STATIC_TOKEN"
            conf["bearer.auth.token"] = reveal(self.bearer_token)
            # The client sends it as target-sr-cluster (Confluent Cloud); others ignore it.
            conf["bearer.auth.logical.cluster"] = "-"
        if self.ssl_ca_location:
            conf["ssl.ca.location"] = self.ssl_ca_location
        return conf

    def describe(self) -> str:
        auth = "basic" if self.basic_auth_user else "bearer" if self.bearer_token else "none"
        ca = f", CA {self.ssl_ca_location}" if self.ssl_ca_location else ""
        return f"{self.url} (auth {auth}{ca})"


@dataclass(frozen=True)
class SchemaSettings:
    """Schema mirroring: copy subjects from the source registry to the target registry and
    keep (preserve) or rewrite (translate) the schema IDs records carry."""

    source: RegistryEndpoint
    target: RegistryEndpoint
    id_mode: IdMode = "translate"
    subjects: tuple[str, ...] = (".*",)
    subjects_exclude: tuple[str, ...] = ()
    sync_interval_s: float = DEFAULT_SYNC_INTERVAL_S
    # A record naming an ID the source registry does not know: stop (fail) or copy it as it
    # is (copy: counted and logged).
    unknown_id: Literal["fail", "copy"] = "fail"

    def __post_init__(self) -> None:
        if self.id_mode not in ID_MODES:
            raise ConfigError(f"schema ID mode must be translate or preserve, not {self.id_mode!r}")
        if self.unknown_id not in UNKNOWN_ID_POLICIES:
            raise ConfigError(
                f"schema unknown-id policy must be fail or copy, not {self.unknown_id!r}"
            )
        if self.sync_interval_s <= 0:
            raise ConfigError(f"schema sync interval must be > 0, not {self.sync_interval_s}")
        for what, patterns in (
            ("subjects", self.subjects),
            ("subjects.exclude", self.subjects_exclude),
        ):
            for p in patterns:
                try:
                    re.compile(p)
                except re.error as exc:
                    raise ConfigError(f"schema {what} regex {p!r}: {exc}") from exc

    def subject_selected(self, subject: str) -> bool:
        return any(re.fullmatch(p, subject) for p in self.subjects) and not any(
            re.fullmatch(p, subject) for p in self.subjects_exclude
        )


ENV_DOCS: tuple[tuple[str, str, str], ...] = (
    # (variable, description, default) for config/env.py's table.
    *(
        (f"KMIRROR_SCHEMA_REGISTRY_{side.upper()}_{var}", f"Schema registry ({side}): {text}", "")
        for side in ("source", "target")
        for var, text in (
            ("URL", "URL of its Confluent-compatible API (Apicurio: .../apis/ccompat/v7); "
             "both set: schemas are mirrored"),
            ("BASIC_AUTH_USER", "HTTP basic user"),
            ("BASIC_AUTH_PASSWORD_FILE", "file holding the HTTP basic password"),
            ("BEARER_TOKEN_FILE", "file holding a bearer token"),
            ("SSL_CA_LOCATION", "PEM file of the CA that signed its certificate"),
        )
    ),
    ("KMIRROR_SCHEMA_ID_MODE", "translate (the target assigns IDs; records rewritten) or "
     "preserve (same IDs: the target registry must keep them, Confluent's IMPORT mode)",
     "translate"),
    ("KMIRROR_SCHEMA_SUBJECTS", "Subjects to mirror: regex or comma-separated list", ".*"),
    ("KMIRROR_SCHEMA_SUBJECTS_EXCLUDE", "Subjects never to mirror: regex or comma list", ""),
    ("KMIRROR_SCHEMA_SYNC_INTERVAL_S", "Seconds between polls of the source registry", "30"),
    ("KMIRROR_SCHEMA_UNKNOWN_ID", "A record whose schema ID the source registry does not "
     "know: fail (stop) or copy (unchanged, counted)", "fail"),
)  # fmt: skip
