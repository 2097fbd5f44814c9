"""Admin helpers: topics and end offsets, one AdminClient per bootstrap."""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from kmirror.kafka.admin import AdminClient, NewTopic, latest

_QUIET = logging.getLogger("bench.admin.librdkafka")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False

_ADMINS: dict[str, AdminClient] = {}


def admin(bootstrap: str) -> AdminClient:
    a = _ADMINS.get(bootstrap)
    if a is None:
        conf: dict[str, Any] = {"bootstrap.servers": bootstrap, "logger": _QUIET}
        a = _ADMINS[bootstrap] = AdminClient(conf)
    return a


def topics(bootstrap: str) -> dict[str, int]:
    """Every topic (internal ones included) and its partition count."""
    md = admin(bootstrap).list_topics(timeout=30)
    return {n: len(t.partitions) for n, t in md.topics.items() if t.error is None}


RETRIABLE = {
    KafkaError.NOT_LEADER_FOR_PARTITION,
    KafkaError.LEADER_NOT_AVAILABLE,
    # A (re)created topic's leaders still settling: seen once in session 16's full run, which
    # failed an MM2 repetition before it started.
    KafkaError.UNKNOWN_LEADER_EPOCH,
    KafkaError.FENCED_LEADER_EPOCH,
    KafkaError.UNKNOWN_TOPIC_OR_PART,
    KafkaError.REQUEST_TIMED_OUT,
    KafkaError._TIMED_OUT,
    KafkaError._TRANSPORT,
}


# How long a topic of the name being created may go on existing before it is deleted again.
ALREADY_EXISTS_S = 10.0


def end_offsets(bootstrap: str, topic: str, partitions: int, timeout: float = 30) -> list[int]:
    """High watermark of partitions 0..partitions-1 (one ListOffsets request; retried while a
    new topic's leaders settle)."""
    deadline = time.monotonic() + timeout
    req = {TopicPartition(topic, p): latest() for p in range(partitions)}
    while True:
        futs = admin(bootstrap).list_offsets(req, request_timeout=10)
        out = [0] * partitions
        try:
            for tp, fut in futs.items():
                out[tp.partition] = int(fut.result(timeout=15).offset)
            return out
        except KafkaException as exc:
            if exc.args[0].code() not in RETRIABLE or time.monotonic() > deadline:
                raise
        time.sleep(0.2)


def create_topic(
    bootstrap: str,
    name: str,
    partitions: int,
    timeout: float = 60,
    config: dict[str, str] | None = None,
) -> None:
    """Create and wait until every partition has a leader (retries while a delete settles).
    A topic of that name that stays longer than ALREADY_EXISTS_S is deleted again: seen once
    in a full run, 60 s of TOPIC_ALREADY_EXISTS after the target was cleaned and its delete
    confirmed. What brought it back was not found (a client's metadata request under the
    brokers' auto.create.topics.enable is the candidate); a second delete is what the bench
    wanted from the first."""
    deadline = time.monotonic() + timeout
    first_refusal: float | None = None
    while True:
        fut = admin(bootstrap).create_topics(
            [NewTopic(name, num_partitions=partitions, replication_factor=1, config=config or {})],
            operation_timeout=30,
        )[name]
        try:
            fut.result(timeout=35)
            break
        except KafkaException as exc:
            code = exc.args[0].code()
            now = time.monotonic()
            if code == KafkaError.TOPIC_ALREADY_EXISTS and now < deadline:
                first_refusal = first_refusal or now
                if now - first_refusal > ALREADY_EXISTS_S:
                    delete_topics(bootstrap, [name], timeout=max(deadline - now, 1.0))
                    first_refusal = None
                time.sleep(0.3)  # a deleted topic of the same name is still going away
                continue
            raise
    while True:
        md = admin(bootstrap).list_topics(topic=name, timeout=10)
        tm = md.topics.get(name)
        if (
            tm is not None
            and tm.error is None
            and len(tm.partitions) == partitions
            and all(p.leader >= 0 for p in tm.partitions.values())
        ):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"topic {name} not ready at {bootstrap} after {timeout:.0f}s")
        time.sleep(0.1)


def delete_topics(bootstrap: str, names: list[str], wait: bool = True, timeout: float = 60) -> None:
    """Delete topics (missing ones are fine); with wait, until metadata no longer lists them."""
    if not names:
        return
    futs = admin(bootstrap).delete_topics(names, operation_timeout=30)
    for fut in futs.values():
        try:
            fut.result(timeout=35)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                raise
    if not wait:
        return
    deadline = time.monotonic() + timeout
    while set(names) & set(topics(bootstrap)):
        if time.monotonic() > deadline:
            raise TimeoutError(f"topics {names} still listed at {bootstrap} after {timeout:.0f}s")
        time.sleep(0.2)


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> list[int]:
    """The group's committed offsets of partitions 0..partitions-1 (0 when none). An
    exactly-once mirror commits the source group after each target transaction: its copy is
    complete (visible to read_committed readers) when these reach the source's end."""
    from confluent_kafka import Consumer

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "logger": _QUIET})
    try:
        asked = [TopicPartition(topic, p) for p in range(partitions)]
        return [max(tp.offset, 0) for tp in c.committed(asked, timeout=15)]
    finally:
        c.close()


def count_committed(bootstrap: str, topic: str, partitions: int, timeout: float = 300) -> list[int]:
    """Records per partition a read_committed reader sees (transaction markers and aborted
    records are offsets, not records): the exactly-once contender's verification."""
    from confluent_kafka import Consumer

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-count-{time.monotonic_ns()}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "logger": _QUIET,
        }
    )
    counts = [0] * partitions
    try:
        ends = end_offsets(bootstrap, topic, partitions)
        todo = {p for p in range(partitions) if ends[p] > 0}
        c.assign([TopicPartition(topic, p, 0) for p in todo])
        deadline = time.monotonic() + timeout
        while todo and time.monotonic() < deadline:
            for m in c.consume(10_000, 0.5):
                err = m.error()
                if err is None:
                    counts[int(m.partition() or 0)] += 1
                elif err.code() == KafkaError._PARTITION_EOF:
                    todo.discard(int(m.partition() or 0))
        if todo:
            raise TimeoutError(f"counting {topic}: partitions {sorted(todo)} not read to the end")
        return counts
    finally:
        c.close()


def group_settled(bootstrap: str, group: str, members: int, timeout: float = 60) -> float | None:
    """Wait until the consumer group is stable with `members` members, each holding
    partitions; the seconds waited, None on timeout. A mirror whose second stream joined after
    the first took every partition rebalances a few seconds later (the classic protocol learns
    of it at the next heartbeat): a latency phase measured across that is not steady state."""
    from confluent_kafka import ConsumerGroupState

    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        with contextlib.suppress(KafkaException):
            desc = admin(bootstrap).describe_consumer_groups([group])[group].result(timeout=10)
            holding = [m for m in desc.members if m.assignment.topic_partitions]
            if desc.state == ConsumerGroupState.STABLE and len(holding) == members:
                return time.monotonic() - t0
        time.sleep(0.2)
    return None
