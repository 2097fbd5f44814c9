"""The gate a stream's copiers ask before they copy: how far each partition may be copied (a
paused topic: nothing more; a drain: up to its captured end) and whether the throttle lets it
be fetched now. The stream process feeds it the supervisor's orders (kmirror.app.channel);
nothing here talks to a broker.

The copiers' side of the contract (kmirror.mirror.record_copier, kmirror.mirror.batch.copier):

- `limit(key)`: source offsets from this one on are not copied; a copier that fetched past it
  keeps the first offset it did not copy and continues from there when the limit goes;
- `open(key)`: the throttle has room for this partition now (ask before fetching it);
- `charge(key, records, nbytes)`: what was copied of it (after fetching, before producing);
- `at_end(key)`: the copier saw the partition reach its source end (the tail: throttle.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from kmirror.config.throttle import Kind, ThrottleSettings
from kmirror.control.state import ControlState, drained
from kmirror.control.throttle import TAIL_S, Throttle
from kmirror.partitions import SourcePartition

# Under a throttle a record copier consumes at most this many seconds of the smallest limit at a
# time (a consume is charged after it is taken, so this bounds the overdraw), but never fewer
# than MIN_BATCH records (so one small topic limit does not make every step tiny).
BATCH_S = 0.1
MIN_BATCH = 50

OnThrottled = Callable[[str, Kind, float], None]  # topic, class, seconds held back


class Gate:
    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        on_throttled: OnThrottled | None = None,
    ) -> None:
        self._clock = clock
        self._on_throttled = on_throttled
        self.state = ControlState()
        self.version = 0  # changes with the limits: copiers cache what they derive from them
        self.throttle = Throttle(ThrottleSettings(), clock())
        self._end_at: dict[SourcePartition, float] = {}
        self._closed: dict[tuple[str, Kind], float] = {}  # held back by the throttle since

    def update(self, state: ControlState, throttle: ThrottleSettings) -> None:
        if state != self.state:
            self.state = state
            self.version += 1
        if throttle != self.throttle.settings:
            self.throttle.update(throttle, self._clock())

    # -- limits ---------------------------------------------------------------------------------

    def limit(self, key: SourcePartition) -> int | None:
        return self.state.limit(key)

    def limits(self, keys: Iterable[SourcePartition]) -> dict[SourcePartition, int]:
        return self.state.limits(keys)

    def draining(self, committed: dict[SourcePartition, int]) -> bool:
        """A drain waits for these partitions (a stream's, with their committed offsets) to be
        committed up to their limits: the stream commits often until they are."""
        if self.state.drain is None:
            return False
        return not drained(self.state.limits(committed), committed)

    # -- the throttle ---------------------------------------------------------------------------

    @property
    def throttling(self) -> bool:
        return self.throttle.limited

    def kind(self, key: SourcePartition) -> Kind:
        at = self._end_at.get(key)
        return "tail" if at is not None and self._clock() - at <= TAIL_S else "backlog"

    def at_end(self, key: SourcePartition) -> None:
        self._end_at[key] = self._clock()

    def open(self, key: SourcePartition) -> bool:
        if not self.throttle.limited:
            return True
        now = self._clock()
        scope = (key[0], self.kind(key))
        ok = self.throttle.open(scope[0], scope[1], now)
        since = self._closed.get(scope)
        if not ok and since is None:
            self._closed[scope] = now
        elif ok and since is not None:
            del self._closed[scope]
            if self._on_throttled is not None:
                self._on_throttled(scope[0], scope[1], now - since)
        return ok

    def charge(self, key: SourcePartition, records: int, nbytes: int) -> None:
        if self.throttle.limited:
            self.throttle.charge(key[0], self.kind(key), records, nbytes, self._clock())

    def batch(self, most: int, record_bytes: float) -> int:
        """How many records a record copier may consume at once (`most` without a throttle)."""
        smallest = self.throttle.smallest(record_bytes) if self.throttle.limited else None
        if smallest is None:
            return most
        return min(most, max(MIN_BATCH, int(smallest * BATCH_S)))

    def classes(self, keys: Iterable[SourcePartition]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(topics with backlog partitions, topics with tail partitions) among `keys`."""
        backlog: set[str] = set()
        tail: set[str] = set()
        for key in keys:
            (tail if self.kind(key) == "tail" else backlog).add(key[0])
        return tuple(sorted(backlog)), tuple(sorted(tail))

    def forget(self, keys: Iterable[SourcePartition]) -> None:
        for key in keys:
            self._end_at.pop(key, None)
