"""Two three-broker clusters behind Toxiproxy, and what the fault scenarios do to them: kill -9
of one broker, a rolling restart, a preferred-leader election, a partition reassignment, toxics
on the network between the mirror and a cluster.

Layout (scripts/kafkalocal/quorum.py): each side is N=3 combined broker+controller nodes with
replication factor 3 and min.insync.replicas=2; clients that bootstrap through a proxy talk to
every broker through its proxy. Two views of the same pair:

* ``proxied``: what the mirror uses (every connection through Toxiproxy, so a toxic or a
  disabled proxy reaches it);
* ``direct``: the nodes' own listeners, for the load producer, the progress checks and the
  final comparison, which a toxic between mirror and cluster must not slow down.

Leader operations use the clients' admin APIs: confluent-kafka's ``elect_leaders``; partition
reassignment through kafka-python's admin client (confluent-kafka 2.16 has no
AlterPartitionReassignments).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from confluent_kafka import Consumer, ElectionType, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource
from kafka.admin import KafkaAdminClient
from kafka.structs import TopicPartition as KTopicPartition

from scripts import kafkalocal
from scripts.kafkalocal.proxy import api_url
from scripts.kafkalocal.quorum import roll, wait_in_sync
from scripts.toxiproxy import Toxiproxy
from tests.kafkatools import (
    Clusters,
    admin,
    commit_offsets,
    create_topic,
    produce,
    unique,
    wait_until,
)

QUIET = logging.getLogger("faults.cluster3.librdkafka")
QUIET.addHandler(logging.NullHandler())
QUIET.propagate = False

# Names and ports of the source and target (KMIRROR_CLUSTERS3="src=PORT,tgt=PORT"): below
# Linux's ephemeral range, so no client connection can hold one.
DEFAULT = "src3=21092,tgt3=22092"
START_TIMEOUT_S = 300.0
# The scenarios' load: lower than the single-broker suite's 5,000 records/s, as six broker JVMs
# share the machine and what is tested is where leaders go, not throughput; source batches of
# about 100 records (gathered for 200 ms): the batch path copies each source batch as one, so
# the single-broker suite's tiny batches (about 6 records) would make it a round trip per
# handful of records, the case --engine auto hands to the record path.
RATE3 = 2000
LINGER_MS3 = 200
NODE_START_S = 180.0
SIDES = ("source", "target")


def layout() -> dict[str, kafkalocal.Quorum]:
    raw = os.environ.get("KMIRROR_CLUSTERS3") or DEFAULT
    pairs = [item.split("=") for item in raw.split(",")]
    if len(pairs) != 2 or any(len(p) != 2 or not p[1].isdigit() for p in pairs):
        raise ValueError(f"KMIRROR_CLUSTERS3 wants SOURCE=PORT,TARGET=PORT, not {raw!r}")
    return {
        side: kafkalocal.Quorum(n, int(p), 3, True)
        for side, (n, p) in zip(SIDES, pairs, strict=True)
    }


def _healthy(q: kafkalocal.Quorum) -> bool:
    known = kafkalocal.load_quorum(q.name)
    return (
        known is not None
        and (known.port, known.brokers, known.proxied) == (q.port, q.brokers, q.proxied)
        and all(kafkalocal.status(q.node_name(i)).healthy for i in q.node_ids)
    )


def warm(bootstrap: str) -> None:
    """Pay a fresh quorum's first-use costs here, not inside a scenario: the first replicated
    topic, the first idempotent and the first transactional producer (__transaction_state),
    the first group commit (__consumer_offsets), each with RF 3."""
    topic = create_topic(bootstrap, unique("warm"), 1, replication_factor=3, timeout=180)
    produce(bootstrap, topic, [{"value": b"w"}], timeout=180)
    txn = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": unique("warm"), "logger": QUIET}
    )
    txn.init_transactions(180)
    txn.begin_transaction()
    txn.produce(topic, value=b"t")
    txn.commit_transaction(180)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("warm"), "logger": QUIET})

    try:
        commit_offsets(c, [TopicPartition(topic, 0, 1)], 180)
    finally:
        c.close()


@dataclass
class Clusters3:
    """The pair, its two views and the operations the scenarios inject."""

    quorums: dict[str, kafkalocal.Quorum]
    started: bool  # by this session (and stopped at its end)
    seconds: float = 0.0
    _down: set[str] = field(default_factory=set)

    @property
    def proxied(self) -> Clusters:
        s, t = self.quorums["source"], self.quorums["target"]
        return Clusters(s.bootstrap, t.bootstrap, s.name, t.name, managed=True)

    @property
    def direct(self) -> Clusters:
        s, t = self.quorums["source"], self.quorums["target"]
        return Clusters(s.direct_bootstrap, t.direct_bootstrap, s.name, t.name, managed=True)

    def bootstrap(self, side: str) -> str:
        return self.quorums[side].direct_bootstrap

    def toxiproxy(self, side: str) -> Toxiproxy:
        api = self.quorums[side].api_port
        assert api is not None
        return Toxiproxy(api_url(api))

    def proxies(self, side: str) -> list[str]:
        """The proxy names of a side, one per broker, in node-id order."""
        q = self.quorums[side]
        return [q.node_name(i) for i in q.node_ids]

    # -- brokers --------------------------------------------------------------------------------

    def kill(self, side: str, node: int) -> None:
        """kill -9 of one broker (unclean for it; the cluster elects new leaders)."""
        name = self.quorums[side].node_name(node)
        self._down.add(name)
        kafkalocal.stop([name], keep=True, timeout=0)

    def stop_broker(self, side: str, node: int) -> None:
        """A clean stop of one broker (its leaderships move first); restore() starts it."""
        name = self.quorums[side].node_name(node)
        self._down.add(name)
        kafkalocal.stop([name], keep=True)

    def start(self, side: str, node: int) -> None:
        name = self.quorums[side].node_name(node)
        kafkalocal.start([name], NODE_START_S)
        self._down.discard(name)

    def roll(self, side: str) -> list[str]:
        """Rolling restart of every broker of a side (clean stops, each until in sync)."""
        return roll(self.quorums[side].name, NODE_START_S)

    def in_sync(self, side: str, timeout: float = NODE_START_S) -> float:
        return wait_in_sync(self.quorums[side], timeout)

    # -- leaders --------------------------------------------------------------------------------

    def partitions(self, side: str, topic: str) -> dict[int, tuple[int, list[int], list[int]]]:
        """partition -> (leader, replicas, in-sync replicas)."""
        md = admin(self.bootstrap(side), logger=QUIET).list_topics(topic=topic, timeout=10)
        return {
            p.id: (p.leader, list(p.replicas), list(p.isrs))
            for p in md.topics[topic].partitions.values()
        }

    def leader(self, side: str, topic: str, partition: int) -> int:
        return self.partitions(side, topic)[partition][0]

    def elect_preferred(self, side: str, topic: str, timeout: float = 60.0) -> int:
        """Preferred-leader election on every partition of the topic, repeated until each is
        led by its first replica (an election refuses a preferred replica that is not in
        sync yet, e.g. right after a reassignment added it). Returns the elections made."""
        parts = [TopicPartition(topic, p) for p in self.partitions(side, topic)]
        client = admin(self.bootstrap(side), logger=QUIET)
        rounds = 0

        def preferred() -> bool:
            nonlocal rounds
            if all(lead == r[0] for lead, r, _ in self.partitions(side, topic).values()):
                return True
            rounds += 1
            with contextlib.suppress(KafkaException):  # "not needed" for some: fine
                client.elect_leaders(ElectionType.PREFERRED, parts).result(timeout=30)
            return False

        wait_until(
            preferred, timeout, 1.0, f"{topic}: every partition led by its preferred replica"
        )
        return rounds

    def reassign(self, side: str, topic: str, replicas: dict[int, list[int]]) -> None:
        """Move partitions to these replica lists (the first one is the preferred leader) and
        wait until the reassignment is complete and every replica in sync."""
        client = KafkaAdminClient(bootstrap_servers=self.bootstrap(side).split(","))
        try:
            errors = client.alter_partition_reassignments(
                {KTopicPartition(topic, p): r for p, r in replicas.items()}, timeout_ms=30_000
            )
            failed = {tp: e for tp, e in errors.items() if e is not None}
            assert not failed, f"reassignment refused: {failed}"
            wait_until(
                lambda: not client.list_partition_reassignments(timeout_ms=10_000),
                NODE_START_S,
                0.5,
                "reassignment complete",
            )
        finally:
            client.close()

        def done() -> bool:
            now = self.partitions(side, topic)
            return all(
                now[p][1] == r and sorted(now[p][2]) == sorted(r) for p, r in replicas.items()
            )

        wait_until(done, NODE_START_S, 0.5, f"{topic} replicas {replicas} in sync")

    def set_topic_config(self, side: str, topic: str, configs: dict[str, str | None]) -> None:
        """Set (a value) or remove (None: the broker's default again) topic configs."""
        entries = [
            ConfigEntry(k, v or "", incremental_operation=AlterConfigOpType.SET if v else
                        AlterConfigOpType.DELETE)
            for k, v in configs.items()
        ]  # fmt: skip
        resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=entries)
        client = admin(self.bootstrap(side), logger=QUIET)
        for fut in client.incremental_alter_configs([resource]).values():
            fut.result(timeout=30)

    # -- the end of a test, of the session -----------------------------------------------------

    def restore(self) -> None:
        """Every broker running, every proxy enabled without toxics, every replica in sync."""
        for side in SIDES:
            with contextlib.suppress(Exception):
                self.toxiproxy(side).reset()
        for name in sorted(self._down):
            kafkalocal.start([name], NODE_START_S)
        self._down.clear()
        for side in SIDES:
            self.in_sync(side)

    def stop(self) -> None:
        """Stop and remove the pair if this session started it (idempotent)."""
        if not self.started:
            return
        for q in self.quorums.values():
            if kafkalocal.load_quorum(q.name) is not None:
                for line in kafkalocal.quorum_down(q.name):
                    print(f"[clusters3] {line}")
        self.started = False


def start_pair() -> Clusters3:
    """Start the pair (or reuse it when already healthy) and warm it up."""
    quorums = layout()
    if all(_healthy(q) for q in quorums.values()):
        return Clusters3(quorums, started=False)
    t0 = time.monotonic()
    for q in quorums.values():
        if kafkalocal.load_quorum(q.name) is not None:
            kafkalocal.quorum_down(q.name)  # left over by an interrupted session
    pair = Clusters3(quorums, started=True)
    try:
        kafkalocal.quorum_up(list(quorums.values()), START_TIMEOUT_S)
        for q in quorums.values():
            warm(q.bootstrap)
    except BaseException:
        pair.stop()
        raise
    pair.seconds = time.monotonic() - t0
    return pair


def running_pair() -> Iterator[Clusters3]:
    """The body of the `clusters3` fixtures (tests/faults, tests/k8s): the pair started (or
    reused when a healthy pair of those names already runs) and stopped after the package's
    last test that uses it, also when tests fail (atexit as a backstop): six idle JVMs would
    otherwise hold 2 GB and some CPU through the rest of the session."""
    try:
        pair = start_pair()
    except (kafkalocal.ClusterError, KafkaException, RuntimeError, TimeoutError) as exc:
        pytest.fail(f"could not start the 3-broker clusters:\n{exc}", pytrace=False)
    atexit.register(pair.stop)
    how = f"started in {pair.seconds:.1f}s" if pair.started else "reused"
    print(
        f"\n[clusters3] {pair.proxied.source_bootstrap} -> {pair.proxied.target_bootstrap}: {how}"
    )
    try:
        yield pair
    finally:
        pair.stop()
