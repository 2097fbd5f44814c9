"""kmirror variants for trying engine tweaks without editing the engine.

    python -m scripts.bench.run --full --only kmirror-1 --experiments linger50,batch20k

Client settings go through the MM1 --consumer.config / --producer.config files, exactly as a
user would set them. The consume batch and timeout are the engine's `Tuning` (constructor
arguments, not user settings): the variant runs kmirror through scripts/bench/kmirror_patched.py,
which passes them from KMIRROR_BENCH_CONSUME_* to every stream process.
"""

from __future__ import annotations

from scripts.bench.contenders import Contender

PATCHED = "scripts.bench.kmirror_patched"

EXPERIMENTS: dict[str, dict[str, object]] = {
    # Producer: longer linger, bigger batches per request.
    "linger50": {"producer": {"linger.ms": "50"}},
    "linger0": {"producer": {"linger.ms": "0"}},
    # Consumer: more prefetched per partition, bigger fetches.
    "fetch4m": {
        "consumer": {
            "max.partition.fetch.bytes": "4194304",
            "fetch.max.bytes": "104857600",
            "queued.min.messages": "1000000",
        }
    },
    # Engine tuning: records per consume() call.
    "batch1k": {"env": {"KMIRROR_BENCH_CONSUME_BATCH": "1000"}, "module": PATCHED},
    "batch20k": {"env": {"KMIRROR_BENCH_CONSUME_BATCH": "20000"}, "module": PATCHED},
    # consume() waits for a full batch or this timeout (0.2 s): at low rates, every record
    # waits up to the timeout.
    "timeout50ms": {"env": {"KMIRROR_BENCH_CONSUME_TIMEOUT_S": "0.05"}, "module": PATCHED},
    # Delivery reports for failed records only: no Python callback per acknowledged record.
    # The engine needs reports only for failures (flush() waits for all anyway); the latency
    # metric samples acknowledged records and would go quiet.
    "dronlyerr": {"producer": {"delivery.report.only.error": "true"}},
    # No stats callback (statistics.interval.ms=0): the JSON parse every 5 s.
    "nostats": {"consumer": {"statistics.interval.ms": "0"}},
    # The batch path (issue 12): BatchCopier in one process (scripts/bench/kmirror_batch.py).
    "batch": {"module": "scripts.bench.kmirror_batch", "name": "kmirror-batch"},
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
                str(e.get("name", f"kmirror-{n}-{name}")),
                "kmirror",
                n,
                consumer=dict(e.get("consumer", {})),  # type: ignore[call-overload]
                producer=dict(e.get("producer", {})),  # type: ignore[call-overload]
                env=dict(e.get("env", {})),  # type: ignore[call-overload]
                module=str(e.get("module", "kmirror.cli.main")),
                variant=name,
                # The tweaks are the record path's (the engine measured before the batch path).
                engine="record",
            )
        )
    return out
