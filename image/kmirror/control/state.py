"""What operators asked a running mirror to do, and the decisions that follow from it (pure).

`ControlState` is the desired state of one flow: the paused source topics, a drain, throttles
set at run time. It is kept on the target in the flow's control topic (kmirror.control.store),
one record per key, so every replica and a restarted pod fold the same records into the same
state:

    pause/<topic>  {"at": ..., "by": ...}                  a paused topic; a tombstone resumes it
    drain          {"id": ..., "at": ..., "ends": [[topic, partition, end], ...]}
                                                           a drain; a tombstone cancels it
    throttle       ThrottleSettings' JSON                  run-time throttles; a tombstone
                                                           returns to the configured ones

The decisions: `limit` (the source offset a partition may be copied up to, not including it:
0 for a paused topic, the captured end under a drain, None without a limit) and `DrainReport`
(which partitions a drain still waits for).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from kmirror.config.throttle import ThrottleSettings, throttle_from_json
from kmirror.partitions import SourcePartition

PAUSE = "pause/"
DRAIN = "drain"
THROTTLE = "throttle"


@dataclass(frozen=True)
class Drain:
    """Copy up to `ends` (the source's end offsets when the drain was asked for), commit, then
    copy nothing more. A partition that did not exist then (a new topic) is not copied.

    A drain is written twice: first `capturing` (no ends yet: every partition's limit is 0, so
    every stream of every replica stops where it is), then, once they have stopped, with the
    ends read from the source. So nothing was copied past the ends before the streams knew
    them: the copy stops exactly there."""

    id: str
    at: float
    ends: Mapping[SourcePartition, int]
    capturing: bool = False

    def limit(self, key: SourcePartition) -> int:
        return self.ends.get(key, 0)

    def to_json(self) -> dict[str, Any]:
        ends = [[t, p, e] for (t, p), e in sorted(self.ends.items())]
        return {"id": self.id, "at": self.at, "ends": ends, "capturing": self.capturing}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Drain:
        ends = {(str(t), int(p)): int(e) for t, p, e in doc["ends"]}
        return cls(str(doc["id"]), float(doc["at"]), ends, bool(doc.get("capturing", False)))


@dataclass(frozen=True)
class ControlState:
    paused: frozenset[str] = frozenset()
    drain: Drain | None = None
    # Throttles set at run time (PUT /throttle); None: the configuration's.
    throttle: ThrottleSettings | None = None
    # When each topic was paused, for /status (not part of the decisions).
    paused_at: Mapping[str, float] = field(default_factory=dict, compare=False)

    def limit(self, key: SourcePartition) -> int | None:
        """Source offsets from this one on are not copied (None: no limit)."""
        if key[0] in self.paused:
            return 0
        if self.drain is not None:
            return self.drain.limit(key)
        return None

    def limits(self, keys: Iterable[SourcePartition]) -> dict[SourcePartition, int]:
        """The limited partitions among `keys`."""
        out = {}
        for key in keys:
            limit = self.limit(key)
            if limit is not None:
                out[key] = limit
        return out

    def throttle_for(self, configured: ThrottleSettings) -> ThrottleSettings:
        return configured if self.throttle is None else self.throttle

    # -- the control topic's records ------------------------------------------------------------

    def apply(self, key: bytes, value: bytes | None) -> ControlState:
        """This state with one control-topic record folded in (unknown keys are ignored: a
        newer kmirror's records must not stop an older one)."""
        name = key.decode("utf-8", "replace")
        doc = json.loads(value) if value is not None else None
        if name.startswith(PAUSE):
            topic = name[len(PAUSE) :]
            at = dict(self.paused_at)
            if doc is None:
                at.pop(topic, None)
                return replace(self, paused=self.paused - {topic}, paused_at=at)
            at[topic] = float(doc.get("at", 0))
            return replace(self, paused=self.paused | {topic}, paused_at=at)
        if name == DRAIN:
            return replace(self, drain=None if doc is None else Drain.from_json(doc))
        if name == THROTTLE:
            return replace(self, throttle=None if doc is None else throttle_from_json(doc))
        return self


def fold(records: Iterable[tuple[bytes, bytes | None]], state: ControlState) -> ControlState:
    for key, value in records:
        state = state.apply(key, value)
    return state


def pause_record(topic: str, at: float, by: str) -> tuple[bytes, bytes | None]:
    return f"{PAUSE}{topic}".encode(), json.dumps({"at": at, "by": by}).encode()


def resume_record(topic: str) -> tuple[bytes, bytes | None]:
    return f"{PAUSE}{topic}".encode(), None


def drain_record(drain: Drain | None) -> tuple[bytes, bytes | None]:
    return DRAIN.encode(), None if drain is None else json.dumps(drain.to_json()).encode()


def throttle_record(settings: ThrottleSettings | None) -> tuple[bytes, bytes | None]:
    value = None if settings is None else json.dumps(settings.to_json()).encode()
    return THROTTLE.encode(), value


# -- drains ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class DrainReport:
    """Where a drain stands: per partition its end, the offset committed so far, and what is
    left; complete once every partition's commit reached its end."""

    id: str
    ends: Mapping[SourcePartition, int]
    committed: Mapping[SourcePartition, int]

    @property
    def remaining(self) -> dict[SourcePartition, int]:
        out = {}
        for key, end in self.ends.items():
            committed = self.committed.get(key, -1)
            if committed < end and end > 0:
                out[key] = end - max(committed, 0)
        return out

    capturing: bool = False

    @property
    def complete(self) -> bool:
        return not self.capturing and not self.remaining

    def to_json(self) -> dict[str, Any]:
        left = self.remaining
        return {
            "id": self.id,
            "capturing": self.capturing,
            "complete": self.complete,
            "records_left": sum(left.values()),
            "partitions": [
                {
                    "topic": t,
                    "partition": p,
                    "end": end,
                    "committed": self.committed.get((t, p)),
                    "done": (t, p) not in left,
                }
                for (t, p), end in sorted(self.ends.items())
            ],
        }


def drained(ends: Mapping[SourcePartition, int], done: Mapping[SourcePartition, int]) -> bool:
    """Every partition is done (acknowledged, or committed) up to its end."""
    return all(done.get(k, -1) >= end for k, end in ends.items())
