"""Copy rate limits enforced with token buckets (pure: the clock is an argument).

A bucket holds up to one second of its rate and may go into debt: a copier asks `open` before
it fetches (the batch path) or consumes (the record path) a partition, and is charged
afterwards with what it really copied. One step (a fetch of up to a partition's fetch size; a
record copier's consume, kept to 0.1 s of the smallest limit by kmirror.control.gate) can
overdraw the bucket by that much once; the debt is paid before the next one, so the average
holds (tests/unit/control/test_throttle.py simulates a minute of fetches at 1 MB/s;
tests/integration/test_throttle.py copies under a limit on both engines).

Every partition is charged to two scopes, the flow and its topic, each with a backlog and a
tail bucket per unit (bytes, records): a partition is in the *tail* while it reached its
source end within the last TAIL_S seconds (it keeps up with live records), otherwise in the
*backlog* (catching up). So a catch-up is held to the backlog limit while live partitions go
at the tail limit, neither waiting for the other.

A replica's streams share the flow's and each topic's limits (`share`): each stream's share is
the limit divided by the streams that have partitions of that class (and topic) now, as they
report every second.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

from kmirror.config.throttle import KINDS, Kind, Rate, Rates, ThrottleSettings

BURST_S = 1.0  # a bucket holds this many seconds of its rate
TAIL_S = 10.0  # a partition that reached its end this recently is in the tail


class TokenBucket:
    def __init__(self, rate: float, now: float) -> None:
        self.rate = rate
        self.tokens = rate * BURST_S
        self._at = now

    def _refill(self, now: float) -> None:
        if now > self._at:
            self.tokens = min(self.tokens + (now - self._at) * self.rate, self.rate * BURST_S)
        self._at = max(self._at, now)

    def open(self, now: float) -> bool:
        self._refill(now)
        return self.tokens > 0

    def take(self, amount: float, now: float) -> None:
        self._refill(now)
        self.tokens -= amount

    def retune(self, rate: float, now: float) -> None:
        """A new rate; the tokens (or the debt) carry over, capped at the new burst."""
        self._refill(now)
        self.rate = rate
        self.tokens = min(self.tokens, rate * BURST_S)


@dataclass
class _Scope:
    """The buckets of one scope and class: bytes, records (None: no limit)."""

    bytes: TokenBucket | None = None
    records: TokenBucket | None = None

    def set(self, rate: Rate, now: float) -> None:
        self.bytes = _retuned(self.bytes, rate.bytes_per_s, now)
        self.records = _retuned(self.records, rate.records_per_s, now)

    def open(self, now: float) -> bool:
        return all(b.open(now) for b in (self.bytes, self.records) if b is not None)

    def take(self, records: int, nbytes: int, now: float) -> None:
        if self.bytes is not None:
            self.bytes.take(nbytes, now)
        if self.records is not None:
            self.records.take(records, now)


def _retuned(bucket: TokenBucket | None, rate: float | None, now: float) -> TokenBucket | None:
    if rate is None:
        return None
    if bucket is None:
        return TokenBucket(rate, now)
    bucket.retune(rate, now)
    return bucket


class Throttle:
    """One stream's buckets for its share of the throttle settings."""

    def __init__(self, settings: ThrottleSettings, now: float) -> None:
        self.settings = ThrottleSettings()
        self._flow = {kind: _Scope() for kind in KINDS}
        self._topics: dict[tuple[str, Kind], _Scope] = {}
        self.update(settings, now)

    @property
    def limited(self) -> bool:
        return self.settings.limited

    def update(self, settings: ThrottleSettings, now: float) -> None:
        self.settings = settings
        for kind in KINDS:
            self._flow[kind].set(settings.flow.of(kind), now)
        wanted = {(t, k): r.of(k) for t, r in settings.topics for k in KINDS}
        for key in list(self._topics):
            if key not in wanted:
                del self._topics[key]
        for key, rate in wanted.items():
            self._topics.setdefault(key, _Scope()).set(rate, now)

    def open(self, topic: str, kind: Kind, now: float) -> bool:
        scope = self._topics.get((topic, kind))
        return self._flow[kind].open(now) and (scope is None or scope.open(now))

    def smallest(self, record_bytes: float) -> float | None:
        """The smallest limit in force, in records per second (a bytes limit converted at
        `record_bytes` a record); None without limits."""
        rates = [self.settings.flow.of(k) for k in KINDS]
        rates += [r.of(k) for _, r in self.settings.topics for k in KINDS]
        per_s = [r.records_per_s for r in rates if r.records_per_s is not None]
        per_s += [r.bytes_per_s / max(record_bytes, 1.0) for r in rates if r.bytes_per_s]
        return min(per_s, default=None)

    def charge(self, topic: str, kind: Kind, records: int, nbytes: int, now: float) -> None:
        self._flow[kind].take(records, nbytes, now)
        scope = self._topics.get((topic, kind))
        if scope is not None:
            scope.take(records, nbytes, now)


# -- sharing among a replica's streams -------------------------------------------------------


class Reporting(Protocol):
    """What a stream reports that sharing needs (kmirror.app.channel.Report)."""

    @property
    def backlog(self) -> tuple[str, ...]: ...

    @property
    def tail(self) -> tuple[str, ...]: ...


def share(
    settings: ThrottleSettings, stream: int, reports: Mapping[int, Reporting], streams: int
) -> ThrottleSettings:
    """Stream `stream`'s part of the settings: every limit divided by the streams that have
    partitions of that class (of that topic, for a topic's limit); by all streams while none
    has reported yet."""
    if not settings.limited or streams <= 1:
        return settings

    def users(kind: Kind, topic: str | None) -> int:
        active = [
            r
            for r in reports.values()
            if (getattr(r, kind) if topic is None else topic in getattr(r, kind))
        ]
        return len(active) or streams

    def part(rates: Rates, topic: str | None) -> Rates:
        out: dict[str, Any] = {}
        for kind in KINDS:
            rate, n = rates.of(kind), users(kind, topic)
            out[kind] = Rate(
                None if rate.bytes_per_s is None else rate.bytes_per_s / n,
                None if rate.records_per_s is None else rate.records_per_s / n,
            )
        return Rates(**out)

    return replace(
        settings,
        flow=part(settings.flow, None),
        topics=tuple((t, part(r, t)) for t, r in settings.topics),
    )
