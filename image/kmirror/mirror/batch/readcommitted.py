"""read_committed over raw batches, the way the Java consumer does it (``CompletedFetch``).

A read_committed fetch stops at the last stable offset and lists the aborted transactions that
overlap what it returns: (producer id, first offset). Walking the batches in order, a producer
becomes "aborted" once the walk reaches the first offset of one of its aborted transactions;
its transactional batches are dropped until its abort marker (a control batch) closes the
transaction. Control batches themselves are never copied: the target's copy is written by our
own idempotent, non-transactional producer, so the markers have nothing to mark there.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

from kmirror.mirror.batch.records import Batch, control_type

ABORT = 0


def committed(
    batches: Iterable[Batch], aborted: Iterable[tuple[int, int]]
) -> list[tuple[Batch, bool]]:
    """Each batch with whether to copy it. ``aborted`` holds (producer_id, first_offset)."""
    pending = [(first, pid) for pid, first in aborted]
    heapq.heapify(pending)
    active: set[int] = set()
    out: list[tuple[Batch, bool]] = []
    for batch in batches:
        if batch.magic >= 2 and batch.producer_id >= 0:
            while pending and pending[0][0] <= batch.last_offset:
                active.add(heapq.heappop(pending)[1])
            if batch.is_control:
                if control_type(batch) == ABORT:
                    active.discard(batch.producer_id)
            elif batch.is_transactional and batch.producer_id in active:
                out.append((batch, False))
                continue
        out.append((batch, not batch.is_control))
    return out
