"""Match: digest multiset matching of both sides' rows, per Kafka partition, and the
per-partition summary (counts, unmatched records, order descents)."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F  # noqa: N812 (the PySpark idiom)

from kmirror_validate.compare.kinds import TP


def partition_counts(rows: DataFrame) -> DataFrame:
    """Per (topic, partition): source records in the snapshot, source records after it,
    target records (every row, sampled or not)."""
    side = F.col("side")
    return rows.groupBy(*TP).agg(
        F.count_if(side == 0).alias("source_count"),
        F.count_if(side == 1).alias("source_after_snapshot"),
        F.count_if(side == 2).alias("target_count"),
    )


def slots(rows: DataFrame) -> DataFrame:
    """Digest multiset matching. Within (topic, partition, digest) the i-th source copy (by
    offset) is paired with the i-th target copy. One row per slot, `kind`:

      matched    source copy i and target copy i
      source     a source copy without a target copy (missing, or damaged on the target)
      duplicate  a target copy beyond the source's copies (dup_of: the last source copy)
      target     a target record whose digest the source does not have at all

    Rows without a digest (not sampled) take no part. The rows of one Kafka partition are
    brought together once (hash on topic, partition); matching, the per-partition summary
    and the order check then need no further shuffle. Content hashes are kept only where
    pair_records needs them (unmatched slots).
    """
    merged = "rp" in rows.columns
    rp = F.col("rp") if merged else F.col("partition")
    live = rows.filter(F.col("d1").isNotNull()).repartition(*TP)
    group = Window.partitionBy("d1", "d2", *TP)  # the digest leads: a (nearly) unique prefix
    is_src = F.col("side") < 2
    with_occ = live.select(
        *TP, "d1", "d2", "side", "offset", rp.alias("rp"), "k1", "vh", "hh", "ts",
        F.row_number().over(group.orderBy("side", "offset")).alias("_rn"),
        F.count_if(is_src).over(group).alias("copies"),
        F.max(F.when(is_src, F.col("offset"))).over(group).alias("_last"),
        F.max_by(F.when(is_src, rp), F.when(is_src, F.col("offset"))).over(group)
        .alias("_last_p"),
    )  # fmt: skip
    occ = F.when(is_src, F.col("_rn")).otherwise(F.col("_rn") - F.col("copies"))
    t = F.col("side") == 2
    agg = with_occ.groupBy("d1", "d2", *TP, occ.alias("occ")).agg(
        F.max(F.when(is_src, F.col("offset"))).alias("source_offset"),
        F.max(F.when(is_src, F.col("rp"))).alias("source_partition"),
        F.max(F.when(is_src, F.col("side") == 1)).alias("post"),
        F.max(F.when(t, F.col("offset"))).alias("target_offset"),
        F.max(F.when(t, F.col("rp"))).alias("target_partition"),
        F.max("copies").alias("copies"),
        F.max("_last").alias("_last"),
        F.max("_last_p").alias("_last_p"),
        *[F.first(c).alias(c) for c in ("k1", "vh", "hh", "ts")],
    )
    so, to = F.col("source_offset").isNotNull(), F.col("target_offset").isNotNull()
    kind = (
        F.when(so & to, "matched")
        .when(so, "source")
        .when(F.col("copies") > 0, "duplicate")
        .otherwise("target")
    )
    unmatched = ~(so & to) & (so | (F.col("copies") == 0))
    dup = ~so & (F.col("copies") > 0)
    return agg.select(
        *TP, kind.alias("kind"), "source_offset", "target_offset",
        *[F.when(F.lit(merged) | ~(so & to), F.col(c)).alias(c)
          for c in ("source_partition", "target_partition")],
        F.when(so, F.col("post")).alias("post"),
        F.when(dup, F.col("_last")).alias("dup_of"),
        F.when(dup, F.col("_last_p")).alias("dup_of_partition"),
        *[F.when(unmatched, F.col(c)).alias(c) for c in ("k1", "vh", "hh", "ts")],
    )  # fmt: skip


def matched_pairs(slot_rows: DataFrame) -> DataFrame:
    return slot_rows.filter(F.col("kind") == "matched").select(
        *TP, "source_offset", "target_offset"
    )


def order_descents(pairs: DataFrame) -> DataFrame:
    """Per (topic, partition) with any: how often, walking the target in offset order, the
    source offset goes down. None means the target keeps the source order; only partitions
    with descents need order_violations."""
    w = Window.partitionBy(*TP).orderBy("target_offset")
    prev = F.lag("source_offset").over(w)
    return (
        pairs.select(*TP, (F.col("source_offset") < prev).alias("_down"))
        .groupBy(*TP)
        .agg(F.count_if("_down").alias("descents"))
        .filter(F.col("descents") > 0)
    )


SUMMARY_KINDS = ("source_count", "source_after_snapshot", "target_count", "matched",
                 "unmatched_source", "unmatched_target", "duplicates")  # fmt: skip


def slot_summary(slot_rows: DataFrame, check_order: bool = True) -> DataFrame:
    """(topic, partition, kind, count) for SUMMARY_KINDS counted over the slots, plus
    `descents` rows (check_order). Counts here cover compared (digest-carrying) rows only."""
    k, post = F.col("kind"), F.coalesce(F.col("post"), F.lit(False))
    has_src = F.col("source_offset").isNotNull()
    wide = slot_rows.groupBy(*TP).agg(
        F.count_if(has_src & ~post).alias("source_count"),
        F.count_if(has_src & post).alias("source_after_snapshot"),
        F.count_if(F.col("target_offset").isNotNull()).alias("target_count"),
        F.count_if(k == "matched").alias("matched"),
        F.count_if(k == "source").alias("unmatched_source"),
        F.count_if(k == "target").alias("unmatched_target"),
        F.count_if(k == "duplicate").alias("duplicates"),
    )
    pairs = F.map_from_arrays(
        F.array(*[F.lit(n) for n in SUMMARY_KINDS]), F.array(*[F.col(n) for n in SUMMARY_KINDS])
    )
    long = wide.select(*TP, F.explode(pairs).alias("kind", "count"))
    if check_order:
        descents = order_descents(matched_pairs(slot_rows)).select(
            *TP, F.lit("descents").alias("kind"), F.col("descents").alias("count")
        )
        long = long.unionByName(descents)
    return long
