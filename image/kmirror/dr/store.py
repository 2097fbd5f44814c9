"""What disaster recovery reads from the target cluster: the mirror's persisted progress and
MM2's checkpoints topic."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kmirror.config.model import MirrorConfig
from kmirror.dr import cluster
from kmirror.dr.formats import Checkpoint
from kmirror.errors import GroupError
from kmirror.mirror.progress import Key, PartitionBook, decode_record


def read_progress(
    config: MirrorConfig, conf: Mapping[str, Any] | None = None
) -> dict[Key, PartitionBook]:
    """The newest progress record per source partition (tombstones drop the partition)."""
    topic = config.progress_topic
    records = cluster.read_topic(conf or config.admin_conf("target"), topic)
    if records is None:
        raise GroupError(
            f"the progress topic {topic} does not exist on the target "
            f"({config.target.bootstrap_servers}): the mirror with group.id {config.group_id} "
            "has not run with this kmirror version yet, or --group-id / the config names "
            "another mirror"
        )
    books: dict[Key, PartitionBook] = {}
    for key, value in records:
        topic_name, partition, book = decode_record(key, value)
        if book is None:
            books.pop((topic_name, partition), None)
        else:
            books[(topic_name, partition)] = book
    return books


def read_checkpoints(config: MirrorConfig) -> list[Checkpoint]:
    """Every checkpoint record in `<source alias>.checkpoints.internal`, in order."""
    topic = config.rename.checkpoints_topic
    records = cluster.read_topic(config.admin_conf("target"), topic)
    if records is None:
        raise GroupError(
            f"the checkpoints topic {topic} does not exist on the target "
            f"({config.target.bootstrap_servers}): run the mirror with emit.checkpoints.enabled="
            "true (MM1/KUDO: --emit-checkpoints true) first"
        )
    return [Checkpoint.decode(k, v) for k, v in records if v is not None]
