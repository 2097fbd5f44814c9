"""The delivery guarantee's batch-path part: which producer session the batch copier sends
through, and, under --exactly-once, the transactions around it.

The batch copier (copier.py) takes one of these as a constructor argument and works the same
either way (as the Java producer's Sender asks its TransactionManager):

- `BatchAtLeastOnce`: one idempotent ProducerSession for every partition; nothing to open,
  commit or fence (the stream's commit point writes the progress records beside it).
- `BatchExactlyOnce`: one transaction per source partition. The design is the record path's
  (kmirror.mirror.record_transactions, docs/architecture.md "Exactly-once"): each source partition
  has its own transactional id, `kmirror-<group.id>-<topic>-<partition>` (the same on both
  paths, so a batch-path and a record-path owner fence each other). `open` runs InitProducerId
  for each new partition before the stream reads its progress record: the coordinator bumps
  the epoch and aborts the previous owner's open transaction. Copied batches go out under that
  producer id and epoch with the transactional bit set (transactions.py), after
  AddPartitionsToTxn put their target partition into the partition's transaction. At a commit
  point `commit` writes each partition's progress record as a transactional batch into the
  progress topic, in the same transaction, and ends it with EndTxn(commit): the records and the
  position that says they were copied become visible together or not at all.

A fencing answer (PRODUCER_FENCED / INVALID_PRODUCER_EPOCH from a produce, add or end) means
another owner took the partition: it is marked in the stream's `Fenced` (fencing.py) and dropped
there, as on the record path (fetching stops, its book is closed, nothing of it is committed)
until the group hands it out again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kmirror.config.model import MirrorConfig
from kmirror.errors import MirrorError
from kmirror.kafka.transactions import INIT_TIMEOUT_S, refused
from kmirror.kafka.wire import Link
from kmirror.mirror.batch.fencing import Fenced
from kmirror.mirror.batch.merger import Merger
from kmirror.mirror.batch.producer import ProducerSession
from kmirror.mirror.batch.sessions import Sessions
from kmirror.mirror.batch.transactions import (
    FENCING,
    Coordinators,
    TxnSession,
    error_name,
    init_request,
    progress_record,
)
from kmirror.partitions import SourcePartition
from kmirror.progress.book import ProgressBook
from kmirror.progress.codec import encode_record

log = logging.getLogger(__name__)

ABORT_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Wire:
    """What a batch copier lends its guarantee: the target link and the merger (sessions are
    built on them), the sessions' settings, and how to drive the copier's network."""

    link: Link
    merger: Merger
    session_args: Mapping[str, Any]
    start: Callable[[], None]  # both links bootstrapped
    pump: Callable[[float], None]  # send, serve responses, book acknowledgements (held back: fetch)
    poll: Callable[[float], None]  # the shared selector (held back: fetching into the stage)
    forget: Callable[[SourcePartition], None]  # the copier lets a (fenced) partition go


class BatchGuarantee(Protocol):
    """What the batch copier asks of its guarantee (see the module doc)."""

    def bind(self, wire: Wire) -> ProducerSession:
        """The session every copied batch goes through."""
        ...

    def assign(self, partitions: Mapping[SourcePartition, tuple[str, int]]) -> None: ...

    def revoke(self, keys: list[SourcePartition]) -> None:
        """After the copier let these go (and the stream committed them, or lost them)."""
        ...

    def drop_fenced(self) -> None: ...

    def close(self) -> None: ...


class BatchAtLeastOnce:
    """One idempotent producer session for every partition; nothing to open, commit or fence."""

    def bind(self, wire: Wire) -> ProducerSession:
        return ProducerSession(wire.link, wire.merger, **wire.session_args)

    def assign(self, partitions: Mapping[SourcePartition, tuple[str, int]]) -> None:
        pass

    def revoke(self, keys: list[SourcePartition]) -> None:
        pass

    def drop_fenced(self) -> None:
        pass

    def close(self) -> None:
        pass


class BatchExactlyOnce:
    """A transaction per source partition (see the module doc). Bound to one batch copier."""

    def __init__(self, config: MirrorConfig, fenced: Fenced) -> None:
        self._config = config
        self._fenced = fenced
        self.progress_topic = config.progress_topic
        self._progress_target = (config.progress_topic, 0)  # every progress record goes there
        self._wire: Wire | None = None
        self._sessions: Sessions | None = None
        self.coordinators: Coordinators | None = None
        self._committed: dict[SourcePartition, int] = {}  # acked offset of the last commit

    def bind(self, wire: Wire) -> ProducerSession:
        self._wire = wire
        self.coordinators = Coordinators(wire.link, wire.poll)
        self._sessions = Sessions(wire.link, wire.merger, self.coordinators, **wire.session_args)
        wire.link.want({self.progress_topic})
        self._fenced.listen(wire.forget)
        self._fenced.listen(self._forget)
        return self._sessions

    @property
    def bound(self) -> bool:
        return self._sessions is not None

    def owns(self, key: SourcePartition) -> bool:
        return self._sessions is not None and key in self._sessions.by_source

    def _parts(self) -> tuple[Wire, Sessions, Coordinators]:
        if self._wire is None or self._sessions is None or self.coordinators is None:
            raise MirrorError("exactly-once: the batch path's transactions are not bound")
        return self._wire, self._sessions, self.coordinators

    # -- ownership -----------------------------------------------------------------------------

    def open(self, keys: Iterable[SourcePartition]) -> None:
        """A transactional producer id per new partition: fences its previous owner (of
        either path) and completes its open transaction, so the progress record read next
        is final. ConfigError/ClusterError when the target refuses transactions."""
        wire, sessions, coordinators = self._parts()
        wire.start()
        new = {
            k: TxnSession(
                wire.link, wire.merger, self._config.transactional_id(*k), **wire.session_args
            )
            for k in keys
            if k not in sessions.by_source
        }
        if not new:
            return
        timeout = self._config.transaction_timeout_ms()
        results = coordinators.calls(
            {s.tid: init_request(s.tid, timeout) for s in new.values()},
            lambda r: int(r.error_code),
            time.monotonic() + INIT_TIMEOUT_S,
        )
        for key, session in new.items():
            code, response = results[session.tid]
            if code != 0:
                raise refused(self._config, key, code, error_name(code))
            session.start(int(response.producer_id), int(response.producer_epoch))
            session.hold(sessions.held)
            session.progress = self._progress_target
            sessions.by_source[key] = session
            self._committed.pop(key, None)

    def assign(self, partitions: Mapping[SourcePartition, tuple[str, int]]) -> None:
        _, sessions, _ = self._parts()
        for key, (target_topic, _) in partitions.items():
            if key not in sessions.by_source:
                raise MirrorError(
                    f"exactly-once: {key[0]}[{key[1]}] assigned without its transaction"
                )
            sessions.sources[(target_topic, key[1])] = key

    def revoke(self, keys: list[SourcePartition]) -> None:
        """What is still open is aborted (the stream committed what it could before)."""
        if self._sessions is None:
            return
        self._end_all([k for k in keys if k in self._sessions.by_source], commit=False)
        for key in keys:
            self._forget(key)

    def handover(self, book: ProgressBook, key: SourcePartition, timeout: float) -> bool:
        """Commit the partition's transaction (it stopped for the record path) and let its
        session go; the record path's producer takes the transactional id over. False when
        it was fenced meanwhile (dropped)."""
        done = self._commit(book, [key], time.monotonic() + timeout)
        self._forget(key)
        return key in done

    def close(self) -> None:
        if self._sessions is not None:
            self._end_all(list(self._sessions.by_source), commit=False)

    def _forget(self, key: SourcePartition) -> None:
        if self._sessions is None:
            return
        session = self._sessions.by_source.pop(key, None)
        if session is not None:
            session.forget()
        self._sessions.sources = {t: s for t, s in self._sessions.sources.items() if s != key}
        self._committed.pop(key, None)

    def abandon(self) -> None:
        """Give up the transactions holding unacknowledged batches (Sessions.abandon)."""
        if self._sessions is not None and self._sessions.abandon():
            self.drop_fenced()

    def drop_fenced(self) -> None:
        """Fenced sessions' partitions go (fencing.py: once, for both paths)."""
        if self._sessions is not None:
            for key, session in self._sessions.by_source.items():
                if session.fenced:
                    self._fenced.mark(key)
        self._fenced.drop()

    # -- committing ----------------------------------------------------------------------------

    def commit(
        self, book: ProgressBook, keys: Iterable[SourcePartition], timeout: float
    ) -> dict[SourcePartition, int]:
        """After a clean flush: each partition's progress record into its transaction, then
        EndTxn(commit). Returns the source offsets now committed on the target (fenced
        partitions are left out and dropped)."""
        if self._sessions is None:
            return {}
        wanted = set(keys) | {k for k, s in self._sessions.by_source.items() if s.open}
        return self._commit(book, sorted(wanted), time.monotonic() + timeout)

    def _commit(
        self, book: ProgressBook, keys: list[SourcePartition], deadline: float
    ) -> dict[SourcePartition, int]:
        wire, by, _ = self._parts()
        self.drop_fenced()
        done: dict[SourcePartition, int] = {}
        todo: dict[SourcePartition, int] = {}
        for key in keys:
            session, pb = by.by_source.get(key), book.get(*key)
            if session is None or session.fenced or pb is None or pb.acked < 0:
                continue
            if not session.open and self._committed.get(key) == pb.acked:
                done[key] = pb.acked  # nothing new since the last commit
                continue
            record_key, value = encode_record(key[0], key[1], pb)
            record = progress_record(key, record_key, value, pb.acked)
            session.enqueue(self._progress_target, record)
            todo[key] = pb.acked
        if not todo:
            return done
        sessions = {k: by.by_source[k] for k in todo}
        wire.start()
        while any(s.unacknowledged and not s.fenced for s in sessions.values()):
            if time.monotonic() >= deadline:
                raise MirrorError(
                    "exactly-once: the target did not acknowledge the progress records within "
                    "the flush timeout. The open transactions stay invisible; a restart "
                    "resumes from the last committed progress records"
                )
            wire.pump(min(0.1, deadline - time.monotonic()))
        ended = self._end_all([k for k, s in sessions.items() if not s.fenced], True, deadline)
        for key in ended:
            done[key] = self._committed[key] = todo[key]
        self.drop_fenced()
        return done

    def _end_all(
        self, keys: list[SourcePartition], commit: bool, deadline: float | None = None
    ) -> list[SourcePartition]:
        """EndTxn for these partitions' open transactions, all at once. Returns the keys whose
        transaction ended. A failed commit is a MirrorError; a failed abort is left to the
        next owner's InitProducerId (or the transaction timeout)."""
        _, by, coordinators = self._parts()
        sessions = {k: s for k in keys if (s := by.by_source[k]).open}
        if deadline is None:
            deadline = time.monotonic() + ABORT_TIMEOUT_S
        results = coordinators.calls(
            {s.tid: s.end_request(commit) for s in sessions.values()},
            lambda r: int(r.error_code),
            deadline,
        )
        ended = []
        for key, session in sessions.items():
            code, _ = results[session.tid]
            if code == 0:
                session.added.clear()
                ended.append(key)
            elif code in FENCING:
                session.fenced = True
            elif commit:
                raise MirrorError(
                    f"exactly-once: committing the transaction of {key[0]}[{key[1]}] failed "
                    f"({error_name(code)}). Its records stay invisible; a restart resumes "
                    "from the last committed progress record"
                )
            else:
                log.warning(
                    "exactly-once: aborting the transaction of %s[%d] failed (%s); the next "
                    "owner or the transaction timeout aborts it",
                    key[0],
                    key[1],
                    error_name(code),
                )
            if not commit:
                session.forget()
        return ended
