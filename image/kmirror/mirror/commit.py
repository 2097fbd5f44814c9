"""A commit point, once the stream's flush found everything it sent acknowledged: what the
progress book says was copied becomes the restart position.

At-least-once: the progress records are written to the target first, then the source group's
offsets are committed. A source commit never runs ahead of the progress records, or a restart
would lose the runs behind it. --exactly-once: the copier's transactions commit the records and
the progress records together on the target; the source group's commit after them only shows
the position (monitoring).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Protocol

from kmirror.metrics.worker import WorkerMetrics
from kmirror.mirror.contract import Transactional
from kmirror.mirror.latch import FailureLatch
from kmirror.mirror.progress_store import ProgressStore
from kmirror.partitions import SourcePartition
from kmirror.progress.book import ProgressBook

log = logging.getLogger(__name__)


class SourceGroup(Protocol):
    def commit(self, offsets: Mapping[SourcePartition, int]) -> bool: ...


class Committer:
    def __init__(
        self, book: ProgressBook, latch: FailureLatch, metrics: WorkerMetrics, stream_id: int
    ) -> None:
        self._book = book
        self._latch = latch
        self._metrics = metrics
        self._id = stream_id
        # Where a partition restarts after a failed send: the last commit, or its start.
        self.restart: dict[SourcePartition, int] = {}

    def commit(
        self,
        why: str,
        group: SourceGroup,
        store: ProgressStore,
        txn: Transactional | None,
        timeout: float,
    ) -> bool:
        # The book's acknowledged offsets (the copier settled them in the flush). Negative: a
        # partition that started at OFFSET_BEGINNING and has copied nothing yet.
        todo = {k: o for k, o in self._book.to_commit().items() if o >= 0}
        if txn is not None:
            return self._transactions(why, group, txn, todo, timeout)
        if not todo:
            return True
        failed = store.write(self._book, todo, timeout)
        if failed is not None:
            log.warning("not committing (%s): progress record not written: %s", why, failed.str())
            self._latch.send_failed(store.topic, 0, failed)
            return False
        if not group.commit(todo):
            return False
        self._done(todo)
        log.debug("committed (%s) stream=%d partitions=%d", why, self._id, len(todo))
        return True

    def _transactions(
        self,
        why: str,
        group: SourceGroup,
        txn: Transactional,
        todo: Mapping[SourcePartition, int],
        timeout: float,
    ) -> bool:
        done = txn.commit(self._book, todo, timeout)
        if done:
            self._done(done)
            if not group.commit(done):
                log.info("source group commit (monitoring only) failed (%s)", why)
        log.debug("transactions committed (%s) stream=%d partitions=%d", why, self._id, len(done))
        return not self._latch.failures and all(
            k in done for k in todo if self._book.get(*k) is not None
        )

    def _done(self, offsets: Mapping[SourcePartition, int]) -> None:
        self._book.committed(offsets)
        self.restart.update(offsets)
        self._metrics.committed()
