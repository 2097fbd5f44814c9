"""What disaster recovery reads from the target cluster: the mirror's persisted progress and
MM2's checkpoints topic."""

from __future__ import annotations

from kmirror.config.model import MirrorConfig
from kmirror.dr.formats import Checkpoint
from kmirror.errors import GroupError
from kmirror.kafka.topicreader import TopicReader
from kmirror.partitions import SourcePartition
from kmirror.progress.book import PartitionBook
from kmirror.progress.reader import read_progress as read_books

# A read of either topic gives up after this long (it runs in DR's thread or a command).
READ_TIMEOUT_S = 60.0


def read_progress(config: MirrorConfig) -> dict[SourcePartition, PartitionBook]:
    """The newest progress record per source partition (tombstones drop the partition)."""
    books = read_books(config, READ_TIMEOUT_S)
    if books is None:
        raise GroupError(
            f"the progress topic {config.progress_topic} does not exist on the target "
            f"({config.target.bootstrap_servers}): the mirror with group.id {config.group_id} "
            "has not run with this kmirror version yet, or --group-id / the config names "
            "another mirror"
        )
    return books


def read_checkpoints(config: MirrorConfig) -> list[Checkpoint]:
    """Every checkpoint record in `<source alias>.checkpoints.internal`, in order."""
    topic = config.rename.checkpoints_topic
    reader = TopicReader(config, "target", topic, "kmirror-dr-reader")
    try:
        records = reader.read(READ_TIMEOUT_S)
    finally:
        reader.close()
    if records is None:
        raise GroupError(
            f"the checkpoints topic {topic} does not exist on the target "
            f"({config.target.bootstrap_servers}): run the mirror with emit.checkpoints.enabled="
            "true (MM1/KUDO: --emit-checkpoints true) first"
        )
    return [Checkpoint.decode(k, v) for k, v in records if v is not None]
