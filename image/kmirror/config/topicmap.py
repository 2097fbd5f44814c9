"""Topic mapping rules: the names a migration gives its topics on the target.

Two kinds, in every dialect (docs/migrations.md):

* an explicit map, `orders:shop.orders.v2, payments:shop.payments` (source name, colon,
  target name; MM2 has no key for it: KAFKA-13691 proposed one and was closed);
* ordered regex rules with back-references, `^team-a\\.(.*)$ -> a.$1; ^legacy-(.*)$ -> $1`:
  the first rule whose pattern matches the *whole* source name names the target topic.
  A back-reference is Java's `$1` / `${name}` (what `String.replaceAll` takes) or Python's
  `\\1` / `\\g<name>`.

The explicit map wins over the rules. A topic neither names keeps the rename policy's name
(identity or `<alias>.<topic>`); a mapped name replaces the policy's, unless `prefixed` says
that the prefix policy puts `<alias>.` in front of mapped names too. `TopicMapping.name` is
the only place a rule is applied; kmirror.config.topics.RenamePolicy.target_topic, the one
function every part of kmirror asks for a target name, calls it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kmirror.errors import ConfigError

# What Kafka accepts as a topic name.
TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")
# A back-reference in a replacement: $1, ${1}, ${name}, \1, \g<1>, \g<name>.
_REF = re.compile(r"\$(\d+)|\$\{(\w+)\}|\\(\d+)|\\g<(\w+)>")
_HOW_MAP = "write source:target pairs separated by commas, e.g. 'orders:shop.orders.v2'"
_HOW_RULES = (
    "write REGEX -> REPLACEMENT rules separated by ';', e.g. '^team-a\\.(.*)$ -> a.$1' "
    "(the regex matches the whole source topic name; $1 or \\1 is its first group)"
)


def valid_topic(name: str) -> bool:
    return TOPIC_NAME.fullmatch(name) is not None and name not in (".", "..")


@dataclass(frozen=True)
class TopicRule:
    """`pattern` (full match) -> `replacement` with back-references, as the user wrote them."""

    pattern: str
    replacement: str
    # The replacement in parts: literal text, or a group (number or name) of the pattern.
    _parts: tuple[str | int, ...] = field(default=(), init=False, repr=False, compare=False)
    _regex: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        try:
            regex = re.compile(self.pattern)
        except re.error as exc:
            raise ConfigError(
                f"topic rule {self}: invalid regex {self.pattern!r}: {exc}. {_HOW_RULES}"
            ) from exc
        parts: list[str | int] = []
        pos = 0
        for m in _REF.finditer(self.replacement):
            parts.append(self.replacement[pos : m.start()])
            ref = next(g for g in m.groups() if g is not None)
            if ref.isdigit():
                if int(ref) > regex.groups:
                    raise ConfigError(
                        f"topic rule {self}: the replacement refers to group {ref}, but the "
                        f"regex has {regex.groups} group(s): put the part to keep in "
                        "parentheses, e.g. '^team-a\\.(.*)$ -> a.$1'"
                    )
                parts.append(int(ref))
            else:
                if ref not in regex.groupindex:
                    raise ConfigError(
                        f"topic rule {self}: the replacement refers to group {ref!r}, which "
                        "the regex does not name: write (?P<name>...) in the regex"
                    )
                parts.append(regex.groupindex[ref])
            pos = m.end()
        parts.append(self.replacement[pos:])
        if not self.replacement.strip():
            raise ConfigError(f"topic rule {self}: the replacement is empty. {_HOW_RULES}")
        literal = "".join(p for p in parts if isinstance(p, str))
        bad = set(re.sub(r"[a-zA-Z0-9._-]", "", literal))
        if bad:
            raise ConfigError(
                f"topic rule {self}: the replacement contains {''.join(sorted(bad))!r}, which "
                "no topic name may hold (a-z A-Z 0-9 . _ - only, plus $1-style references)"
            )
        object.__setattr__(self, "_parts", tuple(p for p in parts if p != ""))
        object.__setattr__(self, "_regex", regex)

    def __str__(self) -> str:
        return f"'{self.pattern} -> {self.replacement}'"

    def apply(self, topic: str) -> str | None:
        """The target name, or None when the pattern does not match the whole name."""
        m = self._regex.fullmatch(topic)
        if m is None:
            return None
        return "".join(p if isinstance(p, str) else (m.group(p) or "") for p in self._parts)


@dataclass(frozen=True)
class TopicMapping:
    """The explicit map and the ordered rules; empty: every topic keeps the policy's name."""

    explicit: tuple[tuple[str, str], ...] = ()
    rules: tuple[TopicRule, ...] = ()
    # The prefix policy also prefixes mapped names (`A.shop.orders.v2`); default: they stand.
    prefixed: bool = False

    def __post_init__(self) -> None:
        seen: dict[str, str] = {}
        targets: dict[str, str] = {}
        for source, target in self.explicit:
            for name in (source, target):
                if not valid_topic(name):
                    raise ConfigError(
                        f"topic map entry '{source}:{target}': {name!r} is not a valid topic "
                        f"name (a-z A-Z 0-9 . _ -, up to 249 characters). {_HOW_MAP}"
                    )
            if source in seen and seen[source] != target:
                raise ConfigError(
                    f"topic map names {source} twice (-> {seen[source]} and -> {target}): "
                    "keep one entry per source topic"
                )
            if target in targets and targets[target] != source:
                raise ConfigError(
                    f"topic map sends both {targets[target]} and {source} to {target}: two "
                    "source topics cannot share one target topic (their offsets would mix); "
                    "give each its own target name"
                )
            seen[source] = target
            targets[target] = source
        object.__setattr__(self, "_map", dict(self.explicit))

    @property
    def empty(self) -> bool:
        return not self.explicit and not self.rules

    def name(self, topic: str) -> tuple[str, str] | None:
        """(mapped name, what mapped it: 'map' or 'rule N') or None when nothing names it."""
        explicit: dict[str, str] = self._map  # type: ignore[attr-defined]
        if topic in explicit:
            return explicit[topic], "map"
        for i, rule in enumerate(self.rules, 1):
            mapped = rule.apply(topic)
            if mapped is not None:
                if not valid_topic(mapped):
                    raise ConfigError(
                        f"topic rule {i} {rule} maps {topic} to {mapped!r}, which is not a "
                        "valid topic name (a-z A-Z 0-9 . _ -, 1 to 249 characters): change "
                        "the rule, or exclude the topic"
                    )
                return mapped, f"rule {i}"
        return None


def parse_map(text: str, where: str) -> tuple[tuple[str, str], ...]:
    """`a:b, c:d` (commas or newlines between entries)."""
    out = []
    for entry in _entries(text, ","):
        source, sep, target = entry.partition(":")
        if not sep or not source.strip() or not target.strip() or ":" in target:
            raise ConfigError(f"{where}: malformed topic map entry {entry!r}: {_HOW_MAP}")
        out.append((source.strip(), target.strip()))
    return tuple(out)


def parse_rules(text: str, where: str) -> tuple[TopicRule, ...]:
    """`REGEX -> REPLACEMENT` rules separated by ';' or newlines, in order. A replacement
    holds no '>' (no topic name does), so the last '->' of a rule separates its two sides."""
    out = []
    for entry in _entries(text, ";"):
        pattern, sep, replacement = entry.rpartition("->")
        if not sep or not pattern.strip() or not replacement.strip():
            raise ConfigError(f"{where}: malformed topic rule {entry!r}: {_HOW_RULES}")
        try:
            out.append(TopicRule(pattern.strip(), replacement.strip()))
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    return tuple(out)


def _entries(text: str, separator: str) -> list[str]:
    """The non-blank entries of a list written with `separator` or one entry per line."""
    return [e.strip() for e in re.split(f"[{separator}\n]", text) if e.strip()]
