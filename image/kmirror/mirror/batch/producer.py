"""An idempotent producer session on the target, for record batches fetched from the source.

Owns the producer id and epoch (InitProducerId), each target partition's sequence numbers and
its queue: source batches staged (``Staged``), and the batches built from them (``Pending``),
sent or not, in order. Like the Java producer: up to ``max_in_flight`` batches per partition
in flight (the broker de-duplicates the last five per producer), one batch per partition per
request, several requests in flight per connection. A batch is built when it can be sent (a
slot is free): the merger (merger.py) takes everything staged that fits into one. A retriable
error sends the partition's unacknowledged batches again, in order, with the same sequence
numbers, once everything it had in flight has come back; so does an
OUT_OF_ORDER_SEQUENCE_NUMBER behind a batch not acknowledged yet (``behind_unresolved``: a
leader change with batches in flight). Until a partition has acknowledged a batch of the
current producer id, it has one batch in flight only (``Queue.pipelined``). A broken
sequence (OUT_OF_ORDER_SEQUENCE_NUMBER of the next batch, UNKNOWN_PRODUCER_ID) starts a new
session and re-sends everything unacknowledged under the new producer id (at-least-once: the
target may hold a batch twice, the progress book records the newer copy).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError
from kafka.future import Future
from kafka.protocol.producer.produce import ProduceRequest
from kafka.protocol.producer.transaction import InitProducerIdRequest

from kmirror.errors import ClusterError, SendError
from kmirror.kafka.wire import Link
from kmirror.mirror.batch.merger import Merger, Pending, Staged
from kmirror.mirror.batch.records import stamp
from kmirror.partitions import TargetPartition

log = logging.getLogger(__name__)

PRODUCE_VERSION = 9  # topic names (v13+ wants topic ids); one batch per partition
# The broker's socket.request.max.bytes is 100 MB: a request carries one batch per partition
# (each within its topic's limit), and more partitions go into the next request.
MAX_REQUEST_BYTES = 64 * 1024 * 1024
RETRY_BACKOFF_S = 0.1
SEQUENCE_LIMIT = 2**31
DUPLICATE_SEQUENCE = 46
OUT_OF_ORDER_SEQUENCE = 45
TOO_LARGE = {10: "MESSAGE_TOO_LARGE", 18: "RECORD_LIST_TOO_LARGE"}
# The broker lost or refuses our sequence: a new producer id is the way out.
SESSION_ERRORS = {45, 47, 59, 90}
RETRIABLE = {3, 5, 6, 7, 13, 14, 15, 19, 20, 56, 74, 75, 78, 100}
REFUSED = {29: "TOPIC_AUTHORIZATION_FAILED", 31: "CLUSTER_AUTHORIZATION_FAILED"}
# How long after a partition's last acknowledgement the broker is taken to still hold our
# producer id's state there: far below the broker's producer.id.expiration.ms (1 day by
# default), after which it forgets an idle producer and takes any sequence again.
STATE_KEPT_S = 600.0


class BatchSendError(SendError):
    """The target did not acknowledge a batch of ``target`` (topic, partition). ``permanent``:
    it refuses it whatever we do (too large, not authorized), so retrying loops forever and
    skipping loses it. Otherwise (``code``: the broker's error code, None for a timeout) the
    loop decides, as for the record path: stop, or re-send from the last commit
    (abort.on.send.failure)."""

    def __init__(
        self,
        message: str,
        target: TargetPartition,
        *,
        permanent: bool = False,
        code: int | None = None,
    ) -> None:
        super().__init__(message)
        self.target = target
        self.permanent = permanent
        self.code = code

    def kafka_error(self) -> KafkaError:
        """What the latch records for it: a failed send, as librdkafka would report it."""
        return KafkaError(KafkaError._MSG_TIMED_OUT if self.code is None else self.code, str(self))


@dataclass(eq=False)
class Queue:
    topic: str
    partition: int
    items: deque[Pending] = field(default_factory=deque)  # built, in sequence order
    staged: deque[Staged] = field(default_factory=deque)  # not built yet: behind every item
    staged_bytes: int = 0
    next_sequence: int = 0
    sent: int = 0  # items[:sent] are in flight or acknowledged
    in_flight: int = 0
    retrying: bool = False
    retry_at: float = 0.0
    # The producer id and epoch of the last acknowledgement, and when it came.
    confirmed: tuple[int, int] = (-1, -1)
    confirmed_at: float = 0.0

    def pipelined(self, session: tuple[int, int], now: float) -> bool:
        """May more than one batch of this partition be in flight under `session`? Only once
        the broker holds that producer's state for the partition, i.e. acknowledged one of
        its batches. Before, the broker takes any sequence number as a first one: a batch
        behind a first one that failed (UNKNOWN_TOPIC_OR_PARTITION while a new target topic
        comes up, NOT_LEADER_OR_FOLLOWER) would be written ahead of it, and the retry would
        write it again, after (seen in CI: records 1251-1718 of a partition landed before
        0-1250, then all of them)."""
        return self.confirmed == session and now - self.confirmed_at < STATE_KEPT_S

    @property
    def oldest(self) -> float | None:
        """When the oldest unacknowledged batch was handed over (the delivery timeout)."""
        if self.items:
            return self.items[0].since
        return self.staged[0].since if self.staged else None

    def clear(self) -> None:
        self.items.clear()
        self.staged.clear()
        self.staged_bytes = 0
        self.sent = self.in_flight = 0
        self.retrying = False


def behind_unresolved(q: Queue, p: Pending) -> bool:
    """Is a batch ahead of p in its partition's queue not acknowledged yet (in flight, or
    failed and waiting to go again)? An OUT_OF_ORDER_SEQUENCE_NUMBER for p is then that
    batch's doing, not a lost sequence: e.g. a leader change with batches in flight, where the
    old leader refused the one ahead and the new leader saw p first. p goes again after it, with
    its sequence, as the Java producer retries it (TransactionManager.canRetry)."""
    for item in q.items:
        if item is p:
            return False
        if item.target_offset is None:
            return True
    return False


class ProducerSession:
    transactional_id: str | None = None  # set by a transactional session (batch/transactions.py)

    def __init__(
        self,
        link: Link,
        merger: Merger,
        *,
        max_in_flight: int,
        request_timeout_ms: int,
        delivery_timeout_s: float,
        on_error: Callable[[str], None] | None = None,
    ) -> None:
        self._link = link
        self._merger = merger
        self._max_in_flight = max_in_flight
        self._request_timeout_ms = request_timeout_ms
        self._delivery_timeout_s = delivery_timeout_s
        self._on_error = on_error or (lambda name: None)
        self._queues: dict[TargetPartition, Queue] = {}
        self._requests: list[tuple[int, Future, list[tuple[Queue, Pending]]]] = []
        self.producer_id = -1
        self.epoch = -1
        self._init: Future | None = None
        self._init_since = 0.0
        self._reset = False
        self._failure: BatchSendError | None = None
        # A periodic commit point is in progress (``hold``): what is staged stays staged.
        self.held = False

    # -- the session ----------------------------------------------------------------------------

    def ready(self) -> bool:
        """True once a producer id is held; starts (and retries) InitProducerId until then."""
        if self.producer_id >= 0 and not self._reset:
            return True
        if self._reset:
            if self._requests:
                return False  # wait for everything in flight before changing producer id
            self._start_over()
        if self._init is None:
            node = self._link.any_node()
            if node is None:
                return False
            self._init_since = self._init_since or time.monotonic()
            request = InitProducerIdRequest(
                transactional_id=None, transaction_timeout_ms=-1, producer_id=-1, producer_epoch=-1
            )
            self._init = self._link.send(node, request)
        if not self._init.is_done:
            return False
        future, self._init = self._init, None
        code = future.value.error_code if future.succeeded() else -1
        if code == 0:
            self.producer_id, self.epoch = future.value.producer_id, future.value.producer_epoch
            self._init_since = 0.0
            log.info("target producer id %d epoch %d", self.producer_id, self.epoch)
            return True
        if code in REFUSED:
            raise ClusterError(
                f"the target refused an idempotent producer id ({REFUSED[code]}): grant the "
                "mirror's principal IDEMPOTENT_WRITE on the target cluster"
            )
        if time.monotonic() - self._init_since > self._delivery_timeout_s:
            why = future.exception if future.failed() else f"error code {code}"
            waiting = next((k for k, q in self._queues.items() if q.items or q.staged), ("", -1))
            raise BatchSendError(
                f"the target gave no producer id within the delivery timeout: {why}", waiting
            )
        return False

    def _start_over(self) -> None:
        """New producer id: every partition's sequence restarts at 0, nothing is in flight.
        The batches built keep their records; their headers are stamped again when sent."""
        log.warning("target producer session reset: re-sending unacknowledged batches")
        self.producer_id = self.epoch = -1
        self._reset = False
        for q in self._queues.values():
            q.sent = q.in_flight = 0
            q.retrying = False
            q.next_sequence = 0
            for p in q.items:
                p.sequence = q.next_sequence
                q.next_sequence = (q.next_sequence + p.records) % SEQUENCE_LIMIT

    # -- queues ---------------------------------------------------------------------------------

    def enqueue(self, target: TargetPartition, staged: Staged) -> None:
        """A source batch for this target partition, sent (merged with what is staged beside
        it) once the partition may have another batch in flight."""
        q = self._queues.get(target)
        if q is None:
            q = self._queues[target] = Queue(*target)
        q.staged.append(staged)
        q.staged_bytes += len(staged.batch.data)

    def last(self, target: TargetPartition) -> Staged | Pending | None:
        """The newest batch not acknowledged yet (staged or built)."""
        q = self._queues.get(target)
        if q is None:
            return None
        if q.staged:
            return q.staged[-1]
        return q.items[-1] if q.items else None

    def queued(self, target: TargetPartition) -> int:
        """Batches not acknowledged yet: built, and source batches staged."""
        q = self._queues.get(target)
        return len(q.items) + len(q.staged) if q is not None else 0

    def staged_bytes(self, target: TargetPartition) -> int:
        q = self._queues.get(target)
        return q.staged_bytes if q is not None else 0

    def drop(self, target: TargetPartition) -> None:
        """Forget a partition's queue; the sequence is kept in case it comes back."""
        q = self._queues.get(target)
        if q is not None:
            # Responses still on the way for it are ignored (take() finds no item for them).
            q.clear()

    def hold(self, on: bool) -> None:
        """Hold back (True) or release what is staged: while held, no batch is built from a
        stage, so nothing new goes out and `unacknowledged` counts the batches already built
        (sent, or waiting for a retry). A commit point then covers what the target
        acknowledged without first sending everything fetched (BatchCopier.hold_back); the
        exactly-once progress record is never held."""
        self.held = on

    def _held(self, q: Queue) -> bool:
        return self.held and bool(q.staged) and not q.staged[0].progress

    @property
    def unacknowledged(self) -> int:
        return sum(
            len(q.items) + (0 if self._held(q) else len(q.staged)) for q in self._queues.values()
        )

    def waited_s(self, keys: Iterable[TargetPartition]) -> float:
        """How long the oldest unacknowledged batch of these partitions has waited."""
        since = [
            oldest
            for key in keys
            if (q := self._queues.get(key)) is not None and (oldest := q.oldest) is not None
        ]
        return time.monotonic() - min(since) if since else 0.0

    def abandon(self) -> bool:
        """Forget every unacknowledged batch (a send failed; the loop re-sends from the last
        commit) and start a new session: the dropped batches may or may not be on the target,
        so their sequence cannot go on. Responses still on the way are ignored. False: no
        partition was given up (the transactional sessions give theirs up instead: True)."""
        for q in self._queues.values():
            q.clear()
            q.retry_at = 0.0
        self._requests.clear()
        self._failure = None
        self._init, self._init_since = None, 0.0
        if self.producer_id >= 0:
            self._reset = True
        return False

    # -- requests -------------------------------------------------------------------------------

    def send(self) -> None:
        """Send what may go now: per partition its unsent batches (retries) or, with a slot
        free, one batch built from everything staged."""
        if not self.ready():
            return
        now = time.monotonic()
        by_node: dict[int, list[Queue]] = {}
        for q in self._queues.values():
            oldest = q.oldest
            if oldest is not None and now - oldest > self._delivery_timeout_s:
                raise BatchSendError(
                    f"target {q.topic}[{q.partition}] did not acknowledge a batch within "
                    f"{self._delivery_timeout_s:.0f} s (message.timeout.ms); nothing past it "
                    "was acknowledged",
                    (q.topic, q.partition),
                )
            if (q.sent >= len(q.items) and not q.staged) or q.retrying or q.retry_at > now:
                continue
            node = self._link.leader(q.topic, q.partition)
            if node is None:
                self._link.refresh()
                continue
            by_node.setdefault(node, []).append(q)
        session = (self.producer_id, self.epoch)
        for node, queues in by_node.items():
            while self._room(node):
                items = []
                size = 0
                for q in queues:
                    limit = self._max_in_flight if q.pipelined(session, now) else 1
                    if q.in_flight >= limit or size >= MAX_REQUEST_BYTES:
                        continue
                    p = self._next(q)
                    if p is not None:
                        items.append((q, p))
                        size += len(p.data)
                if not items:
                    break
                self._send(node, items)

    def _next(self, q: Queue) -> Pending | None:
        """The partition's next batch to send: an unsent one, or one built from its stage."""
        if q.sent < len(q.items):
            return q.items[q.sent]
        if not q.staged or self._held(q):
            return None
        p = self._merger.build(
            q.staged,
            q.topic,
            self.producer_id,
            self.epoch,
            q.next_sequence,
            transactional=self.transactional_id is not None,
        )
        q.staged_bytes -= p.source_bytes
        p.sequence = q.next_sequence
        p.stamped = (self.producer_id, self.epoch, p.sequence)
        q.next_sequence = (q.next_sequence + p.records) % SEQUENCE_LIMIT
        q.items.append(p)
        return p

    def _room(self, node: int) -> bool:
        """May another request go to this node now? (The connection's requests: ours.)"""
        return bool(self._link.in_flight(node) < self._max_in_flight)

    def _send(self, node: int, items: list[tuple[Queue, Pending]]) -> None:
        topics: dict[str, list[Any]] = {}
        for q, p in items:
            stamped = (self.producer_id, self.epoch, p.sequence)
            if p.stamped != stamped:  # built under an earlier producer session
                data = bytearray(p.data)
                stamp(data, *stamped, transactional=self.transactional_id is not None)
                p.data, p.stamped = bytes(data), stamped
            topics.setdefault(q.topic, []).append(
                ProduceRequest.TopicProduceData.PartitionProduceData(
                    index=q.partition, records=p.data
                )
            )
            q.sent += 1
            q.in_flight += 1
        request = ProduceRequest(
            transactional_id=self.transactional_id,
            acks=-1,
            timeout_ms=self._request_timeout_ms,
            topic_data=[
                ProduceRequest.TopicProduceData(name=t, partition_data=ps)
                for t, ps in topics.items()
            ],
            version=PRODUCE_VERSION,
        )
        self._requests.append((node, self._link.send(node, request), items))

    # -- responses ------------------------------------------------------------------------------

    def take(self) -> list[Pending]:
        """Batches acknowledged since the last call, in order per partition. What the target
        refused for good is kept for ``check``: the acknowledgements that came with it are
        still reported first."""
        done, self._requests = (
            [r for r in self._requests if r[1].is_done],
            [r for r in self._requests if not r[1].is_done],
        )
        acked: list[Pending] = []
        for node, future, items in done:
            codes: dict[TargetPartition, Any] = {}
            if future.succeeded():
                for topic in future.value.responses:
                    for part in topic.partition_responses:
                        codes[(topic.name, part.index)] = part
            else:
                log.warning("produce to target node %s failed: %s", node, future.exception)
            for q, p in items:
                if self._queues.get((q.topic, q.partition)) is not q or p not in q.items:
                    continue  # dropped while in flight
                q.in_flight -= 1
                try:
                    self._result(q, p, codes.get((q.topic, q.partition)))
                except BatchSendError as exc:
                    self._failure = self._failure or exc
        for q in self._queues.values():
            while q.items and q.items[0].target_offset is not None:
                acked.append(q.items.popleft())
                q.sent -= 1
            if q.retrying and q.in_flight == 0:
                q.retrying = False
                q.sent = 0
                q.retry_at = time.monotonic() + RETRY_BACKOFF_S
        return acked

    def check(self) -> None:
        """Raise what the target refused for good (SendError), once its acknowledgements are
        in the book."""
        if self._failure is not None:
            raise self._failure

    def _result(self, q: Queue, p: Pending, part: Any) -> None:
        code = -1 if part is None else part.error_code
        if code in (0, DUPLICATE_SEQUENCE):
            q.confirmed, q.confirmed_at = p.stamped[:2], time.monotonic()
        if code == 0:
            p.target_offset = part.base_offset
            return
        if code == DUPLICATE_SEQUENCE:
            if p.target_offset is None:  # (an acknowledged batch re-sent behind a retry)
                p.target_offset = -1  # already written by an earlier attempt; where is unknown
            return
        name = f"{code}" if part is None else f"error code {code}"
        if code != -1:
            self._on_error(str(code))
        if code in TOO_LARGE and p.batches > 1:
            # A merged batch: the topic's limit must have been lowered since it was read.
            self._merger.too_large(q.topic)
            raise BatchSendError(
                f"target {q.topic}[{q.partition}] refused a merged batch of {len(p.data)} "
                f"bytes ({TOO_LARGE[code]}) built from {p.batches} source batches of "
                f"{p.source[0]}[{p.source[1]}] from offset {p.first}: the topic's "
                "max.message.bytes is lower than when it was read. It is read again; nothing "
                "past it was acknowledged",
                (q.topic, q.partition),
                code=code,
            )
        if code in TOO_LARGE:
            raise BatchSendError(
                f"target {q.topic}[{q.partition}] refused a batch of {len(p.data)} bytes "
                f"({TOO_LARGE[code]}: Message size too large) copied from source "
                f"{p.source[0]}[{p.source[1]}] offset {p.first}: raise "
                f"max.message.bytes of the target topic '{q.topic}' (or the target broker's "
                "message.max.bytes) to at least the "
                "source's. Retrying cannot help and skipping it would lose it; nothing past it "
                "was acknowledged",
                (q.topic, q.partition),
                permanent=True,
                code=code,
            )
        if code in REFUSED:
            raise BatchSendError(
                f"target refused {q.topic}[{q.partition}]: {REFUSED[code]}",
                (q.topic, q.partition),
                permanent=True,
                code=code,
            )
        if code == OUT_OF_ORDER_SEQUENCE and behind_unresolved(q, p):
            pass  # goes again after the batch ahead (below); the sequence is not lost
        elif code in SESSION_ERRORS and not q.retrying:
            self._reset = True
        elif code not in RETRIABLE and code not in SESSION_ERRORS and code != -1:
            detail = "" if part is None else f" {part.error_message or ''}"
            errors = [e.batch_index_error_message for e in (part.record_errors or [])]
            raise BatchSendError(
                f"target {q.topic}[{q.partition}] refused the batch from source "
                f"{p.source[0]}[{p.source[1]}] offset {p.first}: {name}{detail} "
                f"{errors[:1] or ''}. Nothing past it was acknowledged",
                (q.topic, q.partition),
                code=code,
            )
        q.retrying = True
        self._link.refresh()
