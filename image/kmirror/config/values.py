"""Typed values from flags, properties and environment variables, with errors that name
where the value came from (a flag, a key, a variable) and what is accepted."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from kmirror.config import env as envvars
from kmirror.config.secret import is_secret_key
from kmirror.errors import ConfigError

_TRUE = ("true", "yes", "1")
_FALSE = ("false", "no", "0")
# `$NAME` / `${NAME}`: what envsubst-style templates look like before they are rendered.
_TEMPLATE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")


def parse_bool(value: str, name: str) -> bool:
    """true/false/yes/no/1/0 (any case). Anything else is an error: a typo in a safety switch
    such as abort.on.send.failure must not silently pick a side."""
    text = value.strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ConfigError(f"{name} must be true or false (also yes/no/1/0), not {value!r}")


def parse_int(value: str, name: str, minimum: int | None = None) -> int:
    try:
        number = int(value.strip())
    except ValueError:
        raise ConfigError(f"{name} must be a whole number, not {value!r}") from None
    if minimum is not None and number < minimum:
        raise ConfigError(f"{name} must be >= {minimum}, not {number}")
    return number


def parse_float(value: str, name: str) -> float:
    try:
        number = float(value.strip())
    except ValueError:
        raise ConfigError(f"{name} must be a number, not {value!r}") from None
    if not number > 0:
        raise ConfigError(f"{name} must be > 0, not {value!r}")
    return number


def unrendered(props: Mapping[str, str], where: str) -> None:
    """Refuse files that still contain `$VAR` placeholders (an envsubst step that did not
    run): a literal '$SOURCE_CLUSTER_BOOTSTRAP_SERVERS' would otherwise fail much later
    and far less clearly. Secret values are not inspected, so they cannot leak here."""
    found = [
        f"{key} ({', '.join('$' + m for m in _TEMPLATE.findall(value))})"
        for key, value in props.items()
        if not is_secret_key(key) and _TEMPLATE.search(value)
    ]
    if found:
        raise ConfigError(
            f"{where} contains unrendered environment placeholders: {'; '.join(found)}. Render "
            "the file first (e.g. `envsubst < in > out`, as the MirrorMaker entrypoint did) or "
            "let the kmirror image's entrypoint render its templates from the environment"
        )


def enforce_strict(
    notes: Sequence[str], environ: Mapping[str, str] | None, flag: bool = False, label: str = ""
) -> None:
    """--strict or KMIRROR_STRICT=true: every configuration warning stops the start (exit 2),
    all of them listed. `label` names what asked for it in the message."""
    strict = flag or parse_bool(envvars.get("KMIRROR_STRICT", environ), "KMIRROR_STRICT")
    if strict and notes:
        listed = "\n".join(f"  - {n}" for n in notes)
        raise ConfigError(
            f"{label or 'KMIRROR_STRICT'}: {len(notes)} configuration warning(s):\n{listed}"
        )
