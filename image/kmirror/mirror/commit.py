"""A commit point, once the stream's flush found everything it sent acknowledged: what the
progress book says was copied becomes the restart position.

How is the delivery guarantee's (kmirror.mirror.guarantee): at-least-once writes the progress
records to the target first, then commits the source group's offsets (a source commit never
runs ahead of the progress records, or a restart would lose the runs behind it); exactly-once
commits the records and the progress records together in the partitions' transactions, and
the source group's commit after them only shows the position (monitoring).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from kmirror.metrics.worker import WorkerMetrics
from kmirror.mirror.contract import Guarantee, SourceGroup
from kmirror.mirror.progress_store import ProgressStore
from kmirror.partitions import SourcePartition
from kmirror.progress.book import ProgressBook

log = logging.getLogger(__name__)


class Committer:
    def __init__(self, book: ProgressBook, metrics: WorkerMetrics, stream_id: int) -> None:
        self._book = book
        self._metrics = metrics
        self._id = stream_id
        # Where a partition restarts after a failed send: the last commit, or its start.
        self.restart: dict[SourcePartition, int] = {}

    def commit(
        self,
        why: str,
        group: SourceGroup,
        store: ProgressStore,
        guarantee: Guarantee,
        timeout: float,
    ) -> bool:
        # The book's acknowledged offsets (the copier settled them in the flush). Negative: a
        # partition that started at OFFSET_BEGINNING and has copied nothing yet.
        todo = {k: o for k, o in self._book.to_commit().items() if o >= 0}
        done, complete = guarantee.commit(self._book, todo, timeout, store, group)
        if done:
            self._done(done)
            log.debug("committed (%s) stream=%d partitions=%d", why, self._id, len(done))
        return complete

    def _done(self, offsets: Mapping[SourcePartition, int]) -> None:
        self._book.committed(offsets)
        self.restart.update(offsets)
        self._metrics.committed()
