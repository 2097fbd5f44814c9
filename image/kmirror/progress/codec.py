"""The progress record: one source partition's book as a record of the compacted progress topic
on the target (`kmirror-progress.<group.id>.internal`).

Key ``{"topic":…,"partition":…}``, value ``{"format":1,"acked":…,"runs":[[source,target,count],…]}``
(JSON); a tombstone (no value) forgets the partition. Written by the mirror at every commit
(inside the partition's transaction under exactly-once) and read by the mirror on assignment,
`kmirror status`, disaster recovery and the validator (kmirror.progress.reader).
"""

from __future__ import annotations

import json

from kmirror.errors import MirrorError
from kmirror.progress.book import PartitionBook, Run

PROGRESS_FORMAT = 1


def encode_record(topic: str, partition: int, book: PartitionBook) -> tuple[bytes, bytes]:
    """Key and value of the progress record for one partition (compacted topic on the target)."""
    key = json.dumps({"topic": topic, "partition": partition}, separators=(",", ":"))
    value = json.dumps(
        {
            "format": PROGRESS_FORMAT,
            "acked": book.acked,
            "runs": [[r.source_start, r.target_start, r.count] for r in book.runs],
        },
        separators=(",", ":"),
    )
    return key.encode(), value.encode()


def decode_record(key: bytes, value: bytes | None) -> tuple[str, int, PartitionBook | None]:
    """(topic, partition, book) from a progress record; book is None for a tombstone."""
    try:
        k = json.loads(key)
        topic, partition = str(k["topic"]), int(k["partition"])
        if value is None:
            return topic, partition, None
        v = json.loads(value)
        if int(v.get("format", 0)) != PROGRESS_FORMAT:
            raise ValueError(f"unknown format {v.get('format')}")
        runs = [Run(int(s), int(t), int(n)) for s, t, n in v["runs"]]
        return topic, partition, PartitionBook(acked=int(v["acked"]), runs=runs)
    except (ValueError, KeyError, TypeError) as exc:
        raise MirrorError(
            f"unreadable progress record {key!r}: {exc}. Was the progress topic written by "
            "another tool? Point kmirror at its own progress topic"
        ) from exc
