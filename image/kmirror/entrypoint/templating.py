"""`${VAR}` / `${VAR:-default}` templates of Java `.properties` files, rendered from the
environment.

Placeholders are found by python-dotenv's own variable parser (`dotenv.variables`, the grammar
its `interpolate=True` uses), but resolved here, because dotenv's resolution would render an
unset variable as an empty string and reads `os.environ` only. `dotenv_values(stream=...)` is
no better fit: it parses the stream as .env syntax (quotes, `export`, ` #` comments), which
mangles .properties lines.

Order: the template is parsed as .properties first (its own escapes resolved), every key and
value is expanded, and the result is written back with .properties escaping. A value that holds
`$`, `#`, `=`, `\\` or a newline therefore arrives in the client config unchanged, and a
substituted value is never expanded a second time.

A variable resolves to, in order: its non-empty value; the content of the file named by
`NAME_FILE` (both set is an error); the template's `:-default`; its documented default in
env.py. Otherwise it is missing, and rendering fails naming every missing variable.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from dotenv.variables import Variable, parse_variables

from kmirror.config import env as envvars
from kmirror.config.dialects.properties import dump_properties, parse_properties
from kmirror.config.model import ConfValue
from kmirror.config.secret import Secret, is_secret_key, read_secret_text, unseal
from kmirror.errors import ConfigError

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BARE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
SYNTAX = "${NAME} or ${NAME:-default}"


@dataclass(frozen=True)
class Missing:
    name: str
    where: str


@dataclass
class Expander:
    """Expands placeholders against one environment, remembering what it could not resolve
    and which values are secrets (read from a *_FILE, or named like a credential)."""

    environ: Mapping[str, str]
    missing: list[Missing] = field(default_factory=list)
    secrets: set[str] = field(default_factory=set)

    def expand(self, text: str, where: str) -> tuple[str, bool]:
        """(expanded text, whether a secret went into it). Missing variables are recorded and
        expand to nothing; call `check()` before using any result."""
        out: list[str] = []
        tainted = False
        for atom in parse_variables(text):
            if isinstance(atom, Variable):
                value, secret = self.lookup(atom.name, atom.default, where)
                out.append(value)
                tainted |= secret
            else:
                literal = atom.resolve({})
                self._check_literal(literal, where)
                out.append(literal)
        return "".join(out), tainted

    def lookup(self, name: str, default: str | None, where: str) -> tuple[str, bool]:
        if not _NAME.fullmatch(name):
            raise ConfigError(f"{where}: invalid placeholder ${{{name}}}: write {SYNTAX}")
        value = self.environ.get(name, "")
        file_var = f"{name}_FILE"
        path = self.environ.get(file_var, "")
        if value and path:
            raise ConfigError(
                f"{name} and {file_var} are both set: give the value or the file holding it, "
                "not both"
            )
        if value:
            secret = is_secret_key(name)
        elif path:
            value, secret = read_secret_text(path, file_var), True
        elif default is not None:
            value, secret = default, False
        else:
            documented = envvars.BY_NAME.get(name)
            if documented is None or documented.default is None:
                self.missing.append(Missing(name, where))
                return "", False
            value, secret = documented.default, False
        if secret and value:
            self.secrets.add(value)
        return value, secret

    def check(self) -> None:
        """Raise one error naming every variable that was needed and not set."""
        if not self.missing:
            return
        names: dict[str, list[str]] = {}
        for m in self.missing:
            names.setdefault(m.name, [])
            if m.where not in names[m.name]:
                names[m.name].append(m.where)
        lines = []
        for name, wheres in names.items():
            var = envvars.BY_NAME.get(name)
            about = f": {var.description}" if var else ""
            lines.append(f"  {name} (used in {', '.join(wheres)}){about}")
        raise ConfigError(
            f"required environment variable{'s' if len(names) > 1 else ''} not set: "
            f"{', '.join(names)}\n" + "\n".join(lines)
        )

    def _check_literal(self, literal: str, where: str) -> None:
        # Text the parser left alone that still looks like a placeholder was meant as one.
        start = literal.find("${")
        if start >= 0:
            end = literal.find("}", start)
            shown = literal[start : end + 1] if end >= 0 else literal[start : start + 40]
            raise ConfigError(f"{where}: malformed placeholder {shown!r}: write {SYNTAX}")
        for name in _BARE.findall(literal):
            if name in envvars.BY_NAME or name in self.environ:
                raise ConfigError(
                    f"{where}: ${name} is not expanded (envsubst syntax): write ${{{name}}}"
                )


@dataclass(frozen=True)
class Rendered:
    """One rendered .properties file. Values that hold a credential are `Secret`s."""

    name: str
    props: Mapping[str, ConfValue]

    def text(self) -> str:
        """The file content, secrets revealed: only ever written to a 0600 file."""
        return f"# Rendered by kmirror from {self.name}. Do not edit.\n" + dump_properties(
            unseal(self.props)
        )

    def masked(self) -> str:
        """The same, safe to print: every credential is ***."""
        return dump_properties({k: str(v) for k, v in self.props.items()})

    def get(self, key: str) -> str | None:
        value = self.props.get(key)
        return None if value is None else str(value)


def expand_properties(text: str, where: str, expander: Expander) -> dict[str, ConfValue]:
    """Parse .properties text, expand every key and value. Secrets come back sealed."""
    out: dict[str, ConfValue] = {}
    for raw_key, raw_value in parse_properties(text, source=where).items():
        key, key_secret = expander.expand(raw_key, where)
        value, tainted = expander.expand(raw_value, f"{where}: {key}")
        secret = tainted or key_secret or is_secret_key(key)
        out[key] = Secret(value) if secret else value
    return out


def placeholders(text: str) -> Iterator[tuple[str, str | None]]:
    """(name, template default) of every placeholder in text, in order."""
    for atom in parse_variables(text):
        if isinstance(atom, Variable):
            yield atom.name, atom.default
