"""Which source topics are mirrored and what their target topics are called: the topic
selection (include/exclude regexes, MM2's loop rule) and the rename policy."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from kmirror.errors import ConfigError

# MM2's DefaultTopicFilter excludes these; internal topics never make sense on a target.
DEFAULT_TOPIC_EXCLUDES: tuple[str, ...] = (r".*[\-\.]internal", r".*\.replica", r"__.*")

HEARTBEATS_TOPIC = "heartbeats"


@dataclass(frozen=True)
class TopicSelection:
    """Which source topics to mirror: full-match include and exclude regex lists (Java syntax
    subset), like MM1's --whitelist/--blacklist and MM2's topics / topics.exclude."""

    include: tuple[str, ...] = (".*",)
    exclude: tuple[str, ...] = ()
    default_excludes: tuple[str, ...] = DEFAULT_TOPIC_EXCLUDES
    # Mirrored whatever `include` says (MM2 always mirrors heartbeats topics); excludes still win.
    always: tuple[str, ...] = ()
    # Prefix policy: a topic whose name says it came from this cluster (`B.orders`, `C.B.orders`
    # when mirroring into B) is never mirrored back into it (MM2's cycle rule).
    loop_alias: str | None = None
    loop_separator: str = "."
    # Identity policy: only heartbeats topics carry their origin in the name (MM2 likewise).
    loop_heartbeats_only: bool = False

    def __post_init__(self) -> None:
        if not self.include:
            raise ConfigError("the topic whitelist is empty: give --whitelist REGEX (e.g. '.*')")
        compiled_inc = tuple(compile_pattern(p, "whitelist/include") for p in self.include)
        compiled_exc = tuple(
            compile_pattern(p, "blacklist/exclude") for p in self.exclude + self.default_excludes
        )
        object.__setattr__(self, "_inc", compiled_inc + tuple(re.compile(p) for p in self.always))
        object.__setattr__(self, "_exc", compiled_exc)

    def matches(self, topic: str) -> bool:
        inc: tuple[re.Pattern[str], ...] = self._inc  # type: ignore[attr-defined]
        exc: tuple[re.Pattern[str], ...] = self._exc  # type: ignore[attr-defined]
        if self.is_loop(topic):
            return False
        return any(p.fullmatch(topic) for p in inc) and not any(p.fullmatch(topic) for p in exc)

    def is_loop(self, topic: str) -> bool:
        """True when the topic's name says it originated on the cluster we mirror into."""
        if self.loop_alias is None:
            return False
        parts = topic.split(self.loop_separator)
        if self.loop_heartbeats_only and parts[-1] != HEARTBEATS_TOPIC:
            return False
        return self.loop_alias in parts[:-1]

    def select(self, topics: list[str] | set[str]) -> list[str]:
        return sorted(t for t in topics if self.matches(t))


def split_patterns(value: str) -> tuple[str, ...]:
    """MM1 and MM2 accept comma-separated lists; MM1 also strips quotes and spaces."""
    parts = [p.strip().strip("'\"").strip() for p in value.split(",")]
    return tuple(p for p in parts if p)


def compile_pattern(pattern: str, what: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ConfigError(
            f"invalid {what} regex {pattern!r}: {exc}. Topic patterns are regular expressions "
            "matched against the whole topic name, e.g. 'orders|payments' or 'app\\..*'"
        ) from exc


@dataclass(frozen=True)
class RenamePolicy:
    """Target topic naming: MM1/KUDO keep names (identity); MM2's DefaultReplicationPolicy
    prefixes `<source alias><separator>`. With `heartbeats` (MM2's rules) heartbeats topics are
    prefixed under the identity policy too, as MM2's IdentityReplicationPolicy does, so they
    never loop and show which cluster they crossed from."""

    kind: Literal["identity", "prefix"] = "identity"
    source_alias: str = "source"
    separator: str = "."
    target_alias: str = "target"
    heartbeats: bool = False

    def target_topic(self, source_topic: str) -> str:
        if self.kind == "identity" and not (
            self.heartbeats and source_topic.endswith(HEARTBEATS_TOPIC)
        ):
            return source_topic
        return f"{self.source_alias}{self.separator}{source_topic}"

    @property
    def checkpoints_topic(self) -> str:
        """MM2's `<source alias>.checkpoints.internal` on the target."""
        return f"{self.source_alias}.checkpoints.internal"

    @property
    def remote_heartbeats_topic(self) -> str:
        """Where the source's heartbeats land on the target."""
        return f"{self.source_alias}{self.separator}{HEARTBEATS_TOPIC}"


# MM2's `groups.exclude` default: tools' throw-away groups and Kafka's own.
