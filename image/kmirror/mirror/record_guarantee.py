"""The delivery guarantee's record-path part: which confluent-kafka producer a record goes
through. The record copier (record_copier.py) takes the guarantee (guarantee.py) as a
constructor argument and sends through its `record` part, the same either way:

- `RecordAtLeastOnce` (here): one idempotent producer for every partition; nothing to open,
  commit or fence (the stream's commit point writes the progress records after the flush).
- `RecordExactlyOnce` (record_transactions.py): a transactional producer per source partition,
  the records and the partition's progress record in one transaction.
"""

from __future__ import annotations

from confluent_kafka import KafkaError, Producer

from kmirror.kafka import clients
from kmirror.mirror.contract import CopierContext, Forget, OnDelivery
from kmirror.partitions import SourcePartition


class RecordAtLeastOnce:
    """One idempotent producer for every partition; nothing to open, commit or fence."""

    _producer: Producer

    def attach(self, ctx: CopierContext, on_delivery: OnDelivery, forget: Forget) -> Producer:
        self._producer = clients.producer(
            ctx.config, {"on_delivery": on_delivery, "error_cb": ctx.error_cb}
        )
        return self._producer

    def producer_for(self, key: SourcePartition) -> Producer | None:
        return self._producer

    def fencing(self, key: SourcePartition, err: KafkaError) -> bool:
        return False

    def owns(self, key: SourcePartition) -> bool:
        return True

    def poll(self) -> None:
        self._producer.poll(0)

    def flush(self, timeout: float) -> int:
        return int(self._producer.flush(timeout))

    def abort(self) -> None:
        pass

    def release(self, keys: list[SourcePartition]) -> None:
        pass

    def drop_fenced(self) -> None:
        pass

    def close(self, timeout: float) -> None:
        self._producer.flush(timeout)
