"""Raw record batches from the source partitions' leaders (Fetch v12, read_committed).

One fetch in flight per source leader, two while it has records waiting (``groups``). The
fetcher owns each partition's fetch position; it moves only past complete batches it hands out.
A response for a position that changed while it was in flight (revoke, rewind) is dropped by its
generation number.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafka.future import Future
from kafka.protocol.consumer.fetch import FetchRequest

from kmirror.errors import ClusterError, SourceTrimmedError
from kmirror.kafka.wire import Link
from kmirror.mirror.batch.readcommitted import committed
from kmirror.mirror.batch.records import Batch, split
from kmirror.partitions import SourcePartition

log = logging.getLogger(__name__)

FETCH_VERSION = 12  # topic names (v13+ wants topic ids); raw batches; aborted transactions
READ_COMMITTED = 1
RETRY_BACKOFF_S = 0.1
PER_LEADER = 2  # fetches in flight per source leader at most (groups())
# Partition errors that mean "ask again, maybe elsewhere": the leader moved, its epoch is
# newer or older than ours, the broker is busy loading, or a replica is not there yet.
RETRIABLE = {3, 5, 6, 9, 13, 56, 74, 75, 78, 100}
OFFSET_OUT_OF_RANGE = 1
AUTHORIZATION = {29: "TOPIC_AUTHORIZATION_FAILED", 31: "CLUSTER_AUTHORIZATION_FAILED"}


@dataclass
class Position:
    offset: int
    max_bytes: int
    generation: int = 0
    retry_at: float = 0.0
    high_watermark: int = -1  # the source's end, as the last fetch response said
    # Its last stable offset, as the last response said: what read_committed can read up to.
    last_stable: int = -1


@dataclass
class InFlight:
    future: Future
    sent: dict[SourcePartition, int]  # the partitions asked for, at their generations
    parks: bool  # none of them had records waiting: the broker may hold it max_wait_ms


def groups(
    keys: list[SourcePartition],
    waiting: Callable[[SourcePartition], bool],
    in_flight: list[bool],
) -> list[list[SourcePartition]]:
    """The fetches to send a leader now for `keys` (partitions with room, none in flight),
    given its fetches in flight (``InFlight.parks`` of each).

    The broker answers one connection's requests in order, so a second fetch is read while
    the copier handles the first one's response: the source's reading and our copying
    overlap, which a `mixed` catch-up on one stream measured as 18 % faster (session 23). That
    helps only while records wait: a fetch with nothing to read parks up to max_wait_ms on the
    broker, and any fetch queued behind it on the connection waits as long (a tail record
    would be delayed by up to 100 ms). So a second fetch goes only where neither it nor the
    one in flight can park; a leader with nothing in flight gets its waiting partitions in
    two halves when there are two or more (the others ride with the first half)."""
    if not keys or len(in_flight) >= PER_LEADER:
        return []
    ready = [k for k in keys if waiting(k)]
    if in_flight:
        return [keys] if ready and not any(in_flight) else []
    if len(ready) < 2:
        return [keys]
    waits = set(ready)
    return [ready[0::2] + [k for k in keys if k not in waits], ready[1::2]]


@dataclass
class Fetched:
    """Complete batches of one partition, in order, each with whether it is to be copied
    (read_committed: control batches and aborted transactions are not)."""

    key: SourcePartition
    start: int  # the position fetched from: the first batch may begin before it
    batches: list[tuple[Batch, bool]] = field(default_factory=list)


class Fetcher:
    def __init__(
        self,
        link: Link,
        group_id: str,
        *,
        max_wait_ms: int,
        max_bytes: int,
        partition_max_bytes: int,
    ) -> None:
        self._link = link
        self._group = group_id
        self._max_wait_ms = max_wait_ms
        self._max_bytes = max_bytes
        self._partition_max_bytes = partition_max_bytes
        self._positions: dict[SourcePartition, Position] = {}
        self._in_flight: dict[tuple[int, int], InFlight] = {}  # (leader node, slot) ->
        self._generation = 0

    # -- positions ------------------------------------------------------------------------------

    def add(self, key: SourcePartition, offset: int) -> None:
        self._generation += 1
        self._positions[key] = Position(offset, self._partition_max_bytes, self._generation)
        self._link.want({key[0]})

    def remove(self, key: SourcePartition) -> None:
        self._positions.pop(key, None)

    def seek(self, key: SourcePartition, offset: int) -> None:
        """Fetch from `offset` again (batches handed out past it were not used); a fetch in
        flight is dropped when it comes back."""
        pos = self._positions.get(key)
        if pos is not None:
            self._generation += 1
            pos.offset, pos.generation = offset, self._generation

    def position(self, key: SourcePartition) -> int | None:
        pos = self._positions.get(key)
        return None if pos is None else pos.offset

    def high_watermark(self, key: SourcePartition) -> int | None:
        """The source partition's end offset from the last fetch response (None before)."""
        pos = self._positions.get(key)
        return None if pos is None or pos.high_watermark < 0 else pos.high_watermark

    # -- requests -------------------------------------------------------------------------------

    def send(self, ready: Callable[[SourcePartition], bool]) -> None:
        """Fetch from every leader the partitions with room that are not being fetched: one
        request, or two while the leader has records waiting (``groups``)."""
        now = time.monotonic()
        busy = {k for fetch in self._in_flight.values() for k in fetch.sent}
        by_node: dict[int, list[SourcePartition]] = {}
        for key, pos in self._positions.items():
            if pos.retry_at > now or key in busy or not ready(key):
                continue
            node = self._link.leader(*key)
            if node is None:
                self._link.refresh()
                continue
            by_node.setdefault(node, []).append(key)
        for node, keys in by_node.items():
            slots = [s for s in range(PER_LEADER) if (node, s) not in self._in_flight]
            parked = [f.parks for (n, _), f in self._in_flight.items() if n == node]
            for slot, group in zip(slots, groups(keys, self._waiting, parked), strict=False):
                self._in_flight[(node, slot)] = InFlight(
                    self._link.send(node, self._request(group)),
                    {k: self._positions[k].generation for k in group},
                    parks=not any(self._waiting(k) for k in group),
                )

    def _waiting(self, key: SourcePartition) -> bool:
        """Did the last response say the partition has committed records past our position?
        A fetch that asks for such a partition is answered at once."""
        pos = self._positions[key]
        return pos.last_stable > pos.offset

    def _request(self, keys: list[SourcePartition]) -> Any:
        topics: dict[str, list[Any]] = {}
        for topic, partition in sorted(keys):
            pos = self._positions[(topic, partition)]
            topics.setdefault(topic, []).append(
                FetchRequest.FetchTopic.FetchPartition(
                    partition=partition,
                    current_leader_epoch=self._link.leader_epoch(topic, partition),
                    fetch_offset=pos.offset,
                    log_start_offset=-1,
                    partition_max_bytes=pos.max_bytes,
                )
            )
        return FetchRequest(
            replica_id=-1,
            max_wait_ms=self._max_wait_ms,
            min_bytes=1,
            max_bytes=self._max_bytes,
            isolation_level=READ_COMMITTED,
            session_id=0,
            session_epoch=-1,
            topics=[FetchRequest.FetchTopic(topic=t, partitions=ps) for t, ps in topics.items()],
            forgotten_topics_data=[],
            rack_id="",
            version=FETCH_VERSION,
        )

    # -- responses ------------------------------------------------------------------------------

    def take(self) -> list[Fetched]:
        """What the completed fetches brought. Raises SourceTrimmedError when a position no
        longer exists on the source, ClusterError when the source refuses us."""
        out: list[Fetched] = []
        for (node, slot), fetch in list(self._in_flight.items()):
            future, sent = fetch.future, fetch.sent
            if not future.is_done:
                continue
            del self._in_flight[(node, slot)]
            if future.failed():
                log.warning("fetch from source node %s failed: %s", node, future.exception)
                self._retry(list(sent))
                continue
            for topic in future.value.responses:
                for part in topic.partitions:
                    key = (topic.topic, part.partition_index)
                    pos = self._positions.get(key)
                    if pos is None or pos.generation != sent.get(key):
                        continue  # revoked or moved while the fetch was in flight
                    fetched = self._partition(key, pos, part)
                    if fetched is not None:
                        out.append(fetched)
        return out

    def _partition(self, key: SourcePartition, pos: Position, part: Any) -> Fetched | None:
        code = part.error_code
        if code == OFFSET_OUT_OF_RANGE:
            raise SourceTrimmedError(
                f"source {key[0]}[{key[1]}]: offset {pos.offset} no longer exists (log start "
                f"{part.log_start_offset}, end {part.high_watermark}): records were deleted before "
                "they were mirrored. Refusing to skip them silently. If the loss is accepted, "
                f"reset the group's offsets: kafka-consumer-groups --group {self._group} "
                f"--reset-offsets --to-earliest --execute --topic {key[0]}"
            )
        if code in AUTHORIZATION:
            raise ClusterError(f"not authorized on the source: {AUTHORIZATION[code]} for {key[0]}")
        if code != 0:
            if code not in RETRIABLE:
                log.warning("fetch %s[%s]: error code %s, retrying", key[0], key[1], code)
            self._retry([key])
            return None
        pos.high_watermark = max(pos.high_watermark, int(part.high_watermark))
        pos.last_stable = int(part.last_stable_offset)
        batches, cut = split(part.records or b"")
        batches = [b for b in batches if b.next_offset > pos.offset]
        if not batches:
            # A batch larger than we asked for: ask for all of it next time.
            pos.max_bytes = max(pos.max_bytes, cut)
            return None
        aborted = [(a.producer_id, a.first_offset) for a in part.aborted_transactions or ()]
        start, pos.offset = pos.offset, batches[-1].next_offset
        return Fetched(key, start, committed(batches, aborted))

    def _retry(self, keys: list[SourcePartition]) -> None:
        self._link.refresh()
        at = time.monotonic() + RETRY_BACKOFF_S
        for key in keys:
            pos = self._positions.get(key)
            if pos is not None:
                pos.retry_at = at
