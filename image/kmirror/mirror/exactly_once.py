"""Exactly-once on the record path: the record copier, with one transactional producer per
source partition.

Each source partition the stream owns has its own producer, `transactional.id =
kmirror-<group.id>-<topic>-<partition>` (kmirror.config.exactly_once). Its records go into a
transaction that is committed at the stream's commit points together with the partition's
progress record (the source position and the source->target runs, kmirror.progress.codec) on
the progress topic. So the records and the position that says they were copied become visible
together or not at all, and a stream resumes from the committed progress record (read with
read_committed), never from the source group, whose commits are for monitoring only.

Fencing: `open()` runs init_transactions for each new partition before its progress record is
read. The coordinator bumps the producer epoch and aborts the previous owner's open
transaction; that owner (a zombie: SIGSTOP, long GC, network partition) then fails every send
and commit with a fencing error. A fenced partition is dropped here (paused, book closed,
nothing committed) until the group hands it out again; it is never retried as if nothing
happened.

The shape is the record copier's: a failed send still goes to the latch, and the stream's
rewind (abort.on.send.failure=false) lands in `rewind`, which aborts every open transaction
before seeking, so the re-sent records replace the aborted ones instead of doubling them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer, TopicPartition

from kmirror.errors import KmirrorError, MirrorError
from kmirror.kafka import clients
from kmirror.kafka.message import position
from kmirror.kafka.transactions import FENCED_LOG, INIT_TIMEOUT_S, refused
from kmirror.mirror.contract import CopierContext
from kmirror.mirror.record_copier import RecordCopier
from kmirror.partitions import SourcePartition
from kmirror.progress.book import ProgressBook
from kmirror.progress.codec import encode_record

log = logging.getLogger(__name__)

PARALLEL_CALLS = 8  # concurrent init/commit round trips per stream
# The coordinator says another producer with our transactional.id took over.
FENCED = frozenset(
    {KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH}
)
# What a send reports when its transaction is being torn down (fenced, aborted, purged).
TORN_DOWN = FENCED | {KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT, KafkaError._FATAL}


def _attempt(call: Callable[..., object], *args: Any) -> BaseException | None:
    """call(*args) in a pool thread: the exception it raised (handled by the caller), or None."""
    try:
        call(*args)
    except Exception as exc:
        return exc
    return None


class _Txn:
    """The transactional producer of one source partition."""

    __slots__ = ("fenced", "key", "open", "producer")
    producer: Producer  # set right after: its callbacks need this object

    def __init__(self, key: SourcePartition) -> None:
        self.key = key
        self.open = False  # begin_transaction called, not yet committed or aborted
        self.fenced = False  # set by its callbacks; the copier drops the partition


class TransactionalCopier(RecordCopier):
    """RecordCopier whose sends go through per-partition transactions (see the module doc)."""

    def __init__(self, ctx: CopierContext) -> None:
        super().__init__(ctx)
        self._error_cb: Callable[[KafkaError], None] = ctx.error_cb
        self._txns: dict[SourcePartition, _Txn] = {}
        self._threads: ThreadPoolExecutor | None = None
        # The base class's producer stays for metadata (connect, partition waits); copies go
        # through the partitions' transactional producers, swapped in by _copy.
        self._base = self.producer
        self.progress_topic = self._config.progress_topic

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

    def _pool(self) -> ThreadPoolExecutor:
        """Threads for the per-partition round trips (librdkafka calls release the GIL)."""
        if self._threads is None:
            self._threads = ThreadPoolExecutor(PARALLEL_CALLS, thread_name_prefix="kmirror-txn")
        return self._threads

    def _start(self, key: SourcePartition) -> _Txn:
        t = _Txn(key)
        t.producer = clients.transactional_producer(
            self._config,
            key,
            {
                "on_delivery": lambda err, msg: self._delivered(t, err, msg),
                "error_cb": lambda err: self._client_error(t, err),
            },
        )
        return t

    def _refused(self, key: SourcePartition, err: KafkaError) -> KmirrorError:
        return refused(self._config, key, err.code(), err.str())

    def revoke(self, keys: Iterable[SourcePartition]) -> None:
        keys = list(keys)
        super().revoke(keys)
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
        t.producer.purge()
        t.producer.flush(0)

    # -- copying -------------------------------------------------------------------------------

    def step(self) -> None:
        super().step()
        for t in list(self._txns.values()):
            t.producer.poll(0)
        self._drop_fenced()

    def _copy(self, msgs: list[Message]) -> None:
        groups: dict[SourcePartition, list[Message]] = {}
        errors: list[Message] = []
        for m in msgs:
            if m.error() is not None:
                errors.append(m)
            else:
                topic, partition, _ = position(m)
                groups.setdefault((topic, partition), []).append(m)
        if errors:
            super()._copy(errors)  # consume errors: recorded, nothing produced
        rewinds = self._rewinds
        for key, group in groups.items():
            t = self._txns.get(key)
            if t is None or t.fenced:
                continue  # fenced or revoked meanwhile: not ours to copy
            try:
                if not t.open:
                    t.producer.begin_transaction()
                    t.open = True
                self.producer = t.producer
                super()._copy(group)
            except KafkaException as exc:
                if not self._fencing(t, exc.args[0]):
                    raise
            finally:
                self.producer = self._base
            if self._rewinds != rewinds:
                break  # a rewind (failed sends): the rest comes again from the last commit
        self._drop_fenced()

    def flush(self, timeout: float) -> int:
        remaining = 0
        deadline = time.monotonic() + timeout
        for t in list(self._txns.values()):
            if not t.fenced:
                remaining += int(t.producer.flush(max(deadline - time.monotonic(), 0.0)))
        self._drop_fenced()
        if not remaining and not self._latch.failures:
            self._settle()
        return remaining

    def rewind(self, positions: Mapping[SourcePartition, int]) -> None:
        """Abort every open transaction, then copy again from the last commit."""
        for t in list(self._txns.values()):
            if not t.open:
                continue
            try:
                t.producer.abort_transaction(INIT_TIMEOUT_S)
                t.open = False
            except KafkaException as exc:
                if not self._fencing(t, exc.args[0]):
                    raise MirrorError(
                        f"exactly-once: could not abort the transaction of {t.key[0]}"
                        f"[{t.key[1]}] after failed sends: {exc.args[0].str()}. Nothing of it "
                        "is visible; a restart resumes from the last commit"
                    ) from exc
        self._drop_fenced()
        super().rewind({k: o for k, o in positions.items() if k in self._txns})

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
            if self._fencing(t, err):
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
        self._drop_fenced()
        return done

    def _commit_one(self, t: _Txn, record: tuple[bytes, bytes], deadline: float) -> None:
        """The progress record into the partition's transaction, then commit it. A retriable
        failure (coordinator moving, request timed out) is retried until the deadline, as
        librdkafka asks: the outcome is unknown until a retry says so."""
        producer = t.producer
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

    def _fencing(self, t: _Txn, err: KafkaError) -> bool:
        """True (and the partition marked) when err says another owner fenced us."""
        if err.code() in FENCED:
            t.fenced = True
            return True
        return False

    def _drop_fenced(self) -> None:
        """Drop fenced partitions: nothing of theirs is committed, their book is closed (so no
        later settle moves it), their fetching paused until the group hands them out again."""
        for key, t in list(self._txns.items()):
            if not t.fenced:
                continue
            del self._txns[key]
            log.error(FENCED_LOG, key[0], key[1])
            super().revoke([key])
            self._book.close(*key)
            try:
                self._consumer.pause([TopicPartition(key[0], key[1])])
            except KafkaException as exc:
                log.debug("pause fenced %s[%d]: %s", key[0], key[1], exc.args[0])
            t.open = False
            t.producer.purge()

    # -- the partition producers' callbacks: never raise ---------------------------------------

    def _delivered(self, t: _Txn, err: KafkaError | None, msg: Message) -> None:
        if t.fenced:
            return  # an aborted transaction's report: nothing of it counts
        if err is not None and err.code() in TORN_DOWN:
            t.fenced = t.fenced or err.code() in FENCED
            if not t.fenced:
                self._latch.send_failed(str(msg.topic()), int(msg.partition() or 0), err)
            return
        if msg.topic() == self.progress_topic:
            return  # the progress record inside the transaction
        self._on_delivery(err, msg)

    def _client_error(self, t: _Txn, err: KafkaError) -> None:
        if err.code() in FENCED:
            t.fenced = True
            return
        self._error_cb(err)
