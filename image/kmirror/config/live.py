"""What a running mirror may take from a reloaded configuration (SIGHUP, a changed mounted file:
kmirror.app.reload) and what only a restart can change.

Live: the topic selection (include/exclude patterns: the streams subscribe anew at their next
topic refresh, inside the same consumer group, from the committed offsets), the throttles, the
disaster-recovery settings (the DR thread restarts with them), the log level, and topic mapping
rules for topics not mirrored yet. Everything else (clusters and their client settings, the
group, the number of streams, the engine, the delivery guarantee, the rename policy, the
metrics port, ...) shapes clients, processes or the names of what is already on the target:
a configuration that changes any of it is refused as a whole, naming each such setting, and
the running configuration stays. Nothing of a refused reload is applied.

Settings are named by their field in the model (`source.bootstrap_servers`, `num_streams`,
`source.consumer.security.protocol`): names only, never values, which may be credentials.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kmirror.config.model import MirrorConfig

# Fields of MirrorConfig a running mirror applies (the module docstring says how).
LIVE = ("topics", "throttle", "dr", "log_level")
# Fields that never block a reload: the warnings collected while parsing.
IGNORED = ("notes",)
# Parts of a live field that still need a restart: the provenance header is decided when a
# stream builds its copier.
NOT_LIVE_PARTS = {"dr": ("provenance_header",)}


@dataclass(frozen=True)
class Reload:
    """The outcome of comparing the running configuration with a reloaded one."""

    changed: tuple[str, ...] = ()  # live settings that differ: applied
    refused: tuple[str, ...] = ()  # settings that differ and need a restart

    @property
    def applies(self) -> bool:
        return not self.refused

    def refusal(self, why: str = "") -> str:
        """One line for the log: what cannot change, and what to do about it; `why`: what
        asked for the reload."""
        names = ", ".join(self.refused)
        asked = f" ({why})" if why else ""
        return (
            f"reload refused{asked}: {names} cannot change while kmirror runs; restart kmirror to "
            "apply them (the running configuration stays, nothing of the new one was applied)"
        )


def compare(old: MirrorConfig, new: MirrorConfig, mirrored: Iterable[str] = ()) -> Reload:
    """Which settings differ between two configurations of one flow, live or not. `mirrored`:
    the source topics the running configuration mirrors (their target names must not change)."""
    changed: list[str] = []
    refused: list[str] = []
    for f in dataclasses.fields(MirrorConfig):
        before, after = getattr(old, f.name), getattr(new, f.name)
        if f.name in IGNORED or before == after:
            continue
        if f.name == "rename":
            names = differences(before, after, "rename")
            if all(n.partition(".")[2].startswith("mapping") for n in names):
                moved = _moved(old, new, mirrored)
                (refused if moved else changed).append("rename.mapping")
                refused += moved
            else:
                refused += names
        elif f.name in LIVE:
            fixed = [
                f"{f.name}.{part}"
                for part in NOT_LIVE_PARTS.get(f.name, ())
                if getattr(before, part) != getattr(after, part)
            ]
            refused += fixed
            if not fixed:
                changed.append(f.name)
        else:
            refused += differences(before, after, f.name)
    return Reload(tuple(changed), tuple(refused))


def compare_flows(
    old: Sequence[MirrorConfig],
    new: Sequence[MirrorConfig],
    mirrored: Mapping[str, Iterable[str]] | None = None,
) -> dict[str, Reload]:
    """compare() per flow, by flow name. A flow that appears or disappears is refused (its
    streams are processes started with the mirror): reported under that flow's name."""
    before = {c.flow: c for c in old}
    after = {c.flow: c for c in new}
    out: dict[str, Reload] = {}
    for name in [*before, *(n for n in after if n not in before)]:
        if name not in after:
            out[name] = Reload(refused=(f"flow {name} (no longer in the configuration)",))
        elif name not in before:
            out[name] = Reload(refused=(f"flow {name} (new in the configuration)",))
        else:
            out[name] = compare(before[name], after[name], (mirrored or {}).get(name, ()))
    return out


def differences(before: Any, after: Any, name: str) -> list[str]:
    """The names of the parts that differ: a dataclass's fields, down to a mapping's keys (a
    cluster's client settings by key), else the value's own name."""
    if before == after:
        return []
    if dataclasses.is_dataclass(before) and type(before) is type(after):
        return [
            part
            for f in dataclasses.fields(before)
            if f.compare
            for part in differences(
                getattr(before, f.name), getattr(after, f.name), f"{name}.{f.name}"
            )
        ] or [name]
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        keys = sorted(k for k in {*before, *after} if before.get(k) != after.get(k))
        return [f"{name}.{k}" for k in keys]
    return [name]


def _moved(old: MirrorConfig, new: MirrorConfig, mirrored: Iterable[str]) -> list[str]:
    """Mirrored topics whose target name the new mapping would change: their copy is already
    on the target under the old name."""
    return [
        f"the target of the mirrored topic {topic!r} ({old.target_topic(topic)!r} -> "
        f"{new.target_topic(topic)!r})"
        for topic in sorted(set(mirrored))
        if old.target_topic(topic) != new.target_topic(topic)
    ]
