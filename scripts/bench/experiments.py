"""kmirror variants beyond the benchmark's contenders: `--experiments NAME[:STREAMS],...`.

    python -m scripts.bench.run --full --only kmirror-1,mm2-1 --experiments record,batch20k:2

Each one is a `Contender` (scripts/bench/contenders.py) built from the entry below: its fields
are the contender's (engine, exactly_once, args = extra `kmirror run` arguments, consumer /
producer = client properties written into the MM1 files, as a user would set them, env,
module, schema_id_mode), plus `name` (default kmirror-<streams>-<experiment>). A new variant is
one entry here.

`translate` (issue 23) mirrors schemas: the run starts two schema registries, frames the values
of the workloads it copies in the Confluent wire format, and the contender rewrites every ID
(scripts/bench/registries.py); `kmirror-1` on the same framed backlog is its baseline. A full
run includes it on 100B and small (plan.py).

The consume batch and timeout are the record path's `Tuning` (constructor arguments, not user
settings): those variants run kmirror through scripts/bench/kmirror_patched.py, which passes
them from KMIRROR_BENCH_CONSUME_* to every stream process.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from scripts.bench.contenders import Contender

PATCHED = "scripts.bench.kmirror_patched"
TRANSLATE = "kmirror-1-translate"


@dataclass(frozen=True)
class Experiment:
    engine: str = ""
    exactly_once: bool = False
    args: tuple[str, ...] = ()
    consumer: dict[str, str] = field(default_factory=dict)
    producer: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    module: str = "kmirror.cli.main"
    name: str = ""
    schema_id_mode: str = ""


# The tweaks below are the record path's (the engine measured before the batch path).
R = "record"
EXPERIMENTS: dict[str, Experiment] = {
    # The record path alone, the engine all contenders ran until session 4 (and where the
    # default engine sends what it cannot copy as batches).
    "record": Experiment(engine="record", name="kmirror-record-1"),
    "record-eos": Experiment(engine="record", exactly_once=True, name="kmirror-record-1-eos"),
    # The batch path alone, and the hybrid's adaptive choice named explicitly.
    "engine-batch": Experiment(engine="batch"),
    "engine-auto": Experiment(engine="auto"),
    # Producer: longer linger, bigger batches per request.
    "linger50": Experiment(R, producer={"linger.ms": "50"}),
    "linger0": Experiment(R, producer={"linger.ms": "0"}),
    # Consumer: more prefetched per partition, bigger fetches.
    "fetch4m": Experiment(
        R,
        consumer={
            "max.partition.fetch.bytes": "4194304",
            "fetch.max.bytes": "104857600",
            "queued.min.messages": "1000000",
        },
    ),
    # Engine tuning: records per consume() call.
    "batch1k": Experiment(R, env={"KMIRROR_BENCH_CONSUME_BATCH": "1000"}, module=PATCHED),
    "batch20k": Experiment(R, env={"KMIRROR_BENCH_CONSUME_BATCH": "20000"}, module=PATCHED),
    # The wait for a first record when nothing is buffered (0.2 s).
    "timeout50ms": Experiment(R, env={"KMIRROR_BENCH_CONSUME_TIMEOUT_S": "0.05"}, module=PATCHED),
    # Delivery reports for failed records only: no Python callback per acknowledged record.
    # The engine needs reports only for failures (flush() waits for all anyway); the latency
    # metric samples acknowledged records and would go quiet.
    "dronlyerr": Experiment(R, producer={"delivery.report.only.error": "true"}),
    # No stats callback (statistics.interval.ms=0): the JSON parse every 5 s.
    "nostats": Experiment(R, consumer={"statistics.interval.ms": "0"}),
    # The batch path (issue 12): BatchCopier in one process (scripts/bench/kmirror_batch.py).
    "batch": Experiment(module="scripts.bench.kmirror_batch", name="kmirror-batch"),
    # Schema IDs rewritten on the way (issue 23): the default engine, so the batch path's kernel.
    "translate": Experiment(schema_id_mode="translate", name=TRANSLATE),
}


def experiment_contenders(spec: str) -> list[Contender]:
    out: list[Contender] = []
    for item in spec.split(","):
        name, _, streams = item.partition(":")
        if name not in EXPERIMENTS:
            raise SystemExit(f"unknown experiment {name!r}; known: {', '.join(EXPERIMENTS)}")
        e = EXPERIMENTS[name]
        n = int(streams or 1)
        out.append(
            Contender(
                e.name or f"kmirror-{n}-{name}",
                "kmirror",
                n,
                consumer=e.consumer,
                producer=e.producer,
                env=e.env,
                module=e.module,
                variant="" if e.name else name,
                exactly_once=e.exactly_once,
                engine=e.engine,
                args=e.args,
                schema_id_mode=e.schema_id_mode,
            )
        )
    return out
