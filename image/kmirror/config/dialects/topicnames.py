"""Topic mapping rules (kmirror.config.topicmap) from each dialect.

MirrorMaker 2 has no key for renaming topics (its users write a Java ReplicationPolicy); the
mm2.properties keys are kmirror's own, under `kmirror.` and flow-specific like every flow
setting (`A->B.kmirror.topic.map` wins over `kmirror.topic.map`). MM1 and KUDO take flags, the
container KMIRROR_* variables, the chart `rename.map` / `rename.rules` / `rename.mappingPrefix`.
Flags win over variables, which win over the file.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kmirror.config.topicmap import TopicMapping, parse_map, parse_rules
from kmirror.config.values import parse_bool

# (mm2.properties key, TopicMapping field, flag, environment variable, help)
_KEYS: tuple[tuple[str, str, str, str, str], ...] = (
    ("kmirror.topic.map", "explicit", "--topic-map", "KMIRROR_TOPIC_MAP",
     "target names of single topics: SOURCE:TARGET,... (e.g. orders:shop.orders.v2)"),
    ("kmirror.topic.rules", "rules", "--topic-rules", "KMIRROR_TOPIC_RULES",
     "ordered regex rules REGEX -> REPLACEMENT;... matched against the whole source name, "
     "back-references $1 or \\1 (e.g. '^team-a\\.(.*)$ -> a.$1'); the map wins"),
    ("kmirror.topic.mapping.prefix", "prefixed", "--topic-mapping-prefix",
     "KMIRROR_TOPIC_MAPPING_PREFIX",
     "true: the prefix rename policy also prefixes mapped names; false (default): a mapped "
     "name is the target name"),
)  # fmt: skip
MM2_KEYS: frozenset[str] = frozenset(k for k, *_ in _KEYS)
# For the options (kmirror.config.dialects.options): option field -> (flag, help).
FLAG_HELP: Mapping[str, tuple[str, str]] = {
    flag[2:].replace("-", "_"): (flag, text) for _, _, flag, _, text in _KEYS
}


def _convert(field: str, text: str, where: str) -> Any:
    if field == "explicit":
        return parse_map(text, where)
    if field == "rules":
        return parse_rules(text, where)
    return parse_bool(text, where)


def mapping_from_mm2(setting: Callable[[str], str | None], path: str) -> TopicMapping:
    values = {}
    for key, field, *_ in _KEYS:
        raw = setting(key)
        if raw is not None and raw.strip():
            values[field] = _convert(field, raw, f"{path}: {key}")
    return TopicMapping(**values)


def mapping_from_flags(
    given: Mapping[str, Any], environ: Mapping[str, str], base: TopicMapping
) -> TopicMapping:
    """Flags (Options.given(), by option field) win over KMIRROR_* variables, which win over
    the dialect's mapping (`base`)."""
    values: dict[str, Any] = {}
    for _, field, flag, var, _ in _KEYS:
        option = flag[2:].replace("-", "_")
        value = given.get(option)
        if isinstance(value, str):
            values[field] = _convert(field, value, flag)
        elif isinstance(value, bool):
            values[field] = value
        elif environ.get(var, "").strip():
            values[field] = _convert(field, environ[var], var)
    if not values:
        return base
    current = {"explicit": base.explicit, "rules": base.rules, "prefixed": base.prefixed}
    return TopicMapping(**{**current, **values})
