"""What a benchmark run does: the workloads (backlogs and the shape of their source batches),
the contenders, the phases and their sizes, for `--full` (`make bench`) and `--smoke`
(`make bench-smoke`). docs/benchmarks.md describes every figure here; change both together."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field, replace

from scripts.bench.contenders import Contender, default_contenders
from scripts.bench.experiments import TRANSLATE, experiment_contenders
from scripts.bench.quiet import Quiet

# A full run's drain copies until the backlog is on the target or for this long, whichever comes
# first: the backlogs below give the fastest contender (kmirror's batch path) at least 10 s on a
# quiet machine, and a slower contender is measured over the same window instead of copying
# for minutes.
FULL_MAX_COPY_S = 10.0


@dataclass(frozen=True)
class Shape:
    """How the records look and how the source's batches are made.

    Values are random bytes of `size` bytes, or, with `max_size`, of a size drawn log-uniformly
    from size..max_size (more small records than large ones). `keys`: that many distinct keys,
    the producer's partitioner places them (0: no key, record i goes to partition i mod n).
    `producers`: producer processes that load the topic at once, each with `producer`
    (librdkafka settings over kmirror's producer defaults)."""

    size: int
    max_size: int = 0
    keys: int = 0
    producers: int = 1
    producer: tuple[tuple[str, str], ...] = ()
    caps: tuple[int, ...] = ()
    text: bool = False  # compressible values (scripts/bench/loops.py text_value)

    @property
    def mean_size(self) -> float:
        if not self.max_size:
            return float(self.size)
        import math

        return (self.max_size - self.size) / math.log(self.max_size / self.size)

    def loop_args(self, producer: int = 0) -> list[str]:
        """The shape of producer number `producer` as `scripts.bench.loops` options."""
        out = [f"--set={k}={v}" for k, v in self.producer]
        if self.caps:
            out.append(f"--set=batch.num.messages={self.caps[producer % len(self.caps)]}")
        if self.max_size:
            out.append(f"--max-size={self.max_size}")
        if self.keys:
            out.append(f"--keys={self.keys}")
        if self.text:
            out.append("--text")
        return out


# Like a real cluster: several producers with linger.ms=0 (Kafka's default before 4.0), keyed
# records of 100 B - 2 KB over 16 partitions, placed by key with the Java client's partitioner.
# linger 0 sends whatever is queued when a request can go: a producer that runs flat out (a
# preload) fills every batch to its batch.num.messages, one that trickles sends 1-record
# batches. The caps stand for producers of different rates: batches of 5, 10, 25 and 50
# records, from 1 at low load (the sustained phase's first steps).
MIXED = Shape(
    100,
    max_size=2048,
    keys=10_000,
    producers=4,
    producer=(("linger.ms", "0"), ("partitioner", "murmur2_random")),
    caps=(5, 10, 25, 50),
)

SMOKE_MIXED = replace(MIXED, producers=2, caps=(10, 50))
# 5 records per batch. Eight loaders: a connection carries at most 5 requests of one batch per
# partition, so one producer of tiny batches loads slowly (41,199 records/s in the reference run,
# which would be 5 min for this backlog).
SMALL = Shape(100, producers=8, producer=(("linger.ms", "0"), ("batch.num.messages", "5")))
# Compressed at the source, copied compressed by the batch path. The values are log-line-like
# text (lz4: about half their size in batches of hundreds); until session 6 every record held
# the same 100 bytes, which lz4 squeezed to almost nothing.
LZ4 = Shape(100, producer=(("compression.type", "lz4"),), text=True)


@dataclass(frozen=True)
class Workload:
    name: str
    records: int
    shape: Shape
    partitions: int = 8
    # Records per ceiling run (ProducerPerformance, the confluent-kafka loops); 0: none.
    ceiling_records: int = 0
    # Contenders (by name) this workload does not run.
    skip: frozenset[str] = frozenset()
    # Values in the Confluent wire format with this source-registry schema ID: set by the run
    # (scripts/bench/registries.py) when a contender that mirrors schemas copies this workload.
    schema_id: int | None = None

    @property
    def topic(self) -> str:
        return f"bench-{self.name.lower()}"

    @property
    def size(self) -> int:
        """Bytes per record, for MB/s (the mean for mixed sizes)."""
        return round(self.shape.mean_size)

    def describe(self) -> dict[str, object]:
        return {
            "name": self.name,
            "topic": self.topic,
            "records": self.records,
            "partitions": self.partitions,
            "size": self.size,
            "min_size": self.shape.size,
            "max_size": self.shape.max_size or self.shape.size,
            "keys": self.shape.keys,
            "producers": self.shape.producers,
            "producer": dict(self.shape.producer),
            "caps": list(self.shape.caps),
            "ceiling_records": self.ceiling_records,
            "skip": sorted(self.skip),
            "schema_id": self.schema_id,
        }


@dataclass(frozen=True)
class Phases:
    """The fixed-rate latency phase and the sustained-rate search. With `host`, a contender
    runs them right after it copied that workload's whole backlog, in the same process (the
    smoke run: no extra start); without, in one start of its own with no backlog (the full run,
    whose drains are cut at max_copy_s)."""

    latency_rate: int
    latency_seconds: float
    contenders: frozenset[str]  # empty: every contender
    sustained: frozenset[str]
    sustained_start: int  # records/s of the first step
    sustained_step_s: float
    sustained_steps: int  # at most this many steps per search
    latency_partitions: int = 8
    latency_size: int = 100
    sustained_shape: Shape = MIXED
    sustained_partitions: int = 16
    host: str | None = None
    # How long the contender may take from its start to the phases' sentinels on the target
    # (MM2 across 100 ms of round trip on a busy machine needs more than a minute).
    sentinel_timeout_s: float = 60.0

    def runs(self, name: str) -> bool:
        return not self.contenders or name in self.contenders


@dataclass
class Plan:
    mode: str
    workloads: list[Workload]
    reps: int
    phases: Phases | None
    drain_timeout_s: float
    max_copy_s: float | None  # None: every drain copies the whole backlog
    source: tuple[str, int]  # kafka-local cluster name, port
    target: tuple[str, int]
    contenders: list[Contender] = field(default_factory=default_contenders)
    ceilings: list[str] = field(
        default_factory=lambda: ["producer-perf", "python-produce", "python-consume"]
    )
    quiet: Quiet = field(default_factory=Quiet)  # what every measured run waits for first
    # One uncounted round before the repetitions (Plan.warmup_contenders): the first
    # repetition after the preloads ran slow for every contender in session 21's runs.
    warmup: bool = False

    def contenders_for(self, w: Workload) -> list[Contender]:
        return [c for c in self.contenders if c.name not in w.skip]

    def disk_needed(self) -> int:
        """Bytes of free disk a run needs: the source's backlogs (each record with about
        RECORD_OVERHEAD_B of batch and index), plus room for the largest one again on the target
        (a drain's copy is deleted before the next run; a broker of Kafka's defaults frees it a
        minute later, while the next copy is being made), plus DISK_MARGIN_B for logs and the
        brokers."""
        sizes = [w.records * (w.size + RECORD_OVERHEAD_B) for w in self.workloads]
        return sum(sizes) + max(sizes, default=0) + DISK_MARGIN_B

    def warmup_contenders(self) -> list[Contender]:
        """Who runs the warm-up round: the first plain contender of each kind (kmirror-1,
        mm2-1), so each kind's path through the brokers has run once before anything counts."""
        picks: dict[str, Contender] = {}
        for c in self.contenders:
            if not (c.exactly_once or c.schema_id_mode):
                picks.setdefault(c.kind, c)
        return list(picks.values()) if self.warmup else []

    def mirrors_schemas(self, w: Workload) -> bool:
        """Whether a contender that mirrors schemas copies w (then its values are framed)."""
        return any(c.schema_id_mode for c in self.contenders_for(w))


# The free disk a run asks for before it starts (Plan.disk_needed): a full run that filled the
# disk half-way failed every later drain with KAFKA_STORAGE_ERROR and lost its results.
RECORD_OVERHEAD_B = 20
DISK_MARGIN_B = 3_000_000_000

# Exactly-once and schema-ID translation are measured on 100B and small only.
ONLY_100B_SMALL = frozenset({"kmirror-1-eos", TRANSLATE})


def full_workloads() -> list[Workload]:
    """Backlogs for at least 10 s of the fastest contender on a quiet machine (the reference run
    of 26 November 2026: kmirror's batch path 2.1 M x 100 B records/s, 0.29 M x 1 KB with two
    streams; re-batching aims at ~1 M/s on small batches)."""
    hundred = Shape(100)
    return [
        Workload("100B", 30_000_000, hundred, ceiling_records=4_000_000),
        Workload("1KB", 4_000_000, Shape(1024), ceiling_records=2_000_000, skip=ONLY_100B_SMALL),
        Workload("small", 12_000_000, SMALL),
        # One worker each: lz4 is measured, not compared at two parallelisms.
        Workload("lz4", 40_000_000, LZ4, skip=ONLY_100B_SMALL | {"kmirror-2", "mm2-2"}),
        Workload("mixed", 6_000_000, MIXED, partitions=16, skip=ONLY_100B_SMALL),
    ]


def smoke_workloads() -> list[Workload]:
    """Every contender and ceiling on 100 B records (framed for the schema-ID translation:
    every contender's copy is checked for its IDs); the mixed workload's loaders and batch shape
    with kmirror alone (a MirrorMaker 2 start costs 15-60 s on a busy machine)."""
    mm2 = frozenset({"mm2-1", "mm2-2", "kmirror-2", "kmirror-1-eos", TRANSLATE})
    return [
        # Enough records that the copy spans several of the harness's 100 ms polls of the
        # target, so records/s has a window to be measured in.
        Workload("100B", 100_000, Shape(100), ceiling_records=100_000),
        Workload("mixed", 20_000, SMOKE_MIXED, partitions=16, skip=mm2),
    ]


def make_plan(args: argparse.Namespace) -> Plan:
    full = args.mode == "full"
    workloads = full_workloads() if full else smoke_workloads()
    if args.records:
        workloads = [replace(w, records=args.records) for w in workloads]
    if args.records_1kb:
        workloads = [
            replace(w, records=args.records_1kb) if w.name == "1KB" else w for w in workloads
        ]
    # The consume ceiling reads the backlog: never more than it holds.
    workloads = [replace(w, ceiling_records=min(w.ceiling_records, w.records)) for w in workloads]
    if args.workloads == "none":  # the latency and sustained phases alone
        workloads = []
    elif args.workloads:
        wanted = set(args.workloads.split(","))
        unknown = wanted - {w.name for w in workloads}
        if unknown:
            raise SystemExit(
                f"unknown workload(s) {sorted(unknown)}; known: {[w.name for w in workloads]}"
            )
        workloads = [w for w in workloads if w.name in wanted]
    phases = Phases(
        latency_rate=args.latency_rate or (2000 if full else 200),
        # 30 s (60,000 records) in full: at 10 s a p99 is the worst 0.1 s of the run, and on
        # this 2-core machine one broker or scheduler hiccup of that length set it - the same
        # contender's p99 spread 2-4x between repetitions (docs/benchmarks.md, Session 17).
        latency_seconds=args.latency_seconds or (30 if full else 3),
        contenders=frozenset(),
        sustained=frozenset(
            (
                args.sustained
                if args.sustained is not None
                else ("kmirror-1,mm2-1" if full else "kmirror-1")
            ).split(",")
        )
        - {""},
        sustained_start=args.sustained_start or (8000 if full else 1000),
        sustained_step_s=4.0 if full else 2.0,
        sustained_steps=args.sustained_steps or (9 if full else 2),
        sustained_shape=MIXED if full else SMOKE_MIXED,
        host=None if full else "100B",
    )
    plan = Plan(
        mode="full" if full else "smoke",
        workloads=workloads,
        reps=args.reps or (3 if full else 1),
        warmup=full and not args.no_warmup,
        phases=None if args.no_phases else phases,
        drain_timeout_s=600 if full else 180,
        max_copy_s=args.max_copy_s or (FULL_MAX_COPY_S if full else None),
        # A smoke run (CI, tests) never stops a full run's clusters: other names, other ports.
        source=("bsrc" if full else "bsmoke-src", args.source_port or (19292 if full else 19592)),
        target=("btgt" if full else "bsmoke-tgt", args.target_port or (29292 if full else 29592)),
    )
    if not full or args.settle_max_s is not None:
        # A smoke run is CI's, on a machine busy with the other tests: it cannot wait for quiet.
        limit = args.settle_max_s if args.settle_max_s is not None else 0.0
        plan.quiet = replace(plan.quiet, max_wait_s=limit, sample_s=1.0 if limit else 0.2)
    if args.clusters:
        plan.source = (f"{args.clusters}-src", plan.source[1])
        plan.target = (f"{args.clusters}-tgt", plan.target[1])
    # Schema-ID translation against kmirror-1 on the same backlog (issue 23): one more drain
    # per workload it copies, and the registries start beside the clusters.
    plan.contenders += experiment_contenders("translate")
    if args.only:
        wanted_c = set(args.only.split(","))
        plan.contenders = [c for c in plan.contenders if c.name in wanted_c]
        plan.ceilings = [c for c in plan.ceilings if c in wanted_c]
    if args.experiments:
        names = {c.name for c in plan.contenders}
        plan.contenders += [
            c for c in experiment_contenders(args.experiments) if c.name not in names
        ]
    return plan
