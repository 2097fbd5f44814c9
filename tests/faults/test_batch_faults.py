"""The batch copier while a broker restarts (NOT_LEADER, lost connections, metadata refresh):
every source record ends up on the target, in order; duplicates are counted (at-least-once
allows them, the idempotent session should avoid them).

Restarts the lead's clusters: run only as the lead (marker `slow`, make test-faults):

    KMIRROR_SOURCE_BOOTSTRAP=127.0.0.1:19092 KMIRROR_TARGET_BOOTSTRAP=127.0.0.1:29092 \\
        pytest -m slow tests/faults/test_batch_faults.py
"""

from __future__ import annotations

import threading
import time

import pytest

from kmirror.mirror.batch.copier import BatchCopier
from kmirror.mirror.progress import ProgressBook
from tests.conftest import KafkaLocal, MakeTopic
from tests.integration.batchcopy import mirror_config
from tests.kafkatools import Clusters, consume_all, end_offsets, produce

# Two broker restarts take minutes on this machine: with the long scenarios, not in make test.
pytestmark = pytest.mark.slow

BROKER_START_S = 300.0


@pytest.mark.parametrize("side", ["target", "source"])
def test_batch_copy_survives_a_broker_restart(
    clusters: Clusters, make_topic: MakeTopic, kafka_local: KafkaLocal, side: str
) -> None:
    src = make_topic(clusters.source_bootstrap, partitions=2)
    dst = make_topic(clusters.target_bootstrap, name=src, partitions=2)
    rows = [{"key": b"k%d" % i, "value": b"v%d" % i, "partition": i % 2} for i in range(40_000)]
    produce(clusters.source_bootstrap, src, rows, **{"batch.num.messages": "200"})
    ends = end_offsets(clusters.source_bootstrap, src)
    # Long enough to wait out the restart instead of giving up on the target.
    config = mirror_config(
        clusters.source_bootstrap,
        clusters.target_bootstrap,
        target_conf={"message.timeout.ms": str(int(BROKER_START_S * 1000))},
    )
    book = ProgressBook()
    copier = BatchCopier(config, book, max_in_flight=5)
    copier.assign({(src, p): (dst, 0) for p in ends})
    restart = threading.Thread(target=kafka_local.restart, args=(side, BROKER_START_S))
    try:
        acked = 0
        while acked < 5_000:
            acked += copier.step(0.05)
        restart.start()
        deadline = time.monotonic() + BROKER_START_S + 120
        while time.monotonic() < deadline and any(
            book[(src, p)].acked < end for p, end in ends.items()
        ):
            copier.step(0.1)
        assert copier.flush(30)
    finally:
        if restart.ident is not None:
            restart.join()
        copier.close()
    assert {p: book[(src, p)].acked for p in ends} == ends
    source = [r.content() for r in consume_all(clusters.source_bootstrap, src)]
    target = [r.content() for r in consume_all(clusters.target_bootstrap, dst)]
    # Nothing missing, order kept: the target is the source with (at most) repeated stretches.
    distinct = list(dict.fromkeys(target))
    assert distinct == source
    print(f"batch copier, {side} restart: {len(target) - len(source)} duplicate(s)")
