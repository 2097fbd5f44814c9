"""Exactly-once mirroring against the real clusters: a read_committed consumer of the target
sees every source record once, in order, byte for byte, through kill -9 and a zombie stream."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest

from tests.faults.harness import verdict
from tests.integration.test_mirror import sample_records
from tests.kafkatools import Clusters, consume_all, end_offsets, produce, wait_until
from tests.mirrorproc import QUICK_REJOIN, MirrorProcess, mirror_args

pytestmark = pytest.mark.integration
# Both paths write transactions: the record path (record_transactions.py) and the batch path
# (batch/guarantee.py); test_batch_exactly_once.py has the batch path's own cases.
# The default engine (batch) in make test; the record path's twin in the long tier.
ENGINES = pytest.mark.parametrize(
    "engine", [pytest.param("record", marks=pytest.mark.slow), "batch"]
)


def eos_args(
    tmp_path: Path,
    clusters: Clusters,
    group: str,
    topic: str,
    *extra: str,
    name: str = "",
) -> list[str]:
    return mirror_args(
        tmp_path, clusters, group, topic, QUICK_REJOIN, None, "--exactly-once", *extra,
        prefix=name, commit_interval_ms=300,
    )  # fmt: skip


@contextmanager
def load(
    clusters: Clusters, topic: str, n: int, partitions: int, pace: float = 0.05
) -> Iterator[None]:
    """Produce n records to the source in chunks of 250, `pace` seconds apart, while the block
    runs (copying mid-stream)."""
    recs = sample_records(n, partitions)
    failed: list[BaseException] = []

    def run() -> None:
        try:
            for i in range(0, n, 250):
                produce(clusters.source_bootstrap, topic, recs[i : i + 250])
                time.sleep(pace)  # so the mirror is stopped mid-copy
        except BaseException as exc:
            failed.append(exc)

    t = threading.Thread(target=run, name="load")
    t.start()
    try:
        yield
    finally:
        t.join(120)
        assert not failed, failed


def target_end(clusters: Clusters, topic: str) -> int:
    """Offsets used on the target, open and aborted transactions included."""
    try:
        return sum(end_offsets(clusters.target_bootstrap, topic).values())
    except Exception:
        return 0


def committed_all(clusters: Clusters, group: str, topic: str) -> bool:
    from tests.integration.test_mirror import committed

    return committed(clusters, group, topic) == end_offsets(clusters.source_bootstrap, topic)


def assert_exactly_once(clusters: Clusters, topic: str) -> None:
    src = consume_all(clusters.source_bootstrap, topic)
    dst = consume_all(clusters.target_bootstrap, topic, isolation_level="read_committed")
    v = verdict(src, dst)
    assert (v.missing, v.duplicates, v.extra, v.order_violations) == (0, 0, 0, 0), v
    # Every record once, in source order, byte for byte (partition, key, value, headers, time).
    assert [r.content() for r in dst] == [r.content() for r in src]


@ENGINES
def test_kill9_mid_copy_then_restart_copies_every_record_once(
    tmp_path: Path, clusters: Clusters, make_topic, unique_name, engine: str
) -> None:
    topic = make_topic(clusters.source_bootstrap, partitions=3)
    group = unique_name("g")
    args = eos_args(tmp_path, clusters, group, topic, "--engine", engine)
    with load(clusters, topic, 6000, 3), MirrorProcess(args, tmp_path / "m1.log") as m:
        wait_until(lambda: target_end(clusters, topic) >= 2000, 90, 0.05)
        assert m.kill() == -signal.SIGKILL
    with MirrorProcess(args, tmp_path / "m2.log") as m:
        # Up first: the killed mirror may have committed everything already, and a SIGTERM
        # before the new one runs its handlers would end it like any process (-15).
        m.wait_ready()
        wait_until(lambda: committed_all(clusters, group, topic), 90, 0.3)
        assert m.stop() == 0, m.log
    assert_exactly_once(clusters, topic)


def owns_all(m: MirrorProcess, topic: str, partitions: int, after: int) -> bool:
    """The member's log says, past its first `after` lines, it was assigned every partition."""
    want = [f"{topic}[{p}]" for p in range(partitions)]
    lines = m.log.splitlines()[after:]
    return any("assigned stream" in line and all(w in line for w in want) for line in lines)


def streams_of(m: MirrorProcess) -> list[psutil.Process]:
    assert m.proc is not None
    children = psutil.Process(m.proc.pid).children()
    return [c for c in children if "resource_tracker" not in " ".join(c.cmdline())]


def test_stream_child_kill9_then_restart_copies_every_record_once(
    tmp_path: Path, clusters: Clusters, make_topic, unique_name
) -> None:
    topic = make_topic(clusters.source_bootstrap, partitions=4)
    group = unique_name("g")
    args = eos_args(tmp_path, clusters, group, topic, "--num.streams", "2")
    with load(clusters, topic, 6000, 4), MirrorProcess(args, tmp_path / "m1.log") as m:
        wait_until(lambda: target_end(clusters, topic) >= 2000, 90, 0.05)
        streams = streams_of(m)
        assert len(streams) == 2, [c.cmdline() for c in streams]
        streams[0].send_signal(signal.SIGKILL)
        assert m.wait(60) == 128 + signal.SIGKILL, m.log
    with MirrorProcess(args, tmp_path / "m2.log") as m:
        # Up first: the killed mirror may have committed everything already, and a SIGTERM
        # before the new one runs its handlers would end it like any process (-15).
        m.wait_ready()
        wait_until(lambda: committed_all(clusters, group, topic), 90, 0.3)
        assert m.stop() == 0, m.log
    assert_exactly_once(clusters, topic)


@ENGINES
def test_zombie_stream_commits_nothing_after_its_partitions_moved(
    tmp_path: Path, clusters: Clusters, make_topic, unique_name, engine: str
) -> None:
    """SIGSTOP a member longer than its session: the other member takes its partitions (and
    fences it); after SIGCONT, nothing the zombie had in flight becomes visible."""
    topic = make_topic(clusters.source_bootstrap, partitions=4)
    group = unique_name("g")
    a_args = eos_args(tmp_path, clusters, group, topic, "--engine", engine, name="a-")
    b_args = eos_args(tmp_path, clusters, group, topic, "--engine", engine, name="b-")
    with (
        MirrorProcess(a_args, tmp_path / "a.log") as a,
        MirrorProcess(b_args, tmp_path / "b.log") as b,
    ):
        a.wait_ready(90)
        b.wait_ready(90)
        with load(clusters, topic, 6000, 4):
            wait_until(lambda: target_end(clusters, topic) >= 1500, 90, 0.05)
            zombie = streams_of(a) or [psutil.Process(a.proc.pid)]  # type: ignore[union-attr]
            seen = len(b.log.splitlines())
            for p in zombie:
                p.suspend()
            try:
                # The survivor owns everything and copied on past the zombie's position.
                wait_until(lambda: owns_all(b, topic, 4, seen), 60, 0.3, "survivor owns all")
                wait_until(lambda: committed_all(clusters, group, topic), 120, 0.3)
            finally:
                for p in zombie:
                    p.resume()
        # The zombie wakes up with an open transaction. Whichever it notices first, its lost
        # group session (the partitions are dropped, the transaction aborted) or the fencing
        # (its next send or commit fails), nothing of that transaction becomes visible.
        wait_until(lambda: "fenced" in a.log or "session timed out" in a.log, 60, 0.3)
        wait_until(lambda: committed_all(clusters, group, topic), 90, 0.3)
        assert b.stop() == 0, b.log
        a.stop()
    assert_exactly_once(clusters, topic)


@ENGINES
def test_a_transaction_the_target_timed_out_is_taken_back_not_dropped(
    tmp_path: Path, clusters: Clusters, make_topic, unique_name, engine: str
) -> None:
    """The mirror stalls (SIGSTOP: a long GC, a frozen VM, a target that stops answering) longer
    than transaction.timeout.ms but shorter than its group session: the coordinator aborts the
    open transactions and bumps their epochs, which answers the mirror like a new owner's
    fencing. The group still gives this mirror every partition, so it takes them back and
    copies on from the committed progress: every record once (before: the partitions were
    dropped and never copied again until a rebalance)."""
    topic = make_topic(clusters.source_bootstrap, partitions=3)
    group = unique_name("g")
    # The default session (45 s) outlives the stall; the coordinator looks for timed-out
    # transactions every 10 s (transaction.abort.timed.out.transaction.cleanup.interval.ms).
    # librdkafka wants message.timeout.ms within the transaction's: the sends pending at the
    # stall time out too, and the mirror rides that out (as a DR mirror riding out outages is
    # configured: tests/faults/scenario3.py).
    # A commit every 4 s keeps a transaction open most of the time (a stall between a commit
    # and the next record would time nothing out).
    producer = {"transaction.timeout.ms": 5000, "message.timeout.ms": 5000}
    args = mirror_args(
        tmp_path, clusters, group, topic, None, producer, "--exactly-once", "--engine", engine,
        "--abort.on.send.failure", "false", commit_interval_ms=4000,
    )  # fmt: skip
    with MirrorProcess(args, tmp_path / "m.log") as m:
        m.wait_ready(90)
        # Records flow throughout (about a minute), so the mirror is busy copying when it
        # stalls: a transaction is open then (an idle one has committed all; stalled again).
        with load(clusters, topic, 24_000, 3, pace=0.02):
            wait_until(lambda: target_end(clusters, topic) >= 5000, 90, 0.05)
            for _ in range(3):
                stalled = [psutil.Process(m.proc.pid), *streams_of(m)]  # type: ignore[union-attr]
                for p in stalled:
                    p.suspend()
                try:
                    time.sleep(18)  # timeout + the coordinator's 10 s round + margin
                finally:
                    for p in stalled:
                        p.resume()
                try:
                    wait_until(lambda: "was fenced" in m.log, 15, 0.3)
                    break
                except TimeoutError:
                    continue
        assert "was fenced" in m.log, "no stall timed a transaction out: nothing was tested"
        wait_until(lambda: committed_all(clusters, group, topic), 180, 0.3, "all copied")
        assert "taken back" in m.log, m.log
        assert m.stop() == 0, m.log
    assert_exactly_once(clusters, topic)
