"""Exactly-once on the record path: the guarantee's record part under --exactly-once
(`RecordExactlyOnce`; at-least-once is record_guarantee.py).

One transactional producer per source partition, `transactional.id =
kmirror-<group.id>-<topic>-<partition>` (kmirror.config.exactly_once). Its records go into a
transaction that is committed at the stream's commit points together with the partition's
progress record (the source position and the source->target runs, kmirror.progress.codec) on
the progress topic. So the records and the position that says they were copied become visible
together or not at all, and a stream resumes from the committed progress record (read with
read_committed), never from the source group, whose commits are for monitoring only.

Fencing: `open()` runs init_transactions for each new partition before its progress record is
read. The coordinator bumps the producer epoch and aborts the previous owner's open
transaction; that owner (a zombie: SIGSTOP, long GC, network partition) then fails every send
and commit with a fencing error. The partition is marked in the stream's `Fenced`
(batch/fencing.py) and dropped there, never retried as if nothing happened.

A failed send still goes to the latch; before the stream's rewind (abort.on.send.failure=false)
`abort` aborts every open transaction, so the re-sent records replace the aborted ones instead
of doubling them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer, TopicPartition

from kmirror.errors import KmirrorError, MirrorError
from kmirror.kafka import clients
from kmirror.kafka.transactions import INIT_TIMEOUT_S, refused
from kmirror.mirror.batch.fencing import Fenced
from kmirror.mirror.contract import CopierContext, Forget, OnDelivery
from kmirror.mirror.latch import FailureLatch
from kmirror.partitions import SourcePartition
from kmirror.progress.book import ProgressBook
from kmirror.progress.codec import encode_record

log = logging.getLogger(__name__)

PARALLEL_CALLS = 8  # concurrent init/commit round trips per stream
# Seconds a commit still pending at its deadline is retried for (_commit_one): the commit
# call then lasts at most message.timeout.ms + 15 s (75 s by default), under the supervisor's
# 120 s liveness window.
SETTLE_S = 15.0
# The coordinator says another producer with our transactional.id took over (or timed our
# transaction out: the same epoch bump, kmirror.kafka.transactions.FENCED_LOG).
FENCED = frozenset(
    {KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH}
)
# What a send reports when its transaction is being torn down (fenced, aborted, purged).
TORN_DOWN = FENCED | {KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT, KafkaError._FATAL}


def _dead(err: KafkaError) -> bool:
    """The partition's producer can go no further: fenced, or fatal in librdkafka otherwise
    (an abort after the coordinator timed the transaction out is refused INVALID_TXN_STATE,
    and librdkafka makes that fatal). Nothing of its open transaction can commit; the
    partition is dropped like a fenced one, and the stream takes it back while the group still
    gives it to it (a new producer: a refusal then, such as a revoked grant, stops the mirror
    with its reason)."""
    return err.code() in FENCED or err.code() == KafkaError._FATAL or err.fatal()


def _attempt(call: Callable[..., object], *args: Any) -> BaseException | None:
    """call(*args) in a pool thread: the exception it raised (handled by the caller), or None."""
    try:
        call(*args)
    except Exception as exc:
        return exc
    return None


def _purge(t: _Txn) -> None:
    """Drop what a producer let go of still holds; a fenced (fatal) producer may refuse."""
    try:
        t.producer.purge()
        t.producer.flush(0)
    except KafkaException as exc:
        log.debug("purge %s[%d]: %s", t.key[0], t.key[1], exc.args[0])


class _Txn:
    """The transactional producer of one source partition."""

    __slots__ = ("fenced", "key", "open", "producer")
    producer: Producer  # set right after: its callbacks need this object

    def __init__(self, key: SourcePartition) -> None:
        self.key = key
        self.open = False  # begin_transaction called, not yet committed or aborted
        self.fenced = False  # set by its callbacks; the copier drops the partition


class RecordExactlyOnce:
    """A transactional producer per source partition (see the module doc)."""

    _base: Producer  # the copier's: start-up check and metadata; no record goes through it
    _latch: FailureLatch

    def __init__(self, fenced: Fenced) -> None:
        self._fenced = fenced
        self._txns: dict[SourcePartition, _Txn] = {}
        self._threads: ThreadPoolExecutor | None = None
        self._ctx: CopierContext | None = None
        self._on_delivery: OnDelivery = lambda err, msg: None

    def attach(self, ctx: CopierContext, on_delivery: OnDelivery, forget: Forget) -> Producer:
        self._ctx = ctx
        self._latch = ctx.latch
        self._on_delivery = on_delivery
        self.progress_topic = ctx.config.progress_topic
        self._base = clients.producer(
            ctx.config, {"on_delivery": on_delivery, "error_cb": ctx.error_cb}
        )
        self._fenced.listen(lambda key: forget([key]))
        self._fenced.listen(self._release)
        self._fenced.listen(self._pause)
        return self._base

    def _context(self) -> CopierContext:
        if self._ctx is None:
            raise MirrorError("exactly-once: the record path's transactions are not attached")
        return self._ctx

    # -- ownership -----------------------------------------------------------------------------

    def open(self, keys: Iterable[SourcePartition]) -> None:
        """A producer per new partition, initialised: this fences any previous owner and
        completes (aborts) its open transaction, so the progress topic read after it is final.
        Raises ConfigError/ClusterError when the target refuses transactions."""
        new = [self._start(k) for k in keys if k not in self._txns]
        # In parallel: each waits for its coordinator (and for a zombie's abort to complete).
        outcomes = self._pool().map(
            lambda t: _attempt(t.producer.init_transactions, INIT_TIMEOUT_S), new
        )
        for t, exc in zip(new, list(outcomes), strict=True):
            if isinstance(exc, KafkaException):
                raise self._refused(t.key, exc.args[0]) from exc
            if exc is not None:
                raise exc
            self._txns[t.key] = t

    def owns(self, key: SourcePartition) -> bool:
        return key in self._txns

    def _pool(self) -> ThreadPoolExecutor:
        """Threads for the per-partition round trips (librdkafka calls release the GIL)."""
        if self._threads is None:
            self._threads = ThreadPoolExecutor(PARALLEL_CALLS, thread_name_prefix="kmirror-txn")
        return self._threads

    def _start(self, key: SourcePartition) -> _Txn:
        t = _Txn(key)
        t.producer = clients.transactional_producer(
            self._context().config,
            key,
            {
                "on_delivery": lambda err, msg: self._delivered(t, err, msg),
                "error_cb": lambda err: self._client_error(t, err),
            },
        )
        return t

    def _refused(self, key: SourcePartition, err: KafkaError) -> KmirrorError:
        return refused(self._context().config, key, err.code(), err.str())

    def release(self, keys: list[SourcePartition]) -> None:
        for key in keys:
            t = self._txns.pop(key, None)
            if t is not None:
                self._discard(t, abort=True)

    def close(self, timeout: float) -> None:
        for t in list(self._txns.values()):
            self._discard(t, abort=True, timeout=min(timeout, 5.0))
        self._txns.clear()
        self._base.flush(0)
        if self._threads is not None:
            self._threads.shutdown(wait=False)

    def _discard(self, t: _Txn, abort: bool, timeout: float = 5.0) -> None:
        """Let a partition's producer go; an open transaction is aborted (or left to the next
        owner's init_transactions / the transaction timeout when the target does not answer)."""
        t.fenced = True  # its late reports are no longer ours
        try:
            if abort and t.open:
                t.producer.abort_transaction(timeout)
        except KafkaException as exc:
            log.debug("abort %s[%d] on discard: %s", t.key[0], t.key[1], exc.args[0])
        t.open = False
        _purge(t)

    # -- copying -------------------------------------------------------------------------------

    def producer_for(self, key: SourcePartition) -> Producer | None:
        t = self._txns.get(key)
        if t is None or t.fenced:
            return None  # fenced or revoked meanwhile: not ours to copy
        if not t.open:
            try:
                t.producer.begin_transaction()
            except KafkaException as exc:
                if self.fencing(key, exc.args[0]):
                    return None
                raise
            t.open = True
        return t.producer

    def poll(self) -> None:
        self._base.poll(0)
        for t in list(self._txns.values()):
            t.producer.poll(0)

    def flush(self, timeout: float) -> int:
        remaining = 0
        deadline = time.monotonic() + timeout
        for t in list(self._txns.values()):
            if t.fenced:
                continue
            try:
                remaining += int(t.producer.flush(max(deadline - time.monotonic(), 0.0)))
            except KafkaException as exc:
                # A fenced producer is fatal in librdkafka: its flush raises (what it held
                # belongs to an aborted transaction). Anything else is not ours to hide.
                if not self.fencing(t.key, exc.args[0]):
                    raise
        self.drop_fenced()
        return remaining

    def abort(self) -> None:
        """Abort every open transaction (a rewind copies again from the last commit)."""
        for t in list(self._txns.values()):
            if not t.open:
                continue
            try:
                t.producer.abort_transaction(INIT_TIMEOUT_S)
                t.open = False
            except KafkaException as exc:
                if not self.fencing(t.key, exc.args[0]):
                    raise MirrorError(
                        f"exactly-once: could not abort the transaction of {t.key[0]}"
                        f"[{t.key[1]}] after failed sends: {exc.args[0].str()}. Nothing of it "
                        "is visible; a restart resumes from the last commit"
                    ) from exc
        self.drop_fenced()

    # -- committing ----------------------------------------------------------------------------

    def commit(
        self, book: ProgressBook, keys: Iterable[SourcePartition], timeout: float
    ) -> dict[SourcePartition, int]:
        """After a clean flush: commit each partition's transaction with its progress record.
        Returns the source offsets now committed on the target (fenced partitions are left
        out and dropped)."""
        wanted = set(keys) | {k for k, t in self._txns.items() if t.open}
        deadline = time.monotonic() + timeout
        todo: list[tuple[_Txn, int, tuple[bytes, bytes]]] = []
        for key in sorted(wanted):
            t = self._txns.get(key)
            pb = book.get(*key)
            if t is not None and not t.fenced and pb is not None and pb.acked >= 0:
                todo.append((t, pb.acked, encode_record(key[0], key[1], pb)))
        # In parallel: one EndTxn round trip per partition. The flush before settled every
        # delivery report; what the calls serve is only the progress records' (ignored).
        outcomes = list(
            self._pool().map(lambda j: _attempt(self._commit_one, j[0], j[2], deadline), todo)
        )
        done: dict[SourcePartition, int] = {}
        for (t, acked, _), exc in zip(todo, outcomes, strict=True):
            key = t.key
            if exc is None:
                done[key] = acked
                continue
            if not isinstance(exc, KafkaException):
                raise exc
            err: KafkaError = exc.args[0]
            if self.fencing(t.key, err):
                continue
            if err.txn_requires_abort():
                # The transaction failed as a whole (a send was refused): the latch has or
                # gets the failure; the loop rewinds (aborting it) or stops.
                self._latch.send_failed(key[0], key[1], err)
                continue
            raise MirrorError(
                f"exactly-once: committing the transaction of {key[0]}[{key[1]}] failed: "
                f"{err.str()}. Its records stay invisible; a restart resumes from the last "
                "committed progress record"
            ) from exc
        self.drop_fenced()
        return done

    def _commit_one(self, t: _Txn, record: tuple[bytes, bytes], deadline: float) -> None:
        """The progress record into the partition's transaction, then commit it. A retriable
        failure (coordinator moving, request timed out) is retried until the deadline, as
        librdkafka asks: the outcome is unknown until a retry says so.

        A commit still pending at the deadline gets SETTLE_S more: the deadline is the flush
        timeout, message.timeout.ms, which is also the progress record's own delivery timeout,
        so when the target does not answer (a half-open connection to the progress
        partition's leader) the deadline and the record's timeout fall together. A retry
        after it gets the outcome: the transaction failed as a whole (abortable: the latch
        rewinds or stops, as for any failed send), instead of an unknown outcome that stopped
        the stream (it cannot be aborted meanwhile: librdkafka refuses another transactional
        call while a commit it timed out is pending)."""
        producer = t.producer
        deadline += SETTLE_S
        if not t.open:
            producer.begin_transaction()
            t.open = True
        key, value = record
        while True:
            try:
                producer.produce(self.progress_topic, value, key)
                break
            except BufferError:
                producer.poll(0.05)
        while True:
            try:
                producer.commit_transaction(max(deadline - time.monotonic(), 1.0))
                t.open = False
                return
            except KafkaException as exc:
                err: KafkaError = exc.args[0]
                if not err.retriable() or time.monotonic() >= deadline:
                    raise
                log.warning("commit of %s[%d] retried: %s", t.key[0], t.key[1], err.str())

    # -- fencing -------------------------------------------------------------------------------

    def fencing(self, key: SourcePartition, err: KafkaError) -> bool:
        if _dead(err):
            t = self._txns.get(key)
            if t is not None:
                t.fenced = True
            return True
        return False

    def drop_fenced(self) -> None:
        """Fenced partitions go (batch/fencing.py: once, for both paths)."""
        for key, t in self._txns.items():
            if t.fenced:
                self._fenced.mark(key)
        self._fenced.drop()

    def _release(self, key: SourcePartition) -> None:
        t = self._txns.pop(key, None)
        if t is not None:
            t.open = False
            _purge(t)

    def _pause(self, key: SourcePartition) -> None:
        """Fetch nothing more of it until the group hands it out again."""
        try:
            self._context().consumer.pause([TopicPartition(key[0], key[1])])
        except KafkaException as exc:
            log.debug("pause fenced %s[%d]: %s", key[0], key[1], exc.args[0])

    # -- the partition producers' callbacks: never raise ---------------------------------------

    def _delivered(self, t: _Txn, err: KafkaError | None, msg: Message) -> None:
        if t.fenced:
            return  # an aborted transaction's report: nothing of it counts
        if err is not None and err.code() in TORN_DOWN:
            t.fenced = t.fenced or _dead(err)
            if not t.fenced:
                self._latch.send_failed(str(msg.topic()), int(msg.partition() or 0), err)
            return
        if msg.topic() == self.progress_topic:
            return  # the progress record inside the transaction
        self._on_delivery(err, msg)

    def _client_error(self, t: _Txn, err: KafkaError) -> None:
        if _dead(err):
            t.fenced = True
            return
        self._context().error_cb(err)
