"""Classify: unmatched slots -> problem rows (missing, pending, extra, duplicate, differs)
with counts and examples, and the order check of partitions that had descents. The
pure-Python parts (pairing, order) run on the executors, shipped by value."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from typing import Any

from pyspark import cloudpickle
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F  # noqa: N812 (the PySpark idiom)

from kmirror_validate.compare import kinds, pairing
from kmirror_validate.compare import order as order_mod
from kmirror_validate.compare.kinds import DIFFERS, DUPLICATE, EXTRA, MISSING, PENDING, TP


def _ship() -> None:
    """By value: executors need not have this package installed (any Spark cluster works)."""
    for module in (sys.modules[__name__], pairing, order_mod, kinds):
        cloudpickle.register_pickle_by_value(module)  # type: ignore[no-untyped-call]


def _pair_group(
    group: tuple[tuple[str, int], Iterable[tuple[Any, ...]]],
) -> list[tuple[Any, ...]]:
    (topic, partition), items = group
    src: list[pairing.SourceRec] = []
    tgt: list[pairing.TargetRec] = []
    for side, off, rp, post, k1, vh, hh, ts in items:
        if side == 0:
            src.append((off, rp, post, k1, vh, hh, ts))
        else:
            tgt.append((off, rp, k1, vh, hh, ts))
    return [(topic, partition, *p) for p in pairing.pair_records(src, tgt)]


PROBLEM_SCHEMA = (
    "topic string, partition int, kind string, source_offset long, source_partition int, "
    "target_offset long, target_partition int, fields array<string>"
)
TP_SCHEMA = "topic string, partition int"


def _shape(df: DataFrame, kind: Column, **cols: Column) -> DataFrame:
    names = ["source_offset", "source_partition", "target_offset", "target_partition"]
    return df.select(
        *TP,
        kind.alias("kind"),
        *[cols.get(n, F.lit(None)).cast("int" if n.endswith("partition") else "long").alias(n)
          for n in names],
        F.array().cast("array<string>").alias("fields"),
    )  # fmt: skip


def problems(slot_rows: DataFrame, pair_partitions: Sequence[tuple[str, int]]) -> DataFrame:
    """One row per problem record (PROBLEM_SCHEMA); kinds missing, pending, extra, duplicate,
    differs. Unmatched records of `pair_partitions` (those with unmatched records on both
    sides) go through pair_records on the executors; elsewhere an unmatched source record
    is missing (pending when newer than the snapshot) and an unmatched target record extra."""
    k = F.col("kind")
    spark = slot_rows.sparkSession
    both = F.broadcast(spark.createDataFrame(list(pair_partitions), TP_SCHEMA))
    src = slot_rows.filter(k == "source")
    tgt = slot_rows.filter(k == "target")
    out = (
        _shape(src.join(both, TP, "left_anti"),
               F.when(F.col("post"), F.lit(PENDING.name)).otherwise(F.lit(MISSING.name)),
               source_offset=F.col("source_offset"), source_partition=F.col("source_partition"))
        .unionByName(_shape(tgt.join(both, TP, "left_anti"), F.lit(EXTRA.name),
                            target_offset=F.col("target_offset"),
                            target_partition=F.col("target_partition")))
        .unionByName(_shape(slot_rows.filter(k == "duplicate"), F.lit(DUPLICATE.name),
                            source_offset=F.col("dup_of"),
                            source_partition=F.col("dup_of_partition"),
                            target_offset=F.col("target_offset"),
                            target_partition=F.col("target_partition")))
    )  # fmt: skip
    if not pair_partitions:
        return out
    _ship()
    content = ["k1", "vh", "hh", "ts"]
    to_pair = src.join(both, TP).select(
        *TP, F.lit(0).alias("side"), F.col("source_offset").alias("off"),
        F.col("source_partition").alias("rp"), "post", *content,
    ).unionByName(tgt.join(both, TP).select(
        *TP, F.lit(1).alias("side"), F.col("target_offset").alias("off"),
        F.col("target_partition").alias("rp"), F.lit(False).alias("post"), *content,
    ))  # fmt: skip
    paired = (
        to_pair.rdd.map(lambda r: ((r[0], r[1]), tuple(r[2:]))).groupByKey().flatMap(_pair_group)
    )
    return out.unionByName(spark.createDataFrame(paired, PROBLEM_SCHEMA))


EXAMPLES_TYPE = (
    "array<struct<source_offset:bigint,target_offset:bigint,source_partition:int,"
    "target_partition:int,fields:array<string>>>"
)


def summarize(problem_rows: DataFrame, max_examples: int) -> DataFrame:
    """(topic, partition, kind, count, examples): the first max_examples problems of each
    kind, by source offset then target offset; plus `field:<name>` rows counting the
    differing records per field."""
    w = Window.partitionBy(*TP, "kind")
    ranked = problem_rows.select(
        "*",
        F.count(F.lit(1)).over(w).alias("count"),
        F.row_number().over(w.orderBy(F.col("source_offset").asc_nulls_last(),
                                      F.col("target_offset"))).alias("_rn"),
    )  # fmt: skip
    example = F.struct("source_offset", "target_offset", "source_partition", "target_partition",
                       "fields")  # fmt: skip
    kinds = (
        ranked.filter(F.col("_rn") <= max(max_examples, 1))  # one row keeps the count
        .groupBy(*TP, "kind")
        .agg(
            F.max("count").alias("count"),
            F.array_sort(F.collect_list(F.when(F.col("_rn") <= max_examples, example)))
            .cast(EXAMPLES_TYPE)
            .alias("examples"),
        )
    )
    fields = (
        problem_rows.filter(F.col("kind") == DIFFERS.name)
        .select(*TP, F.explode("fields").alias("field"))
        .groupBy(*TP, "field")
        .count()
        .select(
            *TP,
            F.concat(F.lit("field:"), "field").alias("kind"),
            "count",
            F.array().cast(EXAMPLES_TYPE).alias("examples"),
        )
    )
    return kinds.unionByName(fields)


def order_violations(
    pairs: DataFrame, disordered: Sequence[tuple[str, int]], max_examples: int
) -> list[tuple[str, int, int, list[int]]]:
    """(topic, partition, violations, example source offsets) for each (topic, partition)
    in `disordered`; runs on the executors, one partition's matched pairs at a time."""
    if not disordered:
        return []
    _ship()
    which = F.broadcast(pairs.sparkSession.createDataFrame(list(disordered), TP_SCHEMA))
    keyed = pairs.join(which, TP).rdd.map(
        lambda r: ((r["topic"], r["partition"]), (r["target_offset"], r["source_offset"]))
    )
    limit = max_examples
    out: list[tuple[str, int, int, list[int]]] = (
        keyed.groupByKey().map(lambda g: order_mod.violations_of(g, limit)).collect()
    )
    return out
