"""Secrets are a type: they print as *** everywhere (logs, repr, errors, rendered output)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kmirror.errors import ConfigError

MASK = "***"

# librdkafka and Java client keys whose values are credentials. Matched on the key's last
# dotted component(s) so prefixed MM2 keys ("source.ssl.key.password") are covered too.
_SECRET_KEY = re.compile(
    r"(password|secret|sasl\.jaas\.config|ssl\.key\.pem|ssl_key|\.pem$|token|credentials?"
    r"|sasl\.oauthbearer\.client\.secret|api[._-]?key)",
    re.IGNORECASE,
)
# Public material that happens to match the pattern above.
_NOT_SECRET = re.compile(
    r"(ssl\.ca\.pem|ssl\.certificate\.pem|_FILE$|\.location$|endpoint[._]url$)", re.IGNORECASE
)


class Secret:
    """A string that refuses to show itself. `reveal()` is the only way to the value."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return f"Secret({MASK})"

    def __str__(self) -> str:
        return MASK

    def __format__(self, spec: str) -> str:
        return MASK

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("Secret", self._value))

    def __bool__(self) -> bool:
        return bool(self._value)


def is_secret_key(key: str) -> bool:
    """True when a configuration key (Java, librdkafka or env name) holds a credential."""
    return bool(_SECRET_KEY.search(key)) and not _NOT_SECRET.search(key)


def reveal(value: str | Secret) -> str:
    return value.reveal() if isinstance(value, Secret) else value


def mask_config(conf: Mapping[str, Any]) -> dict[str, str]:
    """A copy safe to print: secret values become ***, everything else is str()."""
    return {
        k: (MASK if isinstance(v, Secret) or is_secret_key(k) else str(v)) for k, v in conf.items()
    }


def seal(conf: Mapping[str, str]) -> dict[str, str | Secret]:
    """Wrap every credential-bearing value of a flat config in Secret."""
    return {
        k: (Secret(v) if is_secret_key(k) and not isinstance(v, Secret) else v)
        for k, v in conf.items()
    }


def unseal(conf: Mapping[str, str | Secret]) -> dict[str, str]:
    """The plain dict librdkafka needs. Call it only where the client is created."""
    return {k: reveal(v) for k, v in conf.items()}


def read_secret_text(path: str, named_by: str) -> str:
    """A mounted secret file's content without its trailing newline (what `echo` into a file
    or a Kubernetes Secret leaves). `named_by` says who pointed at the file, for the error."""
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read().rstrip("\r\n")
    except OSError as exc:
        raise ConfigError(
            f"{named_by} names {path!r}, which cannot be read ({exc.strerror or exc}): mount "
            "the secret there or fix the path"
        ) from exc
