"""The few broker calls disaster recovery needs, each a small function over one cluster.

Committed group offsets are read (and written) through a consumer that carries the group id
and never joins the group: AdminClient.list_consumer_group_offsets can crash the process on a
group the coordinator has not seen (confluent-kafka 2.16, docs/reliability.md); a consumer's
OffsetFetch/OffsetCommit cannot. A commit from such a consumer is also refused by the broker
while the group has live members, a second guard behind the active-member check.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from kmirror.errors import ClusterError
from kmirror.mirror.progress import Key

log = logging.getLogger(__name__)
_RDKAFKA_LOG = logging.getLogger("kmirror.librdkafka")
TIMEOUT_S = 15.0


def _fail(action: str, exc: KafkaException) -> ClusterError:
    err = exc.args[0] if exc.args else exc
    return ClusterError(f"could not {action}: {err}")


def _admin(conf: Mapping[str, Any]) -> AdminClient:
    full: dict[str, Any] = {**conf, "logger": _RDKAFKA_LOG}
    return AdminClient(full)


def _consumer(conf: Mapping[str, Any], group: str) -> Consumer:
    return Consumer(
        {
            **conf,
            "group.id": group,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
            "logger": _RDKAFKA_LOG,
        }
    )


def partitions(conf: Mapping[str, Any], topics: Iterable[str] | None = None) -> dict[str, int]:
    """Partition count of each existing topic (all topics when `topics` is None)."""
    admin = _admin(conf)
    try:
        md = admin.list_topics(timeout=TIMEOUT_S)
    except KafkaException as exc:
        raise _fail("read cluster metadata", exc) from exc
    wanted = None if topics is None else set(topics)
    return {
        name: len(t.partitions)
        for name, t in md.topics.items()
        if t.error is None and (wanted is None or name in wanted)
    }


def read_topic(conf: Mapping[str, Any], topic: str) -> Iterator[tuple[bytes, bytes | None]] | None:
    """Every (key, value) of a topic from its start to its current end, in offset order per
    partition; None when the topic does not exist. For the small compacted topics DR reads."""
    count = partitions(conf, [topic]).get(topic)
    if count is None:
        return None
    return _read(conf, topic, count)


def _read(conf: Mapping[str, Any], topic: str, count: int) -> Iterator[tuple[bytes, bytes | None]]:
    consumer = _consumer(conf, "kmirror-dr-reader")  # assign() only: the group is never used
    try:
        ends: dict[int, int] = {}
        for p in range(count):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), TIMEOUT_S)
            if high > low:
                ends[p] = high
        if not ends:
            return
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in ends])
        while ends:
            msg = consumer.poll(TIMEOUT_S)
            if msg is None:
                raise ClusterError(f"reading {topic} stalled for {TIMEOUT_S:.0f}s")
            p = int(msg.partition() or 0)
            err = msg.error()
            if err is not None and err.code() != KafkaError._PARTITION_EOF:
                raise ClusterError(f"could not read {topic}[{p}]: {err}")
            if err is None:
                yield msg.key() or b"", msg.value()
            pos = int(msg.offset() or 0) + (0 if err is not None else 1)
            if p in ends and pos >= ends[p]:
                del ends[p]
    except KafkaException as exc:
        raise _fail(f"read {topic}", exc) from exc
    finally:
        consumer.close()


def committed(
    conf: Mapping[str, Any], group: str, tps: Iterable[Key]
) -> dict[Key, tuple[int, str]]:
    """The group's committed (offset, metadata) per partition; partitions without one left out."""
    parts = [TopicPartition(t, p) for t, p in sorted(set(tps))]
    if not parts:
        return {}
    consumer = _consumer(conf, group)
    try:
        got = consumer.committed(parts, timeout=TIMEOUT_S)
    except KafkaException as exc:
        raise _fail(f"read the committed offsets of group {group}", exc) from exc
    finally:
        consumer.close()
    return {
        (tp.topic, tp.partition): (int(tp.offset), tp.metadata or "")
        for tp in got
        if tp.error is None and tp.offset >= 0
    }


def commit(conf: Mapping[str, Any], group: str, offsets: Mapping[Key, int], metadata: str) -> None:
    """Write offsets into a group that has no live member (the broker refuses otherwise)."""
    if not offsets:
        return
    consumer = _consumer(conf, group)
    try:
        parts = [TopicPartition(t, p, o, metadata=metadata) for (t, p), o in offsets.items()]
        result = consumer.commit(offsets=parts, asynchronous=False)
        bad = [tp for tp in result or [] if tp.error is not None]
        if bad:
            raise ClusterError(
                f"could not commit offsets of group {group}: {bad[0].topic}[{bad[0].partition}] "
                f"{bad[0].error}"
            )
    except KafkaException as exc:
        raise _fail(f"commit offsets of group {group} (is it active?)", exc) from exc
    finally:
        consumer.close()


def groups(conf: Mapping[str, Any]) -> list[str]:
    """Every consumer group the cluster knows."""
    admin = _admin(conf)
    try:
        result = admin.list_consumer_groups(request_timeout=TIMEOUT_S).result()
    except KafkaException as exc:
        raise _fail("list consumer groups", exc) from exc
    return sorted(g.group_id for g in result.valid)


def active_members(conf: Mapping[str, Any], group: str) -> int:
    """Members the group has right now (0 for an empty or unknown group)."""
    admin = _admin(conf)
    try:
        desc = admin.describe_consumer_groups([group], request_timeout=TIMEOUT_S)[group].result()
    except KafkaException as exc:
        raise _fail(f"describe group {group}", exc) from exc
    return len(desc.members or [])


def ensure_topic(conf: Mapping[str, Any], topic: str, replication_factor: int) -> None:
    """A one-partition compacted topic (MM2's checkpoints and heartbeats topics)."""
    if topic in partitions(conf, [topic]):
        return
    admin = _admin(conf)
    new = NewTopic(
        topic,
        num_partitions=1,
        replication_factor=replication_factor,
        config={"cleanup.policy": "compact"},
    )
    try:
        admin.create_topics([new], request_timeout=TIMEOUT_S)[topic].result()
        log.info("created topic=%s", topic)
    except KafkaException as exc:
        if "TOPIC_ALREADY_EXISTS" not in str(exc.args[0] if exc.args else exc):
            raise _fail(f"create topic {topic}", exc) from exc
