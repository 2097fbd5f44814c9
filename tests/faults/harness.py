"""Fault-injection harness: steady load on the source, mirror processes that can be killed and
restarted like a pod, progress measured through the mirror's committed offsets, and the final
exact comparison of source and target.

Why committed offsets: the mirror commits a position only after the target acknowledged every
record before it, so "committed >= source end offsets sampled at time T" means "everything
the source held at T is on the target". That is cheap to poll (no reading back), and the
final verdict is still the exact record-by-record comparison (`compare`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import multiprocessing as mp
import os
import platform
import random
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from tests.kafkatools import Clusters, Rec, consume_all, end_offsets, unique, wait_until
from tests.mirrorproc import QUICK_REJOIN, REPO_ROOT, MirrorProcess
from tests.mirrorproc import mirror_args as local_mirror_args

QUIET = logging.getLogger("faults.librdkafka")
QUIET.addHandler(logging.NullHandler())
QUIET.propagate = False

RESULTS_DIR = REPO_ROOT / "bench" / "results"
RATE = 5000  # records/s written to the source while a scenario runs
PARTITIONS = 4
COMMIT_INTERVAL_MS = 1000
# The test consumers of the harness leave their group as quickly as the mirrors do.
SESSION_TIMEOUT_MS = int(str(QUICK_REJOIN["session.timeout.ms"]))
# Set by the exactly-once variants (test_eos_faults.py): mirrors run with --exactly-once,
# scenario names end in "-eos", and a duplicate fails the scenario like a missing record.
EXACTLY_ONCE = False


def full_mode() -> bool:
    return os.environ.get("KMIRROR_FAULTS", "").strip().lower() == "full"


# --------------------------------------------------------------------------- load


def _load_main(
    bootstrap: str,
    topic: str,
    rate: int,
    partitions: int,
    stop: Any,
    out: Any,
    backlog: int,
    linger_ms: int,
) -> None:
    """Child process: produce `backlog` records at once, then `rate` records/s until stopped.
    Keys are sequence numbers, so every source record is unique."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "linger.ms": linger_ms,
            # Survive a source restart: records wait in the queue until the broker is back.
            "message.timeout.ms": 600_000,
            "queue.buffering.max.messages": 2_000_000,
            "logger": QUIET,
        }
    )
    acked = failed = 0

    def on_delivery(err: Any, msg: Any) -> None:
        nonlocal acked, failed
        if err is None:
            acked += 1
        else:
            failed += 1

    pad = bytes(random.Random(7).randrange(256) for _ in range(80))
    seq = 0

    def send(n: int) -> None:
        nonlocal seq
        end = seq + n
        while seq < end:
            try:
                producer.produce(
                    topic,
                    key=b"%010d" % seq,
                    value=b"v%010d:" % seq + pad,
                    partition=seq % partitions,
                    headers=[("load", b"faults")],
                    on_delivery=on_delivery,
                )
            except BufferError:
                producer.poll(0.05)
                continue
            seq += 1
        producer.poll(0)

    send(backlog)
    start = time.monotonic()
    base = seq
    while not stop.is_set():
        due = base + int((time.monotonic() - start) * rate)
        if due > seq:
            send(min(due - seq, rate // 10 or 1))
        producer.poll(0.01)
    producer.flush(600)
    out.put({"sent": seq, "acked": acked, "failed": failed})


class Load:
    """A producer process writing RATE records/s (after an optional backlog) to the source."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        rate: int = RATE,
        partitions: int = PARTITIONS,
        backlog: int = 0,
        linger_ms: int = 5,
    ) -> None:
        """linger_ms: how long the producer gathers records per partition, i.e. the size of
        the source's batches (5 ms at RATE over 4 partitions: about 6 records)."""
        ctx = mp.get_context("spawn")
        self._stop = ctx.Event()
        self._out: Any = ctx.Queue()
        self._proc = ctx.Process(
            target=_load_main,
            args=(bootstrap, topic, rate, partitions, self._stop, self._out, backlog, linger_ms),
            name="faults-load",
            daemon=True,
        )
        self.result: dict[str, int] = {}

    def start(self) -> Load:
        self._proc.start()
        return self

    def stop(self, timeout: float = 660) -> dict[str, int]:
        self._stop.set()
        self.result = self._out.get(timeout=timeout)
        self._proc.join(30)
        return self.result

    def kill(self) -> None:
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join(10)


# --------------------------------------------------------------------------- progress


class Progress:
    """Committed offsets of the mirror's group vs the source's end offsets."""

    def __init__(self, clusters: Clusters, group: str, topic: str) -> None:
        self.clusters = clusters
        self.group = group
        self.topic = topic
        self._consumer: Consumer | None = None

    def _client(self) -> Consumer:
        if self._consumer is None:
            self._consumer = Consumer(
                {
                    "bootstrap.servers": self.clusters.source_bootstrap,
                    "group.id": self.group,  # committed() reads; nothing joins or commits
                    "enable.auto.commit": False,
                    "logger": QUIET,
                }
            )
        return self._consumer

    def committed(self, partitions: int = PARTITIONS) -> dict[int, int]:
        tps = [TopicPartition(self.topic, p) for p in range(partitions)]
        got = self._client().committed(tps, timeout=10)
        return {tp.partition: tp.offset for tp in got}

    def source_end(self) -> dict[int, int]:
        return end_offsets(self.clusters.source_bootstrap, self.topic, logger=QUIET)

    def reached(self, goal: dict[int, int]) -> bool:
        try:
            done = self.committed(len(goal))
        except KafkaException:
            return False
        return all(done.get(p, -1) >= off for p, off in goal.items() if off > 0)

    def wait(
        self,
        goal: dict[int, int],
        timeout: float,
        what: str = "caught up",
        tick: Callable[[], object] | None = None,
    ) -> float:
        """Seconds until committed >= goal on every partition; `tick` runs at every poll
        (e.g. restarting a mirror that exited, as its Deployment would)."""
        t0 = time.monotonic()

        def check() -> bool:
            if tick is not None:
                tick()
            return self.reached(goal)

        wait_until(check, timeout, 0.25, f"{what}: committed >= {goal}")
        return time.monotonic() - t0

    def close(self) -> None:
        if self._consumer is not None:
            with contextlib.suppress(Exception):
                self._consumer.close()
            self._consumer = None


# --------------------------------------------------------------------------- the mirror


@dataclass
class Mirror:
    """`kmirror run` as a restartable pod: kill it, look at its exit, start it again."""

    args: list[str]
    workdir: Path
    name: str = "mirror"
    proc: MirrorProcess | None = None
    starts: int = 0
    exits: list[int] = field(default_factory=list)

    def start(self) -> MirrorProcess:
        self.starts += 1
        log = self.workdir / f"{self.name}-{self.starts:02d}.log"
        self.proc = MirrorProcess(self.args, log).start()
        return self.proc

    def running(self) -> bool:
        return self.proc is not None and self.proc.running()

    def kill(self) -> int:
        assert self.proc is not None
        code = self.proc.kill()
        self.exits.append(code)
        return code

    def wait(self, timeout: float) -> int:
        assert self.proc is not None
        code = self.proc.wait(timeout)
        self.exits.append(code)
        return code

    def stop(self, grace: float = 60.0) -> int:
        """SIGTERM; SIGKILL when it is still running after `grace` (Kubernetes' way)."""
        assert self.proc is not None
        self.proc.terminate(grace)
        code = self.proc.returncode
        assert code is not None
        self.exits.append(code)
        return code

    def ensure_running(self) -> bool:
        """Restart it if it exited (as a Deployment would). True when it had to."""
        if self.running():
            return False
        if self.proc is not None and self.proc.proc is not None:
            self.exits.append(self.proc.wait(5))
        self.start()
        return True

    def logs(self) -> str:
        return "\n".join(
            p.read_text(errors="replace") for p in sorted(self.workdir.glob(f"{self.name}-*.log"))
        )

    def cleanup(self) -> None:
        if self.running():
            assert self.proc is not None
            self.proc.kill()


def mirror_args(
    workdir: Path,
    clusters: Clusters,
    group: str,
    topic: str,
    *,
    consumer: dict[str, object] | None = None,
    producer: dict[str, object] | None = None,
    extra: tuple[str, ...] = (),
    name: str = "mirror",
) -> list[str]:
    """The MM1 argv with a short session timeout, so a killed member is noticed quickly."""
    return local_mirror_args(
        workdir,
        clusters,
        group,
        topic,
        {**QUICK_REJOIN, **(consumer or {})},
        producer,
        *extra,
        *(("--exactly-once",) if EXACTLY_ONCE else ()),
        prefix=f"{name}-",
        commit_interval_ms=COMMIT_INTERVAL_MS,
    )


# --------------------------------------------------------------------------- the verdict


@dataclass
class Verdict:
    produced: int
    mirrored: int  # records on the target, duplicates included
    missing: int
    duplicates: int
    extra: int  # on the target but never on the source (must be 0 as well)
    order_violations: int  # partitions whose first copies are not in source order
    missing_sample: list[str] = field(default_factory=list)


def compare(clusters: Clusters, topic: str, timeout: float = 180) -> Verdict:
    """Read both topics back completely and compare every record (partition, key, value,
    headers, timestamp and its type)."""
    src = consume_all(clusters.source_bootstrap, topic, timeout=timeout, logger=QUIET)
    dst = consume_all(clusters.target_bootstrap, topic, timeout=timeout, logger=QUIET)
    return verdict(src, dst)


def verdict(src: list[Rec], dst: list[Rec]) -> Verdict:
    have = Counter(r.content() for r in dst)
    wanted = {r.content() for r in src}
    missing = [r for r in src if r.content() not in have]
    extra = sum(n for c, n in have.items() if c not in wanted)
    duplicates = sum(n - 1 for n in have.values() if n > 1)
    # Order: per partition, the first copy of each source record must appear in source order.
    order = 0
    by_part: dict[int, list[Any]] = {}
    seen: set[Any] = set()
    for r in dst:
        c = r.content()
        if c not in seen:
            seen.add(c)
            by_part.setdefault(r.partition, []).append(c)
    for p in {r.partition for r in src}:
        expected = [r.content() for r in src if r.partition == p]
        got = [c for c in by_part.get(p, []) if c in wanted]
        if [c for c in expected if c in seen] != got:
            order += 1
    return Verdict(
        produced=len(src),
        mirrored=len(dst),
        missing=len(missing),
        duplicates=duplicates,
        extra=extra,
        order_violations=order,
        missing_sample=[f"{r.partition}@{r.offset}:{r.key!r}" for r in missing[:10]],
    )


# --------------------------------------------------------------------------- results


@dataclass
class Result:
    scenario: str
    mode: str  # short | full
    faults: int
    produced: int = 0
    mirrored: int = 0
    missing: int = -1
    duplicates: int = 0
    extra: int = 0
    order_violations: int = 0
    recovery_s: list[float] = field(default_factory=list)  # one per fault where measurable
    catch_up_s: float | None = None  # load stopped -> everything committed
    mirror_exits: list[int] = field(default_factory=list)
    duration_s: float = 0.0
    notes: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def apply(self, v: Verdict) -> None:
        self.produced, self.mirrored, self.missing = v.produced, v.mirrored, v.missing
        self.duplicates, self.extra = v.duplicates, v.extra
        self.order_violations = v.order_violations
        if v.missing_sample:
            self.details["missing_sample"] = v.missing_sample

    def summary(self) -> dict[str, Any]:
        rec = sorted(self.recovery_s)
        return {
            "recovery_median_s": round(rec[len(rec) // 2], 2) if rec else None,
            "recovery_max_s": round(rec[-1], 2) if rec else None,
        }


def provenance() -> dict[str, Any]:
    """When, from which commit and on what a results file was made."""
    rev = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        check=False,
    ).stdout.strip()
    return {
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "git": rev or None,
        "host": {"cpus": os.cpu_count(), "python": platform.python_version()},
    }


def write_results(results: list[Result], mode: str, stem: str = "faults", rate: int = RATE) -> Path:
    """bench/results/<stem>-<mode>.json (faults3: the 3-broker scenarios, their own rate)."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{stem}-{mode}.json"
    made = provenance()
    # Each row says which run made it: a file can hold rows of several runs (below).
    run = {"git": made["git"], "created": made["created"]}
    doc = {
        "mode": mode,
        **made,
        "rate_records_per_s": rate,
        "commit_interval_ms": COMMIT_INTERVAL_MS,
        "session_timeout_ms": SESSION_TIMEOUT_MS,
        "scenarios": [{**asdict(r), **r.summary(), **run} for r in results],
    }
    # Keep the other scenarios of an earlier run (a -k selection must not erase them).
    if path.exists():
        with contextlib.suppress(ValueError, KeyError, TypeError):
            old = json.loads(path.read_text())
            names = {s["scenario"] for s in doc["scenarios"]}
            kept = [s for s in old["scenarios"] if s["scenario"] not in names]
            for s in kept:  # rows of files written before rows carried their run
                s.setdefault("git", old.get("git"))
                s.setdefault("created", old.get("created"))
            doc["scenarios"] = kept + doc["scenarios"]
    doc["scenarios"].sort(key=lambda s: s["scenario"])
    path.write_text(json.dumps(doc, indent=2) + "\n")
    return path


@contextlib.contextmanager
def timed() -> Iterator[Callable[[], float]]:
    t0 = time.monotonic()
    yield lambda: time.monotonic() - t0


def topic_name(prefix: str) -> str:
    return unique(f"faults-{prefix}")
