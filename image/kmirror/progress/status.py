"""Per source partition, how far a mirror is: what `kmirror status` prints and the control API's
GET /status serves, in one shape.

Columns: the source's start and end offset; *copied*, the source offset up to which the target
acknowledged every record; *committed*, the mirror group's committed source offset (what a
restart resumes from); the target partition's end offset; *lag*, source end minus copied (or
committed when nothing says what was copied), i.e. records not yet on the target; and
*committed lag*, source end minus committed (what a restart would copy again).

Where copied and committed come from: a running mirror knows them live (`Positions`, the
streams' progress books, at most a second old); otherwise the persisted progress record on
the target (written at each commit) and the group's committed offsets. Committed offsets are
read with a consumer that never joins the group (kmirror.kafka.cluster says why), the progress
records with the mirror's own reader (kmirror.progress.reader).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from kmirror.config.model import MirrorConfig
from kmirror.kafka.cluster import Cluster
from kmirror.kafka.plan import plan
from kmirror.partitions import SourcePartition
from kmirror.progress.reader import read_progress

# A running mirror's positions: per source partition (acknowledged, committed), -1 for none.
Positions = Mapping[SourcePartition, tuple[int, int]]


@dataclass(frozen=True)
class Row:
    topic: str
    partition: int
    target_topic: str
    source_start: int
    source_end: int
    copied: int | None
    committed: int | None
    target_end: int | None
    lag: int
    committed_lag: int
    # copied and committed are the running mirror's (else: what was persisted).
    live: bool = False


def status_rows(config: MirrorConfig, timeout: float, live: Positions | None = None) -> list[Row]:
    topics = plan(config, timeout)  # bounded connection check of both clusters
    source = Cluster(config, "source", timeout)
    target = Cluster(config, "target", timeout)
    tps = [(r["source"], p) for r in topics for p in range(r["partitions"])]
    names = {r["source"]: r["target"] for r in topics}
    marks = source.watermarks(tps, "read_uncommitted")
    committed = {k: c.offset for k, c in source.committed(config.group_id, tps).items()}
    books = read_progress(config, timeout) or {}
    copied = {k: b.acked for k, b in books.items()}
    for key, (acked, done) in (live or {}).items():
        copied[key] = max(acked, copied.get(key, -1))
        if done >= 0:
            committed[key] = max(done, committed.get(key, -1))
    # Target ends per partition only mean something when partition numbers are kept.
    have = {r["target"]: r["target_partitions"] or 0 for r in topics}
    same = config.keeps_partitions
    tgt = [(names[t], p) for t, p in tps if same and p < have[names[t]]]
    target_ends = {k: end for k, (_, end) in target.watermarks(tgt, "read_uncommitted").items()}
    rows = []
    for t, p in tps:
        start, end = marks[(t, p)]
        done = copied.get((t, p), committed.get((t, p), start))
        base = committed.get((t, p), start)
        rows.append(
            Row(
                topic=t,
                partition=p,
                target_topic=names[t],
                source_start=start,
                source_end=end,
                copied=copied.get((t, p)),
                committed=committed.get((t, p)),
                target_end=target_ends.get((names[t], p)),
                lag=max(end - max(done, start), 0),
                committed_lag=max(end - max(base, start), 0),
                live=live is not None and (t, p) in live,
            )
        )
    return rows


def status_doc(config: MirrorConfig, rows: list[Row]) -> dict[str, Any]:
    """`kmirror status --json`, and one flow of GET /status."""
    return {
        "flow": config.flow,
        "group": config.group_id,
        "progress_topic": config.progress_topic,
        "partitions": [asdict(r) for r in rows],
        "lag": sum(r.lag for r in rows),
        "committed_lag": sum(r.committed_lag for r in rows),
    }


def table(rows: list[Row]) -> str:
    head = ("topic", "partition", "source end", "copied", "committed", "target end", "lag")
    body = [
        (
            r.topic,
            str(r.partition),
            str(r.source_end),
            *("-" if v is None else str(v) for v in (r.copied, r.committed, r.target_end)),
            str(r.lag),
        )
        for r in rows
    ]
    widths = [max(len(c) for c in col) for col in zip(head, *body, strict=True)]
    lines = []
    for cells in (head, *body):
        first, *rest = zip(cells, widths, strict=True)
        line = "  ".join([first[0].ljust(first[1]), *(c.rjust(w) for c, w in rest)])
        lines.append(line.rstrip())
    return "\n".join(lines)


def rows_from_doc(doc: Mapping[str, Any]) -> list[Row]:
    """Rows back from a status document (the CLI reads the running mirror's)."""
    names = {f.name for f in fields(Row)}
    return [Row(**{k: v for k, v in r.items() if k in names}) for r in doc["partitions"]]
