"""Group offsets across clusters: exact checkpoints from the progress book, and which of them
group offset sync may write. Pure functions; the broker calls are in cluster.py."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from kmirror.dr.formats import Checkpoint
from kmirror.partitions import SourcePartition
from kmirror.progress.book import PartitionBook

# Commit metadata kmirror writes with translated offsets. An offset on the target with other
# metadata was committed by a consumer there: the group belongs to the target from then on.
METADATA_PREFIX = "kmirror:"


def marker(source_alias: str) -> str:
    return f"{METADATA_PREFIX}{source_alias}"


def checkpoints_for(
    group: str,
    committed: Mapping[SourcePartition, int],
    books: Mapping[SourcePartition, PartitionBook],
    target_topic: Callable[[str], str],
) -> list[Checkpoint]:
    """One checkpoint per source partition the group committed and the mirror copied.

    A group committed at source offset X resumes on the target at the first record copied from
    a source offset >= X (PartitionBook.translate). A group ahead of the mirror (X beyond what
    the target acknowledged) resumes where the mirror's next record will land: it reads the
    records in between again rather than missing them. A partition the mirror copied nothing
    of yet has no checkpoint.
    """
    out = []
    for (topic, partition), offset in sorted(committed.items()):
        book = books.get((topic, partition))
        if book is None:
            continue
        downstream = book.translate(min(offset, book.acked))
        if downstream is None:
            continue
        out.append(Checkpoint(group, target_topic(topic), partition, offset, downstream))
    return out


def sync_plan(
    checkpoints: list[Checkpoint], target_committed: Mapping[SourcePartition, tuple[int, str]]
) -> dict[SourcePartition, int] | None:
    """Offsets group offset sync writes into the target group, or None when the group is not
    ours to move: a consumer on the target committed it (any offset whose metadata is not
    kmirror's). Never moves a partition backwards."""
    if any(not meta.startswith(METADATA_PREFIX) for _, meta in target_committed.values()):
        return None
    plan: dict[SourcePartition, int] = {}
    for cp in checkpoints:
        key = (cp.topic, cp.partition)
        current = target_committed.get(key)
        if current is None or cp.downstream_offset > current[0]:
            plan[key] = cp.downstream_offset
    return plan


def latest_checkpoints(
    records: list[Checkpoint], group: str | None = None
) -> dict[tuple[str, str, int], Checkpoint]:
    """The newest checkpoint per (group, target topic, partition), as a compacted topic keeps."""
    out: dict[tuple[str, str, int], Checkpoint] = {}
    for cp in records:
        if group is None or cp.group == group:
            out[(cp.group, cp.topic, cp.partition)] = cp
    return out
