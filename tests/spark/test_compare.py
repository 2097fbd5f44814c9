"""The comparison on small in-memory DataFrames (its pure parts: tests/unit/validate)."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import SparkSession

from kmirror_validate import compare
from kmirror_validate.compare import Difference, MirrorMismatchError
from tests.spark.conftest import kafka_rows

pytestmark = pytest.mark.spark

TS = 1_600_000_000_000


def _rec(p: int, o: int, i: int, **kw: Any) -> tuple[Any, ...]:
    """Record number i of a test topic 'a' at partition p, offset o."""
    return (
        kw.get("topic", "a"),
        p,
        o,
        kw.get("key", b"k%d" % i),
        kw.get("value", b"v%d" % i),
        kw.get("ts", TS + i),
        kw.get("headers", [("h", b"%d" % i)]),
    )


def _renumber(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Give target records consecutive offsets per partition, in list order."""
    nxt: dict[int, int] = {}
    out = []
    for t, p, _, k, v, ts, h in rows:
        out.append((t, p, nxt.get(p, 0), k, v, ts, h))
        nxt[p] = nxt.get(p, 0) + 1
    return out


def test_digest_tells_every_field_and_null_apart(spark: SparkSession) -> None:
    variants = [
        dict(key=None, value=b""),
        dict(key=b"", value=None),
        dict(key=b"", value=b""),
        dict(key=None, value=None),
        dict(headers=[("a", b"1"), ("b", b"2")]),
        dict(headers=[("b", b"2"), ("a", b"1")]),  # order counts
        dict(headers=[("a", b"1"), ("a", b"1")]),  # duplicates count
        dict(headers=[("a", None)]),
        dict(headers=[("a", b"")]),
        dict(headers=[]),
        dict(headers=[("a", None), ("b", None)]),
        dict(headers=[("a", b"b")]),
        dict(ts=TS + 1),
    ]
    rows = [_rec(0, i, 0, **kw) for i, kw in enumerate(variants)]
    rows.append(_rec(0, len(rows), 0, ts=TS + 1))  # identical content to the previous one
    df = compare.normalize(kafka_rows(spark, rows))
    digests = [(r["d1"], r["d2"]) for r in df.orderBy("offset").collect()]
    assert len(set(digests[:-1])) == len(variants)
    assert digests[-1] == digests[-2]


def test_differences_name_exactly_the_damage(spark: SparkSession) -> None:
    src = [_rec(p, o, p * 100 + o) for p in range(2) for o in range(30)]
    tgt = [r for r in src if (r[1], r[2]) not in {(0, 2), (0, 3), (1, 17)}]  # 3 missing
    tgt.append(src[8])  # duplicate of 0/8 at the end of partition 0
    tgt = [_rec(0, 5, 5, value=b"XX") if r[1:3] == (0, 5) else r for r in tgt]
    tgt = [_rec(0, 6, 6, headers=[("h", b"other")]) if r[1:3] == (0, 6) else r for r in tgt]
    tgt = [_rec(1, 9, 109, ts=TS + 1) if r[1:3] == (1, 9) else r for r in tgt]
    i, j = tgt.index(src[40]), tgt.index(src[45])  # 1/10 and 1/15 swap places
    tgt[i], tgt[j] = tgt[j], tgt[i]
    found = compare.differences(kafka_rows(spark, src), kafka_rows(spark, _renumber(tgt)))

    def brief(d: Difference) -> tuple[Any, ...]:
        shown = [(e["source_offset"], tuple(e.get("fields") or ())) for e in d.examples]
        return (d.partition, d.kind, d.count, shown)

    assert [brief(d) for d in found] == [
        (0, "differs", 2, [(5, ("value",)), (6, ("headers",))]),
        (0, "duplicate", 1, [(8, ())]),
        (0, "missing", 2, [(2, ()), (3, ())]),
        (1, "differs", 1, [(9, ("timestamp",))]),
        (1, "missing", 1, [(17, ())]),
        (1, "order", 2, [(10, ()), (15, ())]),
    ]
    with pytest.raises(MirrorMismatchError, match=r"a/0: 2 missing \[source offset 2"):
        raise MirrorMismatchError(found)


def test_exact_copy_with_renamed_topic_and_new_offsets(spark: SparkSession) -> None:
    src = [_rec(0, o, o) for o in range(10, 20)]  # source retention removed 0..9
    tgt = _renumber([("src.a", *r[1:]) for r in src])
    assert compare.is_mirrored(kafka_rows(spark, src), kafka_rows(spark, tgt), {"src.a": "a"})


def test_newer_source_records_are_pending_not_missing(spark: SparkSession) -> None:
    src = kafka_rows(spark, [_rec(0, o, o) for o in range(10)])
    tgt = kafka_rows(spark, [_rec(0, o, o) for o in range(7)])  # 7..9 written after the snapshot
    rows = compare.side_rows(
        compare.mark_after_snapshot(compare.normalize(src), {("a", 0): 7}),
        compare.normalize(tgt),
    )
    out = compare.evaluate(rows)
    assert out.counts[("a", 0)] == {
        "source_count": 7, "source_after_snapshot": 3, "target_count": 7, "matched": 7,
    }  # fmt: skip
    assert set(out.problems) == {("a", 0, "pending")}
    assert out.problems[("a", 0, "pending")][0] == 3


def test_latest_state_compares_tables_not_histories(spark: SparkSession) -> None:
    def r(o: int, key: bytes, value: bytes | None) -> tuple[Any, ...]:
        return _rec(0, o, 0, key=key, value=value, ts=TS + o, headers=[])

    src = [r(0, b"k1", b"a"), r(1, b"k2", b"a"), r(2, b"k1", b"b"), r(3, b"k3", b"a"),
           r(4, b"k2", None), r(5, b"k4", b"a"),
           r(6, b"k4", b"after")]  # fmt: skip
    # The target compacted harder: only the latest state, k2's tombstone already gone; k4's
    # post-snapshot change is not there yet.
    tgt = _renumber([src[2], src[3], src[5]])
    s_rows = compare.mark_after_snapshot(compare.normalize(kafka_rows(spark, src)), {("a", 0): 6})
    s_state, t_state = compare.latest_state(s_rows, compare.normalize(kafka_rows(spark, tgt)))
    out = compare.evaluate(compare.side_rows(s_state, t_state), counts_from_rows=True)
    # Live keys k1, k3 on both sides; k4 changed after the snapshot: skipped, counted.
    assert out.counts[("a", 0)] == {
        "source_count": 2, "source_after_snapshot": 1, "target_count": 2, "matched": 2,
    }  # fmt: skip
    assert out.problems == {}
    assert out.violations == {}


def test_hash_partitioned_mirror_is_compared_per_topic(spark: SparkSession) -> None:
    src = [_rec(p, o, p * 10 + o) for p in range(3) for o in range(5)]
    tgt = _renumber([(r[0], (r[1] + 1) % 2, *r[2:]) for r in src])  # 2 target partitions
    rows = compare.side_rows(
        compare.normalize(kafka_rows(spark, src)),
        compare.normalize(kafka_rows(spark, tgt)),
        merge_partitions=True,
    )
    out = compare.evaluate(rows, check_order=False)
    assert out.counts[("a", -1)]["matched"] == 15
    assert out.problems == {}
