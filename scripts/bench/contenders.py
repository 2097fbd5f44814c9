"""The contenders: how each one is configured and started. Every setting here is listed in
docs/benchmarks.md; change both together."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from scripts.kafkalocal.java import jar_dir, java_bin
from scripts.kmirrorproc import KMIRROR_MODULE, mm1_args, write_properties

REPO_ROOT = Path(__file__).resolve().parents[2]
MM2_MAIN = "org.apache.kafka.connect.mirror.MirrorMaker"
MM2_HEAP = ["-Xmx1g"]
# The exactly-once contender's transaction (and commit) interval: records become visible to
# read_committed readers at each commit, so this bounds its end-to-end latency.
EOS_COMMIT_INTERVAL_MS = 1000

# The producer settings kmirror uses by default (PRODUCER_DEFAULTS + PRODUCER_FORCED), in Java
# client terms, for MM2's producer. Connect's own defaults would be idempotence off and
# max.in.flight 1, which is neither fair nor what kmirror does (librdkafka's idempotent producer
# keeps up to 5 requests in flight per partition).
MM2_PRODUCER = {
    "acks": "all",
    "enable.idempotence": "true",
    "max.in.flight.requests.per.connection": "5",
    "linger.ms": "10",
    "batch.size": "1000000",
    "compression.type": "none",
}
# kmirror's consumer waits at most 100 ms for a fetch (fetch.wait.max.ms) and takes up to 5000
# records per loop (the stream's Tuning.consume_batch); the Java consumer's defaults are 500 ms
# and 500.
MM2_CONSUMER = {
    "fetch.max.wait.ms": "100",
    "max.poll.records": "5000",
}

MM2_LOG4J2 = """\
# Written by the kmirror benchmark: MirrorMaker 2 logs WARN and above to its stdout (mm2.log).
status = warn
name = bench-mm2
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = ${env:BENCH_MM2_LEVEL:-WARN}
rootLogger.appenderRef.stdout.ref = STDOUT
"""


@dataclass(frozen=True)
class Launch:
    """What a prepared run starts, and the files it wrote."""

    cmd: list[str]
    files: dict[str, Path]
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Contender:
    """kind 'kmirror': parallelism = --num.streams; kind 'mm2': parallelism = tasks.max.

    consumer/producer: extra client properties (MM2: of its source consumer and target
    producer), env: extra environment, args: extra `kmirror run` arguments (experiments only;
    the benchmark's contenders use none).
    """

    name: str
    kind: str
    parallelism: int
    consumer: Mapping[str, str] = field(default_factory=dict)
    producer: Mapping[str, str] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    module: str = KMIRROR_MODULE
    mm2_props: Mapping[str, str] = field(default_factory=dict)
    variant: str = ""  # experiments: shown in tables
    # kmirror --exactly-once: transactions committed every EOS_COMMIT_INTERVAL_MS; the copy is
    # complete when the source group (committed after each transaction) reaches the end.
    exactly_once: bool = False
    # kmirror's --engine; "" passes none: the default engine, whatever it is called.
    engine: str = ""
    args: tuple[str, ...] = ()
    # kmirror's --schema-id-mode with the run's two schema registries (scripts/bench/
    # registries.py); "": no registries, records copied as they are.
    schema_id_mode: str = ""

    @property
    def label(self) -> str:
        if self.kind == "kmirror":
            base = f"kmirror --num.streams {self.parallelism}"
            if self.exactly_once:
                base += " --exactly-once"
            if self.engine:
                base += f" --engine {self.engine}"
            if self.schema_id_mode:
                base += f" --schema-id-mode {self.schema_id_mode}"
        else:
            base = f"MirrorMaker 2 tasks.max={self.parallelism}"
        return f"{base} [{self.variant}]" if self.variant else base

    def describe(self) -> dict[str, object]:
        out: dict[str, object] = {
            "name": self.name,
            "kind": self.kind,
            "label": self.label,
            "parallelism": self.parallelism,
        }
        if self.exactly_once:
            out["exactly_once"] = {"offset.commit.interval.ms": EOS_COMMIT_INTERVAL_MS}
        if self.kind == "kmirror":
            out["engine"] = self.engine or "default"
        if self.kind == "mm2":
            out["producer"] = dict(MM2_PRODUCER)
            out["consumer"] = dict(MM2_CONSUMER)
            out["heap"] = MM2_HEAP
        if self.consumer:
            out["consumer_overrides"] = dict(self.consumer)
        if self.producer:
            out["producer_overrides"] = dict(self.producer)
        if self.env:
            out["env"] = dict(self.env)
        if self.mm2_props:
            out["mm2_props"] = dict(self.mm2_props)
        if self.args:
            out["args"] = list(self.args)
        if self.schema_id_mode:
            out["schema_id_mode"] = self.schema_id_mode
        return out

    def prepare(
        self,
        run_dir: Path,
        run_id: str,
        source: str,
        target: str,
        topics: list[str],
        registries: tuple[str, str] | None = None,
    ) -> Launch:
        """registries: the source and target schema registries' URLs (needed with
        schema_id_mode)."""
        run_dir.mkdir(parents=True, exist_ok=True)
        if self.kind == "kmirror":
            launch = self._kmirror(run_dir, run_id, source, target, topics)
            return replace(launch, cmd=[*launch.cmd, *self._schema_args(registries)])
        return self._mm2(run_dir, run_id, source, target, topics)

    def _schema_args(self, registries: tuple[str, str] | None) -> list[str]:
        if not self.schema_id_mode:
            return []
        if registries is None:
            raise ValueError(f"{self.name} mirrors schemas: the run has no registries")
        return [
            *("--schema-registry-source-url", registries[0]),
            *("--schema-registry-target-url", registries[1]),
            *("--schema-id-mode", self.schema_id_mode),
        ]

    def _kmirror(
        self, run_dir: Path, run_id: str, source: str, target: str, topics: list[str]
    ) -> Launch:
        args = mm1_args(
            run_dir,
            source,
            target,
            f"bench-{run_id}",  # fresh group: starts at the beginning
            "|".join(topics),
            consumer={"auto.offset.reset": "earliest", **self.consumer},
            producer=self.producer,
            commit_interval_ms=EOS_COMMIT_INTERVAL_MS if self.exactly_once else None,
            extra=[
                *("--num.streams", str(self.parallelism), "--metrics-port", "0"),
                *(("--engine", self.engine) if self.engine else ()),
                *(["--exactly-once"] if self.exactly_once else []),
                *self.args,
            ],
        )
        cmd = [sys.executable, "-m", self.module, *args]
        cprops, pprops = run_dir / "consumer.properties", run_dir / "producer.properties"
        return Launch(cmd, {"consumer": cprops, "producer": pprops}, dict(self.env))

    def _mm2(
        self, run_dir: Path, run_id: str, source: str, target: str, topics: list[str]
    ) -> Launch:
        # A fresh source alias per run: fresh internal topics (mm2-offsets.<alias>.internal ...)
        # and a fresh Connect group (<alias>-mm2), so nothing is resumed from an earlier run.
        a, b = f"src{run_id}", "tgt"
        props = mm2_properties(a, b, source, target, topics, self.parallelism)
        props.update({f"{a}.consumer.{k}": v for k, v in self.consumer.items()})
        props.update({f"{b}.producer.{k}": v for k, v in self.producer.items()})
        props.update(self.mm2_props)
        path = run_dir / "mm2.properties"
        write_properties(path, props)
        log4j = run_dir / "log4j2.properties"
        log4j.write_text(MM2_LOG4J2)
        cmd = [
            java_bin(),
            *MM2_HEAP,
            f"-Dlog4j2.configurationFile={log4j}",
            "-cp",
            f"{mm2_jar_dir()}/*",
            MM2_MAIN,
            str(path),
        ]
        return Launch(cmd, {"mm2": path, "log4j2": log4j})


def mm2_properties(
    a: str, b: str, source: str, target: str, topics: list[str], tasks: int
) -> dict[str, str]:
    props = {
        "clusters": f"{a},{b}",
        f"{a}.bootstrap.servers": source,
        f"{b}.bootstrap.servers": target,
        f"{a}->{b}.enabled": "true",
        f"{b}->{a}.enabled": "false",
        f"{a}->{b}.topics": "|".join(topics),
        "replication.policy.class": "org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
        "tasks.max": str(tasks),
        # Only the copy: no heartbeats, no checkpoints, no group offset sync, no offset syncs
        # (they only feed checkpoints), no ACL sync (the clusters have no authorizer).
        "emit.heartbeats.enabled": "false",
        "emit.checkpoints.enabled": "false",
        "sync.group.offsets.enabled": "false",
        "emit.offset-syncs.enabled": "false",
        "sync.topic.acls.enabled": "false",
        # Connect's default (hybrid_warn) scans every jar for plugins at start-up and logs a
        # WARN recommending service_load; measured here: 64 s -> 18 s to the first record and
        # 1 GB -> 150 MB peak RSS. Both the top level and the worker (target prefix) read it.
        "plugin.discovery": "service_load",
        f"{b}.plugin.discovery": "service_load",
        # kmirror looks for new topics every 5 s (default); MM2's default is 600 s.
        "refresh.topics.interval.seconds": "5",
        # Single-broker clusters: every topic MM2 creates gets replication factor 1.
        "replication.factor": "1",
        "checkpoints.topic.replication.factor": "1",
        "heartbeats.topic.replication.factor": "1",
        "offset.storage.replication.factor": "1",
        "status.storage.replication.factor": "1",
        "config.storage.replication.factor": "1",
    }
    props.update({f"{b}.producer.{k}": v for k, v in MM2_PRODUCER.items()})
    props.update({f"{a}.consumer.{k}": v for k, v in MM2_CONSUMER.items()})
    return props


_DIRS: dict[str, Path] = {}


def mm2_jar_dir() -> Path:
    if "mm2" not in _DIRS:
        _DIRS["mm2"] = jar_dir("mm2")
    return _DIRS["mm2"]


def kafka_jar_dir() -> Path:
    if "kafka" not in _DIRS:
        _DIRS["kafka"] = jar_dir("kafka")
    return _DIRS["kafka"]


def default_contenders() -> list[Contender]:
    """kmirror on its default engine at MM2's parallelism (1 and 2), and exactly-once. The
    record path alone (`--engine record`, the engine until session 4) is an experiment now:
    `--experiments record,record-eos` (scripts/bench/experiments.py)."""
    return [
        Contender("kmirror-1", "kmirror", 1),
        Contender("kmirror-2", "kmirror", 2),
        Contender("kmirror-1-eos", "kmirror", 1, exactly_once=True),
        Contender("mm2-1", "mm2", 1),
        Contender("mm2-2", "mm2", 2),
    ]
