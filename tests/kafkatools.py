"""Plain Kafka helpers for tests and benchmarks: produce exactly, read everything back exactly.

Nothing here commits consumer offsets or creates consumer groups: reads assign partitions from
the low watermark, so the clusters under test only see the traffic the test means to send.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from confluent_kafka import (
    OFFSET_BEGINNING,
    TIMESTAMP_CREATE_TIME,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

T = TypeVar("T")

Header = tuple[str, bytes | None]

# librdkafka logs connection errors through this logger instead of stderr.
LOG = logging.getLogger("kafkatools.librdkafka")


@dataclass(frozen=True)
class Clusters:
    """The two clusters a test session runs against."""

    source_bootstrap: str
    target_bootstrap: str
    source_name: str = "source"
    target_name: str = "target"
    # True when this test session started the clusters (and will stop them).
    managed: bool = False


@dataclass(frozen=True)
class Rec:
    """One record as read back: every byte that a faithful mirror must preserve."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    # Order and duplicate keys kept; [] when the record has no headers.
    headers: list[Header] = field(hash=False)
    timestamp: int  # ms
    timestamp_type: int  # confluent_kafka.TIMESTAMP_CREATE_TIME / TIMESTAMP_LOG_APPEND_TIME

    @classmethod
    def from_message(cls, msg: Message) -> Rec:
        ts_type, ts = msg.timestamp()
        return cls(
            topic=str(msg.topic()),
            partition=int(msg.partition() or 0),
            offset=int(msg.offset() or 0),
            key=msg.key(),
            value=msg.value(),
            headers=cast("list[Header]", list(msg.headers() or [])),
            timestamp=ts,
            timestamp_type=ts_type,
        )

    def content(self) -> tuple[int, bytes | None, bytes | None, tuple[Header, ...], int, int]:
        """Everything but topic and offset: what must match between source and mirror."""
        return (
            self.partition,
            self.key,
            self.value,
            tuple(self.headers),
            self.timestamp,
            self.timestamp_type,
        )


def _conf(bootstrap: str, base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """Merge client config; kwargs may use underscores for dots (linger_ms -> linger.ms)."""
    conf: dict[str, Any] = {"bootstrap.servers": bootstrap, "logger": LOG, **base}
    for k, v in extra.items():
        conf[k if "." in k else k.replace("_", ".")] = v
    return conf


def _get(rec: Any, name: str, default: Any = None) -> Any:
    if isinstance(rec, Mapping):
        return rec.get(name, default)
    return getattr(rec, name, default)


def commit_offsets(consumer: Consumer, offsets: list[TopicPartition], timeout: float = 60) -> None:
    """Commit synchronously; again while the group coordinator loads its part of
    __consumer_offsets or moves (a fresh or restarted cluster answers
    COORDINATOR_LOAD_IN_PROGRESS / NOT_COORDINATOR for a moment)."""

    def once() -> bool:
        consumer.commit(offsets=offsets, asynchronous=False)
        return True

    wait_until(once, timeout, 0.5, f"a commit of {len(offsets)} offset(s)")


# --------------------------------------------------------------------------- admin


def admin(bootstrap: str, **conf: Any) -> AdminClient:
    return AdminClient(_conf(bootstrap, {}, conf))


def cluster_id(bootstrap: str, timeout: float = 10.0) -> str:
    md = admin(bootstrap).list_topics(timeout=timeout)
    return str(md.cluster_id)


def topic_partitions(bootstrap: str, topic: str, timeout: float = 10.0) -> list[int]:
    """Partition ids of an existing topic; raises KeyError if it does not exist."""
    # Metadata for all topics: asking for one by name auto-creates it on brokers that allow it.
    md = admin(bootstrap).list_topics(timeout=timeout)
    tm = md.topics.get(topic)
    if tm is None or tm.error is not None:
        raise KeyError(f"topic {topic!r} not found at {bootstrap}: {tm.error if tm else None}")
    return sorted(tm.partitions)


def list_topics(bootstrap: str, timeout: float = 10.0, internal: bool = False) -> set[str]:
    md = admin(bootstrap).list_topics(timeout=timeout)
    return {t for t in md.topics if internal or not t.startswith("__")}


def committed_offsets(
    bootstrap: str, group: str, timeout: float = 10.0
) -> dict[tuple[str, int], int]:
    """Every offset `group` has committed on any non-internal topic, read by a consumer that
    carries the group id but never joins (the admin API's group-offsets call can crash on a
    group the coordinator has not seen yet, confluent-kafka-python #1982)."""
    md = admin(bootstrap).list_topics(timeout=timeout)
    tps = [
        TopicPartition(name, p)
        for name, t in md.topics.items()
        if not name.startswith("__") and t.error is None
        for p in t.partitions
    ]
    if not tps:
        return {}
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "logger": LOG,
        }
    )
    try:
        got = c.committed(tps, timeout=timeout)
    finally:
        c.close()
    return {(tp.topic, tp.partition): tp.offset for tp in got if tp.offset >= 0}


def wait_until(
    predicate: Callable[[], T],
    timeout: float = 30.0,
    interval: float = 0.2,
    message: str = "condition",
) -> T:
    """Poll predicate until it returns something truthy (returned); TimeoutError otherwise."""
    deadline = time.monotonic() + timeout
    last_exc: Exception | None = None
    while True:
        try:
            result = predicate()
            if result:
                return result
        except Exception as exc:  # the predicate may fail while things settle
            last_exc = exc
        if time.monotonic() >= deadline:
            detail = f" (last error: {last_exc!r})" if last_exc else ""
            raise TimeoutError(f"{message} not met within {timeout}s{detail}")
        time.sleep(interval)


def create_topic(
    bootstrap: str,
    name: str,
    partitions: int = 1,
    config: Mapping[str, str] | None = None,
    *,
    replication_factor: int = 1,
    timeout: float = 30.0,
) -> str:
    """Create a topic and wait until metadata shows every partition with a leader."""
    new = NewTopic(
        name,
        num_partitions=partitions,
        replication_factor=replication_factor,
        config=dict(config or {}),
    )
    client = admin(bootstrap)  # keep a reference: a collected client fails its futures
    futures = client.create_topics([new], operation_timeout=timeout)
    futures[name].result(timeout=timeout)

    def ready() -> bool:
        md = admin(bootstrap).list_topics(topic=name, timeout=5)
        tm = md.topics.get(name)
        return (
            tm is not None
            and tm.error is None
            and len(tm.partitions) == partitions
            and all(p.leader >= 0 for p in tm.partitions.values())
        )

    wait_until(ready, timeout, message=f"topic {name} visible at {bootstrap}")
    return name


def delete_topic(bootstrap: str, name: str, timeout: float = 30.0, wait: bool = True) -> None:
    """Delete a topic (missing is fine) and, if wait, until metadata no longer shows it."""
    client = admin(bootstrap)
    futures = client.delete_topics([name], operation_timeout=timeout)
    try:
        futures[name].result(timeout=timeout)
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
            raise
    if wait:
        wait_until(
            lambda: name not in list_topics(bootstrap),
            timeout,
            message=f"topic {name} gone at {bootstrap}",
        )


def unique(prefix: str = "t") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


# --------------------------------------------------------------------------- produce / consume


def produce(
    bootstrap: str,
    topic: str,
    records: Iterable[Mapping[str, Any] | Any],
    timeout: float = 60.0,
    **conf: Any,
) -> list[tuple[int, int]]:
    """Produce records exactly as given and flush; raise on any delivery error.

    Each record is a dict or an object (e.g. Rec) with any of: key, value, headers (list of
    (str, bytes|None), order and duplicates kept), timestamp (ms, sent as CreateTime; 0/None =
    now), partition (None = partitioner). Returns (partition, offset) per record, in input order.
    Extra kwargs are producer config (``linger_ms=5`` or ``**{"linger.ms": 5}``).
    """
    producer = Producer(_conf(bootstrap, {"enable.idempotence": True, "linger.ms": 5}, conf))
    results: list[tuple[int, int] | None] = []
    errors: list[str] = []

    def on_delivery(i: int) -> Callable[[KafkaError | None, Message], None]:
        def cb(err: KafkaError | None, msg: Message) -> None:
            if err is not None:
                errors.append(f"record {i}: {err}")
            else:
                results[i] = (int(msg.partition() or 0), int(msg.offset() or 0))

        return cb

    for i, rec in enumerate(records):
        results.append(None)
        kwargs: dict[str, Any] = {
            "key": _get(rec, "key"),
            "value": _get(rec, "value"),
            "on_delivery": on_delivery(i),
        }
        headers = _get(rec, "headers")
        if headers:
            kwargs["headers"] = list(headers)
        ts = _get(rec, "timestamp")
        if ts:
            kwargs["timestamp"] = int(ts)
        partition = _get(rec, "partition")
        if partition is not None:
            kwargs["partition"] = int(partition)
        while True:
            try:
                producer.produce(topic, **kwargs)
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    remaining = producer.flush(timeout)
    if remaining:
        raise RuntimeError(f"produce to {topic}: {remaining} record(s) undelivered after flush")
    if errors:
        raise RuntimeError(f"produce to {topic}: {len(errors)} delivery error(s): {errors[:5]}")
    missing = [i for i, r in enumerate(results) if r is None]
    if missing:
        raise RuntimeError(f"produce to {topic}: no delivery report for records {missing[:5]}")
    return [r for r in results if r is not None]


def _watermarks(
    consumer: Consumer, topic: str, partitions: list[int]
) -> dict[int, tuple[int, int]]:
    out = {}
    for p in partitions:
        marks = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)
        if marks is None:  # confluent-kafka's answer to a timeout: an error like any other
            raise KafkaException(
                KafkaError(KafkaError._TIMED_OUT, f"watermark offsets of {topic}[{p}] timed out")
            )
        out[p] = marks
    return out


def end_offsets(bootstrap: str, topic: str, **conf: Any) -> dict[int, int]:
    """High watermark of every partition of topic."""
    partitions = topic_partitions(bootstrap, topic)
    consumer = Consumer(_conf(bootstrap, {"group.id": unique("kafkatools-offsets")}, conf))
    try:
        return {p: hw for p, (_, hw) in _watermarks(consumer, topic, partitions).items()}
    finally:
        consumer.close()


def consume_all(
    bootstrap: str,
    topic: str,
    timeout: float = 30.0,
    isolation_level: str = "read_committed",
    **conf: Any,
) -> list[Rec]:
    """Every record of every partition from the low to the high watermark (as of the call).

    Assign-only (no subscribe, no commits). Sorted by (partition, offset). With read_committed,
    aborted records and transaction markers are skipped; an open transaction makes this time out.
    """
    out = list(iter_records(bootstrap, topic, timeout, isolation_level, **conf))
    out.sort(key=lambda r: (r.partition, r.offset))
    return out


def iter_records(
    bootstrap: str,
    topic: str,
    timeout: float = 30.0,
    isolation_level: str = "read_committed",
    **conf: Any,
) -> Iterator[Rec]:
    """consume_all's records one by one, as they arrive: each partition's in offset order, the
    partitions interleaved. For topics too large to hold in memory (the soak's hour of load)."""
    partitions = topic_partitions(bootstrap, topic)
    base = {
        # group.id is required by the client but never used: assign() joins no group.
        "group.id": unique("kafkatools-read"),
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": True,
        "isolation.level": isolation_level,
        "auto.offset.reset": "earliest",
    }
    consumer = Consumer(_conf(bootstrap, base, conf))
    try:
        marks = _watermarks(consumer, topic, partitions)
        pending = {p: hw for p, (lo, hw) in marks.items() if hw > lo}
        reached = {p: marks[p][0] for p in pending}
        if not pending:
            return
        starts = {p: marks[p][0] if marks[p][0] >= 0 else OFFSET_BEGINNING for p in pending}
        consumer.assign([TopicPartition(topic, p, off) for p, off in starts.items()])
        deadline = time.monotonic() + timeout
        while any(reached[p] < hw for p, hw in pending.items()):
            if time.monotonic() >= deadline:
                todo = {p: (reached[p], hw) for p, hw in pending.items() if reached[p] < hw}
                raise TimeoutError(
                    f"consume_all {topic}@{bootstrap}: not at the end after {timeout}s "
                    f"(partition: (position, high watermark)) {todo}"
                )
            for msg in consumer.consume(num_messages=1000, timeout=0.5):
                p = int(msg.partition() or 0)
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        reached[p] = max(reached[p], int(msg.offset() or 0))
                        continue
                    raise KafkaException(err)
                off = int(msg.offset() or 0)
                if off < pending.get(p, 0):
                    yield Rec.from_message(msg)
                reached[p] = max(reached[p], off + 1)
    finally:
        consumer.close()


__all__ = [
    "TIMESTAMP_CREATE_TIME",
    "Clusters",
    "Header",
    "Rec",
    "admin",
    "cluster_id",
    "consume_all",
    "create_topic",
    "delete_topic",
    "end_offsets",
    "iter_records",
    "list_topics",
    "produce",
    "topic_partitions",
    "unique",
    "wait_until",
]


COMPACTED = {
    "cleanup.policy": "compact",
    "segment.ms": "100",
    "min.cleanable.dirty.ratio": "0.01",
    "min.compaction.lag.ms": "0",
}
# What compacted_source leaves a topic with once compacted: nothing removed any more.
FROZEN = {"cleanup.policy": "delete", "retention.ms": "-1", "retention.bytes": "-1"}


def compacted_source(bootstrap: str, make_topic: Callable[..., str]) -> str:
    """A compacted topic whose log was compacted: 100 keys never written again, in batches of
    5 records (whole batches compaction leaves as they are, small enough to be merged), then
    keys repeated within batches (compaction leaves gaps inside them). Returns its name once
    the cleaner has run (the local clusters compact within seconds)."""
    topic = make_topic(bootstrap, config=COMPACTED)
    small = {"linger.ms": 0, "batch.num.messages": 5}
    produce(bootstrap, topic, [{"key": b"u%d" % i, "value": b"u"} for i in range(100)], **small)
    for rnd in range(4):
        rows = [{"key": b"k%d" % (i % 40), "value": b"r%d-%d" % (rnd, i)} for i in range(200)]
        produce(bootstrap, topic, rows, **{"enable.idempotence": False})
        time.sleep(0.2)  # a segment per round, so the cleaner has closed segments to compact

    def compacted() -> bool:
        produce(bootstrap, topic, [{"key": b"poke", "value": b"x"}])
        return len(consume_all(bootstrap, topic)) < 900

    wait_until(compacted, 60, interval=1.0, message=f"compaction of {topic}")
    # Freeze it: with compaction on, the cleaner goes on removing records (the older pokes)
    # after the caller has read the source, so the target could never hold what was read
    # (seen under load in CI: the mirror copied all there was, and the test waited for more).
    # Retention "delete" with no limit removes nothing; the gaps compaction left stay.
    frozen = ConfigResource(
        ResourceType.TOPIC,
        topic,
        incremental_configs=[
            ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
            for name, value in FROZEN.items()
        ],
    )
    client = admin(bootstrap)  # kept: its futures fail once it is gone
    for fut in client.incremental_alter_configs([frozen], request_timeout=10).values():
        fut.result(timeout=30)
    # A cleaner pass that began before the change still finishes: read until two reads agree.
    seen: list[list[Rec]] = [consume_all(bootstrap, topic)]

    def settled() -> bool:
        time.sleep(1.0)
        seen.append(consume_all(bootstrap, topic))
        return seen[-1] == seen[-2]

    wait_until(settled, 60, interval=0.0, message=f"the compacted log of {topic} to settle")
    return topic
