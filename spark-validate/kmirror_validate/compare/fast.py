"""The exact-copy fast path: prove most partitions identical without a shuffle.

For each Kafka partition the mirror is expected to have copied the source records at
positions 0..n-1 of the source range to positions 0..n-1 of the target range, where n is the
size of the target range. Each side is reduced, in one pass over its records and a partial
aggregate, to a fingerprint: the record count, and the XOR of two independent 64-bit hashes
of (position, whole record) over the n positions. Positions are offsets relative to the
range start, so equal fingerprints (with both counts equal to n) mean: the same record at
every position, i.e. an exact copy in the same order — unless two different position sets
hash alike, which for 2 x 64 independent bits is as unlikely as a digest collision.

A partition passes only when, additionally, neither side has offset gaps in those n
positions and every source record of the snapshot lies within them (the rest are newer than
the snapshot: not copied yet, `pending`). Everything else — gaps (transactions, compaction),
duplicates, damage, disorder, a lagging target — goes through the full comparison
(match/classify), which names the problems; the fast path only decides that there are none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: N812 (the PySpark idiom)

from kmirror_validate.compare.digest import per_partition, record_hash, target_names
from kmirror_validate.compare.kinds import PENDING, SALT, TP
from kmirror_validate.compare.outcome import Outcome, TPKey


@dataclass(frozen=True)
class Window:
    """One partition's ranges (end exclusive): the source as read (from `source_start`, with
    the snapshot ending at `source_end`) and the target."""

    source_start: int
    source_end: int
    target_start: int
    target_end: int

    @property
    def copied(self) -> int:
        return max(0, self.target_end - self.target_start)


@dataclass(frozen=True)
class Print:
    """One side's fingerprint of one partition."""

    records: int = 0  # every record read
    inside: int = 0  # records at positions 0..n-1
    after: int = 0  # source records newer than the snapshot
    x1: int = 0
    x2: int = 0


def _side(
    kafka: DataFrame,
    side: int,
    windows: Mapping[TPKey, Window],
    topic_names: Mapping[str, str] | None,
) -> DataFrame:
    """One side's fingerprint rows: (topic, partition, side, records, inside, after, x1, x2)."""
    named = kafka.withColumn("topic", target_names(topic_names))  # source names from here on
    source = side == 0
    start = per_partition({tp: w.source_start if source else w.target_start
                           for tp, w in windows.items()})  # fmt: skip
    rel = F.col("offset") - start
    inside = rel < per_partition({tp: w.copied for tp, w in windows.items()})
    post = F.col("offset") >= per_partition({tp: w.source_end for tp, w in windows.items()})
    return (
        named.select(
            *TP,
            F.lit(side).alias("side"),
            inside.alias("inside"),
            (post if source else F.lit(False)).alias("post"),
            F.when(inside, record_hash(rel)).alias("h1"),
            F.when(inside, record_hash(F.lit(SALT), rel)).alias("h2"),
        )
        .groupBy(*TP, "side")
        .agg(
            F.count(F.lit(1)).alias("records"),
            F.count_if("inside").alias("inside"),
            F.count_if("post").alias("after"),
            F.bit_xor("h1").alias("x1"),
            F.bit_xor("h2").alias("x2"),
        )
    )


def fingerprints(
    source_kafka: DataFrame | None,
    target_kafka: DataFrame | None,
    windows: Mapping[TPKey, Window],
    topic_names: Mapping[str, str] | None = None,
) -> dict[tuple[str, int, int], Print]:
    """(source topic, partition, side: 0 source, 2 target) -> Print, in one Spark action.
    `topic_names` maps target topic names back to source names."""
    frames = [_side(df, side, windows, topic_names if side else None)
              for df, side in ((source_kafka, 0), (target_kafka, 2)) if df is not None]  # fmt: skip
    if not frames:
        return {}
    both = frames[0] if len(frames) == 1 else frames[0].unionByName(frames[1])
    return {
        (r["topic"], r["partition"], r["side"]): Print(
            int(r["records"]), int(r["inside"]), int(r["after"]),
            int(r["x1"] or 0), int(r["x2"] or 0),
        )
        for r in both.collect()
    }  # fmt: skip


def exact_copies(
    prints: Mapping[tuple[str, int, int], Print], windows: Mapping[TPKey, Window]
) -> Outcome:
    """The partitions the fingerprints prove to be exact copies, with their counts (and
    `pending`: source records newer than the snapshot that are not copied yet)."""
    out = Outcome()
    for (t, p), w in windows.items():
        s = prints.get((t, p, 0), Print())
        g = prints.get((t, p, 2), Print())
        n = w.copied
        if not (s.inside == g.records == g.inside == n and (s.x1, s.x2) == (g.x1, g.x2)
                and n >= w.source_end - w.source_start):  # fmt: skip
            continue
        out.counts[(t, p)] = {
            "source_count": s.records - s.after,
            "source_after_snapshot": s.after,
            "target_count": g.records,
            "matched": n,
        }
        if s.records > n:
            out.problems[(t, p, PENDING.name)] = (s.records - n, [])
    return out
