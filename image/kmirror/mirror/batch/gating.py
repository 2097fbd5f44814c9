"""The batch path's side of the control gate (kmirror.control.gate): which partitions are
fetched, and which fetched batches are copied.

- A partition is fetched only below its limit (a paused topic: never; a drain: up to its end)
  and while the throttle has room for it: the limit applies before fetching.
- Batches a fetch in flight brought from at or past the limit are not copied: the fetch
  position goes back to the first of them, so nothing is skipped when the limit goes. (A drain's
  end is the source's end offset as it was read, a batch boundary, so no batch straddles it.)
- What is copied is charged to the throttle before it is produced; a partition whose position
  reached the source's end is reported (the tail, kmirror.control.throttle).

Owned by the BatchCopier (kmirror.mirror.batch.copier): its `_room` asks `room`, its `_hand`
passes each fetch through `cut`, its turn calls `mark_ends`.
"""

from __future__ import annotations

from collections.abc import Iterable

from kmirror.control.gate import Gate
from kmirror.mirror.batch.fetcher import Fetched, Fetcher
from kmirror.partitions import SourcePartition


class BatchGate:
    def __init__(self, gate: Gate | None = None) -> None:
        self.gate = gate or Gate()

    def room(self, key: SourcePartition, position: int | None) -> bool:
        limit = self.gate.limit(key)
        if limit is not None and (position is None or position >= limit):
            return False
        return self.gate.open(key)

    def cut(self, fetched: Fetched, fetcher: Fetcher) -> Fetched:
        """The batches to copy of a fetch (the rest goes back to the fetcher), charged."""
        key = fetched.key
        limit = self.gate.limit(key)
        batches = fetched.batches
        if limit is not None:
            keep = [(b, c) for b, c in batches if b.base_offset < limit]
            if len(keep) < len(batches):
                fetcher.seek(key, max(batches[len(keep)][0].base_offset, fetched.start))
                batches = keep
                fetched = Fetched(key, fetched.start, keep)
        if self.gate.throttling:
            copied = [b for b, c in batches if c]
            self.gate.charge(
                key, sum(b.record_count for b in copied), sum(len(b.data) for b in copied)
            )
        return fetched

    def mark_ends(self, fetcher: Fetcher, keys: Iterable[SourcePartition]) -> None:
        if not self.gate.throttling:
            return
        for key in keys:
            position, end = fetcher.position(key), fetcher.high_watermark(key)
            if position is not None and end is not None and position >= end:
                self.gate.at_end(key)
