"""The questions kmirror asks a cluster outside the copy itself: topics, watermarks, a group's
committed offsets (and writing them into a group nobody runs), groups and their members,
compacted topics of its own. Used by `kmirror status`, disaster recovery (and `kmirror
offsets` / `failover`) and the validator; reading a topic to its end is
kmirror.kafka.topicreader.

Committed group offsets are read (and written) through a consumer that carries the group id
and never joins the group: AdminClient.list_consumer_group_offsets can crash the process on a
group the coordinator has not seen yet (confluent-kafka 2.16, confluent-kafka-python #1982,
docs/reliability.md); a consumer's OffsetFetch/OffsetCommit cannot. A commit from such a
consumer is also refused by the broker while the group has live members, a second guard behind
disaster recovery's active-member check.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from typing import Any, Literal, NamedTuple

from confluent_kafka import IsolationLevel, KafkaError, KafkaException, TopicPartition

from kmirror.config.model import MirrorConfig
from kmirror.errors import ClusterError
from kmirror.kafka import clients
from kmirror.kafka.admin import (
    AdminClient,
    ConfigResource,
    NewTopic,
    earliest,
    latest,
)
from kmirror.partitions import Partition

log = logging.getLogger(__name__)

TIMEOUT_S = 15.0
Isolation = Literal["read_committed", "read_uncommitted"]
_READER_GROUP = "kmirror-reader"  # required by a consumer; an assign-only one never joins it


# What a group coordinator answers while it loads its part of __consumer_offsets (a broker
# just started or restarted: the moment a failover often runs in) or moves to another broker.
# A commit is tried again then, within the timeout, as the Java AdminClient does.
COORDINATOR_SETTLING = frozenset(
    {
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.NOT_COORDINATOR,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError._TIMED_OUT,
    }
)
COMMIT_RETRY_S = 0.5


def coordinator_settling(exc: KafkaException) -> bool:
    err = exc.args[0] if exc.args else None
    return isinstance(err, KafkaError) and err.code() in COORDINATOR_SETTLING


class Commit(NamedTuple):
    """A group's committed offset of one partition and the metadata committed with it."""

    offset: int
    metadata: str


class Cluster:
    """One side of a mirror; its admin client is made on first use."""

    def __init__(
        self,
        config: MirrorConfig,
        side: clients.Side,
        timeout: float = TIMEOUT_S,
        overrides: clients.Overrides = None,
    ) -> None:
        self._config = config
        self.side = side
        self.bootstrap = (config.source if side == "source" else config.target).bootstrap_servers
        self.timeout = timeout
        self._overrides = overrides  # a logger of the caller's (the validator quiets its own)
        self._admin: AdminClient | None = None

    @property
    def admin(self) -> AdminClient:
        if self._admin is None:
            self._admin = clients.admin(self._config, self.side, self._overrides)
        return self._admin

    def _reader(self, group: str = _READER_GROUP) -> Any:
        return clients.reader(self._config, self.side, group, self._overrides)

    def fail(self, action: str, exc: BaseException) -> ClusterError:
        err = exc.args[0] if isinstance(exc, KafkaException) and exc.args else exc
        text = err.str() if hasattr(err, "str") else str(err)
        return ClusterError(
            f"could not {action} on the {self.side} cluster at {self.bootstrap} within "
            f"{self.timeout:g}s ({text}): check the bootstrap servers, the network and the "
            "security settings"
        )

    # -- topics --------------------------------------------------------------------------------

    def topics(self) -> dict[str, int]:
        """Partition count of every topic that has no error. All topics, never one by name: a
        metadata request naming a topic creates it on a broker with auto.create.topics.enable
        (an admin client asks as a producer)."""
        try:
            md = self.admin.list_topics(timeout=self.timeout)
        except KafkaException as exc:
            raise self.fail("read metadata", exc) from exc
        return {n: len(t.partitions) for n, t in md.topics.items() if t.error is None}

    def compacted(self, topics: Iterable[str]) -> set[str]:
        """Topics whose cleanup.policy includes compact."""
        resources = [ConfigResource(ConfigResource.Type.TOPIC, t) for t in topics]
        if not resources:
            return set()
        out: set[str] = set()
        try:
            futures = self.admin.describe_configs(resources, request_timeout=self.timeout)
            for res, fut in futures.items():
                entry = fut.result().get("cleanup.policy")
                if entry is not None and "compact" in str(entry.value or ""):
                    out.add(res.name)
        except KafkaException as exc:
            raise self.fail("describe topic configs", exc) from exc
        return out

    def ensure_compacted_topic(self, topic: str, replication_factor: int) -> None:
        """A one-partition compacted topic (MM2's checkpoints and heartbeats topics)."""
        if topic in self.topics():
            return
        new = NewTopic(
            topic,
            num_partitions=1,
            replication_factor=replication_factor,
            config={"cleanup.policy": "compact"},
        )
        try:
            self.admin.create_topics([new], request_timeout=self.timeout)[topic].result()
            log.info("created topic=%s", topic)
        except KafkaException as exc:
            if "TOPIC_ALREADY_EXISTS" not in str(exc.args[0] if exc.args else exc):
                raise self.fail(f"create topic {topic}", exc) from exc

    # -- offsets -------------------------------------------------------------------------------

    def watermarks(
        self, tps: Iterable[Partition], isolation: Isolation = "read_committed"
    ) -> dict[Partition, tuple[int, int]]:
        """(earliest, latest) per partition; with read_committed `latest` is the last stable
        offset, so an open transaction is never inside a range read up to it."""
        wanted = sorted(set(tps))
        if not wanted:
            return {}
        level = (
            IsolationLevel.READ_COMMITTED
            if isolation == "read_committed"
            else IsolationLevel.READ_UNCOMMITTED
        )
        result: dict[str, dict[Partition, int]] = {}
        specs = (("low", earliest()), ("high", latest()))
        for name, spec in specs:
            request = {TopicPartition(t, p): spec for t, p in wanted}
            try:
                futures = self.admin.list_offsets(
                    request, isolation_level=level, request_timeout=self.timeout
                )
                result[name] = {
                    (tp.topic, tp.partition): int(fut.result().offset)
                    for tp, fut in futures.items()
                }
            except KafkaException as exc:
                raise self.fail("list offsets", exc) from exc
        return {tp: (max(0, result["low"][tp]), max(0, result["high"][tp])) for tp in wanted}

    def ends(self, tps: Iterable[Partition]) -> dict[Partition, int]:
        """The high watermark of each partition that answers (a deleted topic has none)."""
        asked = {TopicPartition(t, p): latest() for t, p in sorted(set(tps))}
        if not asked:
            return {}
        out: dict[Partition, int] = {}
        for tp, fut in self.admin.list_offsets(asked, request_timeout=self.timeout).items():
            try:
                out[(tp.topic, tp.partition)] = int(fut.result().offset)
            except KafkaException as exc:
                log.debug("no end offset of %s[%d]: %s", tp.topic, tp.partition, exc)
        return out

    def offsets_for_times(self, wanted: Mapping[Partition, int]) -> dict[Partition, int]:
        """Per partition, the first offset whose timestamp is >= the given ms (-1: none)."""
        if not wanted:
            return {}
        consumer = self._reader()
        try:
            asked = [TopicPartition(t, p, ms) for (t, p), ms in sorted(wanted.items())]
            res = consumer.offsets_for_times(asked, timeout=self.timeout)
        except KafkaException as exc:
            raise self.fail("look up offsets by time", exc) from exc
        finally:
            consumer.close()
        return {(tp.topic, tp.partition): int(tp.offset) for tp in res}

    def timestamps_at(self, at: Mapping[Partition, int]) -> dict[Partition, int]:
        """The timestamp (ms) of the record at each given offset (or the next one there is);
        a partition with nothing there within the timeout is left out."""
        out: dict[Partition, int] = {}
        if not at:
            return out
        consumer = self._reader()
        try:
            for (t, p), offset in sorted(at.items()):
                consumer.assign([TopicPartition(t, p, offset)])
                deadline = time.monotonic() + self.timeout
                while time.monotonic() < deadline:
                    msg = consumer.poll(0.5)
                    if msg is not None and msg.error() is None:
                        out[(t, p)] = int(msg.timestamp()[1])
                        break
        finally:
            consumer.close()
        return out

    # -- consumer groups -----------------------------------------------------------------------

    def committed(self, group: str, tps: Iterable[Partition]) -> dict[Partition, Commit]:
        """The group's committed offset (and metadata) per partition; partitions without one
        are left out."""
        parts = [TopicPartition(t, p) for t, p in sorted(set(tps))]
        if not parts:
            return {}
        consumer = self._reader(group)
        try:
            got = consumer.committed(parts, timeout=self.timeout)
        except KafkaException as exc:
            raise self.fail(f"read the committed offsets of group {group}", exc) from exc
        finally:
            consumer.close()
        return {
            (tp.topic, tp.partition): Commit(int(tp.offset), tp.metadata or "")
            for tp in got
            if tp.error is None and tp.offset >= 0
        }

    def commit(self, group: str, offsets: Mapping[Partition, int], metadata: str) -> None:
        """Write offsets into a group that has no live member (the broker refuses otherwise)."""
        if not offsets:
            return
        consumer = self._reader(group)
        deadline = time.monotonic() + self.timeout
        try:
            parts = [TopicPartition(t, p, o, metadata=metadata) for (t, p), o in offsets.items()]
            while True:
                try:
                    result = consumer.commit(offsets=parts, asynchronous=False)
                    break
                except KafkaException as exc:
                    if not coordinator_settling(exc) or time.monotonic() >= deadline:
                        raise
                    log.info("commit of group %s waits for its coordinator: %s", group, exc)
                    time.sleep(COMMIT_RETRY_S)
            bad = [tp for tp in result or [] if tp.error is not None]
            if bad:
                raise ClusterError(
                    f"could not commit offsets of group {group}: {bad[0].topic}"
                    f"[{bad[0].partition}] {bad[0].error}"
                )
        except KafkaException as exc:
            raise self.fail(f"commit offsets of group {group} (is it active?)", exc) from exc
        finally:
            consumer.close()

    def groups(self) -> list[str]:
        """Every consumer group the cluster knows."""
        try:
            result = self.admin.list_consumer_groups(request_timeout=self.timeout).result()
        except KafkaException as exc:
            raise self.fail("list consumer groups", exc) from exc
        return sorted(g.group_id for g in result.valid)

    def active_members(self, group: str) -> int:
        """Members the group has right now (0 for an empty or unknown group)."""
        try:
            futures = self.admin.describe_consumer_groups([group], request_timeout=self.timeout)
            desc = futures[group].result()
        except KafkaException as exc:
            raise self.fail(f"describe group {group}", exc) from exc
        return len(desc.members or [])
