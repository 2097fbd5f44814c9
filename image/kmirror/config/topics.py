"""Which source topics are mirrored and what their target topics are called: the topic
selection (include/exclude regexes, MM2's loop rule) and the rename policy."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from kmirror.config.topicmap import TopicMapping
from kmirror.errors import ConfigError, TopicError

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
    never loop and show which cluster they crossed from.

    `mapping` (kmirror.config.topicmap: an explicit map and regex rules) names topics for a
    migration, instead of the policy or under its prefix. Heartbeats topics never follow it:
    their names are how every mirror tells where they came from (the cycle rule)."""

    kind: Literal["identity", "prefix"] = "identity"
    source_alias: str = "source"
    separator: str = "."
    target_alias: str = "target"
    heartbeats: bool = False
    mapping: TopicMapping = field(default_factory=TopicMapping)

    def target_topic(self, source_topic: str) -> str:
        """The one function naming a source topic's target topic (MirrorConfig.target_topic):
        the mirror, checkpoints, failover and failback, status, topic-config sync, schema
        subjects and the validator all ask it."""
        return self.explain(source_topic)[0]

    def explain(self, source_topic: str) -> tuple[str, str]:
        """(target name, what named it: 'identity', 'prefix', 'map' or 'rule N')."""
        heartbeats = source_topic.endswith(HEARTBEATS_TOPIC)
        mapped = None if heartbeats else self.mapping.name(source_topic)
        prefix = f"{self.source_alias}{self.separator}"
        if mapped is not None:
            name, how = mapped
            if self.kind == "prefix" and self.mapping.prefixed:
                return prefix + name, f"{how} + prefix"
            return name, how
        if self.kind == "identity" and not (self.heartbeats and heartbeats):
            return source_topic, "identity"
        return prefix + source_topic, "prefix"

    def prefixed(self, prefix: str) -> str:
        """The policy's name for a topic name prefix (a PREFIXED ACL): `<alias>.` in front
        with the prefix policy, the same otherwise. Mapping rules name topics, not prefixes:
        whether a prefix still covers what it covered is the caller's question."""
        if self.kind == "prefix":
            return f"{self.source_alias}{self.separator}{prefix}"
        return prefix

    def source_topic(self, target_topic: str, sources: Iterable[str]) -> str | None:
        """The way back: the one of `sources` whose target topic is `target_topic` (None: none
        is). Regex rules have no inverse of their own; the candidates (the source cluster's
        topics, the progress book's) make the answer exact."""
        found = [s for s in sources if self.target_topic(s) == target_topic]
        return found[0] if len(found) == 1 else None

    @property
    def checkpoints_topic(self) -> str:
        """MM2's `<source alias>.checkpoints.internal` on the target."""
        return f"{self.source_alias}.checkpoints.internal"

    @property
    def remote_heartbeats_topic(self) -> str:
        """Where the source's heartbeats land on the target."""
        return f"{self.source_alias}{self.separator}{HEARTBEATS_TOPIC}"


# MM2's `groups.exclude` default: tools' throw-away groups and Kafka's own.


def check_names(
    selection: TopicSelection,
    rename: RenamePolicy,
    sources: Iterable[str],
    *,
    same_cluster: bool = False,
    reserved: Iterable[str] = (),
) -> dict[str, str]:
    """Source -> target name of each selected topic, refusing (TopicError, exit 2) a mapping
    that mixes or loops: two source topics onto one target topic; a name onto one of
    kmirror's own topics (`reserved`); a rule whose result a rule maps again (`orders` ->
    `x.orders` -> `x.x.orders`: the namespace it writes is one the mirror renames, so a
    reverse or second flow would chain it); and, when source and target are one cluster, a
    target topic that is itself mirrored (copied into itself, or again and again)."""
    names = {s: rename.target_topic(s) for s in selection.select(set(sources))}
    by_target: dict[str, str] = {}
    own = set(reserved)
    for source, target in sorted(names.items()):
        if target in by_target:
            raise TopicError(
                f"source topics {by_target[target]} and {source} both map to the target topic "
                f"{target}: their records and offsets would mix. Give one of them another "
                "name (topic map or rules), or exclude it"
            )
        by_target[target] = source
        if target in own:
            raise TopicError(
                f"source topic {source} maps to {target}, one of kmirror's own topics on the "
                "target: change the topic map or rules"
            )
        mapped = rename.mapping.name(source)
        if mapped is not None and mapped[0] != source and selection.matches(mapped[0]):
            again = rename.mapping.name(mapped[0])
            if again is not None and again[0] != mapped[0]:
                raise TopicError(
                    f"loop: {mapped[1]} maps {source} to {mapped[0]}, and {again[1]} maps "
                    f"{mapped[0]} on to {again[0]}: the rules write into the namespace they "
                    "rename, so a reverse flow or failback would rename the copies again. "
                    "Anchor the rule so its output no longer matches (e.g. exclude the "
                    "target names with a negative lookahead) or exclude them"
                )
        if same_cluster and selection.matches(target):
            raise TopicError(
                f"loop: source and target are the same cluster and {source} maps to {target}, "
                f"which the topic selection mirrors too ({target} -> "
                f"{rename.target_topic(target)}): exclude the target names from the selection"
            )
    return names
