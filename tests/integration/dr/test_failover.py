"""Consumer failover, end to end: a group reads part of a topic on the source and commits; the
mirror copies (killed with SIGKILL and restarted in between); `kmirror failover`; the same
group on the target reads the rest — no record missing, none it had already consumed."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Producer

from tests.integration.dr.drtools import consume_and_commit, consume_rest, mm2_config
from tests.kafkatools import LOG, Clusters, consume_all, produce, wait_until
from tests.mirrorproc import MirrorProcess, run_cli

pytestmark = pytest.mark.integration

PARTITIONS = 3


def plain(bootstrap: str, topic: str) -> list[bytes]:
    values = [f"v{i}".encode() for i in range(600)]
    produce(bootstrap, topic, [{"value": v, "partition": i % PARTITIONS}
                               for i, v in enumerate(values)])  # fmt: skip
    return values


def transactions(bootstrap: str, topic: str) -> list[bytes]:
    """Committed and aborted transactions: the source offsets have gaps (markers, aborted
    records) that the target does not have."""
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": topic, "logger": LOG})
    p.init_transactions(30)
    kept: list[bytes] = []
    for batch in range(12):
        p.begin_transaction()
        values = [f"t{batch}-{i}".encode() for i in range(30)]
        for i, v in enumerate(values):
            p.produce(topic, v, partition=i % PARTITIONS)
        if batch % 3 == 1:
            # Written first, so the aborted records take offsets in the log (the gaps), and
            # the abort never races the partitions' AddPartitionsToTxn: librdkafka then fails
            # it as INVALID_TXN_STATE, fatally (confluentinc/librdkafka#4849).
            p.flush(30)
            p.abort_transaction(30)
        else:
            p.commit_transaction(30)
            kept += values
    return kept


def compacted(bootstrap: str, topic: str) -> list[bytes]:
    """Keys written twice; the log cleaner removes the older copies (offset gaps)."""
    first = [{"key": f"k{i}".encode(), "value": f"old{i}".encode(), "partition": i % PARTITIONS}
             for i in range(300)]  # fmt: skip
    second = [{"key": f"k{i}".encode(), "value": f"new{i}".encode(), "partition": i % PARTITIONS}
              for i in range(0, 300, 2)]  # fmt: skip
    produce(bootstrap, topic, first)
    produce(bootstrap, topic, second)
    # A last record per partition rolls the segments, so the cleaner may compact the rest.
    time.sleep(0.2)
    produce(bootstrap, topic, [{"key": b"roll", "value": b"roll", "partition": p}
                               for p in range(PARTITIONS)])  # fmt: skip

    # Fully cleaned: each key once (the roll records sit in the active segments).
    wait_until(lambda: len(consume_all(bootstrap, topic)) == len(first) + PARTITIONS, 120, 1.0,
               "log cleaner compacted every partition of the source topic")  # fmt: skip
    return [r.value or b"" for r in consume_all(bootstrap, topic)]


COMPACT = {"cleanup.policy": "compact", "segment.ms": "100", "min.cleanable.dirty.ratio": "0.001",
           "delete.retention.ms": "0", "min.compaction.lag.ms": "0"}  # fmt: skip
KINDS: dict[str, tuple[Callable[[str, str], list[bytes]], dict[str, str]]] = {
    "plain": (plain, {}),
    "transactions": (transactions, {}),
    "compacted": (compacted, COMPACT),
}


# Plain topics in make test; compacted and transactional sources in the long tier.
@pytest.mark.parametrize(
    "kind", [k if k == "plain" else pytest.param(k, marks=pytest.mark.slow) for k in sorted(KINDS)]
)
def test_failover_no_record_missing_none_reread(
    tmp_path: Path, clusters: Clusters, make_topic, unique_name, kind: str
) -> None:
    fill, topic_config = KINDS[kind]
    topic = make_topic(clusters.source_bootstrap, partitions=PARTITIONS, config=topic_config)
    everything = fill(clusters.source_bootstrap, topic)
    group = unique_name("app")
    consumed = consume_and_commit(
        clusters.source_bootstrap, topic, group, len(everything) // PARTITIONS // 3, PARTITIONS
    )
    # The killed mirror's member leaves the group after the session timeout: keep it short.
    # Commits every 3 s: the kill below most likely comes before the first one, so the restart
    # copies records again and the target offsets drift from the source's.
    args = mm2_config(tmp_path, clusters, unique_name("mirror"), topic,
                      **{"A.consumer.session.timeout.ms": "6000",
                         "offset.flush.interval.ms": "3000"})  # fmt: skip
    target = f"A.{topic}"

    last: list[str] = []

    def current() -> bool:
        res = run_cli(["offsets", *args, "--group", group, "--json"])
        last[:] = [res.stdout, res.stderr]
        rows = json.loads(res.stdout)["partitions"] if res.returncode == 0 else []
        return len(rows) == PARTITIONS and all(
            r["checkpoint"] is not None and r["checkpoint"] == r["translated"] for r in rows
        )

    with MirrorProcess(["run", *args], tmp_path / "m1.log") as m:
        wait_until(lambda: len(consume_all(clusters.target_bootstrap, target)) > 0, 60)
        m.kill()  # SIGKILL: no flush, no commit; the restart re-copies from the last commit
    with MirrorProcess(["run", *args], tmp_path / "m2.log") as m:
        wait_until(
            lambda: (
                {r.value for r in consume_all(clusters.target_bootstrap, target)} >= set(everything)
            ),
            90,
            message="target holds every source record",
        )
        try:
            wait_until(current, 60, 0.5, "checkpoints current")
        except TimeoutError as exc:
            raise AssertionError(f"checkpoints not current: {last}") from exc
        assert m.stop() == 0, m.log
    res = run_cli(["failover", *args, "--group", group])
    assert res.returncode == 0, res.stderr
    rest = consume_rest(clusters.target_bootstrap, target, group)
    assert set(rest) & set(consumed) == set(), "records read twice after failover"
    assert set(consumed) | set(rest) == set(everything), "records missing after failover"
