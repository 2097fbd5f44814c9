"""`kmirror status`: per source partition, how far the mirror is. Reads only, joins no group.

Columns: the source's end offset; *copied*, the source offset up to which the target
acknowledged every record (from the mirror's progress record on the target, when it keeps one);
*committed*, the mirror group's committed source offset (what a restart resumes from); the
target partition's end offset; *lag*, source end minus copied (or committed when no progress
record exists), i.e. records not yet on the target.

Committed offsets are read with a consumer that never joins the group (kmirror.kafka.cluster
says why), the progress records with the mirror's own reader (kmirror.progress.reader).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass

from kmirror.cli.check import plan
from kmirror.cli.flags import options_from
from kmirror.config.dialects.loader import load_config
from kmirror.config.model import MirrorConfig
from kmirror.kafka.cluster import Cluster
from kmirror.progress.reader import read_progress


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


def status_rows(config: MirrorConfig, timeout: float) -> list[Row]:
    topics = plan(config, timeout)  # bounded connection check of both clusters
    source = Cluster(config, "source", timeout)
    target = Cluster(config, "target", timeout)
    tps = [(r["source"], p) for r in topics for p in range(r["partitions"])]
    names = {r["source"]: r["target"] for r in topics}
    marks = source.watermarks(tps, "read_uncommitted")
    committed = {k: c.offset for k, c in source.committed(config.group_id, tps).items()}
    books = read_progress(config, timeout) or {}
    copied = {k: b.acked for k, b in books.items()}
    # Target ends per partition only mean something when partition numbers are kept.
    have = {r["target"]: r["target_partitions"] or 0 for r in topics}
    same = config.keeps_partitions
    tgt = [(names[t], p) for t, p in tps if same and p < have[names[t]]]
    target_ends = {k: end for k, (_, end) in target.watermarks(tgt, "read_uncommitted").items()}
    rows = []
    for t, p in tps:
        start, end = marks[(t, p)]
        done = copied.get((t, p), committed.get((t, p), start))
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
            )
        )
    return rows


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


def status(args: argparse.Namespace) -> int:
    config = load_config(options_from(args))
    for note in config.notes:
        print(f"warning: {note}", file=sys.stderr)
    rows = status_rows(config, args.timeout)
    if args.json:
        doc = {
            "group": config.group_id,
            "progress_topic": config.progress_topic,
            "partitions": [asdict(r) for r in rows],
            "lag": sum(r.lag for r in rows),
        }
        print(json.dumps(doc, indent=2))
    else:
        print(table(rows))
        print(f"total lag {sum(r.lag for r in rows)} record(s), group {config.group_id}")
    return 0
