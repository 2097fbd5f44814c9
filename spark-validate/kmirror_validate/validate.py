"""One validation run: plan and snapshot (no Spark), then read, compare and report (Spark).
The CLI calls `prepare` before it starts Spark, so a bad config or an unreachable cluster
fails in seconds, without a JVM."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from kmirror.config.model import MirrorConfig, TopicSelection
from kmirror.kafka.cluster import Isolation
from kmirror_validate import compare, offsets, ranges, schemaids, sparkio
from kmirror_validate.compare.kinds import FIELD_NAMES, KINDS, ORDER, PENDING
from kmirror_validate.offsets import Snapshot, TopicPlan, WaitResult
from kmirror_validate.progress import Progress
from kmirror_validate.report import (
    DuplicatePolicy,
    Example,
    Mode,
    PartitionResult,
    Report,
    TopicResult,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)
TP = tuple[str, int]


@dataclass(frozen=True)
class Options:
    mode: Mode = "digest"
    sample_fraction: float = 0.01
    isolation: Isolation = "read_committed"
    max_examples: int = 10
    wait_timeout: float = 0.0
    connect_timeout: float = 15.0
    records_per_task: int = 1_000_000
    compacted: Literal["latest", "records"] = "latest"
    duplicates: DuplicatePolicy = "allow"
    bounds: ranges.Bounds = field(default_factory=ranges.Bounds)


@dataclass
class Prepared:
    """Everything decided before Spark starts."""

    config: MirrorConfig
    options: Options
    plans: list[TopicPlan]
    snapshot: Snapshot
    wait: WaitResult
    started: float = field(default_factory=time.time)
    warnings: list[str] = field(default_factory=list)
    schema_ids: schemaids.SchemaIds | None = None  # with schema registries (schemaids.py)


def prepare(
    config: MirrorConfig,
    options: Options,
    selection: TopicSelection | None = None,
    on_wait: Callable[[list[str], float], None] | None = None,
) -> Prepared:
    started = time.time()
    source, target = offsets.clients(config, options.connect_timeout)
    plans = offsets.resolve_topics(config, source, target, selection)
    snapshot, wait = offsets.take_snapshot(
        config, source, target, plans, options.isolation, options.wait_timeout,
        on_wait=on_wait, bounds=options.bounds,
    )  # fmt: skip
    warnings: list[str] = list(snapshot.notes)
    for p in plans:
        extra = (p.target_partitions or 0) - p.partitions
        if config.keeps_partitions and extra > 0:
            warnings.append(
                f"target topic {p.target} has {p.partitions + extra} partitions, the source "
                f"{p.partitions}: partitions {p.partitions}..{p.partitions + extra - 1} of "
                "the target are not compared"
            )
    if options.wait_timeout > 0 and not wait.caught_up:
        warnings.append(
            f"the target had not caught up with the snapshot after {wait.waited_s:g}s: "
            f"{', '.join(wait.lagging[:10])}"
        )
    return Prepared(config, options, plans, snapshot, wait, started, warnings,
                    schemaids.prepare(config))  # fmt: skip


# --------------------------------------------------------------------------- Spark part


def _view(plan: TopicPlan, options: Options) -> Literal["records", "latest"]:
    return "latest" if plan.compacted and options.compacted == "latest" else "records"


def _ranges(
    prep: Prepared, view: str, only: Callable[[TP], bool] = lambda tp: True
) -> tuple[list[sparkio.Range], list[sparkio.Range]]:
    """Source and target ranges of the topics compared in `view`, for the source
    partitions `only` accepts."""
    same = prep.config.keeps_partitions
    src: list[sparkio.Range] = []
    tgt: list[sparkio.Range] = []
    for plan in prep.plans:
        if _view(plan, prep.options) != view:
            continue
        for p in range(plan.partitions):
            if not only((plan.source, p)):
                continue
            low, _ = prep.snapshot.source[(plan.source, p)]
            src.append(sparkio.Range(plan.source, p, low,
                                     prep.snapshot.source_read_end[(plan.source, p)]))  # fmt: skip
        count = plan.target_partitions or 0
        for p in range(min(count, plan.partitions) if same else count):
            if same and not only((plan.source, p)):
                continue
            if (plan.target, p) in prep.snapshot.target:
                low, end = prep.snapshot.target[(plan.target, p)]
                tgt.append(sparkio.Range(plan.target, p, low, end))
    return src, tgt


def _read(
    spark: SparkSession,
    options: Mapping[str, Any],
    ranges: list[sparkio.Range],
    prep: Prepared,
    headers: bool,
) -> DataFrame:
    df = sparkio.read_kafka(spark, options, ranges, headers=headers,
                            records_per_task=prep.options.records_per_task)  # fmt: skip
    if df is None:
        df = spark.createDataFrame([], sparkio.KAFKA_SCHEMA)
    elif not headers:
        from pyspark.sql import functions as F  # noqa: N812

        df = df.withColumn("headers", F.lit(None).cast(compare.HEADERS_TYPE))
    return _since(df, prep, {(r.topic, r.partition) for r in ranges})


def _since(df: DataFrame, prep: Prepared, read: set[TP]) -> DataFrame:
    """Keep records with timestamps >= the bound of their partition (ranges without an
    exact target start, see kmirror_validate.ranges); `read` names the side's partitions."""
    names = {p.source: p.target for p in prep.plans}
    bound = {}
    for (topic, p), ms in prep.snapshot.since.items():
        for tp in ((topic, p), (names.get(topic, topic), p)):
            if tp in read:
                bound[tp] = ms
    if not bound:
        return df
    from pyspark.sql import functions as F  # noqa: N812

    from kmirror_validate.compare.digest import per_partition

    cut = per_partition(bound)
    return df.filter(cut.isNull() | (F.unix_millis(F.col("timestamp")) >= cut))


def _side_rows(
    spark: SparkSession, prep: Prepared, only: Callable[[TP], bool] = lambda tp: True
) -> DataFrame | None:
    """Normalised rows of both sides, every view, ready for counting and matching (None:
    nothing to read)."""
    from pyspark.sql import functions as F  # noqa: N812

    opts = prep.options
    digest = opts.mode != "count"
    src_opts = sparkio.reader_options(prep.config.source, opts.isolation)
    tgt_opts = sparkio.reader_options(prep.config.target, opts.isolation)
    snap = prep.snapshot
    bounds = {tp: end for tp, (_, end) in snap.source.items() if snap.source_read_end[tp] > end}
    names = {p.target: p.source for p in prep.plans}
    src_parts: list[DataFrame] = []
    tgt_parts: list[DataFrame] = []
    for view in ("records", "latest"):
        src_ranges, tgt_ranges = _ranges(prep, view, only)
        if not src_ranges and not tgt_ranges:
            continue
        headers = digest  # the latest view needs keys, hashed by normalize, not headers
        s_kafka = schemaids.translated(_read(spark, src_opts, src_ranges, prep, headers),
                                       prep.schema_ids)  # fmt: skip
        t_kafka = _read(spark, tgt_opts, tgt_ranges, prep, headers)
        if view == "records" and not digest:
            cols = ["topic", "partition", "offset"]
            rename = F.create_map(*[F.lit(x) for kv in names.items() for x in kv])
            s_rows = compare.mark_after_snapshot(s_kafka.select(*cols), bounds)
            t_rows = t_kafka.select(
                F.coalesce(rename[F.col("topic")], F.col("topic")).alias("topic"),
                "partition",
                "offset",
            )
            src_parts.append(s_rows)
            tgt_parts.append(t_rows)
            continue
        s_rows = compare.mark_after_snapshot(compare.normalize(s_kafka), bounds)
        t_rows = compare.normalize(t_kafka, names)
        if view == "latest":
            s_rows, t_rows = compare.latest_state(s_rows, t_rows)
        if opts.mode == "sample":
            s_rows = compare.sample(s_rows, opts.sample_fraction)
            t_rows = compare.sample(t_rows, opts.sample_fraction)
        if not digest:
            s_rows = s_rows.select("topic", "partition", "offset", "post")
            t_rows = t_rows.select("topic", "partition", "offset")
        src_parts.append(s_rows)
        tgt_parts.append(t_rows)
    if not src_parts:
        return None
    src_all, tgt_all = src_parts[0], tgt_parts[0]
    for s, t in zip(src_parts[1:], tgt_parts[1:], strict=True):
        src_all, tgt_all = src_all.unionByName(s), tgt_all.unionByName(t)
    return compare.side_rows(src_all, tgt_all, not prep.config.keeps_partitions)


def run(spark: SparkSession, prep: Prepared, progress: Progress | None = None) -> Report:
    """Read both sides, compare, build the report."""
    progress = progress or Progress(None, enabled=False)
    opts = prep.options
    outcome = compare.Outcome()
    if opts.mode == "digest" and prep.config.keeps_partitions:
        progress.phase("reading and fingerprinting")
        outcome = _exact_copies(spark, prep)
    # Whatever the fast path could not clear (None: it cleared everything).
    rows = _side_rows(spark, prep, only=lambda tp: tp not in outcome.counts)
    if rows is not None and opts.mode == "count":
        progress.phase("reading and counting")
        for r in compare.partition_counts(rows).collect():
            outcome.counts[(r["topic"], r["partition"])] = {
                k: int(r[k]) for k in ("source_count", "source_after_snapshot", "target_count")
            }
    elif rows is not None:
        progress.phase("reading and matching")
        latest = any(_view(p, opts) == "latest" for p in prep.plans)
        outcome.merge(compare.evaluate(
            rows,
            opts.max_examples,
            check_order=prep.config.keeps_partitions,
            counts_from_rows=opts.mode == "sample" or latest,
        ))  # fmt: skip
    prep.warnings.extend(retention_warnings(prep))
    report = _report(prep, outcome)
    if prep.schema_ids is not None:
        progress.phase("checking schema IDs on the target")
        report.schemas = _schema_check(spark, prep, prep.schema_ids)
    return report


def _schema_check(spark: SparkSession, prep: Prepared, ids: schemaids.SchemaIds) -> dict[str, Any]:
    """Every schema ID the compared target records use resolves on the target, to the same
    schema as at the source."""
    _, tgt_ranges = _ranges(prep, "records", lambda tp: True)
    _, latest = _ranges(prep, "latest", lambda tp: True)
    opts = sparkio.reader_options(prep.config.target, prep.options.isolation)
    used = schemaids.used_ids(_read(spark, opts, tgt_ranges + latest, prep, headers=False))
    return schemaids.check(prep.config, ids, used)


def _exact_copies(spark: SparkSession, prep: Prepared) -> compare.Outcome:
    """The partitions the fast path proves exact copies (compare.fast); the rest are left
    for the full comparison."""
    from kmirror_validate.compare import fast

    snap = prep.snapshot
    windows: dict[TP, fast.Window] = {}
    for plan in prep.plans:
        if _view(plan, prep.options) != "records" or plan.target_partitions is None:
            continue
        for p in range(min(plan.partitions, plan.target_partitions)):
            if (plan.target, p) in snap.target:
                low, end = snap.source[(plan.source, p)]
                t_low, t_end = snap.target[(plan.target, p)]
                windows[(plan.source, p)] = fast.Window(low, end, t_low, t_end)
    if not windows:
        return compare.Outcome()
    src_ranges, tgt_ranges = _ranges(prep, "records", lambda tp: tp in windows)
    src_opts = sparkio.reader_options(prep.config.source, prep.options.isolation)
    tgt_opts = sparkio.reader_options(prep.config.target, prep.options.isolation)
    prints = fast.fingerprints(
        schemaids.translated(_read(spark, src_opts, src_ranges, prep, headers=True),
                             prep.schema_ids) if src_ranges else None,
        _read(spark, tgt_opts, tgt_ranges, prep, headers=True) if tgt_ranges else None,
        windows,
        {p.target: p.source for p in prep.plans},
    )  # fmt: skip
    found = fast.exact_copies(prints, windows)
    log.info("fast path: %d of %d partitions are exact copies", len(found.counts), len(windows))
    return found


def retention_warnings(prep: Prepared) -> list[str]:
    """Partitions whose first offset moved past the snapshot while we read: retention (or
    deleteRecords) removed records, which then may not have been compared."""
    source, target = offsets.clients(prep.config, prep.options.connect_timeout)
    out: list[str] = []
    for side, client, before in (("source", source, prep.snapshot.source),
                                 ("target", target, prep.snapshot.target)):  # fmt: skip
        now = client.watermarks(list(before), prep.options.isolation)
        for (t, p), (low, _) in sorted(before.items()):
            moved = now.get((t, p), (low, 0))[0]
            if moved > low:
                out.append(
                    f"{side} {t}/{p}: offsets {low}..{moved - 1} were deleted (retention?) "
                    "during validation and may not have been compared"
                )
    return out


# --------------------------------------------------------------------------- report


def _report(prep: Prepared, outcome: compare.Outcome) -> Report:
    opts = prep.options
    same = prep.config.keeps_partitions
    digest = opts.mode != "count"
    snap = prep.snapshot
    topics: list[TopicResult] = []
    for plan in prep.plans:
        entries: list[PartitionResult] = []
        numbers = list(range(plan.partitions)) if same else [-1]
        for p in numbers:
            c = outcome.counts.get((plan.source, p), {})
            src_n = c.get("source_count", 0)
            after = c.get("source_after_snapshot", 0)
            tgt_n = c.get("target_count", 0)
            entry = PartitionResult(partition=p, source_count=src_n,
                                    source_after_snapshot=after, target_count=tgt_n,
                                    duplicates_allowed=opts.duplicates == "allow")  # fmt: skip
            if p >= 0:
                entry.source_start, entry.source_end = snap.source[(plan.source, p)]
                entry.source_read_end = snap.source_read_end[(plan.source, p)]
                if (plan.target, p) in snap.target:
                    entry.target_start, entry.target_end = snap.target[(plan.target, p)]
                entry.missing_partition = (
                    plan.target_partitions is not None and p >= plan.target_partitions
                )
            entry.count_missing = max(0, src_n - tgt_n)
            entry.count_extra = max(0, tgt_n - src_n - after)
            if not digest:
                entry.missing, entry.extra = entry.count_missing, entry.count_extra
            else:
                entry.matched = c.get("matched", 0)
                _fill_digest(entry, plan.source, p, outcome, check_order=same)
            entries.append(entry)
        topics.append(TopicResult(
            topic=plan.source, target_topic=plan.target, partitions=entries,
            view=_view(plan, opts), compacted=plan.compacted, missing_topic=plan.missing_topic,
            target_partitions=plan.target_partitions,
        ))  # fmt: skip
    cfg = prep.config
    return Report(
        mode=opts.mode,
        topics=topics,
        duplicates=opts.duplicates,
        source={"bootstrap_servers": cfg.source.bootstrap_servers, "alias": cfg.source.alias},
        target={"bootstrap_servers": cfg.target.bootstrap_servers, "alias": cfg.target.alias},
        isolation_level=opts.isolation,
        range={
            "start": opts.bounds.start,
            "since_ms": opts.bounds.since_ms,
            "last": opts.bounds.last,
            "progress_records": snap.progress_records,
            "timestamp_bounded": len(snap.since),
        },
        sample_fraction=opts.sample_fraction if opts.mode == "sample" else None,
        started_at=datetime.fromtimestamp(prep.started, UTC).isoformat(timespec="seconds"),
        duration_s=time.time() - prep.started,
        wait={
            "timeout_s": opts.wait_timeout,
            "waited_s": prep.wait.waited_s,
            "caught_up": prep.wait.caught_up if opts.wait_timeout > 0 else None,
            "timed_out": opts.wait_timeout > 0 and not prep.wait.caught_up,
            "lagging": list(prep.wait.lagging),
        },
        warnings=list(prep.warnings),
    )


def _fill_digest(
    entry: PartitionResult, topic: str, p: int, outcome: compare.Outcome, check_order: bool
) -> None:
    def get(kind: str) -> tuple[int, list[Example]]:
        n, examples = outcome.problems.get((topic, p, kind), (0, []))
        return n, [Example(**e) for e in examples]

    for kind in KINDS:
        if kind is ORDER:
            continue  # from outcome.violations, below
        n, ex = get(kind.name)
        setattr(entry, kind.counter, n)
        if ex:
            entry.examples[kind.name] = ex
    entry.pending = get(PENDING.name)[0]
    entry.field_differs = {f: get(f"field:{f}")[0] for f in FIELD_NAMES}
    if check_order:
        n, offs = outcome.violations.get((topic, p), (0, []))
        entry.order_violations = n
        if offs:
            entry.examples[ORDER.name] = [Example(source_offset=o) for o in offs]
