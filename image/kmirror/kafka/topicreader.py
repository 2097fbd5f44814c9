"""Reading a topic to its end: the small compacted topics kmirror keeps or reads (its progress
topic on the target, MM2's checkpoints topic).

The reader assigns every partition of the topic itself (its consumer never joins a group) and
reads with read_committed, from where its last read stopped, to the end readable now; so a
mirror that reads the progress topic at every assignment reads only what is new. For a
read_committed consumer that end is the last stable offset: librdkafka's watermark query and
its end-of-partition event both stop there. Records of a transaction still open, and
committed records behind its first one, are left to a later read (the progress topic takes a
record of a transaction only at its commit point, so that window is short, unless the
transaction's producer died in it). Transaction markers and aborted records are passed by
the consumer's position, not by a record.

Errors: a refusal (not retriable: authorization, a deleted topic) stops the read at once; a
retriable error is logged and the read goes on until its budget ends (ClusterError, naming
the offset it reached).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from kmirror.config.model import MirrorConfig
from kmirror.errors import ClusterError
from kmirror.kafka import clients

log = logging.getLogger(__name__)

Record = tuple[bytes, bytes | None]  # key, value (None: a tombstone)
_MISSING = (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC)


class TopicReader:
    def __init__(
        self,
        config: MirrorConfig,
        side: clients.Side,
        topic: str,
        group: str,
        *,
        overrides: clients.Overrides = None,
    ) -> None:
        self.topic = topic
        self._config = config
        self._side = side
        self._group = group  # required by the client; assign() never joins it
        self._overrides = overrides
        self._consumer: Consumer | None = None
        self._positions: dict[int, int] = {}  # partition -> where the next read starts

    def _client(self) -> Consumer:
        if self._consumer is None:
            overrides = {"enable.partition.eof": True, **(self._overrides or {})}
            self._consumer = clients.reader(self._config, self._side, self._group, overrides)
        return self._consumer

    def _fail(self, what: str) -> ClusterError:
        return ClusterError(f"could not read topic '{self.topic}' on the {self._side}: {what}")

    def read(self, budget_s: float) -> list[Record] | None:
        """The records since the last read, in offset order per partition; None when the topic
        does not exist. Raises ClusterError when the end is not reached within budget_s."""
        consumer = self._client()
        deadline = time.monotonic() + budget_s
        try:
            meta = consumer.list_topics(self.topic, timeout=budget_s).topics.get(self.topic)
            if meta is None or (meta.error is not None and meta.error.code() in _MISSING):
                return None
            if meta.error is not None:  # there, but not answering (no leader yet): not empty
                raise self._fail(meta.error.str())
            ends: dict[int, int] = {}
            for p in sorted(meta.partitions):
                tp = TopicPartition(self.topic, p)
                low, high = consumer.get_watermark_offsets(
                    tp, timeout=max(deadline - time.monotonic(), 0.1), cached=False
                )
                self._positions[p] = max(self._positions.get(p, low), low)
                if self._positions[p] < high:
                    ends[p] = high
        except KafkaException as exc:
            raise self._fail(str(exc.args[0] if exc.args else exc)) from exc
        if not ends:
            return []
        return self._read(consumer, ends, deadline, budget_s)

    def _read(
        self, consumer: Consumer, ends: dict[int, int], deadline: float, budget_s: float
    ) -> list[Record]:
        out: list[Record] = []
        parts = [TopicPartition(self.topic, p, self._positions[p]) for p in sorted(ends)]
        consumer.assign(parts)
        try:
            while ends:
                if time.monotonic() >= deadline:
                    p = min(ends)
                    raise self._fail(
                        f"not at its end within {budget_s:.0f}s (partition {p} at offset "
                        f"{self._positions[p]} of {ends[p]}); check the {self._side} cluster"
                    )
                for msg in consumer.consume(1000, 0.5):
                    self._take(msg, ends, out)
                # Past what no message shows: transaction markers and aborted records.
                for tp in consumer.position([TopicPartition(self.topic, p) for p in ends]):
                    self._advance(tp.partition, tp.offset, ends)
        except KafkaException as exc:
            raise self._fail(str(exc.args[0] if exc.args else exc)) from exc
        finally:
            consumer.unassign()
        return out

    def _take(self, msg: Any, ends: dict[int, int], out: list[Record]) -> None:
        p = int(msg.partition() or 0)
        err: KafkaError | None = msg.error()
        if err is None:
            out.append((msg.key() or b"", msg.value()))
            self._advance(p, int(msg.offset() or 0) + 1, ends)
        elif err.code() == KafkaError._PARTITION_EOF:  # what is readable now has been read
            self._advance(p, int(msg.offset() or 0), ends)
            ends.pop(p, None)
        elif not err.retriable():
            raise self._fail(err.str())
        else:
            log.warning("reading topic=%s partition=%d: %s", self.topic, p, err.str())

    def _advance(self, partition: int, offset: int, ends: dict[int, int]) -> None:
        if offset >= 0 and partition in ends:
            self._positions[partition] = max(self._positions[partition], offset)
            if self._positions[partition] >= ends[partition]:
                del ends[partition]

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
