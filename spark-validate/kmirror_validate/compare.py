"""Normalise, then compare. Every function takes and returns DataFrames (or plain values) and
never builds a SparkSession; docs/validation.md describes the algorithm step by step.

Pipeline (the CLI wires it; tests call the pieces):

    normalize(kafka rows)            one narrow row per record: offsets, field hashes, digest
    mark_after_snapshot(source)      post = the record is newer than the source snapshot
    latest_state(source, target)     compacted topics only: the table each side represents
    sample(rows, fraction)           sample mode only: keep a digest-chosen subset
    side_rows(source, target)        the union both comparisons read (the CLI caches it)
    partition_counts(rows)           records per side and partition
    slots(rows)                      digest multiset matching: one row per occurrence slot
    problems(slots)                  missing / extra / duplicate / "a field differs" rows
    summarize(problems)              one row per (topic, partition, kind): count, examples
    order_descents / order_violations  target order vs source order of the matched records
"""

from __future__ import annotations

import bisect
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark import cloudpickle
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F  # noqa: N812 (the PySpark idiom)

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


def mark_after_snapshot(source: DataFrame, bounds: DataFrame) -> DataFrame:
    """Add `post`: the record lies at or after the snapshot end of its partition.
    `bounds` has (topic, partition, end); partitions not listed count as inside."""
    b = F.broadcast(bounds.select(*TP, F.col("end").alias("_end")))
    return (
        source.join(b, TP, "left")
        .withColumn("post", F.coalesce(F.col("offset") >= F.col("_end"), F.lit(False)))
        .drop("_end")
    )


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
    """Both sides in one frame: side 0 = source, 1 = target. `rp` keeps the real partition;
    with merge_partitions (the mirror re-partitions by hash) `partition` becomes -1, so
    records are matched per topic."""
    src = source if "post" in source.columns else source.withColumn("post", F.lit(False))
    both = src.withColumn("side", F.lit(0)).unionByName(
        target.withColumn("post", F.lit(False)).withColumn("side", F.lit(1))
    )
    both = both.withColumn("rp", F.col("partition"))
    if merge_partitions:
        both = both.withColumn("partition", F.lit(-1))
    return both


# --------------------------------------------------------------------------- match


def partition_counts(rows: DataFrame) -> DataFrame:
    """Per (topic, partition): source records in the snapshot, source records after it,
    target records."""
    return rows.groupBy(*TP).agg(
        F.count_if((F.col("side") == 0) & ~F.col("post")).alias("source_count"),
        F.count_if((F.col("side") == 0) & F.col("post")).alias("source_after_snapshot"),
        F.count_if(F.col("side") == 1).alias("target_count"),
    )


def slots(rows: DataFrame) -> DataFrame:
    """Digest multiset matching. Within (topic, partition, digest) the i-th source copy (by
    offset) is paired with the i-th target copy. One row per slot:

    kind  matched    source copy i and target copy i
          source     source copy without a target copy (missing, or a corrupted copy)
          duplicate  target copy beyond the source's copies (dup_of = last source copy)
          target     target record whose digest the source does not have at all
    """
    live = rows.filter(F.col("d1").isNotNull())
    group = Window.partitionBy("topic", "partition", "d1", "d2")
    ordered = group.orderBy("side", "offset")
    is_src = F.col("side") == 0
    with_occ = live.select(
        *TP, "d1", "d2", "side", "offset", "rp", "post", "k1", "vh", "hh", "ts",
        F.row_number().over(ordered).alias("_rn"),
        F.count_if(is_src).over(group).alias("copies"),
        F.max(F.when(is_src, F.col("offset"))).over(group).alias("_last_src"),
        F.max_by(F.when(is_src, F.col("rp")), F.when(is_src, F.col("offset")))
        .over(group).alias("_last_src_p"),
    )  # fmt: skip
    occ = F.when(is_src, F.col("_rn")).otherwise(F.col("_rn") - F.col("copies"))
    s = F.col("side") == 0
    t = F.col("side") == 1
    agg = with_occ.groupBy(*TP, "d1", "d2", occ.alias("occ")).agg(
        F.max(F.when(s, F.col("offset"))).alias("source_offset"),
        F.max(F.when(s, F.col("rp"))).alias("source_partition"),
        F.max(F.when(s, F.col("post"))).alias("post"),
        F.max(F.when(t, F.col("offset"))).alias("target_offset"),
        F.max(F.when(t, F.col("rp"))).alias("target_partition"),
        F.max("copies").alias("copies"),
        F.max("_last_src").alias("dup_of"),
        F.max("_last_src_p").alias("dup_of_partition"),
        *[F.first(c).alias(c) for c in ("k1", "vh", "hh", "ts")],
    )
    so, to = F.col("source_offset").isNotNull(), F.col("target_offset").isNotNull()
    kind = (
        F.when(so & to, "matched")
        .when(so, "source")
        .when(F.col("copies") > 0, "duplicate")
        .otherwise("target")
    )
    return agg.withColumn("kind", kind).drop("d1", "d2")


def matched_counts(slot_rows: DataFrame) -> DataFrame:
    return slot_rows.groupBy(*TP).agg(F.count_if(F.col("kind") == "matched").alias("matched"))


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
        used: set[int] = set()
        for s in s_left:
            q = queues.get(tuple(s[_S_FIELDS[k]] for k in keys))
            if not q:
                still.append(s)
                continue
            t = q.pop()
            used.add(id(t))
            fields = [n for n, c in FIELDS if s[_S_FIELDS[c]] != t[_T_FIELDS[c]]]
            out.append(("differs", s[0], s[1], t[0], t[1], fields))
        s_left = still
        t_left = [t for t in t_left if id(t) not in used]
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


def _shape(df: DataFrame, kind: Column, **cols: Column) -> DataFrame:
    names = ["source_offset", "source_partition", "target_offset", "target_partition"]
    return df.select(
        *TP,
        kind.alias("kind"),
        *[cols.get(n, F.lit(None)).cast("int" if n.endswith("partition") else "long").alias(n)
          for n in names],
        F.array().cast("array<string>").alias("fields"),
    )  # fmt: skip


def problems(slot_rows: DataFrame) -> DataFrame:
    """One row per problem record (PROBLEM_SCHEMA); kinds: missing, pending, extra,
    duplicate, differs. Partitions where both sides have unmatched records go through
    pair_records on the executors; elsewhere unmatched records are missing/extra as is."""
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]
    k = F.col("kind")
    src = slot_rows.filter(k == "source")
    tgt = slot_rows.filter(k == "target")
    both = F.broadcast(src.select(*TP).distinct().join(tgt.select(*TP).distinct(), TP))
    lone_src = _shape(
        src.join(both, TP, "left_anti"),
        F.when(F.col("post"), F.lit("pending")).otherwise(F.lit("missing")),
        source_offset=F.col("source_offset"),
        source_partition=F.col("source_partition"),
    )
    lone_tgt = _shape(
        tgt.join(both, TP, "left_anti"),
        F.lit("extra"),
        target_offset=F.col("target_offset"),
        target_partition=F.col("target_partition"),
    )
    dups = _shape(
        slot_rows.filter(k == "duplicate"),
        F.lit("duplicate"),
        source_offset=F.col("dup_of"),
        source_partition=F.col("dup_of_partition"),
        target_offset=F.col("target_offset"),
        target_partition=F.col("target_partition"),
    )
    content = ["k1", "vh", "hh", "ts"]
    to_pair = src.join(both, TP).select(
        *TP, F.lit(0).alias("side"), F.col("source_offset").alias("off"),
        F.col("source_partition").alias("rp"), "post", *content,
    ).unionByName(tgt.join(both, TP).select(
        *TP, F.lit(1).alias("side"), F.col("target_offset").alias("off"),
        F.col("target_partition").alias("rp"), F.lit(False).alias("post"), *content,
    ))  # fmt: skip
    paired_rdd = (
        to_pair.rdd.map(lambda r: ((r[0], r[1]), tuple(r[2:]))).groupByKey().flatMap(_pair_group)
    )
    paired = slot_rows.sparkSession.createDataFrame(paired_rdd, PROBLEM_SCHEMA)
    return lone_src.unionByName(lone_tgt).unionByName(dups).unionByName(paired)


# --------------------------------------------------------------------------- order


def matched_pairs(slot_rows: DataFrame) -> DataFrame:
    return slot_rows.filter(F.col("kind") == "matched").select(
        *TP, "source_offset", "target_offset"
    )


def order_descents(pairs: DataFrame) -> DataFrame:
    """Per (topic, partition): how often, walking the target in offset order, the source
    offset goes down. Zero means the target keeps the source order; only partitions with
    descents need order_violators."""
    w = Window.partitionBy(*TP).orderBy("target_offset")
    prev = F.lag("source_offset").over(w)
    return (
        pairs.select(*TP, (F.col("source_offset") < prev).alias("_down"))
        .groupBy(*TP)
        .agg(F.count_if("_down").alias("descents"))
        .filter(F.col("descents") > 0)
    )


def order_violators(source_offsets_in_target_order: Sequence[int]) -> list[int]:
    """The fewest records to take out so that the rest keep source order: everything not on
    one longest increasing subsequence (patience sorting, O(n log n)). Returned as source
    offsets, ascending. Of equally long subsequences the one ending in the smallest
    offsets is kept, so for two swapped neighbours the later one (in target order) stays."""
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
    ordered = [s for _, s in sorted(pairs)]
    bad = order_violators(ordered)
    return topic, partition, len(bad), bad[:max_examples]


def order_violations(
    pairs: DataFrame, disordered: Sequence[tuple[str, int]], max_examples: int
) -> list[tuple[str, int, int, list[int]]]:
    """(topic, partition, violations, example source offsets) for each (topic, partition)
    in `disordered`; runs on the executors, one partition's matched pairs at a time."""
    if not disordered:
        return []
    # By value: executors need not have this package installed (any Spark cluster works).
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]
    which = pairs.sparkSession.createDataFrame(list(disordered), "topic string, partition int")
    rows = pairs.join(F.broadcast(which), TP)
    keyed = rows.rdd.map(
        lambda r: ((r["topic"], r["partition"]), (r["target_offset"], r["source_offset"]))
    )
    limit = max_examples
    out: list[tuple[str, int, int, list[int]]] = (
        keyed.groupByKey().map(lambda g: _violations_of(g, limit)).collect()
    )
    return out


# --------------------------------------------------------------------------- report rows


EXAMPLES_TYPE = (
    "array<struct<source_offset:bigint,target_offset:bigint,source_partition:int,"
    "target_partition:int,fields:array<string>>>"
)


def summarize(problem_rows: DataFrame, max_examples: int) -> DataFrame:
    """Per (topic, partition, kind): count, and the first max_examples problems ordered by
    source offset (then target offset) as an array of structs."""
    w = Window.partitionBy(*TP, "kind")
    ranked = problem_rows.select(
        "*",
        F.count(F.lit(1)).over(w).alias("count"),
        F.row_number().over(w.orderBy(F.col("source_offset").asc_nulls_last(),
                                      F.col("target_offset"))).alias("_rn"),
    )  # fmt: skip
    example = F.struct("source_offset", "target_offset", "source_partition", "target_partition",
                       "fields")  # fmt: skip
    return (
        ranked.filter(F.col("_rn") <= max(max_examples, 1))  # one row keeps the count
        .groupBy(*TP, "kind")
        .agg(
            F.max("count").alias("count"),
            F.array_sort(F.collect_list(F.when(F.col("_rn") <= max_examples, example)))
            .cast(EXAMPLES_TYPE)
            .alias("examples"),
        )
    )


def results(slot_rows: DataFrame, max_examples: int, check_order: bool = True) -> DataFrame:
    """Everything the report needs from the slots as one small frame, so that one Spark
    action computes it: (topic, partition, kind, count, examples) for the problem kinds of
    problems(), plus `matched`, `field:<name>` (differing records per field) and (with
    check_order) `descents`."""
    no_examples = F.array().cast(EXAMPLES_TYPE).alias("examples")
    matched = matched_counts(slot_rows).select(
        *TP, F.lit("matched").alias("kind"), F.col("matched").alias("count"), no_examples
    )
    found = problems(slot_rows)
    fields = (
        found.filter(F.col("kind") == "differs")
        .select(*TP, F.explode("fields").alias("field"))
        .groupBy(*TP, "field")
        .count()
        .select(*TP, F.concat(F.lit("field:"), "field").alias("kind"), "count", no_examples)
    )
    out = summarize(found, max_examples).unionByName(matched).unionByName(fields)
    if check_order:
        descents = order_descents(matched_pairs(slot_rows)).select(
            *TP, F.lit("descents").alias("kind"), F.col("descents").alias("count"), no_examples
        )
        out = out.unionByName(descents)
    return out


# --------------------------------------------------------------------------- chispa-style


@dataclass(frozen=True)
class Difference:
    topic: str
    partition: int
    kind: str
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


def differences(source_kafka: DataFrame, target_kafka: DataFrame,
                topic_names: Mapping[str, str] | None = None,
                max_examples: int = 10) -> list[Difference]:  # fmt: skip
    """Compare two Kafka-shaped DataFrames (complete ranges, no snapshot subtleties)."""
    rows = side_rows(normalize(source_kafka), normalize(target_kafka, topic_names))
    s = slots(rows).persist()
    found: list[Difference] = []
    disordered: list[tuple[str, int]] = []
    for r in results(s, max_examples).collect():
        if r["kind"] == "descents":
            disordered.append((r["topic"], r["partition"]))
        elif r["kind"] in KINDS:
            found.append(Difference(r["topic"], r["partition"], r["kind"], r["count"],
                                    tuple(e.asDict() for e in r["examples"])))  # fmt: skip
    for topic, partition, n, ex in order_violations(matched_pairs(s), disordered, max_examples):
        found.append(Difference(topic, partition, "order", n,
                                tuple({"source_offset": o} for o in ex)))  # fmt: skip
    s.unpersist()
    return sorted(found, key=lambda d: (d.topic, d.partition, d.kind))


def is_mirrored(source_kafka: DataFrame, target_kafka: DataFrame,
                topic_names: Mapping[str, str] | None = None) -> bool:  # fmt: skip
    return not differences(source_kafka, target_kafka, topic_names)


def assert_mirrored(source_kafka: DataFrame, target_kafka: DataFrame,
                    topic_names: Mapping[str, str] | None = None) -> None:  # fmt: skip
    found = differences(source_kafka, target_kafka, topic_names)
    if found:
        raise MirrorMismatchError(found)
