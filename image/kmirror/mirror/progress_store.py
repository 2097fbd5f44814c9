"""The progress book on the target cluster: a compacted topic, one record per source partition.

At every commit, before the source offsets are committed, the stream writes the changed
partitions' records (kmirror.progress.codec) and waits for the target to acknowledge them; on
assignment it reads the topic to its end and resumes each partition's runs. So the
source->target runs survive restarts and rescheduling, and the disaster-recovery side
(checkpoints, failover) reads the same records (kmirror.progress.reader). The topic has one
partition: the records are small, and a reader catches up with a single fetch loop.
"""

from __future__ import annotations

from collections.abc import Iterable

from confluent_kafka import KafkaError

from kmirror.config.model import MirrorConfig
from kmirror.kafka.writer import AckedWriter
from kmirror.mirror.topics import ADMIN_TIMEOUT_S, TopicManager
from kmirror.partitions import SourcePartition
from kmirror.progress.book import PartitionBook, ProgressBook
from kmirror.progress.codec import encode_record
from kmirror.progress.reader import ProgressReader

LOAD_TIMEOUT_S = 30.0
EOS_LOAD_MAX_S = 100.0
PROGRESS_PARTITIONS = 1


class ProgressStore:
    def __init__(self, config: MirrorConfig, topics: TopicManager) -> None:
        self.topic = config.progress_topic
        self._config = config
        self._topics = topics
        self._writer = AckedWriter(config)
        self._reader = ProgressReader(config)

    def ensure(self, online_timeout: float = ADMIN_TIMEOUT_S) -> None:
        """Create the topic (compacted) when missing; wait until it answers (raises
        PartitionsOfflineError when it does not within online_timeout)."""
        self._topics.ensure_internal(
            self.topic, PROGRESS_PARTITIONS, {"cleanup.policy": "compact"}, online_timeout
        )

    # -- writing -------------------------------------------------------------------------------

    def write(
        self, book: ProgressBook, keys: Iterable[SourcePartition], timeout: float
    ) -> KafkaError | None:
        """Write these partitions' records; None once the target acknowledged all of them,
        else the first error (nothing may be committed then)."""
        records = [
            encode_record(topic, partition, pb)
            for topic, partition in keys
            if (pb := book.get(topic, partition)) is not None
        ]
        return self._writer.send(self.topic, records, timeout)

    # -- reading -------------------------------------------------------------------------------

    def load(self, keys: Iterable[SourcePartition]) -> dict[SourcePartition, PartitionBook]:
        """The persisted book of each of these partitions that has one (read to the end of the
        topic first, bounded by LOAD_TIMEOUT_S)."""
        # Bounded below the supervisor's 120 s heartbeat limit (this runs in the assignment
        # callback); under exactly-once by the transaction timeout plus 10 s. The read stops
        # at the last stable offset (kmirror.kafka.topicreader): it does not wait for a
        # transaction left open, it leaves what is behind it to a later load.
        budget = LOAD_TIMEOUT_S
        if self._config.exactly_once:
            timeout_s = self._config.transaction_timeout_ms() / 1000
            budget = min(max(budget, timeout_s + 10), EOS_LOAD_MAX_S)
        self._reader.catch_up(budget)
        books = self._reader.books
        return {key: books[key] for key in keys if key in books}

    def close(self, timeout: float) -> None:
        self._writer.close(timeout)
        self._reader.close()
