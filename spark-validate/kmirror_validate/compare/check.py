"""Run the comparison with as few Spark actions as it can, and the chispa-style check and
assert forms for two Kafka-shaped DataFrames."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping

from pyspark import StorageLevel
from pyspark.sql import DataFrame

from kmirror_validate.compare.classify import order_violations, problems, summarize
from kmirror_validate.compare.digest import normalize, side_rows
from kmirror_validate.compare.kinds import KINDS, ORDER
from kmirror_validate.compare.match import (
    SUMMARY_KINDS,
    matched_pairs,
    partition_counts,
    slot_summary,
    slots,
)
from kmirror_validate.compare.outcome import Difference, MirrorMismatchError, Outcome

log = logging.getLogger(__name__)


def evaluate(
    rows: DataFrame,
    max_examples: int = 10,
    check_order: bool = True,
    counts_from_rows: bool = False,
) -> Outcome:
    """Run the comparison on side_rows output: one Spark action when the copy is exact, one
    more for problems, one more for disorder. counts_from_rows: count every row, also those
    without a digest (sample mode, compacted markers); that caches `rows` and costs an action;
    otherwise the counts come from the slots."""
    out = Outcome()
    started = time.monotonic()
    if counts_from_rows:
        rows = rows.persist(StorageLevel.MEMORY_AND_DISK)
        for r in partition_counts(rows).collect():
            out.counts[(r["topic"], r["partition"])] = {
                k: int(r[k]) for k in ("source_count", "source_after_snapshot", "target_count")
            }
    slot_rows = slots(rows).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        log.info("counted rows in %.1fs", time.monotonic() - started)
        summary: dict[tuple[str, int], dict[str, int]] = {}
        for r in slot_summary(slot_rows, check_order).collect():
            summary.setdefault((r["topic"], r["partition"]), {})[r["kind"]] = int(r["count"])
        log.info("matched records in %.1fs", time.monotonic() - started)
        if counts_from_rows:
            rows.unpersist()
        for tp, s in summary.items():
            entry = out.counts.setdefault(tp, {})
            for k in SUMMARY_KINDS[:3]:
                entry.setdefault(k, s.get(k, 0))
            entry["matched"] = s.get("matched", 0)
        to_pair = [tp for tp, s in summary.items()
                   if s.get("unmatched_source") and s.get("unmatched_target")]  # fmt: skip
        if any(s.get(k) for s in summary.values()
               for k in ("unmatched_source", "unmatched_target", "duplicates")):  # fmt: skip
            for r in summarize(problems(slot_rows, to_pair), max_examples).collect():
                examples = [{k: v for k, v in e.asDict().items()} for e in r["examples"]]
                out.problems[(r["topic"], r["partition"], r["kind"])] = (int(r["count"]),
                                                                         examples)  # fmt: skip
            log.info("classified problems in %.1fs", time.monotonic() - started)
        disordered = [tp for tp, s in summary.items() if s.get("descents")]
        pairs = matched_pairs(slot_rows)
        for t, p, n, ex in order_violations(pairs, disordered, max_examples):
            out.violations[(t, p)] = (n, ex)
        log.info("compared in %.1fs", time.monotonic() - started)
    finally:
        slot_rows.unpersist()
        if counts_from_rows:
            rows.unpersist()
    return out


def differences(
    source_kafka: DataFrame,
    target_kafka: DataFrame,
    topic_names: Mapping[str, str] | None = None,
    max_examples: int = 10,
) -> list[Difference]:
    """Compare two Kafka-shaped DataFrames (complete ranges, no snapshot subtleties) and
    list every difference; [] when the target is an exact, ordered copy."""
    rows = side_rows(normalize(source_kafka), normalize(target_kafka, topic_names))
    outcome = evaluate(rows, max_examples)
    found = [
        Difference(t, p, kind, n, tuple(ex))
        for (t, p, kind), (n, ex) in outcome.problems.items()
        if kind in {k.name for k in KINDS}
    ]
    found += [
        Difference(t, p, ORDER.name, n, tuple({"source_offset": o} for o in ex))
        for (t, p), (n, ex) in outcome.violations.items()
    ]
    return sorted(found, key=lambda d: (d.topic, d.partition, d.kind))


def is_mirrored(
    source_kafka: DataFrame, target_kafka: DataFrame, topic_names: Mapping[str, str] | None = None
) -> bool:
    """The boolean check: True when the target is an exact, ordered copy."""
    return not differences(source_kafka, target_kafka, topic_names)


def assert_mirrored(
    source_kafka: DataFrame, target_kafka: DataFrame, topic_names: Mapping[str, str] | None = None
) -> None:
    """The assert form: raises MirrorMismatchError listing every difference."""
    found = differences(source_kafka, target_kafka, topic_names)
    if found:
        raise MirrorMismatchError(found)
