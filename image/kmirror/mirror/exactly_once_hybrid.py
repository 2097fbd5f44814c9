"""Exactly-once on `--engine batch|auto`: the hybrid copier with transactions on both paths.

Every partition starts on the batch path (TransactionalBatchCopier, batch/exactly_once.py).
A partition the batch path cannot copy byte for byte (compacted batches, old formats,
LogAppendTime, a start inside a batch) moves to the record path's transactional copier
(TransactionalCopier, exactly_once.py) at the exact offset: the batch path first commits the
partition's transaction with its progress record at that offset, then the record path's
producer initialises the same transactional id (fencing the batch-path session, which is
done) and copies on from there. Under exactly-once a partition stays on the record path until
it is assigned again (no probing back): moving back would need the same commit-then-hand-over
at a clean point, which is not built.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable

from kmirror.mirror.batch.exactly_once import TransactionalBatchCopier
from kmirror.mirror.contract import CopierContext
from kmirror.mirror.exactly_once import TransactionalCopier
from kmirror.mirror.hybrid import HybridCopier
from kmirror.partitions import SourcePartition
from kmirror.progress.book import ProgressBook

log = logging.getLogger(__name__)

HANDOVER_TIMEOUT_S = 30.0


class TransactionalHybridCopier(HybridCopier):
    def __init__(self, ctx: CopierContext) -> None:
        self._txn_record = TransactionalCopier(ctx)
        self._txn_batch = TransactionalBatchCopier(
            ctx.config, ctx.book, ctx.metrics, schemas=ctx.schemas
        )
        super().__init__(ctx, self._txn_record, self._txn_batch)
        self.router.probe = False

    # -- the transactional copier's shape (Stream: open before the progress read, commit) --

    def open(self, keys: Iterable[SourcePartition]) -> None:
        """Every new partition starts on the batch path: its transactional id is initialised
        there (fencing any previous owner, of either path)."""
        self._txn_batch.open(keys)

    def commit(
        self, book: ProgressBook, keys: Iterable[SourcePartition], timeout: float
    ) -> dict[SourcePartition, int]:
        keys = list(keys)
        deadline = time.monotonic() + timeout
        on_batch = [k for k in keys if self.router.on_batch(k)]
        done = self._txn_batch.commit(book, on_batch, timeout)
        on_record = [k for k in keys if not self.router.on_batch(k)]
        left = max(deadline - time.monotonic(), 1.0)
        done.update(self._txn_record.commit(book, on_record, left))
        return done

    def _fall_back(self, key: SourcePartition, offset: int) -> None:
        """Commit the batch path's transaction up to `offset`, then the record path's own
        transactional producer takes the partition over from there."""
        if not self._txn_batch.handover(self._book, key, HANDOVER_TIMEOUT_S):
            return  # fenced meanwhile: another stream owns it, it was dropped
        self._txn_record.open([key])  # ConfigError/ClusterError when refused: stops
        log.info(
            "exactly-once: %s[%d] committed up to offset %d on the batch path; the record "
            "path's transactional producer continues",
            key[0],
            key[1],
            offset,
        )
        super()._fall_back(key, offset)
