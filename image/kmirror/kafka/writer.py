"""Writing kmirror's small topics on the target (the progress book, the control topic, the
schema ID map): a producer with the mirror's settings (idempotent, acks=all) that writes a few
records and waits until the target acknowledged every one, so the caller knows they are there
before it acts (a commit, a control change, a translated record). Never the user's
transactional.id: these writes are not part of a mirror transaction."""

from __future__ import annotations

from collections.abc import Iterable

from confluent_kafka import KafkaError, Message, Producer

from kmirror.config.model import MirrorConfig
from kmirror.kafka import clients

Record = tuple[bytes, bytes | None]  # key, value (None: a tombstone)


class AckedWriter:
    def __init__(self, config: MirrorConfig) -> None:
        self._config = config
        self._producer: Producer | None = None
        self._failures: list[KafkaError] = []
        # Records sent and not yet reported on. Counted here, not taken from `flush()`: its
        # answer is librdkafka's queue length, which also counts the client's own events (a
        # connection error, a log line), so it over-counts while the target is unreachable.
        self._unreported = 0

    def write(
        self, topic: str, records: Iterable[Record], timeout: float, partition: int | None = None
    ) -> str | None:
        """Write the records and wait up to `timeout`: None once all are acknowledged, else
        why not."""
        failure = self.send(topic, records, timeout, partition)
        return None if failure is None else str(failure.str())

    def send(
        self, topic: str, records: Iterable[Record], timeout: float, partition: int | None = None
    ) -> KafkaError | None:
        """`write`, answering with the first error itself (a _MSG_TIMED_OUT one for records
        still unacknowledged after `timeout`)."""
        producer = self._writer()
        self._failures.clear()
        for key, value in records:
            while True:
                try:
                    if partition is None:
                        producer.produce(topic, value, key)
                    else:
                        producer.produce(topic, value, key, partition=partition)
                    self._unreported += 1
                    break
                except BufferError:  # the local queue is full: let deliveries drain it
                    producer.poll(0.05)
        producer.flush(timeout)
        if self._failures:
            return self._failures[0]
        if self._unreported:
            return KafkaError(
                KafkaError._MSG_TIMED_OUT, f"{self._unreported} record(s) not acknowledged"
            )
        return None

    def _writer(self) -> Producer:
        if self._producer is None:
            self._producer = clients.producer(
                self._config,
                {
                    "linger.ms": "0",  # the caller waits for these few records
                    "on_delivery": self._on_delivery,
                    # librdkafka's default: the same key in the same partition, whatever
                    # --partitioning says; never the user's transactions.
                    "partitioner": None,
                    "transactional.id": None,
                },
            )
        return self._producer

    def _on_delivery(self, err: KafkaError | None, msg: Message) -> None:
        self._unreported -= 1
        if err is not None:
            self._failures.append(err)

    def close(self, timeout: float = 5) -> None:
        if self._producer is not None:
            self._producer.flush(timeout)
