"""End-to-end latency at a fixed rate: a paced producer on the source, a consumer on the target.

Latency of a record = wall time when the target consumer received it minus its CreateTime
(set by the source producer when it produced the record; the mirror keeps it). Both clocks are
this machine's.

The whole path is warm before the clock starts: a few warm-up records (one per partition) go
through the paced producer, the mirror and the target consumer first. Without that, the first
few hundred milliseconds of the load waited for the new producer's connection and producer id
and for the new consumer's first fetch: at 2,000 records/s for 10 s that is more than 1 % of the
records, so every contender (kmirror and MirrorMaker 2 alike) showed the same p99 of 430-470 ms,
a figure of the harness, not of the mirror.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition

from scripts.bench import kafkaio
from scripts.bench.loops import consumer_conf, payload

TICK_S = 0.005
WARMUP = b"warm-up"
# Seconds of load at the measured rate before the clock starts (see _warm_up).
WARM_UP_S = 2.0


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of an ascending list."""
    if not sorted_values:
        return float("nan")
    k = max(0, min(len(sorted_values) - 1, math.ceil(q / 100 * len(sorted_values)) - 1))
    return sorted_values[k]


def summarize(latencies_ms: list[float]) -> dict[str, float]:
    s = sorted(latencies_ms)
    return {
        "count": len(s),
        "p50_ms": percentile(s, 50),
        "p90_ms": percentile(s, 90),
        "p99_ms": percentile(s, 99),
        "p999_ms": percentile(s, 99.9),
        "max_ms": s[-1] if s else float("nan"),
        "mean_ms": sum(s) / len(s) if s else float("nan"),
    }


def send_sentinels(source: str, topic: str, partitions: int) -> None:
    """One record per partition: the harness waits for them on the target before the load."""
    p = Producer({"bootstrap.servers": source, "logger": kafkaio._QUIET})
    for i in range(partitions):
        p.produce(topic, b"sentinel", partition=i)
    if p.flush(30):
        raise RuntimeError(f"sentinels to {topic} not acknowledged")


def steady_load(
    source: str,
    target: str,
    topic: str,
    partitions: int,
    rate: int,
    seconds: float,
    size: int,
    tick: Callable[[str], None] | None = None,
    settle_timeout: float = 60.0,
    exactly_once: bool = False,
    warm_up_s: float = WARM_UP_S,
) -> dict[str, Any]:
    """Produce rate records/s for seconds to topic on source; measure their arrival on target.

    Returns latency percentiles and whether the target ended with exactly the source's
    records in every partition.
    """
    start = kafkaio.end_offsets(target, topic, partitions)
    consumer = Consumer({**consumer_conf(target), "fetch.wait.max.ms": 100})
    consumer.assign([TopicPartition(topic, p, start[p]) for p in range(partitions)])
    latencies: list[float] = []
    created: list[int] = []
    stop = threading.Event()
    errors: list[str] = []
    warmed = [0]

    def receive() -> None:
        while not stop.is_set():
            msgs = consumer.consume(1000, 0.05)
            now_ms = time.time() * 1000.0
            for m in msgs:
                if m.error() is not None:
                    errors.append(str(m.error()))
                    continue
                if m.value() == WARMUP:
                    warmed[0] += 1
                    continue
                ts = m.timestamp()[1]
                latencies.append(now_ms - ts)
                created.append(ts)

    reader = threading.Thread(target=receive, name="latency-reader", daemon=True)
    reader.start()

    failed = [0]

    def on_delivery(err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            failed[0] += 1

    producer = Producer(
        {
            "bootstrap.servers": source,
            "logger": kafkaio._QUIET,
            "linger.ms": 0,
            "acks": "all",
            "enable.idempotence": True,
            "on_delivery": on_delivery,
        }
    )
    warm_total = max(partitions, int(rate * warm_up_s))
    failed[0] += _warm_up(producer, topic, partitions, warmed, warm_total, rate, settle_timeout)
    total = int(rate * seconds)

    def report(sent: int) -> None:
        if tick is not None:
            tick(f"steady load {sent:,}/{total:,} sent, {len(latencies):,} arrived")

    produce_s = _paced(producer, topic, partitions, payload(size), total, rate, report)
    failed[0] += producer.flush(30)

    deadline = time.monotonic() + settle_timeout
    while len(latencies) < total and time.monotonic() < deadline:
        time.sleep(0.05)
    stop.set()
    reader.join(5)
    consumer.close()

    src_end = kafkaio.end_offsets(source, topic, partitions)
    tgt_end = kafkaio.end_offsets(target, topic, partitions)
    # Under exactly-once the target's offsets also count transaction markers: what the
    # (read_committed) reader received is the check then.
    verified = (src_end == tgt_end or exactly_once) and (
        failed[0] == 0 and warmed[0] == warm_total and len(latencies) == total and not errors
    )
    out: dict[str, Any] = {
        "rate_rps": rate,
        "seconds": seconds,
        "produce_s": produce_s,
        "sent": total,
        "received": len(latencies),
        "warm_up_records": warmed[0],
        "send_errors": failed[0],
        "consume_errors": errors[:5],
        "verified": verified,
        "source_end": src_end,
        "target_end": tgt_end,
    }
    out.update(summarize(latencies))
    out["timeline_p50_ms"] = timeline(created, latencies)
    return out


def _warm_up(
    producer: Producer,
    topic: str,
    partitions: int,
    warmed: list[int],
    total: int,
    rate: int,
    timeout: float,
) -> int:
    """`total` WARMUP records at the load's rate through producer, mirror and reader before the
    clock starts (not counted): the first second's client start-ups otherwise set every
    contender's p99, and a mirror that adapts to the traffic (kmirror's engine moves a
    partition of tiny batches to the record path after 64 batches) is measured once adapted.
    Returns the records the source did not acknowledge."""
    _paced(producer, topic, partitions, WARMUP, total, rate, lambda sent: None)
    failed = producer.flush(30)
    deadline = time.monotonic() + timeout
    while warmed[0] < total and time.monotonic() < deadline:
        time.sleep(0.01)
    return int(failed)


def _paced(
    producer: Producer,
    topic: str,
    partitions: int,
    value: bytes,
    total: int,
    rate: int,
    report: Callable[[int], None],
) -> float:
    """Produce `total` records at `rate` per second, round-robin over the partitions; `report`
    gets the count sent about once a second. Returns the seconds it took."""
    sent = 0
    t0 = time.monotonic()
    next_report = t0 + 1
    while sent < total:
        due = min(total, int((time.monotonic() - t0) * rate) + 1)
        while sent < due:
            producer.produce(topic, value, partition=sent % partitions)
            sent += 1
        producer.poll(0)
        now = time.monotonic()
        if now >= next_report:
            next_report = now + 1
            report(sent)
        time.sleep(TICK_S)
    return time.monotonic() - t0


def timeline(created: list[int], latencies: list[float]) -> list[float]:
    """Median latency per second of the load (by CreateTime): shows a backlog building up."""
    if not created:
        return []
    t0 = min(created)
    buckets: dict[int, list[float]] = {}
    for ts, lat in zip(created, latencies, strict=True):
        buckets.setdefault((ts - t0) // 1000, []).append(lat)
    return [round(percentile(sorted(buckets[k]), 50), 1) for k in sorted(buckets)]
