"""The batch copier's producer session under --exactly-once, split by source partition: each
target partition goes to the TxnSession (transactions.py) of the source partition it is copied
from, and AddPartitionsToTxn goes out for every session that needs it, all at once, before
their batches. Built by the batch path's exactly-once guarantee (guarantee.py)."""

from __future__ import annotations

import logging
import time
from typing import Any

from kmirror.errors import MirrorError, SendError
from kmirror.kafka.wire import Link
from kmirror.mirror.batch.merger import Merger, Pending, Staged
from kmirror.mirror.batch.producer import BatchSendError, ProducerSession
from kmirror.mirror.batch.transactions import (
    FENCING,
    NO_ANSWER,
    RETRIABLE,
    Coordinators,
    TxnSession,
    add_error,
    error_name,
)
from kmirror.partitions import SourcePartition, TargetPartition

log = logging.getLogger(__name__)


class Sessions(ProducerSession):
    """The batch copier's producer session, split by source partition: each target partition
    goes to the TxnSession of the source partition it is copied from."""

    def __init__(self, link: Link, merger: Merger, coordinators: Coordinators, **args: Any) -> None:
        super().__init__(link, merger, **args)
        self._coordinators = coordinators
        self.by_source: dict[SourcePartition, TxnSession] = {}
        self.sources: dict[TargetPartition, SourcePartition] = {}
        self._first = 0  # the session that sends first next time (they share the slots)

    def _of(self, target: TargetPartition) -> TxnSession | None:
        source = self.sources.get(target)
        return None if source is None else self.by_source.get(source)

    def enqueue(self, target: TargetPartition, staged: Staged) -> None:
        session = self._of(target)
        if session is None:
            raise MirrorError(f"exactly-once: no transaction for target {target[0]}[{target[1]}]")
        session.enqueue(target, staged)

    def last(self, target: TargetPartition) -> Staged | Pending | None:
        session = self._of(target)
        return None if session is None else session.last(target)

    def queued(self, target: TargetPartition) -> int:
        session = self._of(target)
        return 0 if session is None else session.queued(target)

    def staged_bytes(self, target: TargetPartition) -> int:
        session = self._of(target)
        return 0 if session is None else session.staged_bytes(target)

    def drop(self, target: TargetPartition) -> None:
        session = self._of(target)
        if session is not None:
            session.drop(target)

    def abandon(self) -> bool:
        """A send failed (not acknowledged in time): under exactly-once the transactions that
        hold unacknowledged batches cannot be finished (what the target has of them is
        unknown), and their sequences cannot go on. Each is given up like a fenced one: marked
        here, then dropped (batch/fencing.py, its queues forgotten, the transaction left to the
        next InitProducerId), and the stream takes the partition back from its committed
        progress (Subscription.take_back) instead of rewinding. True when any was."""
        given_up = False
        for session in self.by_source.values():
            if not session.fenced and (session.open or session.unacknowledged):
                session.fenced = given_up = True
        return given_up

    @property
    def unacknowledged(self) -> int:
        return sum(s.unacknowledged for s in self.by_source.values() if not s.fenced)

    def hold(self, on: bool) -> None:
        self.held = on
        for session in self.by_source.values():
            session.hold(on)

    def send(self) -> None:
        """Each session sends what its partitions have, the first one in turn: they share
        the connection's request slots (TxnSession._room), which a fixed order would give to
        the same partitions every time."""
        self._add()
        sessions = list(self.by_source.values())
        if not sessions:
            return
        self._first = (self._first + 1) % len(sessions)
        for session in sessions[self._first :] + sessions[: self._first]:
            session.send()

    def take(self) -> list[Pending]:
        return [
            p
            for s in self.by_source.values()
            for p in s.take()
            if not p.progress  # the progress record: not a source batch
        ]

    def check(self) -> None:
        for session in self.by_source.values():
            session.check()

    def _add(self) -> None:
        """AddPartitionsToTxn for every partition whose next batch needs it, all at once."""
        wanted = {
            s.tid: (s, keys)
            for s in self.by_source.values()
            if s.producer_id >= 0 and not s.fenced and (keys := s.to_add())
        }
        if not wanted:
            return
        deadline = time.monotonic() + self._request_timeout_ms / 1000
        results = self._coordinators.calls(
            {tid: s.add_request(keys) for tid, (s, keys) in wanted.items()}, add_error, deadline
        )
        for tid, (session, keys) in wanted.items():
            code, _ = results[tid]
            if code == 0:
                session.added.update(keys)
            elif code in FENCING:
                session.fenced = True
            elif (code == NO_ANSWER or code in RETRIABLE) and (
                session.waited_s(keys) > self._delivery_timeout_s
            ):
                # Waited the delivery timeout: the batches were not acknowledged in time, as
                # for a send (the loop gives the transaction up, see abandon).
                raise BatchSendError(
                    f"exactly-once: the target did not add {keys} to the transaction of {tid} "
                    f"within {self._delivery_timeout_s:.0f} s (message.timeout.ms; "
                    f"{error_name(code)})",
                    keys[0],
                    code=None if code == NO_ANSWER else code,
                )
            elif code == NO_ANSWER or code in RETRIABLE:
                # The coordinator is away for longer than a request (its broker restarting,
                # the coordinator moving): the batches wait and the next send asks again,
                # within the delivery timeout of a batch, so a target that stays away counts
                # as a failed send after message.timeout.ms as on the record path, not after
                # one request timeout.
                log.warning(
                    "exactly-once: the target has not added %s to the transaction of %s yet "
                    "(%s); asking again",
                    keys,
                    tid,
                    error_name(code),
                )
            else:
                raise SendError(
                    f"exactly-once: the target did not add {keys} to the transaction of "
                    f"{tid} ({error_name(code)}). Nothing of it is visible; a restart resumes "
                    "from the last commit"
                )
