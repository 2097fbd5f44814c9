"""Target topic management: create missing topics like their source (partitions and configs),
propagate partition growth, and refuse layouts that would misplace records. Target data is
never deleted or shrunk."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from kmirror.config.model import MirrorConfig
from kmirror.errors import ClusterError, TopicError
from kmirror.kafka import clients
from kmirror.kafka.admin import (
    AdminClient,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    latest,
)

log = logging.getLogger(__name__)

ADMIN_TIMEOUT_S = 30.0


class PartitionsOfflineError(ClusterError):
    """Target partitions exist but have no leader yet. At start-up an error (exit 3); once the
    mirror runs, a transient condition the stream waits out (a starved or restarting target)."""


class TopicManager:
    """Admin operations on both clusters. Clients are created on first use."""

    def __init__(self, config: MirrorConfig) -> None:
        self._config = config
        self._source: AdminClient | None = None
        self._target: AdminClient | None = None
        # Topics whose target we created or already grew this run: growth is ours to follow.
        self._owned: set[str] = set()
        # Target topics whose partitions answered at their leader (_await_online).
        self._online: set[str] = set()

    def reconfigure(self, config: MirrorConfig) -> None:
        """A reloaded configuration (kmirror.config.live): new topics get its names."""
        self._config = config

    @property
    def source(self) -> AdminClient:
        if self._source is None:
            self._source = clients.admin(self._config, "source")
        return self._source

    @property
    def target(self) -> AdminClient:
        if self._target is None:
            self._target = clients.admin(self._config, "target")
        return self._target

    def target_partitions(self, topics: Iterable[str]) -> dict[str, int]:
        """Partition count of each existing target topic (missing topics are left out)."""
        md = _metadata(self.target, "target")
        wanted = set(topics)
        return {
            name: len(t.partitions)
            for name, t in md.topics.items()
            if name in wanted and t.error is None
        }

    def ensure(
        self, source_partitions: Mapping[str, int], online_timeout: float = ADMIN_TIMEOUT_S
    ) -> None:
        """Make every selected source topic mirrorable: create, grow or refuse. Raises
        PartitionsOfflineError when partitions have no leader within online_timeout."""
        mapping = {src: self._config.target_topic(src) for src in source_partitions}
        existing = self.target_partitions(mapping.values())
        # Created a moment ago by another stream or replica (or a user): online yet?
        unseen = [TopicPartition(t, p) for t, n in existing.items() if t not in self._online
                  for p in range(n)]  # fmt: skip
        if unseen:
            self._await_online(unseen, online_timeout)
        missing = [src for src, dst in mapping.items() if dst not in existing]
        if missing:
            if not self._config.create_topics:
                raise TopicError(
                    f"target topics do not exist: {', '.join(mapping[s] for s in missing)}; "
                    "create them with the source's partition count, or drop --no-create-topics"
                )
            self._create(missing, source_partitions, mapping, online_timeout)
        for src, dst in mapping.items():
            have, want = existing.get(dst), source_partitions[src]
            if have is not None and have >= want:
                self._owned.add(dst)  # mirrored since before any growth: follow it later
                continue
            if have is None or not self._config.keeps_partitions:
                continue
            if dst not in self._owned:
                raise TopicError(
                    f"target topic '{dst}' has {have} partitions but source topic '{src}' has "
                    f"{want}: records of partitions {have}..{want - 1} would have nowhere to go. "
                    f"Add partitions on the target (kafka-topics --alter --topic {dst} "
                    f"--partitions {want}) or run with --partitioning hash"
                )
            self._grow(dst, want, online_timeout)

    def _create(
        self,
        missing: list[str],
        partitions: Mapping[str, int],
        mapping: Mapping[str, str],
        online_timeout: float,
    ) -> None:
        configs = self._source_configs(missing) if self._config.sync_topic_configs else {}
        factors = self._replication_factors(missing)
        new = [
            NewTopic(
                mapping[src],
                num_partitions=partitions[src],
                replication_factor=factors[src],
                config=configs.get(src, {}),
            )
            for src in missing
        ]
        for name, fut in self.target.create_topics(new, request_timeout=ADMIN_TIMEOUT_S).items():
            try:
                fut.result()
                log.info("created target topic topic=%s", name)
            except KafkaException as exc:
                err: KafkaError = exc.args[0]
                if err.code() != KafkaError.TOPIC_ALREADY_EXISTS:  # another stream won the race
                    raise _cluster_error("create target topic " + name, exc) from exc
            self._owned.add(name)
        self._await_online(
            [TopicPartition(mapping[src], p) for src in missing for p in range(partitions[src])],
            online_timeout,
        )

    def _replication_factors(self, topics: list[str]) -> dict[str, int]:
        """The configured factor, or by default (-1) the source topic's when the target has at
        least that many brokers; else -1, the target broker's default (with a warning)."""
        if self._config.replication_factor != -1:
            return dict.fromkeys(topics, self._config.replication_factor)
        source = _metadata(self.source, "source").topics
        brokers = len(_metadata(self.target, "target").brokers)
        out: dict[str, int] = {}
        for name in topics:
            parts = source[name].partitions if name in source else {}
            factor = max((len(p.replicas) for p in parts.values()), default=-1)
            if factor > brokers:
                log.warning(
                    "source topic %s has replication factor %d but the target only %d broker(s): "
                    "creating its target with the target broker's default replication factor "
                    "(set --replication-factor to choose)",
                    name,
                    factor,
                    brokers,
                )
                factor = -1
            out[name] = factor
        return out

    def _grow(self, topic: str, count: int, online_timeout: float) -> None:
        fut = self.target.create_partitions(
            [NewPartitions(topic, count)], request_timeout=ADMIN_TIMEOUT_S
        )[topic]
        try:
            fut.result()
            log.info("grew target topic topic=%s partitions=%d", topic, count)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.INVALID_PARTITIONS:  # already grown elsewhere
                raise _cluster_error("add partitions to " + topic, exc) from exc
        self._await_online([TopicPartition(topic, p) for p in range(count)], online_timeout)

    def _await_online(self, partitions: list[TopicPartition], timeout: float) -> None:
        """Return once every partition answers a ListOffsets request at its leader.

        The controller confirms a new topic or partition before the leader has created its
        log (a second or more on a busy broker). An idempotent producer writing in that window
        can lose its first records with no delivery error (reproduced with Kafka 4.1 and
        librdkafka 2.16, see docs/reliability.md; likely: the first batch is refused, a
        pipelined later one is accepted while the broker has no sequence state yet, and the
        retry of the first is then dropped). So nothing is produced to a partition before it
        answers here.
        """
        pending = {(tp.topic, tp.partition) for tp in partitions}
        deadline = time.monotonic() + timeout
        last: object = None
        while pending:
            spec = latest()
            asked = {TopicPartition(t, p): spec for t, p in sorted(pending)}
            for tp, fut in self.target.list_offsets(asked, request_timeout=10).items():
                try:
                    fut.result()
                    pending.discard((tp.topic, tp.partition))
                except KafkaException as exc:
                    last = exc.args[0] if exc.args else exc
            if not pending:
                self._online.update(tp.topic for tp in partitions)
                return
            if time.monotonic() >= deadline:
                names = ", ".join(f"{t}[{p}]" for t, p in sorted(pending)[:10])
                raise PartitionsOfflineError(
                    f"new target partitions not online after {timeout:.0f}s: {names} "
                    f"({last}); check the target brokers' logs"
                )
            # librdkafka's ListOffsets finds leaders in the client's metadata cache. On a
            # multi-broker target the first answer after a creation can come from a broker
            # that has not seen the topic yet, and the cache then said "no leaders" for 30 s
            # and more (1 creation in 2 on 3 local brokers). A metadata request refreshes it.
            with contextlib.suppress(KafkaException):
                self.target.list_topics(timeout=5)  # all topics: naming one may create it
            time.sleep(0.1)

    def _source_configs(self, topics: list[str]) -> dict[str, dict[str, str]]:
        """Topic-level overrides set on the source (not broker defaults), minus the exclusions."""
        resources = [ConfigResource(ConfigResource.Type.TOPIC, t) for t in topics]
        result: dict[str, dict[str, str]] = {}
        for res, fut in self.source.describe_configs(
            resources, request_timeout=ADMIN_TIMEOUT_S
        ).items():
            try:
                entries = fut.result()
            except KafkaException as exc:
                raise _cluster_error("describe source topic " + res.name, exc) from exc
            result[res.name] = {
                name: str(e.value)
                for name, e in entries.items()
                if e.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
                and e.value is not None
                and not self._config.excluded_config(name)
            }
        return result

    def ensure_internal(
        self,
        topic: str,
        partitions: int,
        configs: Mapping[str, str],
        online_timeout: float = ADMIN_TIMEOUT_S,
    ) -> None:
        """A topic of kmirror's own on the target (the progress topic): created when missing,
        with the same replication factor rule as mirrored topics; online before it is used."""
        if topic not in self.target_partitions([topic]):
            new = NewTopic(
                topic,
                num_partitions=partitions,
                replication_factor=self._config.replication_factor,
                config=dict(configs),
            )
            fut = self.target.create_topics([new], request_timeout=ADMIN_TIMEOUT_S)[topic]
            try:
                fut.result()
                log.info("created internal topic topic=%s", topic)
            except KafkaException as exc:
                if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise ClusterError(
                        f"could not create kmirror's topic '{topic}' on the target: "
                        f"{exc.args[0]}. Create it (cleanup.policy=compact) or grant the "
                        "target user CREATE on it"
                    ) from exc
        if topic not in self._online:
            self._await_online(
                [TopicPartition(topic, p) for p in range(partitions)], online_timeout
            )


def _metadata(admin: AdminClient, side: str) -> Any:
    try:
        return admin.list_topics(timeout=ADMIN_TIMEOUT_S)
    except KafkaException as exc:
        raise _cluster_error(f"read {side} cluster metadata", exc) from exc


def _cluster_error(action: str, exc: KafkaException) -> ClusterError:
    err = exc.args[0] if exc.args else exc
    return ClusterError(f"could not {action}: {err}")
