"""The record path's side of the control gate (kmirror.control.gate): which partitions the
consumer fetches, and which consumed records are copied.

- A partition at its limit (a paused topic; a drain's end reached) or held back by the throttle
  is paused in the consumer: librdkafka stops fetching it and drops what it had prefetched; no
  rebalance, the group does not notice.
- A record at or past its partition's limit that was consumed anyway (in the batch that reached
  the limit) is not copied: its offset is *held*, the consumer is seeked back there when the
  limit goes, and the progress book never moves past it (`clamp`), so nothing is lost.
- Records are charged to the throttle before they are produced; partitions that reached their
  source end are reported (the tail, kmirror.control.throttle).

Owned by the RecordCopier (kmirror.mirror.record_copier), which calls it at its step, its
settle, its revoke and its rewind. Partitions another owner paused (the hybrid copier's
batch-path partitions, the subscription's partitions waiting for a target leader) are not in
`mine` and are never resumed here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Set

from confluent_kafka import Consumer, KafkaException, Message, TopicPartition

from kmirror.control.gate import Gate
from kmirror.kafka.message import position
from kmirror.partitions import SourcePartition

log = logging.getLogger(__name__)

FIRST_RECORD_BYTES = 4096.0


class RecordGate:
    def __init__(self, gate: Gate, consumer: Consumer) -> None:
        self._gate = gate
        self._consumer = consumer
        self._version = -1
        self._mine: frozenset[SourcePartition] = frozenset()
        self._limits: dict[SourcePartition, int] = {}
        self.held: dict[SourcePartition, int] = {}  # the first offset not copied
        self._paused: set[SourcePartition] = set()  # paused here (not by another owner)
        # Bytes of key and value per record, as consumed lately (a bytes throttle's batch size;
        # a first guess on the large side keeps the first batch small).
        self._record_bytes = FIRST_RECORD_BYTES

    @property
    def active(self) -> bool:
        """Consumed records need a look (limits or a throttle are in force)."""
        return bool(self._limits) or self._gate.throttling

    def busy(self) -> bool:
        """Anything to do before a consume (else the step pays nothing for the gate)."""
        return (
            self._version != self._gate.version
            or bool(self._limits or self._paused)
            or self._gate.throttling
        )

    def regate(self, mine: Set[SourcePartition]) -> None:
        """Before a consume: pause what may not be fetched now, resume what may again."""
        if self._version != self._gate.version or mine != self._mine:
            self._version, self._mine = self._gate.version, frozenset(mine)
            self._limits = self._gate.limits(mine)
            # Gone (revoked, moved to the batch path): not ours. The batch path goes on from the
            # book, which never passed a held record, so nothing held is kept for a return.
            self._paused &= self._mine
            self.held = {k: v for k, v in self.held.items() if k in self._mine}
        closed = {k for k in mine if self._closed(k)}
        stop = sorted(closed - self._paused)
        go = sorted(self._paused - closed)
        if stop and self._call(self._consumer.pause, stop):
            self._paused.update(stop)
        for key in go:
            offset = self.held.get(key)
            tp = TopicPartition(*key)
            try:
                if offset is not None:
                    self._consumer.seek(TopicPartition(key[0], key[1], offset))
                self._consumer.resume([tp])
            except KafkaException as exc:
                log.debug("resume %s[%d] deferred: %s", key[0], key[1], exc)
                continue
            self.held.pop(key, None)
            self._paused.discard(key)

    def batch(self, most: int) -> int:
        """How many records to consume at once: under a throttle a consume is charged after it
        is taken, so its size bounds how far a step overdraws the limit."""
        return self._gate.batch(most, self._record_bytes)

    def _closed(self, key: SourcePartition) -> bool:
        limit = self._limits.get(key)
        if limit is not None and (limit <= 0 or self.held.get(key, -1) >= limit):
            return True
        return not self._gate.open(key)

    def _call(
        self, method: Callable[[list[TopicPartition]], object], keys: list[SourcePartition]
    ) -> bool:
        try:
            method([TopicPartition(*k) for k in keys])
        except KafkaException as exc:  # not taken by the consumer yet: next step
            log.debug("pause deferred: %s", exc)
            return False
        return True

    def admit(self, msgs: list[Message]) -> list[Message]:
        """The consumed records to copy: not those at or past their partition's limit (held
        instead); the rest charged to the throttle."""
        limits, held = self._limits, self.held
        throttling = self._gate.throttling
        out: list[Message] = []
        seen: dict[SourcePartition, list[int]] = {}  # records, bytes, last offset
        for m in msgs:
            if m.error() is not None:
                out.append(m)
                continue
            topic, partition, offset = position(m)
            key: SourcePartition = (topic, partition)
            limit = limits.get(key)
            if limit is not None and offset >= limit:
                held.setdefault(key, offset)
                continue
            out.append(m)
            if throttling:
                acc = seen.get(key)
                if acc is None:
                    acc = seen[key] = [0, 0, 0]
                acc[0] += 1
                acc[1] += len(m.key() or b"") + len(m.value() or b"")
                acc[2] = offset
        for key, (records, nbytes, last) in seen.items():
            self._mark_end(key, last)
            self._gate.charge(key, records, nbytes)
        if seen:
            records = sum(acc[0] for acc in seen.values())
            nbytes = sum(acc[1] for acc in seen.values())
            self._record_bytes = 0.8 * self._record_bytes + 0.2 * nbytes / records
        return out

    def _mark_end(self, key: SourcePartition, last: int) -> None:
        try:
            _, high = self._consumer.get_watermark_offsets(TopicPartition(*key), cached=True)
        except KafkaException:
            return
        if high >= 0 and last + 1 >= high:
            self._gate.at_end(key)

    def clamp(self, key: SourcePartition, position: int) -> int:
        """A consumer position the progress book may move to: never past a held record."""
        offset = self.held.get(key)
        return position if offset is None else min(position, offset)

    def forget(self, keys: Iterable[SourcePartition]) -> None:
        """Partitions revoked: nothing held or paused here any more."""
        keys = list(keys)
        for key in keys:
            self.held.pop(key, None)
            self._paused.discard(key)
        self._gate.forget(keys)

    def rewound(self, keys: Iterable[SourcePartition]) -> None:
        """The copier seeked these partitions back (failed sends): what was held comes again
        from the consumer, so nothing stays held, and they are fetched until the next step
        pauses them again."""
        keys = [k for k in keys if k in self.held or k in self._paused]
        for key in keys:
            self.held.pop(key, None)
        resume = [k for k in keys if k in self._paused]
        if resume and self._call(self._consumer.resume, resume):
            self._paused.difference_update(resume)
