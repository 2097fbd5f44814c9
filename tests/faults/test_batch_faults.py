"""The batch copier while a broker restarts (lost connections, NOT_LEADER, metadata refresh,
retries with the same sequence numbers): a producer keeps writing to the source throughout,
and in the end every source record is on the target, in order; duplicates are counted
(at-least-once allows them; the idempotent session should avoid them).

Restarts the clusters it runs against: run it as the lead (marker `slow`, make test-faults):

    KMIRROR_SOURCE_BOOTSTRAP=127.0.0.1:19092 KMIRROR_TARGET_BOOTSTRAP=127.0.0.1:29092 \\
        pytest -m slow tests/faults/test_batch_faults.py
"""

from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import Producer

from kmirror.mirror.batch.copier import BatchCopier
from kmirror.progress.book import ProgressBook
from tests.conftest import KafkaLocal, MakeTopic
from tests.integration.batchcopy import mirror_config
from tests.kafkatools import Clusters, consume_all, end_offsets

# Two broker restarts take minutes on a busy machine: with the long scenarios, not make test.
pytestmark = pytest.mark.slow

BROKER_START_S = 300.0
RATE = 5_000  # records/s written to the source during the whole scenario


class Writer(threading.Thread):
    """Writes key i / value i to alternating partitions at RATE until stopped."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.stop = threading.Event()
        self.errors: list[str] = []
        self.servers, self.topic = bootstrap, topic

    def run(self) -> None:
        producer = Producer(
            {"bootstrap.servers": self.servers, "enable.idempotence": True, "linger.ms": 5}
        )
        i, started = 0, time.monotonic()
        while not self.stop.is_set():
            producer.produce(
                self.topic,
                key=b"k%d" % i,
                value=b"v%d" % i,
                partition=i % 2,
                on_delivery=lambda err, msg: err and self.errors.append(str(err)),
            )
            producer.poll(0)
            i += 1
            ahead = i / RATE - (time.monotonic() - started)
            if ahead > 0:
                time.sleep(ahead)
        left = producer.flush(BROKER_START_S)
        if left:
            self.errors.append(f"{left} record(s) not delivered to the source")


@pytest.mark.parametrize("side", ["target", "source"])
def test_batch_copy_survives_a_broker_restart(
    clusters: Clusters, make_topic: MakeTopic, kafka_local: KafkaLocal, side: str
) -> None:
    src = make_topic(clusters.source_bootstrap, partitions=2)
    dst = make_topic(clusters.target_bootstrap, name=src, partitions=2)
    # Long enough to wait out the restart instead of giving up on the target.
    config = mirror_config(
        clusters.source_bootstrap,
        clusters.target_bootstrap,
        target_conf={"message.timeout.ms": str(int(BROKER_START_S * 1000))},
    )
    book = ProgressBook()
    copier = BatchCopier(config, book)
    keys = [(src, 0), (src, 1)]
    copier.assign({k: (dst, 0) for k in keys})
    writer = Writer(clusters.source_bootstrap, src)
    restart = threading.Thread(target=kafka_local.restart, args=(side, BROKER_START_S))
    writer.start()
    try:
        acked = 0
        while acked < RATE:  # about a second of copying before the restart
            acked += copier.step(0.1)
        restart.start()
        while restart.is_alive():
            copier.step(0.1)
        after = time.monotonic() + 3  # keep writing and copying a little after the restart
        while time.monotonic() < after:
            copier.step(0.1)
        writer.stop.set()
        writer.join(BROKER_START_S)
        ends = end_offsets(clusters.source_bootstrap, src)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and any(book[k].acked < ends[k[1]] for k in keys):
            copier.step(0.1)
        assert copier.flush(30)
    finally:
        writer.stop.set()
        if restart.ident is not None:
            restart.join()
        copier.close()
    assert writer.errors == []
    assert {k[1]: book[k].acked for k in keys} == ends
    source = [r.content() for r in consume_all(clusters.source_bootstrap, src)]
    target = [r.content() for r in consume_all(clusters.target_bootstrap, dst)]
    # Nothing missing, order kept: the target is the source with (at most) repeated stretches.
    assert list(dict.fromkeys(target)) == source
    print(f"batch copier, {side} restart: {len(source)} records, {len(target) - len(source)} dup")
