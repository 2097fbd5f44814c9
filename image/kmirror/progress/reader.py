"""The one reader of the progress topic (`kmirror-progress.<group.id>.internal` on the target):
the newest progress record of each source partition, a tombstone forgetting it.

The mirror keeps a reader per stream and catches up at every assignment; `kmirror status`,
disaster recovery and the validator read once (`read_progress`). Under exactly-once the
records are written in transactions: each read goes to what is readable now
(kmirror.kafka.topicreader).
"""

from __future__ import annotations

from kmirror.config.model import MirrorConfig
from kmirror.kafka import clients
from kmirror.kafka.topicreader import TopicReader
from kmirror.partitions import SourcePartition
from kmirror.progress.book import PartitionBook
from kmirror.progress.codec import decode_record


class ProgressReader:
    def __init__(self, config: MirrorConfig, overrides: clients.Overrides = None) -> None:
        self.topic = config.progress_topic
        group = f"{config.group_id}.progress-reader"
        self._reader = TopicReader(config, "target", self.topic, group, overrides=overrides)
        # The newest book of every source partition read so far.
        self.books: dict[SourcePartition, PartitionBook] = {}

    def catch_up(self, budget_s: float) -> bool:
        """Read what was written since the last call (ClusterError when the end is not reached
        within budget_s). False when the topic does not exist."""
        records = self._reader.read(budget_s)
        if records is None:
            return False
        for key, value in records:
            topic, partition, book = decode_record(key, value)
            if book is None:
                self.books.pop((topic, partition), None)
            else:
                self.books[(topic, partition)] = book
        return True

    def close(self) -> None:
        self._reader.close()


def read_progress(
    config: MirrorConfig, timeout_s: float, overrides: clients.Overrides = None
) -> dict[SourcePartition, PartitionBook] | None:
    """Every source partition's newest book, read once; None when the mirror keeps no progress
    topic (yet)."""
    reader = ProgressReader(config, overrides=overrides)
    try:
        return reader.books if reader.catch_up(timeout_s) else None
    finally:
        reader.close()
