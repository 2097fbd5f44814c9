"""The validation report: dataclasses, their JSON form (schema in docs/validation.md) and the
human summary printed on stderr."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from kmirror_validate.compare.kinds import DUPLICATE, EXTRA, FIELD_NAMES, KINDS

SCHEMA = "kmirror-validate/v1"
Mode = Literal["count", "digest", "sample"]
DuplicatePolicy = Literal["allow", "fail"]
# Problem counters of a partition; any non-zero one makes the report not ok (duplicates and
# the surplus they cause only under --duplicates fail).
PROBLEMS = (*(k.counter for k in KINDS), "count_missing", "count_extra")


@dataclass
class Example:
    """One problem record. Offsets are in the partition of the entry (or in the *_partition
    fields when the entry covers a whole topic, partition -1)."""

    source_offset: int | None = None
    target_offset: int | None = None
    source_partition: int | None = None
    target_partition: int | None = None
    fields: list[str] = field(default_factory=list)

    def to_json(self, whole_topic: bool) -> dict[str, Any]:
        doc: dict[str, Any] = {"source_offset": self.source_offset,
                               "target_offset": self.target_offset}  # fmt: skip
        if whole_topic:
            doc |= {"source_partition": self.source_partition,
                    "target_partition": self.target_partition}  # fmt: skip
        if self.fields:
            doc["fields"] = list(self.fields)
        return doc


@dataclass
class PartitionResult:
    partition: int  # -1: the whole topic (the mirror re-partitions, --partitioning hash)
    source_start: int | None = None
    source_end: int | None = None  # snapshot end (exclusive)
    source_read_end: int | None = None
    target_start: int | None = None
    target_end: int | None = None
    source_count: int = 0
    source_after_snapshot: int = 0
    target_count: int = 0
    matched: int | None = None  # None: not checked in this mode (count)
    missing: int = 0
    extra: int = 0
    duplicates: int | None = None
    differs: int | None = None
    field_differs: dict[str, int] | None = None
    order_violations: int | None = None
    pending: int = 0
    count_missing: int = 0
    count_extra: int = 0
    missing_partition: bool = False
    examples: dict[str, list[Example]] = field(default_factory=dict)
    # --duplicates allow (an at-least-once mirror): duplicates of otherwise complete, ordered
    # records are reported but do not fail the partition.
    duplicates_allowed: bool = False

    def failures(self) -> list[str]:
        """The counters that make this partition not ok."""
        out = [p for p in PROBLEMS if getattr(self, p)]
        if self.duplicates_allowed:
            allowed = {DUPLICATE.counter}
            if self.duplicates is None:
                # Count mode cannot tell a duplicate from an extra record: a surplus passes.
                allowed |= {"count_extra", EXTRA.counter}
            elif self.count_extra <= self.duplicates:
                allowed.add("count_extra")
            out = [p for p in out if p not in allowed]
        return out

    @property
    def ok(self) -> bool:
        return not self.missing_partition and not self.failures()

    def to_json(self) -> dict[str, Any]:
        skip = ("examples", "duplicates_allowed")
        doc = {k: v for k, v in asdict(self).items() if k not in skip}
        doc["ok"] = self.ok
        doc["examples"] = {
            kind: [e.to_json(self.partition < 0) for e in items]
            for kind, items in sorted(self.examples.items())
            if items
        }
        return doc


@dataclass
class TopicResult:
    topic: str
    target_topic: str
    partitions: list[PartitionResult]
    view: Literal["records", "latest"] = "records"
    compacted: bool = False
    missing_topic: bool = False
    target_partitions: int | None = None

    @property
    def ok(self) -> bool:
        return not self.missing_topic and all(p.ok for p in self.partitions)

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "target_topic": self.target_topic,
            "ok": self.ok,
            "missing_topic": self.missing_topic,
            "compacted": self.compacted,
            "view": self.view,
            "target_partitions": self.target_partitions,
            "partitions": [p.to_json() for p in self.partitions],
        }


@dataclass
class Report:
    mode: Mode
    topics: list[TopicResult]
    duplicates: DuplicatePolicy = "fail"
    range: dict[str, Any] = field(default_factory=dict)  # bounds, see kmirror_validate.ranges
    source: dict[str, Any] = field(default_factory=dict)
    target: dict[str, Any] = field(default_factory=dict)
    isolation_level: str = "read_committed"
    sample_fraction: float | None = None
    started_at: str = ""
    duration_s: float = 0.0
    wait: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    # With schema registries: IDs used on the target that do not resolve there, or resolve to
    # another schema than at the source (kmirror_validate/schemaids.py).
    schemas: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        bad_ids = self.schemas.get("unresolved_ids") or self.schemas.get("different_schema_ids")
        return all(t.ok for t in self.topics) and not bad_ids

    def totals(self) -> dict[str, Any]:
        parts = [p for t in self.topics for p in t.partitions]
        checked = {
            k
            for p in parts
            for k in ("matched", "duplicates", "differs", "order_violations")
            if getattr(p, k) is not None
        }
        out: dict[str, Any] = {
            "topics": len(self.topics),
            "partitions": len(parts),
            "missing_topics": sum(t.missing_topic for t in self.topics),
            "missing_partitions": sum(p.missing_partition for p in parts),
            "partitions_not_ok": sum(not p.ok for p in parts),
        }
        for name in ("source_count", "source_after_snapshot", "target_count", "matched",
                     "missing", "extra", "duplicates", "differs", "order_violations",
                     "pending", "count_missing", "count_extra"):  # fmt: skip
            if name in ("matched", "duplicates", "differs", "order_violations") and (
                name not in checked
            ):
                out[name] = None
                continue
            out[name] = sum(getattr(p, name) or 0 for p in parts)
        if "differs" in checked:
            out["field_differs"] = {
                f: sum((p.field_differs or {}).get(f, 0) for p in parts) for f in FIELD_NAMES
            }
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "ok": self.ok,
            "mode": self.mode,
            "duplicates": self.duplicates,
            "range": self.range,
            "sample_fraction": self.sample_fraction,
            "isolation_level": self.isolation_level,
            "started_at": self.started_at,
            "duration_s": round(self.duration_s, 3),
            "source": self.source,
            "target": self.target,
            "wait": self.wait,
            "totals": self.totals(),
            "warnings": list(self.warnings),
            "schemas": self.schemas,
            "topics": [t.to_json() for t in self.topics],
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2, sort_keys=False) + "\n"

    def summary(self, max_lines: int = 50) -> str:
        """A few lines for people: the verdict, totals, then one line per problem partition."""
        t = self.totals()
        verdict = "OK" if self.ok else "MISMATCH"
        mode = self.mode + (f" {self.sample_fraction:g}" if self.mode == "sample" else "")
        lines = [
            f"kmirror-validate: {verdict} ({mode} mode, {t['topics']} topics, "
            f"{t['partitions']} partitions, {t['source_count']} source records, "
            f"{t['target_count']} target records, {self.duration_s:.1f}s)"
        ]
        problems = [(k.counter, t[k.counter]) for k in KINDS if t.get(k.counter)]
        if problems or t["missing_topics"]:
            lines.append(
                "  totals: "
                + ", ".join(f"{v} {_label(k, self.duplicates)}" for k, v in problems)
                + (f", {t['missing_topics']} missing topics" if t["missing_topics"] else "")
            )
        if self.wait.get("timed_out"):
            lines.append(f"  warning: the target had not caught up after {self.wait['waited_s']}s "
                         f"({', '.join(self.wait.get('lagging', [])[:5])})")  # fmt: skip
        for w in self.warnings:
            lines.append(f"  warning: {w}")
        for name, what in (("unresolved_ids", "do not resolve on the target registry"),
                           ("different_schema_ids", "resolve to another schema than at the "
                            "source")):  # fmt: skip
            if self.schemas.get(name):
                lines.append(f"  schema IDs {self.schemas[name]} used on the target {what}")
        detail: list[str] = []
        for topic in self.topics:
            if topic.missing_topic:
                n = sum(p.source_count for p in topic.partitions)
                detail.append(f"  {topic.topic}: target topic '{topic.target_topic}' does not "
                              f"exist ({n} source records missing)")  # fmt: skip
                continue
            for p in topic.partitions:
                if not p.ok or p.duplicates:  # allowed duplicates are reported too
                    detail.append(f"  {topic.topic}/{p.partition}: {_partition_line(p)}")
        lines += detail[:max_lines]
        if len(detail) > max_lines:
            lines.append(f"  ... and {len(detail) - max_lines} more (see the JSON report)")
        return "\n".join(lines)


def _offsets(examples: list[Example], key: str) -> str:
    shown = [str(getattr(e, key)) for e in examples if getattr(e, key) is not None]
    return ", ".join(shown)


def _label(counter: str, duplicates: DuplicatePolicy) -> str:
    label = counter.replace("_", " ")
    return label + " (allowed)" if counter == DUPLICATE.counter and duplicates == "allow" else label


def _partition_line(p: PartitionResult) -> str:
    if p.missing_partition:
        return f"partition missing on the target ({p.source_count} source records)"
    parts: list[str] = []
    for kind in KINDS:
        n = getattr(p, kind.counter)
        if n:
            ex = _offsets(p.examples.get(kind.name, []), f"{kind.where}_offset")
            label = _label(kind.counter, "allow" if p.duplicates_allowed else "fail")
            parts.append(f"{n} {label}" + (f" ({kind.where} offsets {ex})" if ex else ""))
    if p.count_missing or p.count_extra:
        parts.append(f"counts: source {p.source_count} (+{p.source_after_snapshot} after the "
                     f"snapshot), target {p.target_count}")  # fmt: skip
    return "; ".join(parts)


def error_document(kind: str, message: str) -> str:
    """What --json / --json-out hold when validation could not run (exit code 2)."""
    return json.dumps({"schema": SCHEMA, "ok": False, "error": {"type": kind,
                                                                "message": message}},
                      indent=2) + "\n"  # fmt: skip
