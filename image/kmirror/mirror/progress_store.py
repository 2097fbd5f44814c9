"""The progress book on the target cluster: a compacted topic, one record per source partition.

At every commit, before the source offsets are committed, the stream writes the changed
partitions' records (`progress.encode_record`) and waits for the target to acknowledge them; on
assignment it reads the topic to its end and resumes each partition's runs. So the
source->target runs survive restarts and rescheduling, and the disaster-recovery side
(checkpoints, failover) reads the same records. The topic has one partition: the records are
small, and a reader catches up with a single fetch loop.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    Message,
    Producer,
    TopicPartition,
)

from kmirror.config import txn
from kmirror.config.model import MirrorConfig
from kmirror.errors import ClusterError
from kmirror.mirror.progress import Key, PartitionBook, ProgressBook, decode_record, encode_record
from kmirror.mirror.topics import ADMIN_TIMEOUT_S, TopicManager

log = logging.getLogger(__name__)

LOAD_TIMEOUT_S = 30.0
EOS_LOAD_MAX_S = 100.0
PROGRESS_PARTITIONS = 1


class ProgressStore:
    def __init__(self, config: MirrorConfig, topics: TopicManager) -> None:
        self.topic = config.progress_topic
        self._config = config
        self._topics = topics
        self._producer: Producer | None = None
        self._reader: Consumer | None = None
        self._failures: list[KafkaError] = []
        # Everything read so far (latest record per source partition) and where to go on.
        self._latest: dict[Key, PartitionBook | None] = {}
        self._position = OFFSET_BEGINNING

    def ensure(self, online_timeout: float = ADMIN_TIMEOUT_S) -> None:
        """Create the topic (compacted) when missing; wait until it answers (raises
        PartitionsOfflineError when it does not within online_timeout)."""
        self._topics.ensure_internal(
            self.topic, PROGRESS_PARTITIONS, {"cleanup.policy": "compact"}, online_timeout
        )

    # -- writing -------------------------------------------------------------------------------

    def write(self, book: ProgressBook, keys: Iterable[Key], timeout: float) -> KafkaError | None:
        """Write these partitions' records; None once the target acknowledged all of them,
        else the first error (nothing may be committed then)."""
        producer = self._writer()
        self._failures.clear()
        for topic, partition in keys:
            pb = book.get(topic, partition)
            if pb is None:
                continue
            key, value = encode_record(topic, partition, pb)
            produce_ok = False
            while not produce_ok:
                try:
                    producer.produce(self.topic, value, key)
                    produce_ok = True
                except BufferError:
                    producer.poll(0.05)
        remaining = producer.flush(timeout)
        if self._failures:
            return self._failures[0]
        if remaining:
            return KafkaError(KafkaError._MSG_TIMED_OUT, f"{remaining} progress record(s)")
        return None

    def _writer(self) -> Producer:
        if self._producer is None:
            conf: dict[str, Any] = {
                **self._config.producer_conf(),
                "linger.ms": "0",  # a commit waits for these few records
                "on_delivery": self._on_delivery,
                "logger": logging.getLogger("kmirror.librdkafka"),
            }
            conf.pop("statistics.interval.ms", None)
            conf.pop("partitioner", None)
            self._producer = Producer(conf)
        return self._producer

    def _on_delivery(self, err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            self._failures.append(err)

    # -- reading -------------------------------------------------------------------------------

    def load(self, keys: Iterable[Key]) -> dict[Key, PartitionBook]:
        """The persisted book of each of these partitions that has one (read to the end of the
        topic first, bounded by LOAD_TIMEOUT_S)."""
        self._catch_up()
        out = {}
        for key in keys:
            book = self._latest.get(key)
            if book is not None:
                out[key] = book
        return out

    def _catch_up(self) -> None:
        reader = self._read_client()
        tp = TopicPartition(self.topic, 0)
        # Exactly-once: a transaction a killed owner left open holds read_committed readers
        # back until its next owner aborts it, or, for a partition nobody owns any more, until
        # the broker times it out (transaction.timeout.ms); below the supervisor's 120 s
        # heartbeat limit (this runs in the assignment callback).
        budget = LOAD_TIMEOUT_S
        if self._config.exactly_once:
            budget = min(max(budget, txn.timeout_ms(self._config) / 1000 + 10), EOS_LOAD_MAX_S)
        deadline = time.monotonic() + budget
        try:
            low, high = reader.get_watermark_offsets(tp, timeout=LOAD_TIMEOUT_S, cached=False)
        except Exception as exc:
            raise ClusterError(
                f"could not read the progress topic '{self.topic}' on the target: {exc}"
            ) from exc
        position = max(self._position, low) if self._position >= 0 else low
        if position >= high:
            return
        reader.assign([TopicPartition(self.topic, 0, position)])
        try:
            while position < high:
                if time.monotonic() >= deadline:
                    raise ClusterError(
                        f"could not read the progress topic '{self.topic}' to its end within "
                        f"{budget:.0f}s (at offset {position} of {high}); check the "
                        "target cluster"
                    )
                for m in reader.consume(1000, 0.5):
                    if m.error() is not None:
                        log.warning("progress topic read error: %s", m.error())
                        continue
                    topic, partition, book = decode_record(m.key() or b"", m.value())
                    self._latest[(topic, partition)] = book
                    position = max(position, int(m.offset() or 0) + 1)
                # Past what no message shows: transaction markers and aborted records
                # (exactly-once writes the topic in transactions; the reader is read_committed).
                at = reader.position([tp])[0].offset
                position = max(position, at)
        finally:
            reader.unassign()
        self._position = position

    def _read_client(self) -> Consumer:
        if self._reader is None:
            conf: dict[str, Any] = {
                **self._config.target_reader_conf(),
                "logger": logging.getLogger("kmirror.librdkafka"),
            }
            self._reader = Consumer(conf)
        return self._reader

    def close(self, timeout: float) -> None:
        if self._producer is not None:
            self._producer.flush(timeout)
        if self._reader is not None:
            self._reader.close()
