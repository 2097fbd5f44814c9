"""Normalise: Kafka rows -> one narrow row per record (offsets, field hashes, digest), and
the row-level steps before matching (snapshot marks, compacted views, sampling)."""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812 (the PySpark idiom)

from kmirror_validate.compare.kinds import HEADERS_TYPE, SALT

SAMPLE_BUCKETS = 1 << 20
KEY = ["topic", "partition", "k1", "k2"]
NORMAL = ["topic", "partition", "offset", "k1", "k2", "vh", "hh", "ts", "d1", "d2", "tomb"]


def _headers() -> tuple[Column, Column]:
    """(header count, headers with each value's null flag). Spark's hash skips null inputs,
    so without the flag ("a", null), ("b", x) and ("a", "b"), ("x", null) would hash alike."""
    headers = F.coalesce(F.col("headers"), F.array().cast(HEADERS_TYPE))
    tagged = F.transform(
        headers,
        lambda h: F.struct(
            h["value"].isNull().alias("n"), h["key"].alias("k"), h["value"].alias("v")
        ),
    )
    return F.size(headers), tagged


def timestamp_column() -> Column:
    """The timestamp in ms together with its type (CreateTime 0, LogAppendTime 1): a copy
    must carry both."""
    return F.xxhash64(F.unix_millis(F.col("timestamp")), F.col("timestampType"))


def record_hash(*prefix: Column) -> Column:
    """One 64-bit hash over a whole record (nulls flagged, headers in order), after `prefix`
    (a salt, a position): the fast path's per-record hash, see compare.fast."""
    key, value = F.col("key"), F.col("value")
    size, tagged = _headers()
    return F.xxhash64(*prefix, key.isNull(), key, value.isNull(), value, size, tagged,
                      F.unix_millis(F.col("timestamp")), F.col("timestampType"))  # fmt: skip


def digest_columns() -> dict[str, Column]:
    """Field hashes and the 128-bit record digest (d1, d2) of Kafka source rows.

    Nulls are hashed as explicit flags (Spark's hash skips null inputs, which would make a
    null key and a null value look alike); headers keep their order and duplicates, and a
    header's null value differs from an empty one. `ts` covers the timestamp in ms and its
    type.
    """
    key, value = F.col("key"), F.col("value")
    size, tagged = _headers()
    salt = F.lit(SALT)
    ts = timestamp_column()
    k1 = F.xxhash64(key.isNull(), key)
    k2 = F.xxhash64(salt, key.isNull(), key)
    vh = F.xxhash64(value.isNull(), value)
    v2 = F.xxhash64(salt, value.isNull(), value)
    hh = F.xxhash64(size, tagged)
    h2 = F.xxhash64(salt, size, tagged)
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


def target_names(topic_names: Mapping[str, str] | None) -> Column:
    """The topic column with target names mapped back to source names."""
    topic = F.col("topic")
    if topic_names and any(k != v for k, v in topic_names.items()):
        mapping = F.create_map(*[F.lit(x) for kv in topic_names.items() for x in kv])
        topic = F.coalesce(mapping[F.col("topic")], F.col("topic"))
    return topic


def per_partition(values: Mapping[tuple[str, int], int]) -> Column:
    """A lookup of a per-(topic, partition) number for each row (null where not given)."""
    lookup = F.create_map(*[F.lit(x) for (t, p), v in sorted(values.items())
                            for x in (f"{p}:{t}", v)])  # fmt: skip
    return lookup[F.concat_ws(":", F.col("partition").cast("string"), F.col("topic"))]


def normalize(kafka: DataFrame, topic_names: Mapping[str, str] | None = None) -> DataFrame:
    """Kafka source rows -> NORMAL columns. `topic_names` maps target topic names back to
    source names, so both sides speak of the source topic."""
    cols = digest_columns()
    return kafka.select(
        target_names(topic_names).alias("topic"),
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
    end = per_partition(ends)
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
