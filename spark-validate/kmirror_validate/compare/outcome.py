"""What a comparison found, as plain Python values (no Spark here)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

TPKey = tuple[str, int]


@dataclass
class Outcome:
    """What `evaluate` found. Keys are (topic, partition); partition -1 = a whole topic."""

    counts: dict[TPKey, dict[str, int]] = field(default_factory=dict)
    # (topic, partition, kind) -> (count, examples as dicts); kinds as in kinds.BY_NAME
    # plus field:<name>
    problems: dict[tuple[str, int, str], tuple[int, list[dict[str, Any]]]] = field(
        default_factory=dict
    )
    violations: dict[TPKey, tuple[int, list[int]]] = field(default_factory=dict)

    def merge(self, other: Outcome) -> Outcome:
        """Both outcomes' findings (they cover different partitions)."""
        self.counts.update(other.counts)
        self.problems.update(other.problems)
        self.violations.update(other.violations)
        return self


@dataclass(frozen=True)
class Difference:
    topic: str
    partition: int
    kind: str  # a kinds.KINDS name: missing, extra, duplicate, differs, order
    count: int
    examples: tuple[dict[str, Any], ...]

    def __str__(self) -> str:
        shown = ", ".join(
            f"source offset {e.get('source_offset')}"
            + (f" -> target offset {e['target_offset']}" if e.get("target_offset") is not None
               else "")
            + (f" ({'/'.join(e['fields'])} differ)" if e.get("fields") else "")
            for e in self.examples
        )  # fmt: skip
        return f"{self.topic}/{self.partition}: {self.count} {self.kind} [{shown}]"


class MirrorMismatchError(AssertionError):
    """The target is not an exact copy; the message lists what differs."""

    def __init__(self, differences: Sequence[Difference]) -> None:
        self.differences = tuple(differences)
        lines = "\n".join(f"  {d}" for d in self.differences)
        super().__init__(f"target is not an exact copy of the source:\n{lines}")
