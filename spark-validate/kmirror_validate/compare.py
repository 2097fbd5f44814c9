"""Normalise, then compare. Every function takes and returns DataFrames (or plain values) and
never builds a SparkSession; docs/validation.md describes the algorithm step by step.

Pipeline (the CLI wires it; tests call the pieces):

    normalize(kafka rows)            one narrow row per record: offsets, field hashes, digest
    mark_after_snapshot(source)      post = the record is newer than the source snapshot
    latest_state(source, target)     compacted topics only: the table each side represents
    sample(rows, fraction)           sample mode only: keep a digest-chosen subset
    side_rows(source, target)        both sides in one frame
    slots(rows)                      digest multiset matching: one row per occurrence slot
    slot_summary(slots)              per partition: counts, matched, unmatched, descents
    problems(slots) + summarize      missing / extra / duplicate / differs: counts, examples
    order_violations(pairs)          which matched records break the source order

`evaluate` runs these with as few Spark actions as it can (one for a clean mirror) and
returns plain Python values; `differences` / `assert_mirrored` are the chispa-style check
and assert forms for two Kafka-shaped DataFrames.
"""

from __future__ import annotations

import bisect
import logging
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark import cloudpickle
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F  # noqa: N812 (the PySpark idiom)

log = logging.getLogger(__name__)

# Salt for the second half of the 128-bit digest (independent of the first half).
SALT = 0x6B6D6972726F72
SAMPLE_BUCKETS = 1 << 20
HEADERS_TYPE = "array<struct<key:string,value:binary>>"
TP = ["topic", "partition"]
KEY = ["topic", "partition", "k1", "k2"]
NORMAL = ["topic", "partition", "offset", "k1", "k2", "vh", "hh", "ts", "d1", "d2", "tomb"]
KINDS = ("missing", "extra", "duplicate", "differs", "order")
# Pairing passes for records that lost their digest twin: join keys, in this order.
PAIRINGS: tuple[tuple[str, ...], ...] = (
    ("k1", "ts"),  # same key and timestamp: value and/or headers differ
    ("k1", "vh", "hh"),  # same key, value, headers: timestamp differs
    ("k1",),  # same key: several fields differ
    ("vh", "hh", "ts"),  # same value, headers, timestamp: key differs
)
FIELDS = (("key", "k1"), ("value", "vh"), ("headers", "hh"), ("timestamp", "ts"))


# --------------------------------------------------------------------------- normalise


def digest_columns() -> dict[str, Column]:
    """Field hashes and the 128-bit record digest (d1, d2) of Kafka source rows.

    Nulls are hashed as explicit flags (Spark's hash skips null inputs, which would make a
    null key and a null value look alike); headers keep their order and duplicates, and a
    header's null value differs from an empty one. `ts` is the timestamp in ms; the
    timestamp type is not compared (a mirror produces CreateTime either way).
    """
    key, value = F.col("key"), F.col("value")
    headers = F.coalesce(F.col("headers"), F.array().cast(HEADERS_TYPE))
    tagged = F.transform(
        headers,
        lambda h: F.struct(
            h["value"].isNull().alias("n"), h["key"].alias("k"), h["value"].alias("v")
        ),
    )
    salt = F.lit(SALT)
    ts = F.unix_millis(F.col("timestamp"))
    k1 = F.xxhash64(key.isNull(), key)
    k2 = F.xxhash64(salt, key.isNull(), key)
    vh = F.xxhash64(value.isNull(), value)
    v2 = F.xxhash64(salt, value.isNull(), value)
    hh = F.xxhash64(F.size(headers), tagged)
    h2 = F.xxhash64(salt, F.size(headers), tagged)
    return {
        "k1": k1,
        "k2": k2,
        "vh": vh,
        "hh": hh,
        "ts": ts,
        "d1": F.xxhash64(k1, vh, hh, ts),
        "d2": F.xxhash64(salt, k2, v2, h2, ts),
        "tomb": value.isNull(),
    }


def normalize(kafka: DataFrame, topic_names: Mapping[str, str] | None = None) -> DataFrame:
    """Kafka source rows -> NORMAL columns. `topic_names` maps target topic names back to
    source names, so both sides speak of the source topic."""
    topic = F.col("topic")
    if topic_names and any(k != v for k, v in topic_names.items()):
        mapping = F.create_map(*[F.lit(x) for kv in topic_names.items() for x in kv])
        topic = F.coalesce(mapping[F.col("topic")], F.col("topic"))
    cols = digest_columns()
    return kafka.select(
        topic.alias("topic"),
        F.col("partition"),
        F.col("offset"),
        *[cols[c].alias(c) for c in NORMAL[3:]],
    )


def mark_after_snapshot(source: DataFrame, ends: Mapping[tuple[str, int], int]) -> DataFrame:
    """Add `post`: the record lies at or after the snapshot end of its partition. `ends`
    needs only the partitions that were read past their snapshot end (usually none, then
    `post` is a constant false)."""
    if not ends:
        return source.withColumn("post", F.lit(False))
    lookup = F.create_map(*[F.lit(x) for (t, p), end in sorted(ends.items())
                            for x in (f"{p}:{t}", end)])  # fmt: skip
    end = lookup[F.concat_ws(":", F.col("partition").cast("string"), F.col("topic"))]
    return source.withColumn("post", F.coalesce(F.col("offset") >= end, F.lit(False)))


def _latest(rows: DataFrame) -> DataFrame:
    others = [c for c in rows.columns if c not in KEY]
    latest = F.max_by(F.struct(*[F.col(c) for c in others]), F.col("offset")).alias("_l")
    return rows.groupBy(*KEY).agg(latest).select(*KEY, *[F.col(f"_l.{c}") for c in others])


def latest_state(source: DataFrame, target: DataFrame) -> tuple[DataFrame, DataFrame]:
    """Compacted topics: reduce each side to the table it represents, the latest record per
    (partition, key), a tombstone meaning "no row". Keys that the source changed after the
    snapshot (a `post` record) are left out of both sides; the source keeps one count-only
    row for each (post, null digest), so the report can say how many were skipped."""
    changed = source.filter("post").select(*KEY).distinct()
    s_state = _latest(source.filter(~F.col("post"))).filter(~F.col("tomb"))
    s_state = s_state.join(changed, KEY, "left_anti")
    t_state = _latest(target).filter(~F.col("tomb")).join(changed, KEY, "left_anti")
    markers = changed.select(
        *KEY,
        *[F.lit(None).cast("long").alias(c) for c in ("offset", "vh", "hh", "ts", "d1", "d2")],
        F.lit(False).alias("tomb"),
        F.lit(True).alias("post"),
    )
    return s_state.unionByName(markers), t_state


def sample(rows: DataFrame, fraction: float) -> DataFrame:
    """Keep the digest of a deterministic subset (the same records on both sides, as the
    choice depends on content only); other rows stay, with a null digest, for the counts."""
    keep = F.pmod(F.col("d1"), F.lit(SAMPLE_BUCKETS)) < F.lit(int(fraction * SAMPLE_BUCKETS))
    return rows.withColumn("d1", F.when(keep, F.col("d1"))).withColumn(
        "d2", F.when(keep, F.col("d2"))
    )


def side_rows(source: DataFrame, target: DataFrame, merge_partitions: bool = False) -> DataFrame:
    """Both sides in one frame with `side`: 0 source, 1 source newer than the snapshot
    (`post`), 2 target. With merge_partitions (the mirror re-partitions by hash) `partition`
    becomes -1, so records are matched per topic, and `rp` keeps the real partition."""
    post = F.col("post") if "post" in source.columns else F.lit(False)
    src = source.withColumn("side", F.when(post, F.lit(1)).otherwise(F.lit(0))).drop("post")
    both = src.unionByName(target.withColumn("side", F.lit(2)))
    if merge_partitions:
        both = both.withColumn("rp", F.col("partition")).withColumn("partition", F.lit(-1))
    return both


# --------------------------------------------------------------------------- match


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


# --------------------------------------------------------------------------- classify

# Plain tuples on the executors: source (offset, partition, post, k1, vh, hh, ts), target
# (offset, partition, k1, vh, hh, ts); a problem: (kind, source offset, source partition,
# target offset, target partition, fields).
SourceRec = tuple[int, int, bool, int, int, int, int]
TargetRec = tuple[int, int, int, int, int, int]
Problem = tuple[str, int | None, int | None, int | None, int | None, list[str]]
_S_FIELDS = {"k1": 3, "vh": 4, "hh": 5, "ts": 6}
_T_FIELDS = {"k1": 2, "vh": 3, "hh": 4, "ts": 5}


def pair_records(source: Iterable[SourceRec], target: Iterable[TargetRec]) -> list[Problem]:
    """Classify one partition's unmatched records (those that lost their digest twin).

    A source and a target record are the same record, damaged, when they agree on the
    fields of one of PAIRINGS; the passes run in order, and within equal keys the i-th
    source record (by offset) pairs with the i-th target record. Pairs become `differs`
    (listing the fields that differ); unpaired source records are `missing` (`pending` when
    newer than the snapshot), unpaired target records `extra`.
    """
    s_left = sorted(source)
    t_left = sorted(target)
    out: list[Problem] = []
    for keys in PAIRINGS:
        if not s_left or not t_left:
            break
        queues: dict[tuple[int, ...], list[TargetRec]] = {}
        for t in reversed(t_left):  # reversed + pop(): offset order
            queues.setdefault(tuple(t[_T_FIELDS[k]] for k in keys), []).append(t)
        still: list[SourceRec] = []
        used: set[tuple[int, int]] = set()
        for s in s_left:
            q = queues.get(tuple(s[_S_FIELDS[k]] for k in keys))
            if not q:
                still.append(s)
                continue
            t = q.pop()
            used.add((t[1], t[0]))
            fields = [n for n, c in FIELDS if s[_S_FIELDS[c]] != t[_T_FIELDS[c]]]
            out.append(("differs", s[0], s[1], t[0], t[1], fields))
        s_left = still
        t_left = [t for t in t_left if (t[1], t[0]) not in used]
    out += [("pending" if s[2] else "missing", s[0], s[1], None, None, []) for s in s_left]
    out += [("extra", None, None, t[0], t[1], []) for t in t_left]
    return out


def _pair_group(
    group: tuple[tuple[str, int], Iterable[tuple[Any, ...]]],
) -> list[tuple[Any, ...]]:
    (topic, partition), items = group
    src: list[SourceRec] = []
    tgt: list[TargetRec] = []
    for side, off, rp, post, k1, vh, hh, ts in items:
        if side == 0:
            src.append((off, rp, post, k1, vh, hh, ts))
        else:
            tgt.append((off, rp, k1, vh, hh, ts))
    return [(topic, partition, *p) for p in pair_records(src, tgt)]


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
               F.when(F.col("post"), F.lit("pending")).otherwise(F.lit("missing")),
               source_offset=F.col("source_offset"), source_partition=F.col("source_partition"))
        .unionByName(_shape(tgt.join(both, TP, "left_anti"), F.lit("extra"),
                            target_offset=F.col("target_offset"),
                            target_partition=F.col("target_partition")))
        .unionByName(_shape(slot_rows.filter(k == "duplicate"), F.lit("duplicate"),
                            source_offset=F.col("dup_of"),
                            source_partition=F.col("dup_of_partition"),
                            target_offset=F.col("target_offset"),
                            target_partition=F.col("target_partition")))
    )  # fmt: skip
    if not pair_partitions:
        return out
    # By value: executors need not have this package installed (any Spark cluster works).
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]
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
        problem_rows.filter(F.col("kind") == "differs")
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


# --------------------------------------------------------------------------- order


def order_violators(source_offsets_in_target_order: Sequence[int]) -> list[int]:
    """The fewest records to take out so that the rest keep source order: everything not on
    one longest increasing subsequence (patience sorting, O(n log n)). Returned as source
    offsets, ascending. Of equally long subsequences the one ending in the smallest
    offsets is kept, so of two swapped neighbours the one that comes first on the target
    is reported."""
    seq = list(source_offsets_in_target_order)
    tails: list[int] = []  # tails[k]: smallest tail value of an increasing run of length k+1
    tail_idx: list[int] = []
    parent = [-1] * len(seq)
    for i, x in enumerate(seq):
        k = bisect.bisect_left(tails, x)
        if k == len(tails):
            tails.append(x)
            tail_idx.append(i)
        else:
            tails[k] = x
            tail_idx[k] = i
        parent[i] = tail_idx[k - 1] if k > 0 else -1
    keep: set[int] = set()
    i = tail_idx[-1] if tail_idx else -1
    while i >= 0:
        keep.add(i)
        i = parent[i]
    return sorted(x for j, x in enumerate(seq) if j not in keep)


def _violations_of(
    group: tuple[tuple[str, int], Iterable[tuple[int, int]]], max_examples: int
) -> tuple[str, int, int, list[int]]:
    (topic, partition), pairs = group
    bad = order_violators([s for _, s in sorted(pairs)])
    return topic, partition, len(bad), bad[:max_examples]


def order_violations(
    pairs: DataFrame, disordered: Sequence[tuple[str, int]], max_examples: int
) -> list[tuple[str, int, int, list[int]]]:
    """(topic, partition, violations, example source offsets) for each (topic, partition)
    in `disordered`; runs on the executors, one partition's matched pairs at a time."""
    if not disordered:
        return []
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]
    which = F.broadcast(pairs.sparkSession.createDataFrame(list(disordered), TP_SCHEMA))
    keyed = pairs.join(which, TP).rdd.map(
        lambda r: ((r["topic"], r["partition"]), (r["target_offset"], r["source_offset"]))
    )
    limit = max_examples
    out: list[tuple[str, int, int, list[int]]] = (
        keyed.groupByKey().map(lambda g: _violations_of(g, limit)).collect()
    )
    return out


# --------------------------------------------------------------------------- evaluate


@dataclass
class Outcome:
    """What `evaluate` found. Keys are (topic, partition); partition -1 = a whole topic."""

    counts: dict[tuple[str, int], dict[str, int]] = field(default_factory=dict)
    # (topic, partition, kind) -> (count, examples as dicts); kinds as in problems() plus
    # field:<name>
    problems: dict[tuple[str, int, str], tuple[int, list[dict[str, Any]]]] = field(
        default_factory=dict
    )
    violations: dict[tuple[str, int], tuple[int, list[int]]] = field(default_factory=dict)


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
    from pyspark import StorageLevel

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


# --------------------------------------------------------------------------- chispa-style


@dataclass(frozen=True)
class Difference:
    topic: str
    partition: int
    kind: str  # missing, extra, duplicate, differs, order
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
        if kind in KINDS
    ]
    found += [
        Difference(t, p, "order", n, tuple({"source_offset": o} for o in ex))
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
