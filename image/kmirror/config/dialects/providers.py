"""Kafka config-provider placeholders in mm2.properties: `${env:NAME}`, `${file:path:key}`
(FileConfigProvider) and `${directory:dir:file}` (DirectoryConfigProvider) are resolved as
Kafka would. A bare `${NAME}` is a shell template someone forgot to render; it is taken from
the environment with a note, because that is what the file's author meant. Any other provider
(vault, aws, ...) is an error asking to render the file first.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from kmirror.config.dialects.properties import load_properties
from kmirror.config.secret import read_secret_text
from kmirror.errors import ConfigError

_PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")


def resolve_placeholders(
    props: dict[str, str], path: str, env: Mapping[str, str], notes: list[str]
) -> dict[str, str]:
    """Values with every `${...}` replaced; `path` names the file in errors and notes.
    Errors and notes name keys and variables, never the values."""
    bare: set[str] = set()

    def one(match: re.Match[str], key: str) -> str:
        ref = match[1]
        provider, sep, rest = ref.partition(":")
        if not sep and re.fullmatch(r"[A-Za-z_]\w*", ref):
            provider, rest = "env", ref
            bare.add(ref)
        if provider == "env" and rest in env:
            return env[rest]
        if provider == "env":
            raise ConfigError(
                f"{path}: {key} refers to the environment variable {rest}, which is not set"
            )
        if provider in ("file", "directory"):
            file_path, _, item = rest.rpartition(":")
            if provider == "directory":
                return read_secret_text(os.path.join(file_path, item), f"{path}: {key}")
            found = load_properties(file_path)
            if item not in found:
                raise ConfigError(f"{path}: {key}: {file_path} has no key {item!r}")
            return found[item]
        raise ConfigError(
            f"{path}: {key} uses the config provider '{provider}', which kmirror does not "
            "support: render the file first (e.g. envsubst) or use ${env:NAME} / "
            "${file:path:key}"
        )

    out: dict[str, str] = {}
    for key, value in props.items():
        out[key] = _PLACEHOLDER.sub(lambda m: one(m, key), value)  # noqa: B023 (used at once)
    if bare:
        names = ", ".join("${" + n + "}" for n in sorted(bare))
        notes.append(
            f"{path}: {names} taken from the environment (Kafka itself would not "
            "expand them; ${env:NAME} is the portable spelling)"
        )
    return out
