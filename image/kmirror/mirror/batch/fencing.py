"""Fenced partitions under --exactly-once, and the clean-up after a fencing, once for both paths.

A fencing answer (PRODUCER_FENCED / INVALID_PRODUCER_EPOCH: another owner initialised the
partition's transactional id) can come from either path's transactions: librdkafka's producers
on the record path (kmirror.mirror.record_transactions), the batch path's sessions
(batch/guarantee.py). Whichever saw it marks the partition here; `drop` then lets it go the
same way every time: logged, every part that holds something of it forgets it (its
transaction, what its copier had staged or in flight, its fetching), and its progress book entry
is closed, so no later settle or commit covers it. The group hands it out again (to this stream
or another), and the next owner's InitProducerId has already aborted what was open.

The same answer comes when the coordinator timed the partition's transaction out (the target
did not answer for transaction.timeout.ms): it aborts the transaction and bumps the epoch as
a new owner would, and librdkafka reports both as fenced. So the stream hears of every dropped
partition (`listen`) and takes it back while the group still gives it to it
(kmirror.mirror.subscription, `take_back`): opened again as if newly assigned, from its
committed progress record.

Pure bookkeeping: no client, unit-tested without a broker.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from kmirror.kafka.transactions import FENCED_LOG
from kmirror.partitions import SourcePartition
from kmirror.progress.book import ProgressBook

log = logging.getLogger(__name__)


class Fenced:
    def __init__(self, book: ProgressBook) -> None:
        self._book = book
        self._keys: set[SourcePartition] = set()
        # What each part (transactions, copiers) forgets of a fenced partition; each takes
        # keys it does not hold without complaint.
        self._forgets: list[Callable[[SourcePartition], None]] = []

    def listen(self, forget: Callable[[SourcePartition], None]) -> None:
        self._forgets.append(forget)

    def mark(self, key: SourcePartition) -> None:
        self._keys.add(key)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def drop(self) -> list[SourcePartition]:
        """Let every partition marked since the last call go (see the module doc)."""
        keys, self._keys = sorted(self._keys), set()
        for key in keys:
            log.error(FENCED_LOG, key[0], key[1])
            for forget in self._forgets:
                forget(key)
            self._book.close(*key)
        return keys
