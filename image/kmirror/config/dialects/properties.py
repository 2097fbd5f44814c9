"""Java `.properties` files, read the way `java.util.Properties.load` reads them.

MirrorMaker users hand us the exact files their Java tools load, so the syntax must match
Java's, not a look-alike: `#`/`!` comments, `=`/`:`/whitespace separators, continuation lines
(odd trailing backslashes), `\\t \\n \\r \\f \\uXXXX` escapes, escaped separators in keys and
"the last occurrence wins".
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from kmirror.errors import ConfigError

# Java's LineReader splits on \n, \r and \r\n only; str.splitlines() would also split on \f,
# which is *whitespace* in a properties file.
_NEWLINE = re.compile(r"\r\n|\r|\n")
_WHITESPACE = " \t\f"
_SIMPLE_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def parse_properties(text: str, source: str = "<string>") -> dict[str, str]:
    """Parse properties text. `source` names the input in error messages."""
    props: dict[str, str] = {}
    lines = _NEWLINE.split(text)
    if lines and lines[0].startswith("\ufeff"):  # a UTF-8 BOM is not part of the first key
        lines[0] = lines[0][1:]
    i = 0
    while i < len(lines):
        start = i + 1
        segment = lines[i].lstrip(_WHITESPACE)
        i += 1
        # Comment detection applies to the first natural line of a logical line only.
        if not segment or segment[0] in "#!":
            continue
        logical = ""
        while True:
            if _trailing_backslashes(segment) % 2 == 0:
                logical += segment
                break
            logical += segment[:-1]
            if i >= len(lines):  # a continuation at end of input is dropped, as in Java
                break
            segment = lines[i].lstrip(_WHITESPACE)
            i += 1
        key, value = _split(logical)
        props[_unescape(key, source, start)] = _unescape(value, source, start)
    return props


@dataclass(frozen=True)
class PropertiesFile:
    """A .properties file's settings already in memory, named by the path messages show: how
    the container entrypoint hands its rendered files to the loader instead of having them read
    back. Every placeholder in them is resolved, so a '$' is part of a value."""

    path: str
    props: Mapping[str, str]

    def __str__(self) -> str:
        return self.path


def load_properties(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read a properties file. Java reads them as ISO-8859-1; people write UTF-8, so UTF-8 is
    tried first and Latin-1 (which decodes any byte) is the fallback."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise ConfigError(
            f"cannot read properties file {name!r}: {exc.strerror or exc}. "
            "Check the path and that the file is mounted and readable"
        ) from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    return parse_properties(text, source=name)


def dump_properties(props: Mapping[str, str]) -> str:
    """Render properties that `parse_properties` (and Java) read back unchanged."""
    out = []
    for key, value in props.items():
        out.append(f"{_escape(key, is_key=True)}={_escape(value, is_key=False)}\n")
    return "".join(out)


def _trailing_backslashes(segment: str) -> int:
    return len(segment) - len(segment.rstrip("\\"))


def _split(logical: str) -> tuple[str, str]:
    """Key ends at the first unescaped '=', ':' or whitespace; then whitespace and at most one
    separator character are skipped."""
    escaped = False
    key_end = len(logical)
    for pos, char in enumerate(logical):
        if not escaped and char in "=:" + _WHITESPACE:
            key_end = pos
            break
        escaped = char == "\\" and not escaped
    rest = logical[key_end:]
    pos = 0
    has_separator = False
    while pos < len(rest):
        char = rest[pos]
        if char in _WHITESPACE:
            pos += 1
        elif char in "=:" and not has_separator:
            has_separator = True
            pos += 1
        else:
            break
    return logical[:key_end], rest[pos:]


def _unescape(text: str, source: str, line: int) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    pos = 0
    while pos < len(text):
        char = text[pos]
        pos += 1
        if char != "\\" or pos >= len(text):
            out.append(char)
            continue
        char = text[pos]
        pos += 1
        if char == "u":
            digits = text[pos : pos + 4]
            if len(digits) != 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise ConfigError(
                    f"{source}, line {line}: malformed \\uXXXX escape '\\u{digits}': "
                    "\\u must be followed by exactly four hex digits (write \\\\u for a "
                    "literal backslash-u)"
                )
            out.append(chr(int(digits, 16)))
            pos += 4
        else:
            # Any other escaped character stands for itself (\= \: \# \! \\ \ ...).
            out.append(_SIMPLE_ESCAPES.get(char, char))
    result = "".join(out)
    # \uD83D\uDE00 style surrogate pairs (what Java writes for non-BMP characters) must be
    # joined into one code point, or the string cannot even be encoded as UTF-8.
    if any("\ud800" <= c <= "\udfff" for c in result):
        result = result.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return result


def _escape(text: str, *, is_key: bool) -> str:
    out: list[str] = []
    for pos, char in enumerate(text):
        if char == "\\":
            out.append("\\\\")
        elif char in "\t\n\r\f":
            out.append("\\" + "tnrf"["\t\n\r\f".index(char)])
        elif char in "=:#!":
            out.append("\\" + char)
        elif char == " " and (is_key or pos == 0):
            # A space ends a key; a leading space of a value would be skipped.
            out.append("\\ ")
        elif ord(char) < 0x20 or ord(char) > 0x7E:
            out.append("".join(f"\\u{unit:04X}" for unit in _utf16_units(char)))
        else:
            out.append(char)
    return "".join(out)


def _utf16_units(char: str) -> list[int]:
    data = char.encode("utf-16-be", "surrogatepass")
    return [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]
