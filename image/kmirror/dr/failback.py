"""Exact failback: a consumer group that failed over to the target (B) and consumed the
mirrored topics there goes back to their source topics on A at exactly the next record it had
not consumed (`kmirror failback`, docs/disaster-recovery.md).

Two progress books answer, read by the one progress reader:

* the A->B book (on B) maps every copy on B back to its source offset on A
  (PartitionBook.translate_back): a group whose position on B lies within what A->B copied
  resumes on A at the source offset of the first copy it had not read, or, past the last copy,
  at the first A record the mirror had not copied (which the group never saw);
* the B->A book (on A, kept by the reverse flow) maps records produced on B after the failover
  (into the same topic: identity policy or a topic map) to their copies on A: a group that
  consumed some of them resumes at the copy of the first one it had not read.

With the prefix policy nothing is produced into `A.orders` on B (producers write B's own
`orders`, which B->A copies to `B.orders` on A): the A->B book alone answers, and `kmirror
failover` of the reverse flow moves the group on `B.orders`.

`start_reverse` prepares the reverse flow for a shared topic: its consumer group on B starts
each partition after the last copy A->B made, so B->A copies only what was produced on B and
never copies A's records back into A.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import re
from dataclasses import dataclass

from kmirror.config.model import MirrorConfig, RenamePolicy, TopicSelection
from kmirror.config.topicmap import TopicMapping
from kmirror.dr import store
from kmirror.errors import GroupError
from kmirror.kafka.cluster import Cluster
from kmirror.partitions import SourcePartition
from kmirror.progress.book import PartitionBook

log = logging.getLogger(__name__)

# Commit metadata of a failback. Not `kmirror:` (translate.METADATA_PREFIX): the group on A
# belongs to its consumers again, and the reverse flow's group offset sync leaves it alone.
FAILBACK_METADATA = "kmirror-failback"


def reverse_of(config: MirrorConfig, group_id: str, progress_topic: str = "") -> MirrorConfig:
    """The B->A flow of a mirror configured without one (MM1, KUDO: --reverse-group-id): the
    clusters swapped, the reverse flow's group and progress topic, and the topic mapping
    inverted over the topics the A->B progress book knows (exactly what B->A must be run with
    to put records produced on B back into their source topics)."""
    sources = sorted({s for s, _ in store.read_progress(config)})
    back = tuple((config.target_topic(s), s) for s in sources)
    return dataclasses.replace(
        config,
        source=config.target,
        target=config.source,
        group_id=group_id,
        progress_topic_name=progress_topic,
        topics=TopicSelection(include=tuple(re.escape(t) for t, _ in back) or ("(?!)",)),
        rename=RenamePolicy(
            source_alias=config.rename.target_alias,
            target_alias=config.rename.source_alias,
            mapping=TopicMapping(back),
        ),
        notes=(),
    )


@dataclass(frozen=True)
class Back:
    """One partition of a failback: the group on B, and where it resumes on A."""

    source_topic: str
    partition: int
    target_topic: str
    on_target: int  # the group's committed offset on B
    before: int | None  # the group's committed offset on A now
    after: int | None  # where failback sets it on A (None: cannot say; `why` tells)
    via: str  # "A->B progress" or "B->A progress" (which book answered), or ""
    why: str = ""


def failback_plan(
    config: MirrorConfig,
    group: str,
    reverse: MirrorConfig | None = None,
    books: dict[SourcePartition, PartitionBook] | None = None,
) -> list[Back]:
    """Where `group`, committed on B's mirrored topics, resumes on A. Read-only (`books`: the
    A->B progress when the caller read it already). Raises GroupError when the group has no
    position on B to go back from."""
    books = store.read_progress(config) if books is None else books
    back_books = store.read_progress(reverse) if reverse is not None else {}
    keys = {(config.target_topic(s), p): (s, p) for s, p in books}
    on_target = Cluster(config, "target").committed(group, keys)
    if not on_target:
        raise GroupError(
            f"group {group} has no committed offsets on the mirrored topics on the target "
            f"({config.target.bootstrap_servers}): nothing to fail back (check the group name "
            "and that its consumers committed there)"
        )
    now = Cluster(config, "source").committed(group, [keys[k] for k in on_target])
    plan = []
    for (t, p), commit in sorted(on_target.items()):
        s, _ = keys[(t, p)]
        after, via, why = resume_at(commit.offset, books[(s, p)], back_books.get((t, p)), reverse)
        before = now[(s, p)].offset if (s, p) in now else None
        plan.append(Back(s, p, t, commit.offset, before, after, via, why))
    return plan


def resume_at(
    offset: int,
    book: PartitionBook,
    back: PartitionBook | None,
    reverse: MirrorConfig | None,
) -> tuple[int | None, str, str]:
    """(offset on A, the book that answered, why not) for a group at `offset` on B: `book` is
    the partition's A->B progress, `back` the B->A progress of its target partition."""
    end = book.target_end
    if end is not None and offset <= end:
        source = book.translate_back(offset)
        if source is not None:
            return source, "A->B progress", ""
        return (
            None,
            "",
            (
                f"target offset {offset} is older than the oldest copy the A->B progress book "
                "keeps: set this partition by hand"
            ),
        )
    # The group read past A->B's last copy: records produced on B, copied to A by B->A.
    if reverse is None:
        return (
            None,
            "",
            (
                f"the group read past the last copy of A->B (target offset {end}): records "
                "produced on B; give the reverse flow (--reverse-flow or --reverse-group-id) so "
                "its progress book can place them on A"
            ),
        )
    there = back.translate(offset) if back is not None else None
    if there is None:
        return (
            None,
            "",
            (
                f"the reverse flow (group {reverse.group_id}) has not copied up to target offset "
                f"{offset} yet: let it catch up (kmirror status of the reverse flow)"
            ),
        )
    return there, "B->A progress", ""


def check_plan(config: MirrorConfig, group: str, plan: list[Back]) -> dict[SourcePartition, int]:
    """The offsets to write on A, or GroupError (nothing written) when a partition cannot be
    placed or the group is active on A."""
    unknown = [b for b in plan if b.after is None]
    if unknown:
        listed = "; ".join(f"{b.target_topic}[{b.partition}]: {b.why}" for b in unknown)
        raise GroupError(f"failback of group {group} refused, nothing written: {listed}")
    members = Cluster(config, "source").active_members(group)
    if members:
        raise GroupError(
            f"group {group} has {members} active member(s) on the source: stop its consumers "
            "there first (failback never moves a group under running consumers); nothing "
            "was written"
        )
    return {(b.source_topic, b.partition): b.after for b in plan if b.after is not None}


def apply(config: MirrorConfig, group: str, offsets: dict[SourcePartition, int]) -> None:
    Cluster(config, "source").commit(group, offsets, FAILBACK_METADATA)


@dataclass(frozen=True)
class Start:
    """The reverse flow's start on one partition of B: after the last copy A->B made."""

    target_topic: str
    partition: int
    before: int | None  # the reverse flow's group's committed offset on B now
    after: int


def start_reverse_plan(config: MirrorConfig, reverse: MirrorConfig) -> list[Start]:
    """Where the reverse flow (consumer group `reverse.group_id` on this flow's target) starts
    each partition it reads back into its source topic: after the last copy this flow made.

    A partition qualifies when the copies there are all this flow wrote in that stretch (its
    runs are contiguous on the target: no record of another writer among them, which starting
    after them would skip) and the reverse group has not read it yet, or stands right before
    the copies (it stopped there: A->B resuming after a failback). Refuses (GroupError,
    nothing written) otherwise, and when the reverse group has active members."""
    books = store.read_progress(config)
    wanted = {
        (config.target_topic(s), p): book
        for (s, p), book in books.items()
        if book.runs
        and reverse.topics.matches(config.target_topic(s))
        and reverse.target_topic(config.target_topic(s)) == s
    }
    if not wanted:
        names = sorted({config.target_topic(s) for s, _ in books})
        raise GroupError(
            "the reverse flow copies none of the mirrored topics back into its source topic "
            f"(this flow writes {', '.join(names) or 'nothing'}): nothing to prepare (with the "
            "prefix policy the reverse flow never reads them)"
        )
    target = Cluster(config, "target")
    members = target.active_members(reverse.group_id)
    if members:
        raise GroupError(
            f"the reverse flow's group {reverse.group_id} has {members} active member(s): "
            "stop it first; nothing was written"
        )
    now = target.committed(reverse.group_id, wanted)
    starts, refused = [], []
    for (t, p), book in sorted(wanted.items()):
        runs, before = book.runs, now[(t, p)].offset if (t, p) in now else None
        end = runs[-1].target_end
        if any(a.target_end != b.target_start for a, b in itertools.pairwise(runs)):
            refused.append(f"{t}[{p}]: other records lie among this flow's copies")
        elif before is None or before == runs[0].target_start:
            starts.append(Start(t, p, before, end))
        elif before != end:
            refused.append(
                f"{t}[{p}]: the group stands at {before}, not before the copies "
                f"({runs[0].target_start}..{end - 1}): moving it could skip or repeat records"
            )
    if refused:
        raise GroupError(
            f"cannot start the reverse flow's group {reverse.group_id} after this flow's "
            f"copies, nothing written: {'; '.join(refused)}. Set its offsets by hand"
        )
    return starts


def apply_start(config: MirrorConfig, reverse: MirrorConfig, starts: list[Start]) -> None:
    offsets = {(s.target_topic, s.partition): s.after for s in starts}
    Cluster(config, "target").commit(reverse.group_id, offsets, FAILBACK_METADATA)
