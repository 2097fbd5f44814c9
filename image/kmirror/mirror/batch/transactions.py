"""Transactions on the batch path: a transactional producer session per source partition
(KIP-98), built from kafka-python's protocol classes on the batch copier's target link.

`Coordinators` makes the round trips to transaction coordinators (FindCoordinator with
key_type=transaction, then InitProducerId, AddPartitionsToTxn or EndTxn), for many
transactional ids at once: all requests in flight together, each retried (after finding its
coordinator again when it moved) until it has a final answer or the deadline passes.

`TxnSession` is the batch copier's ProducerSession (queues, sequences, in-flight batches,
retries) under a transactional id: its batches carry the transactional attribute and the
producer id and epoch InitProducerId gave for that id, its Produce requests carry the id, and
it sends nothing for a target partition that is not yet added to the open transaction. A
fencing answer (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH) marks it fenced instead of starting a
new producer id: another owner took the partition over, nothing of ours may become visible.

Request versions are pinned to the KIP-98 protocol (transaction.version 1): AddPartitionsToTxn
v3 (v4+ is broker to broker), EndTxn v3 (v5 bumps the epoch at every commit, KIP-890).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kafka.protocol.producer.transaction import (
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    InitProducerIdRequest,
)
from kafka.record.default_records import DefaultRecordBatchBuilder

from kmirror.errors import SendError
from kmirror.kafka.wire import Link
from kmirror.mirror.batch.merger import Merger, Pending, Staged
from kmirror.mirror.batch.producer import (
    OUT_OF_ORDER_SEQUENCE,
    ProducerSession,
    Queue,
    behind_unresolved,
)
from kmirror.mirror.batch.records import split
from kmirror.partitions import SourcePartition, TargetPartition

FIND_VERSION = 3  # one key per request (v4+ batches keys)
INIT_VERSION = 4
ADD_VERSION = 3
END_VERSION = 3
TRANSACTION = 1  # FindCoordinator key_type
RETRY_BACKOFF_S = 0.05
# Ask again (the coordinator is loading, moving, or still completing the previous transaction;
# 3: a just-created topic the coordinator's broker does not know yet, as the Java client does).
RETRIABLE = {3, 7, 14, 15, 16, 51}
NO_ANSWER = -1  # a coordinator call that got no answer before its deadline
REFIND = {NO_ANSWER, 15, 16}  # ... after finding the coordinator again
FENCING = {47, 90}  # INVALID_PRODUCER_EPOCH, PRODUCER_FENCED
OPERATION_NOT_ATTEMPTED = 55  # AddPartitionsToTxn: another partition of the request failed
# A transactional send the broker refuses for these cannot be retried into the transaction
# (but an out-of-order answer behind an unacknowledged batch is that batch's doing: retried).
ABORTABLE = {45, 59}  # OUT_OF_ORDER_SEQUENCE_NUMBER, UNKNOWN_PRODUCER_ID
NAMES = {
    47: "INVALID_PRODUCER_EPOCH",
    48: "INVALID_TXN_STATE",
    49: "INVALID_PRODUCER_ID_MAPPING",
    50: "INVALID_TRANSACTION_TIMEOUT",
    53: "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
    31: "CLUSTER_AUTHORIZATION_FAILED",
    90: "PRODUCER_FENCED",
}


def error_name(code: int) -> str:
    return NAMES.get(code, f"error code {code}" if code >= 0 else "no answer")


def add_error(response: Any) -> int:
    """The AddPartitionsToTxn (v3) outcome: the first partition error that is not just
    'not attempted because another failed'."""
    codes = [
        part.partition_error_code
        for topic in response.results_by_topic_v3_and_below
        for part in topic.results_by_partition
    ]
    real = [c for c in codes if c not in (0, OPERATION_NOT_ATTEMPTED)]
    return real[0] if real else (OPERATION_NOT_ATTEMPTED if any(codes) else 0)


class Coordinators:
    """Round trips to the transaction coordinators of many transactional ids at once."""

    def __init__(self, link: Link, poll: Callable[[float], None]) -> None:
        self._link = link
        self._poll = poll  # drive the shared selector for up to this many seconds
        self._nodes: dict[str, int] = {}

    def calls(
        self,
        requests: Mapping[str, Callable[[], Any]],
        error_of: Callable[[Any], int],
        deadline: float,
    ) -> dict[str, tuple[int, Any]]:
        """Send each transactional id's request to its coordinator, all together; retry the
        retriable answers until the deadline. Returns (error code, response) per id: 0, a
        final error, or the last retriable one (-1: no answer) when the deadline passed."""
        pending = dict(requests)
        results: dict[str, tuple[int, Any]] = {}
        while pending:
            refused = self._find([t for t in pending if t not in self._nodes], deadline)
            for tid, code in refused.items():
                results[tid] = (code, None)  # e.g. no DESCRIBE on the transactional id
                del pending[tid]
            futures = {
                t: self._link.send(self._nodes[t], make())
                for t, make in pending.items()
                if t in self._nodes
            }
            self._wait(futures.values(), deadline)
            for tid in list(pending):
                future = futures.get(tid)
                if future is None or not future.is_done or future.failed():
                    code, response = NO_ANSWER, None
                else:
                    response = future.value
                    code = error_of(response)
                if code in REFIND:
                    self._nodes.pop(tid, None)
                results[tid] = (code, response)
                if code not in RETRIABLE and code != NO_ANSWER:
                    del pending[tid]
            if time.monotonic() >= deadline:
                break
            if pending:
                self._poll(RETRY_BACKOFF_S)
        return results

    def _find(self, ids: list[str], deadline: float) -> dict[str, int]:
        """Look the coordinators up; returns the ids the cluster refused for good."""
        if not ids:
            return {}
        node = self._link.any_node()
        if node is None:
            self._poll(RETRY_BACKOFF_S)
            return {}
        futures = {
            tid: self._link.send(
                node,
                FindCoordinatorRequest(key=tid, key_type=TRANSACTION, version=FIND_VERSION),
            )
            for tid in ids
        }
        self._wait(futures.values(), deadline)
        refused: dict[str, int] = {}
        for tid, future in futures.items():
            if not future.is_done or future.failed():
                continue
            code = int(future.value.error_code)
            if code == 0:
                self._nodes[tid] = int(future.value.node_id)
            elif code not in RETRIABLE:
                refused[tid] = code
        return refused

    def _wait(self, futures: Iterable[Any], deadline: float) -> None:
        todo = list(futures)
        while any(not f.is_done for f in todo) and time.monotonic() < deadline:
            self._poll(min(0.1, max(deadline - time.monotonic(), 0.0)))


def init_request(transactional_id: str, timeout_ms: int) -> Callable[[], Any]:
    return lambda: InitProducerIdRequest(
        transactional_id=transactional_id,
        transaction_timeout_ms=timeout_ms,
        producer_id=-1,
        producer_epoch=-1,
        version=INIT_VERSION,
    )


class TxnSession(ProducerSession):
    """A ProducerSession under one transactional id (see the module doc)."""

    def __init__(self, link: Link, merger: Merger, transactional_id: str, **kwargs: Any) -> None:
        super().__init__(link, merger, **kwargs)
        self.transactional_id = self.tid = transactional_id  # (the base's is optional)
        self.fenced = False
        self.added: set[TargetPartition] = set()  # target partitions in the open transaction
        # Where its progress record goes at the commit: added with the transaction's first
        # partitions, so the commit point does not wait for one more AddPartitionsToTxn.
        self.progress: TargetPartition | None = None

    @property
    def open(self) -> bool:
        """A transaction holds partitions: it must be committed or aborted."""
        return bool(self.added)

    def start(self, producer_id: int, epoch: int) -> None:
        """The producer id and epoch InitProducerId gave: sequences start at 0."""
        self.producer_id, self.epoch = producer_id, epoch

    def to_add(self) -> list[TargetPartition]:
        """Target partitions with batches waiting that the open transaction lacks (held
        batches wait for the next transaction)."""
        keys = sorted(
            k
            for k, q in self._queues.items()
            if (q.items or (q.staged and not self._held(q))) and k not in self.added
        )
        if keys and self.progress is not None and self.progress not in self.added:
            keys = sorted({*keys, self.progress})
        return keys

    def add_request(self, keys: list[TargetPartition]) -> Callable[[], Any]:
        topics: dict[str, list[int]] = {}
        for topic, partition in keys:
            topics.setdefault(topic, []).append(partition)
        return lambda: AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=self.tid,
            v3_and_below_producer_id=self.producer_id,
            v3_and_below_producer_epoch=self.epoch,
            v3_and_below_topics=[
                AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=t, partitions=ps)
                for t, ps in topics.items()
            ],
            version=ADD_VERSION,
        )

    def end_request(self, commit: bool) -> Callable[[], Any]:
        return lambda: EndTxnRequest(
            transactional_id=self.tid,
            producer_id=self.producer_id,
            producer_epoch=self.epoch,
            committed=commit,
            version=END_VERSION,
        )

    def ready(self) -> bool:
        """Sends only under our producer id, into partitions the transaction holds."""
        return self.producer_id >= 0 and not self.fenced and not self.to_add()

    def _room(self, node: int) -> bool:
        """Counted per session, and per connection: a transactional Produce request carries
        one session's batches only, and the connection is shared by every partition's
        session. The broker serves a connection's requests one at a time, so more of them in
        flight than one session's limit only queue there, and every commit point waits for
        the whole queue (eight sessions with five each held the commit for a second)."""
        if self._link.in_flight(node) >= self._max_in_flight:
            return False
        mine = sum(1 for n, future, _ in self._requests if n == node and not future.is_done)
        return mine < self._max_in_flight

    def forget(self) -> None:
        """Drop everything queued (an aborted or fenced transaction's batches)."""
        for key in list(self._queues):
            self.drop(key)
        self._requests.clear()

    def _result(self, q: Queue, p: Pending, part: Any) -> None:
        code = -1 if part is None else part.error_code
        if code in FENCING:
            self.fenced = True  # the copier drops the partition; nothing of it commits
            return
        if code in ABORTABLE and not (code == OUT_OF_ORDER_SEQUENCE and behind_unresolved(q, p)):
            raise SendError(
                f"target {q.topic}[{q.partition}] refused a transactional batch of "
                f"{self.transactional_id} ({error_name(code)}): the transaction cannot be "
                "completed. Nothing of it is visible; a restart resumes from the last commit"
            )
        super()._result(q, p, part)


def progress_record(source: SourcePartition, key: bytes, value: bytes, acked: int) -> Staged:
    """The partition's progress record as one record in a v2 batch (kafka-python's builder),
    staged like a copied batch but sent alone; the session stamps its producer id, epoch,
    sequence and the transactional bit."""
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=True,
        producer_id=0,
        producer_epoch=0,
        base_sequence=0,
        batch_size=len(key) + len(value) + 1024,
    )
    builder.append(0, int(time.time() * 1000), key, value, [])
    batches, _ = split(bytes(builder.build()))
    return Staged(source, batches[0], acked, progress=True)
