"""Normalise, then compare. Every function takes and returns DataFrames (or plain values) and
never builds a SparkSession; docs/validation.md describes the algorithm step by step.

Modules, in pipeline order (the CLI wires them; tests call the pieces):

    kinds       the vocabulary: problem kinds, compared fields, pairing passes (no Spark)
    digest      Kafka rows -> one narrow row per record: offsets, field hashes, digest;
                snapshot marks, compacted views, sampling
    fast        the exact-copy fast path: one positional fingerprint per partition and side
    match       digest multiset matching (slots) and the per-partition summary
    classify    unmatched slots -> missing / extra / duplicate / differs, counts, examples;
                the order check
    pairing     classify one partition's unmatched records (pure Python, no Spark)
    order       the fewest records that break the order (pure Python, no Spark)
    outcome     Outcome, Difference, MirrorMismatchError (no Spark)
    check       run the steps with as few Spark actions as it can; the chispa-style
                differences / is_mirrored / assert_mirrored

The Spark-free modules import without pyspark; the names below are loaded on first use, so
`from kmirror_validate.compare import pairing` never needs Spark.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kmirror_validate.compare.check import (
        assert_mirrored,
        differences,
        evaluate,
        is_mirrored,
    )
    from kmirror_validate.compare.classify import order_violations, problems, summarize
    from kmirror_validate.compare.digest import (
        digest_columns,
        latest_state,
        mark_after_snapshot,
        normalize,
        sample,
        side_rows,
    )
    from kmirror_validate.compare.kinds import HEADERS_TYPE, KINDS, SALT
    from kmirror_validate.compare.match import (
        matched_pairs,
        order_descents,
        partition_counts,
        slot_summary,
        slots,
    )
    from kmirror_validate.compare.order import order_violators
    from kmirror_validate.compare.outcome import Difference, MirrorMismatchError, Outcome
    from kmirror_validate.compare.pairing import pair_records

_WHERE = {
    "kinds": ("HEADERS_TYPE", "KINDS", "SALT"),
    "digest": ("digest_columns", "latest_state", "mark_after_snapshot", "normalize",
                  "sample", "side_rows"),
    "match": ("matched_pairs", "order_descents", "partition_counts", "slot_summary", "slots"),
    "classify": ("order_violations", "problems", "summarize"),
    "pairing": ("pair_records",),
    "order": ("order_violators",),
    "outcome": ("Difference", "MirrorMismatchError", "Outcome"),
    "check": ("assert_mirrored", "differences", "evaluate", "is_mirrored"),
}  # fmt: skip
_MODULE_OF = {name: module for module, names in _WHERE.items() for name in names}
__all__ = [
    "HEADERS_TYPE",
    "KINDS",
    "SALT",
    "Difference",
    "MirrorMismatchError",
    "Outcome",
    "assert_mirrored",
    "differences",
    "digest_columns",
    "evaluate",
    "is_mirrored",
    "latest_state",
    "mark_after_snapshot",
    "matched_pairs",
    "normalize",
    "order_descents",
    "order_violations",
    "order_violators",
    "pair_records",
    "partition_counts",
    "problems",
    "sample",
    "side_rows",
    "slot_summary",
    "slots",
    "summarize",
]


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
