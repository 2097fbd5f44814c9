"""The delivery guarantee of a stream: at-least-once or exactly-once, one strategy object that
every copy path uses (the Java producer's TransactionManager is the model: the Sender works the
same either way and asks it).

Each implementation holds a record-path part (record_guarantee.py, record_transactions.py:
which confluent-kafka producer a record goes through) and a batch-path part
(batch/guarantee.py: which producer session a batch goes through); the copiers take the
guarantee as a constructor argument and send through its parts (the record copier through
`record`, the batch copier through `batch`, the hybrid both). The guarantee owns what differs
between the two:

- `open`: at-least-once nothing; exactly-once initialises each new partition's transactional id
  (fencing its previous owner, whose open transaction is aborted) before the stream reads the
  partition's progress record; on the hybrid engine on the batch path, where every partition
  starts.
- `commit` (a commit point, after a flush that found everything acknowledged): at-least-once
  writes the progress records to the target, then commits the source group's offsets (a
  source commit never runs ahead of the progress records); exactly-once commits each
  partition's transaction with its progress record inside it, and commits the source group
  only to show the position (monitoring).
- fencing and the clean-up after it (exactly-once): both parts mark fenced partitions in one
  `Fenced` (batch/fencing.py), which lets them go the same way whichever path saw it; the
  stream hears of each (`on_fenced`) and takes it back while the group still gives it to it
  (a transaction the target timed out looks like a fencing).
- `hand_over`: a partition the batch path cannot copy moves to the record path; exactly-once
  first commits its batch-path transaction, then the record path initialises the same
  transactional id.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping

from kmirror.mirror.batch.fencing import Fenced
from kmirror.mirror.batch.guarantee import BatchAtLeastOnce, BatchExactlyOnce
from kmirror.mirror.batch.producer import BatchSendError
from kmirror.mirror.contract import CopierContext, SourceGroup
from kmirror.mirror.latch import FailureLatch
from kmirror.mirror.progress_store import ProgressStore
from kmirror.mirror.record_guarantee import RecordAtLeastOnce
from kmirror.mirror.record_transactions import RecordExactlyOnce
from kmirror.partitions import SourcePartition
from kmirror.progress.book import ProgressBook

log = logging.getLogger(__name__)

HANDOVER_TIMEOUT_S = 30.0


class AtLeastOnce:
    transactional = False

    def __init__(self, latch: FailureLatch) -> None:
        self._latch = latch
        self.record = RecordAtLeastOnce()
        self.batch = BatchAtLeastOnce()

    def open(self, keys: Iterable[SourcePartition]) -> None:
        pass

    def commit(
        self,
        book: ProgressBook,
        todo: Mapping[SourcePartition, int],
        timeout: float,
        store: ProgressStore,
        group: SourceGroup,
    ) -> tuple[dict[SourcePartition, int], bool]:
        if not todo:
            return {}, True
        failed = store.write(book, todo, timeout)
        if failed is not None:
            log.warning("not committing: progress record not written: %s", failed.str())
            self._latch.send_failed(store.topic, 0, failed)
            return {}, False
        if not group.commit(todo):
            return {}, False
        return dict(todo), True

    def hand_over(self, key: SourcePartition, offset: int) -> bool:
        """Nothing to hand over: the record path's producer takes any partition."""
        return True

    def on_fenced(self, listener: Callable[[SourcePartition], None]) -> None:
        """Nothing is ever fenced without transactions."""


class ExactlyOnce:
    transactional = True

    def __init__(self, ctx: CopierContext) -> None:
        self._book = ctx.book
        self._latch = ctx.latch
        self._fenced = fenced = Fenced(ctx.book)
        self.record = RecordExactlyOnce(fenced)
        self.batch = BatchExactlyOnce(ctx.config, fenced)

    def open(self, keys: Iterable[SourcePartition]) -> None:
        # With a batch copier bound every partition starts on the batch path: its
        # transactional id is initialised there (fencing any previous owner, of either path).
        (self.batch if self.batch.bound else self.record).open(keys)

    def commit(
        self,
        book: ProgressBook,
        todo: Mapping[SourcePartition, int],
        timeout: float,
        store: ProgressStore,
        group: SourceGroup,
    ) -> tuple[dict[SourcePartition, int], bool]:
        # Each part commits the partitions it holds a transaction for (and any other it has
        # open); a partition is held by one part at a time.
        deadline = time.monotonic() + timeout
        try:
            done = self.batch.commit(book, todo, timeout)
        except BatchSendError as exc:
            if exc.permanent:
                raise
            # A progress record's batch not acknowledged in time (the target away longer than
            # message.timeout.ms), before any transaction ended: a failed send. Riding it out
            # (abort.on.send.failure=false), those transactions are given up and their
            # partitions taken back (batch/sessions.py, abandon); else the latch stops.
            if self._latch.abort_on_send_failure:
                self._latch.send_failed(exc.target[0], exc.target[1], exc.kafka_error(), batch=True)
            else:
                log.warning("exactly-once: %s; its transactions are given up and taken back", exc)
                self.batch.abandon()
            done = {}
        done.update(self.record.commit(book, todo, max(deadline - time.monotonic(), 1.0)))
        if done and not group.commit(done):
            log.info("source group commit (monitoring only) failed")
        complete = not self._latch.failures and all(
            k in done for k in todo if book.get(*k) is not None
        )
        return done, complete

    def hand_over(self, key: SourcePartition, offset: int) -> bool:
        """Commit the batch path's transaction up to `offset`, then the record path's own
        transactional producer takes the partition over from there. False when it was
        fenced meanwhile (another stream owns it; it was dropped)."""
        if not self.batch.handover(self._book, key, HANDOVER_TIMEOUT_S):
            return False
        self.record.open([key])  # ConfigError/ClusterError when refused: stops
        log.info(
            "exactly-once: %s[%d] committed up to offset %d on the batch path; the record "
            "path's transactional producer continues",
            key[0],
            key[1],
            offset,
        )
        return True

    def on_fenced(self, listener: Callable[[SourcePartition], None]) -> None:
        self._fenced.listen(listener)
