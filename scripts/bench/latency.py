"""End-to-end latency at a fixed rate: a paced producer on the source, a consumer on the target.

Latency of a record = wall time when the target consumer received it minus the time the source
producer handed it to `produce()`, written into the record's value (microseconds; the
CreateTime the mirror keeps has only milliseconds). Both clocks are this machine's.

Where the time goes, per record (`breakdown` in the result):

- *source*: `produce()` until the source acknowledged it (the delivery report, served at once:
  the pacer waits in `poll()`), an upper bound of the source append;
- *mirror*: the source acknowledgement until the target appended it (the target topic uses
  LogAppendTime, so the reader sees the target broker's append time, in milliseconds): what
  the mirror adds, its fetch wait, batching and produce round trip included;
- *reader*: the target append until the reader had it: the harness's own share.

The whole path is warm before the clock starts: a few warm-up records (one per partition) go
through the paced producer, the mirror and the target consumer first. Without that, the first
few hundred milliseconds of the load waited for the new producer's connection and producer id
and for the new consumer's first fetch: at 2,000 records/s for 10 s that is more than 1 % of the
records, so every contender (kmirror and MirrorMaker 2 alike) showed the same p99 of 430-470 ms,
a figure of the harness, not of the mirror.
"""

from __future__ import annotations

import math
import struct
import threading
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import (
    TIMESTAMP_LOG_APPEND_TIME,
    Consumer,
    KafkaError,
    Message,
    Producer,
    TopicPartition,
)

from scripts.bench import kafkaio
from scripts.bench.loops import consumer_conf, payload

TICK_S = 0.005
WARMUP = b"warm-up"
# The value starts with the send time (ns since the epoch) and the record's number in the load.
STAMP = struct.Struct(">qI")
# The target topic of the latency phase: its append time is the mirror's end of the path.
TARGET_CONFIG = {"message.timestamp.type": "LogAppendTime"}
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

    Returns latency percentiles (and where the time went) and whether the target ended with
    exactly the source's records in every partition.
    """
    total = int(rate * seconds)
    trace = Trace(total)
    reader = Reader(target, topic, partitions, trace)
    failed = [0]
    producer = _producer(source, trace, failed)
    warm_total = max(partitions, int(rate * warm_up_s))
    failed[0] += _warm_up(producer, topic, partitions, reader, warm_total, rate, settle_timeout)

    def report(sent: int) -> None:
        if tick is not None:
            tick(f"steady load {sent:,}/{total:,} sent, {trace.count:,} arrived")

    padding = payload(max(size - STAMP.size, 0))

    def value(seq: int) -> bytes:
        return STAMP.pack(time.time_ns(), seq) + padding

    produce_s = _paced(producer, topic, partitions, value, total, rate, report)
    failed[0] += producer.flush(30)

    deadline = time.monotonic() + settle_timeout
    while trace.count < total and time.monotonic() < deadline:
        time.sleep(0.05)
    reader.close()

    src_end = kafkaio.end_offsets(source, topic, partitions)
    tgt_end = kafkaio.end_offsets(target, topic, partitions)
    # Under exactly-once the target's offsets also count transaction markers: what the
    # (read_committed) reader received is the check then.
    verified = (src_end == tgt_end or exactly_once) and (
        failed[0] == 0
        and reader.warmed == warm_total
        and trace.count == total
        and not reader.errors
    )
    out: dict[str, Any] = {
        "rate_rps": rate,
        "seconds": seconds,
        "produce_s": produce_s,
        "sent": total,
        "received": trace.count,
        "warm_up_records": reader.warmed,
        "send_errors": failed[0],
        "consume_errors": reader.errors[:5],
        "verified": verified,
        "source_end": src_end,
        "target_end": tgt_end,
    }
    latencies = trace.latencies()
    out.update(summarize(latencies))
    out["breakdown"] = trace.breakdown()
    sent_ms = trace.sent_ms()
    out["timeline_p50_ms"] = timeline(sent_ms, latencies)
    out["timeline_p99_ms"] = timeline(sent_ms, latencies, 99)
    out["p99_ms_by_partition"] = trace.p99_by_partition(partitions, latencies)
    return out


def _producer(source: str, trace: Trace, failed: list[int]) -> Producer:
    """The load's producer: linger 0, acknowledged by every replica, each acknowledgement
    timed into `trace`."""

    def on_delivery(err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            failed[0] += 1
        else:
            trace.acknowledged(msg.value() or b"", time.time_ns())

    return Producer(
        {
            "bootstrap.servers": source,
            "logger": kafkaio._QUIET,
            "linger.ms": 0,
            "acks": "all",
            "enable.idempotence": True,
            "on_delivery": on_delivery,
        }
    )


class Reader:
    """A consumer of the target topic (assign, from its current end, no group) in a thread of
    its own: counts the warm-up records, times the others into `trace`."""

    def __init__(self, target: str, topic: str, partitions: int, trace: Trace) -> None:
        start = kafkaio.end_offsets(target, topic, partitions)
        self._consumer = Consumer({**consumer_conf(target), "fetch.wait.max.ms": 100})
        self._consumer.assign([TopicPartition(topic, p, start[p]) for p in range(partitions)])
        self._trace = trace
        self.warmed = 0
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._receive, name="latency-reader", daemon=True)
        self._thread.start()

    def _receive(self) -> None:
        consumer, trace = self._consumer, self._trace
        while not self._stop.is_set():
            # What is buffered, else wait for one record: consume(n, timeout) returns early
            # only with n records, so a batch wait would stamp a record up to the timeout late.
            msgs = consumer.consume(1000, 0) or consumer.consume(1, 0.05)
            now_ns = time.time_ns()
            for m in msgs:
                if m.error() is not None:
                    self.errors.append(str(m.error()))
                    continue
                value = m.value() or b""
                if value == WARMUP:
                    self.warmed += 1
                    continue
                trace.received(value, m.timestamp(), now_ns)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._consumer.close()


class Trace:
    """Per record of the load: sent, acknowledged by the source, appended on the target,
    received by the reader (ns since the epoch; the append in whole ms)."""

    def __init__(self, total: int) -> None:
        self.sent = [0] * total
        self.acked = [0] * total
        self.appended = [0] * total
        self.recv = [0] * total
        self.count = 0

    def acknowledged(self, value: bytes, now_ns: int) -> None:
        if len(value) >= STAMP.size and value != WARMUP:
            _, seq = STAMP.unpack_from(value)
            self.acked[seq] = now_ns

    def received(self, value: bytes, timestamp: tuple[int, int], now_ns: int) -> None:
        sent_ns, seq = STAMP.unpack_from(value)
        if self.recv[seq]:
            return  # a duplicate: the count check below fails on the offsets
        self.sent[seq], self.recv[seq] = sent_ns, now_ns
        ts_type, ts = timestamp
        if ts_type == TIMESTAMP_LOG_APPEND_TIME:
            self.appended[seq] = ts * 1_000_000
        self.count += 1

    def _done(self) -> list[int]:
        return [i for i, r in enumerate(self.recv) if r]

    def latencies(self) -> list[float]:
        return [(self.recv[i] - self.sent[i]) / 1e6 for i in self._done()]

    def p99_by_partition(self, partitions: int, latencies: list[float]) -> list[float]:
        """p99 ms per partition (the load sends record i to partition i % partitions): with
        several streams, whether one stream's partitions carry the tail. `latencies` is
        latencies()' result, computed once by the caller."""
        by: list[list[float]] = [[] for _ in range(partitions)]
        for i, ms in zip(self._done(), latencies, strict=True):
            by[i % partitions].append(ms)
        return [round(percentile(sorted(v), 99), 1) for v in by]

    def sent_ms(self) -> list[int]:
        return [self.sent[i] // 1_000_000 for i in self._done()]

    def breakdown(self) -> dict[str, dict[str, float]]:
        """p50/p99 ms of each leg: source (send -> source ack), mirror (source ack -> target
        append), reader (target append -> received). Empty when the target topic does not
        use LogAppendTime."""
        done = [i for i in self._done() if self.acked[i] and self.appended[i]]
        if not done:
            return {}
        legs = {
            "source": [(self.acked[i] - self.sent[i]) / 1e6 for i in done],
            "mirror": [(self.appended[i] - self.acked[i]) / 1e6 for i in done],
            "reader": [(self.recv[i] - self.appended[i]) / 1e6 for i in done],
        }
        out = {}
        for name, values in legs.items():
            s = sorted(values)
            out[name] = {"p50_ms": percentile(s, 50), "p99_ms": percentile(s, 99)}
        return out


def _warm_up(
    producer: Producer,
    topic: str,
    partitions: int,
    reader: Reader,
    total: int,
    rate: int,
    timeout: float,
) -> int:
    """`total` WARMUP records at the load's rate through producer, mirror and reader before the
    clock starts (not counted): the first second's client start-ups otherwise set every
    contender's p99, and a mirror that adapts to the traffic (kmirror's engine moves a
    partition of tiny batches to the record path after 64 batches) is measured once adapted.
    Returns the records the source did not acknowledge."""
    _paced(producer, topic, partitions, lambda seq: WARMUP, total, rate, lambda sent: None)
    failed = producer.flush(30)
    deadline = time.monotonic() + timeout
    while reader.warmed < total and time.monotonic() < deadline:
        time.sleep(0.01)
    return int(failed)


def _paced(
    producer: Producer,
    topic: str,
    partitions: int,
    value: Callable[[int], bytes],
    total: int,
    rate: int,
    report: Callable[[int], None],
) -> float:
    """Produce `total` records at `rate` per second, round-robin over the partitions (record i
    gets `value(i)`); `report` gets the count sent about once a second. Between ticks it waits
    in `poll()`, so delivery reports are served (and timed) as they arrive. Returns the
    seconds it took."""
    sent = 0
    t0 = time.monotonic()
    next_report = t0 + 1
    while sent < total:
        due = min(total, int((time.monotonic() - t0) * rate) + 1)
        while sent < due:
            producer.produce(topic, value(sent), partition=sent % partitions)
            sent += 1
        now = time.monotonic()
        if now >= next_report:
            next_report = now + 1
            report(sent)
        tick_end = now + TICK_S
        while (left := tick_end - time.monotonic()) > 0:
            producer.poll(left)
    return time.monotonic() - t0


def timeline(created: list[int], latencies: list[float], q: float = 50) -> list[float]:
    """Latency percentile `q` per second of the load (by send time, ms): the median shows a
    backlog building up, the p99 whether a tail is spread over the run or one moment's."""
    if not created:
        return []
    t0 = min(created)
    buckets: dict[int, list[float]] = {}
    for ts, lat in zip(created, latencies, strict=True):
        buckets.setdefault((ts - t0) // 1000, []).append(lat)
    return [round(percentile(sorted(buckets[k]), q), 1) for k in sorted(buckets)]
