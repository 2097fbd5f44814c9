"""The disaster-recovery loop beside the mirror: checkpoints, group offset sync, heartbeats.

It runs as one thread in the supervisor (kmirror run), not in the stream processes: it only
reads the persisted progress and the groups' committed offsets, so it needs no part of a
stream's state, and a failure here (a checkpoint that could not be written) never stops the
copy — it is logged, counted and retried at the next interval. Where several replicas run, each
emits the same checkpoints (they are computed from the same persisted progress and committed
offsets, and the topic is compacted); docs/disaster-recovery.md explains.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from prometheus_client import CollectorRegistry, Counter, Gauge

from kmirror.config.model import HEARTBEATS_TOPIC, MirrorConfig
from kmirror.dr import store
from kmirror.dr.formats import Checkpoint, Heartbeat
from kmirror.dr.translate import checkpoints_for, latest_checkpoints, marker, sync_plan
from kmirror.errors import ClusterError
from kmirror.kafka import clients
from kmirror.kafka.cluster import Cluster

log = logging.getLogger(__name__)
FLUSH_TIMEOUT_S = 30.0


class DrService(threading.Thread):
    def __init__(self, config: MirrorConfig, registry: CollectorRegistry) -> None:
        super().__init__(name="kmirror-dr", daemon=True)
        self._config = config
        self._dr = config.dr
        self._source_cluster = Cluster(config, "source")
        self._target_cluster = Cluster(config, "target")
        self.stop = threading.Event()
        self._emitted = Counter(
            "kmirror_dr_checkpoints_emitted_total",
            "Checkpoint records written to <source>.checkpoints.internal",
            registry=registry,
        )
        self._synced = Counter(
            "kmirror_dr_group_offsets_synced_total",
            "Partition offsets written into target consumer groups by group offset sync",
            registry=registry,
        )
        self._errors = Counter(
            "kmirror_dr_errors_total",
            "Disaster-recovery task runs that failed (retried at the next interval)",
            ["task"],
            registry=registry,
        )
        self._newest_heartbeat_ms: int | None = None
        age = Gauge(
            "kmirror_dr_heartbeat_age_seconds",
            "Age of the newest heartbeat that crossed from the source (NaN: none seen yet)",
            registry=registry,
        )
        age.set_function(self.heartbeat_age)
        self._last: dict[tuple[str, str, int], Checkpoint] | None = None
        self._by_group: dict[str, list[Checkpoint]] = {}
        self._target_producer: Producer | None = None
        self._source_producer: Producer | None = None
        self._source_refused = False
        self._reader: Consumer | None = None

    def heartbeat_age(self) -> float:
        if self._newest_heartbeat_ms is None:
            return math.nan
        return max(time.time() - self._newest_heartbeat_ms / 1000.0, 0.0)

    # -- the loop ------------------------------------------------------------------------------

    def run(self) -> None:
        tasks: list[tuple[str, float, Callable[[], None]]] = []
        if self._dr.emit_checkpoints:
            tasks.append(("checkpoints", self._dr.checkpoints_interval_s, self.emit_checkpoints))
        if self._dr.sync_group_offsets:
            tasks.append(("sync", self._dr.sync_group_offsets_interval_s, self.sync_groups))
        if self._dr.emit_heartbeats:
            tasks.append(("heartbeats", self._dr.heartbeats_interval_s, self.emit_heartbeats))
        due = {name: 0.0 for name, _, _ in tasks}
        while not self.stop.is_set():
            for name, interval, task in tasks:
                if time.monotonic() < due[name]:
                    continue
                due[name] = time.monotonic() + interval
                try:
                    task()
                except Exception as exc:  # never stop the copy; retry at the next interval
                    self._errors.labels(name).inc()
                    log.warning("disaster recovery: %s failed: %s", name, exc)
            wait = min(due.values(), default=time.monotonic() + 1) - time.monotonic()
            self.stop.wait(max(wait, 0.05))
        self._close()

    def _close(self) -> None:
        for producer in (self._target_producer, self._source_producer):
            if producer is not None:
                producer.flush(FLUSH_TIMEOUT_S)
        if self._reader is not None:
            self._reader.close()

    # -- checkpoints ---------------------------------------------------------------------------

    def emit_checkpoints(self) -> None:
        config = self._config
        if self._last is None:
            self._target_cluster.ensure_compacted_topic(
                config.rename.checkpoints_topic, config.replication_factor
            )
            self._last = latest_checkpoints(store.read_checkpoints(config))
        self._translate()
        fresh = [
            cp
            for cps in self._by_group.values()
            for cp in cps
            if self._last.get((cp.group, cp.topic, cp.partition)) != cp
        ]
        if not fresh:
            return
        producer = self._producer()
        failed: list[KafkaError] = []

        def on_delivery(err: KafkaError | None, msg: Any) -> None:
            if err is not None:
                failed.append(err)

        for cp in fresh:
            producer.produce(
                config.rename.checkpoints_topic, cp.value(), cp.key(), on_delivery=on_delivery
            )
        _flush(producer, "checkpoints")
        if failed:
            raise RuntimeError(f"{len(failed)} checkpoints not written: {failed[0]}")
        for cp in fresh:
            self._last[(cp.group, cp.topic, cp.partition)] = cp
        self._emitted.inc(len(fresh))
        log.info("disaster recovery: emitted checkpoints=%d", len(fresh))

    def _translate(self) -> None:
        """Every matching source group's checkpoints, exact, from the persisted progress."""
        config = self._config
        books = store.read_progress(config)
        source = self._source_cluster
        by_group: dict[str, list[Checkpoint]] = {}
        for group in source.groups():
            if group == config.group_id or not self._dr.group_matches(group):
                continue
            committed = {k: c.offset for k, c in source.committed(group, books).items()}
            by_group[group] = checkpoints_for(group, committed, books, config.target_topic)
        self._by_group = by_group

    # -- group offset sync ---------------------------------------------------------------------

    def sync_groups(self) -> None:
        if not self._dr.emit_checkpoints:  # MM2 needs checkpoints for sync; kmirror does not
            self._translate()
        target = self._target_cluster
        tag = marker(self._config.rename.source_alias)
        for group, cps in sorted(self._by_group.items()):
            if not cps or target.active_members(group):
                continue
            current = target.committed(group, [(c.topic, c.partition) for c in cps])
            plan = sync_plan(cps, current)
            if plan is None:
                log.debug("group sync: group=%s is committed by consumers on the target", group)
                continue
            if plan:
                target.commit(group, plan, tag)
                self._synced.inc(len(plan))
                log.info("group sync: group=%s partitions=%d", group, len(plan))

    # -- heartbeats ----------------------------------------------------------------------------

    def emit_heartbeats(self) -> None:
        """MM2's way: the flow A->B writes (A, B) into B's `heartbeats`; and, as MM2's
        reverse herder does, (B, A) into A's `heartbeats`, which the mirror carries to B as
        `A.heartbeats`: its age on B shows replication alive end to end."""
        rename = self._config.rename
        now = int(time.time() * 1000)
        if self._target_producer is None:
            rf = self._config.replication_factor
            self._target_cluster.ensure_compacted_topic(HEARTBEATS_TOPIC, rf)
            try:
                self._source_cluster.ensure_compacted_topic(HEARTBEATS_TOPIC, rf)
            except ClusterError as exc:
                self._source_refused = True
                log.warning("heartbeats: only to the target: source refused: %s", exc)
        out = Heartbeat(rename.source_alias, rename.target_alias, now)
        self._producer().produce(HEARTBEATS_TOPIC, out.value(), out.key())
        if not self._source_refused:
            back = Heartbeat(rename.target_alias, rename.source_alias, now)
            self._source().produce(
                HEARTBEATS_TOPIC, back.value(), back.key(), on_delivery=self._on_source_delivery
            )
            self._source().poll(0)
        self._producer().poll(0)
        self._read_heartbeat_age()

    def _on_source_delivery(self, err: KafkaError | None, msg: Any) -> None:
        if err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
            self._source_refused = True
            log.warning(
                "heartbeats: the source refuses writes to %s; heartbeats only go to the "
                "target (grant WRITE on it to see them cross)",
                HEARTBEATS_TOPIC,
            )

    def _read_heartbeat_age(self) -> None:
        topic = self._config.rename.remote_heartbeats_topic
        if self._reader is None:
            self._reader = clients.reader(self._config, "target", "kmirror-dr-reader")
        tp = TopicPartition(topic, 0)
        try:
            low, high = self._reader.get_watermark_offsets(tp, timeout=5)
        except Exception:
            return  # not mirrored yet
        if high <= low:
            return
        self._reader.assign([TopicPartition(topic, 0, high - 1)])
        msg = self._reader.poll(5)
        if msg is not None and msg.error() is None and msg.value() is not None:
            hb = Heartbeat.decode(msg.key() or b"", msg.value() or b"")
            newest = self._newest_heartbeat_ms or 0
            self._newest_heartbeat_ms = max(newest, hb.timestamp_ms)

    # -- clients -------------------------------------------------------------------------------

    def _producer(self) -> Producer:
        if self._target_producer is None:
            self._target_producer = clients.producer(self._config)
        return self._target_producer

    def _source(self) -> Producer:
        if self._source_producer is None:
            self._source_producer = clients.source_producer(self._config, {"linger.ms": 0})
        return self._source_producer


def _flush(producer: Producer, what: str) -> None:
    left = producer.flush(FLUSH_TIMEOUT_S)
    if left:
        raise TimeoutError(f"{left} {what} records not acknowledged within {FLUSH_TIMEOUT_S:.0f}s")
