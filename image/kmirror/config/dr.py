"""Disaster-recovery settings: MM2's checkpoints, heartbeats and group offset sync."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kmirror.config.topics import compile_pattern
from kmirror.errors import ConfigError

DEFAULT_GROUP_EXCLUDES: tuple[str, ...] = ("console-consumer-.*", "connect-.*", "__.*")


@dataclass(frozen=True)
class DrConfig:
    """Disaster recovery: MM2's checkpoints, heartbeats and group offset sync (docs/
    disaster-recovery.md). MM2's defaults in the mm2 dialect; off in MM1/KUDO unless asked
    for, so their default stays a plain byte-exact mirror."""

    emit_checkpoints: bool = False
    checkpoints_interval_s: float = 60.0
    emit_heartbeats: bool = False
    heartbeats_interval_s: float = 1.0
    sync_group_offsets: bool = False
    sync_group_offsets_interval_s: float = 60.0
    groups: tuple[str, ...] = (".*",)
    groups_exclude: tuple[str, ...] = DEFAULT_GROUP_EXCLUDES
    # Opt-in header naming the cluster a record was first written to (identity policy loops).
    provenance_header: bool = False

    def __post_init__(self) -> None:
        for value, name in (
            (self.checkpoints_interval_s, "emit.checkpoints.interval.seconds"),
            (self.heartbeats_interval_s, "emit.heartbeats.interval.seconds"),
            (self.sync_group_offsets_interval_s, "sync.group.offsets.interval.seconds"),
        ):
            if value <= 0:
                raise ConfigError(f"{name} must be > 0, not {value}")
        inc = tuple(compile_pattern(p, "groups") for p in self.groups)
        exc = tuple(compile_pattern(p, "groups.exclude") for p in self.groups_exclude)
        object.__setattr__(self, "_inc", inc)
        object.__setattr__(self, "_exc", exc)

    @property
    def enabled(self) -> bool:
        return self.emit_checkpoints or self.emit_heartbeats or self.sync_group_offsets

    def group_matches(self, group: str) -> bool:
        inc: tuple[re.Pattern[str], ...] = self._inc  # type: ignore[attr-defined]
        exc: tuple[re.Pattern[str], ...] = self._exc  # type: ignore[attr-defined]
        return any(p.fullmatch(group) for p in inc) and not any(p.fullmatch(group) for p in exc)


# Defaults every dialect, flag help text and the environment table use (MirrorMaker 1's own).
