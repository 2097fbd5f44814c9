"""Minimal confluent-kafka loops: the Python client's own ceilings, the preloader and the
sustained phase's paced load.

Run as a subprocess so the harness measures them like any contender (own process, own CPU):

    python -m scripts.bench.loops produce BOOTSTRAP TOPIC RECORDS SIZE [--partitions 8]
    python -m scripts.bench.loops paced BOOTSTRAP TOPIC RATE SECONDS SIZE [--partitions 8]
    python -m scripts.bench.loops consume BOOTSTRAP TOPIC RECORDS

`produce` and `paced` take the record shape: `--max-size` (sizes log-uniform from SIZE),
`--keys` (keyed records, the partitioner places them), `--schema-id` (values in the Confluent
wire format) and `--set KEY=VALUE` producer settings.
Each prints one JSON object on stdout. They use kmirror's own client defaults
(PRODUCER_DEFAULTS + PRODUCER_FORCED, CONSUMER_DEFAULTS + CONSUMER_FORCED), so the ceilings show
what the same client settings can do without the mirror around them.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import random
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    Message,
    Producer,
    TopicPartition,
)

from kmirror.config.clients import (
    CONSUMER_DEFAULTS,
    CONSUMER_FORCED,
    PRODUCER_DEFAULTS,
    PRODUCER_FORCED,
)
from kmirror.mirror.stream import Tuning
from scripts.bench import wire

CONSUME_BATCH = Tuning().consume_batch  # the same batch kmirror's stream uses
POLL_EVERY = 5000

_QUIET = logging.getLogger("bench.librdkafka")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False


def producer_conf(bootstrap: str) -> dict[str, Any]:
    conf: dict[str, Any] = {**PRODUCER_DEFAULTS, **PRODUCER_FORCED}
    conf.pop("statistics.interval.ms", None)
    conf.update({"bootstrap.servers": bootstrap, "logger": _QUIET})
    return conf


def consumer_conf(bootstrap: str) -> dict[str, Any]:
    conf: dict[str, Any] = {**CONSUMER_DEFAULTS, **CONSUMER_FORCED}
    conf.pop("statistics.interval.ms", None)
    conf.update(
        {
            "bootstrap.servers": bootstrap,
            # Never used: assign() joins no group and nothing is committed.
            "group.id": f"bench-read-{uuid.uuid4().hex[:8]}",
            "logger": _QUIET,
        }
    )
    return conf


def payload(size: int) -> bytes:
    """Incompressible bytes (compression is off everywhere anyway)."""
    return os.urandom(size)


VALUE_POOL = 4096  # distinct values of a mixed-size shape (drawn once, reused)
KEY_STRIDE = 7919  # a prime: record i gets key (i * stride) mod keys, every key in turn


WORDS = b"alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima".split()


def text_value(rng: random.Random, size: int) -> bytes:
    """A log-line-like value: a few numbers and words from a small vocabulary, compressible
    about as much as real JSON events (lz4: about half the size)."""
    out = b'{"id":%d,"user":"u%05d","ts":%d,"tags":"' % (
        rng.getrandbits(40),
        rng.randrange(100_000),
        1_700_000_000_000 + rng.getrandbits(30),
    )
    while len(out) < size:
        out += rng.choice(WORDS) + b" "
    return out[: size - 2] + b'"}'


class Records:
    """Record i's key, value and partition: a fixed size and no key (partition i mod n), or
    sizes drawn log-uniformly from size..max_size and keys the partitioner places. Values are
    random bytes (one value for a fixed size: compression is off), or, with `text`, a pool of
    distinct compressible values. With `schema_id`, every value is framed in the Confluent wire
    format with that ID (scripts/bench/wire.py), at the same size."""

    def __init__(
        self,
        size: int,
        max_size: int,
        keys: int,
        partitions: int,
        text: bool = False,
        schema_id: int | None = None,
    ) -> None:
        rng = random.Random(size * 31 + max_size)
        if text:
            self.values = [text_value(rng, size) for _ in range(VALUE_POOL)]
        elif max_size > size:
            lo, hi = math.log(size), math.log(max_size)
            sizes = [round(math.exp(rng.uniform(lo, hi))) for _ in range(VALUE_POOL)]
            blob = payload(max_size)
            # One random blob, windows of it: values differ without drawing MBs of randomness.
            self.values = [blob[: n - 8] + rng.randbytes(8) for n in sizes]
        else:
            self.values = [payload(size)]
        if schema_id is not None:
            self.values = [wire.frame(schema_id, v) for v in self.values]
        self.keys = [b"key-%08d" % k for k in range(keys)]
        self.partitions = partitions

    def kwargs(self, i: int) -> dict[str, Any]:
        values = self.values
        value = values[i % len(values)]
        if self.keys:
            return {"value": value, "key": self.keys[i * KEY_STRIDE % len(self.keys)]}
        return {"value": value, "partition": i % self.partitions}


def _producer(bootstrap: str, settings: Mapping[str, str] | None, failed: list[int]) -> Producer:
    def on_delivery(err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            failed[0] += 1

    return Producer({**producer_conf(bootstrap), **(settings or {}), "on_delivery": on_delivery})


def produce(
    bootstrap: str,
    topic: str,
    records: int,
    shape: Records,
    settings: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """`records` records of `shape`, as fast as the producer takes them; flushed and
    acknowledged. settings: producer overrides (the shape of the source's batches: linger,
    codec)."""
    failed = [0]
    producer = _producer(bootstrap, settings, failed)
    produce_ = producer.produce
    poll = producer.poll
    kwargs = shape.kwargs
    nbytes = 0
    t0 = time.monotonic()
    for i in range(records):
        kw = kwargs(i)
        nbytes += len(kw["value"])
        while True:
            try:
                produce_(topic, **kw)
                break
            except BufferError:
                poll(0.05)
        if not i % POLL_EVERY:
            poll(0)
    remaining = producer.flush(120)
    seconds = time.monotonic() - t0
    return {
        "records": records,
        "bytes": nbytes,
        "seconds": seconds,
        "rate_rps": records / seconds,
        "rate_mbps": nbytes / seconds / 1e6,
        "errors": failed[0] + remaining,
    }


PACE_TICK_S = 0.005


def paced(
    bootstrap: str,
    topic: str,
    rate: float,
    seconds: float,
    shape: Records,
    settings: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """`rate` records/s of `shape` for `seconds`, sent every 5 ms as they fall due. A producer
    that cannot keep up falls behind: `rate_rps` (what it achieved) says so."""
    failed = [0]
    producer = _producer(bootstrap, settings, failed)
    total = int(rate * seconds)
    kwargs = shape.kwargs
    sent = nbytes = 0
    t0 = time.monotonic()
    while sent < total:
        due = min(total, int((time.monotonic() - t0) * rate) + 1)
        while sent < due:
            kw = kwargs(sent)
            try:
                producer.produce(topic, **kw)
            except BufferError:
                producer.poll(0.01)
                continue
            nbytes += len(kw["value"])
            sent += 1
        producer.poll(PACE_TICK_S)
    send_s = time.monotonic() - t0
    remaining = producer.flush(60)
    return {
        "records": sent,
        "bytes": nbytes,
        "seconds": send_s,
        "rate_rps": sent / send_s,
        "errors": failed[0] + remaining,
    }


def consume(bootstrap: str, topic: str, records: int) -> dict[str, Any]:
    """Read records from the beginning of every partition of topic (assign, no group)."""
    consumer = Consumer(consumer_conf(bootstrap))
    try:
        md = consumer.list_topics(topic, timeout=30)
        parts = sorted(md.topics[topic].partitions)
        t0 = time.monotonic()
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])
        count = nbytes = errors = 0
        deadline = t0 + 600
        while count < records and time.monotonic() < deadline:
            # Never past `records`: a batch crossing it would count records the run was not
            # asked to read (and fail its check, records == asked).
            for m in consumer.consume(min(CONSUME_BATCH, records - count), 0.2):
                if m.error() is not None:
                    errors += 1
                    continue
                count += 1
                v = m.value()
                nbytes += len(v) if v else 0
        seconds = time.monotonic() - t0
    finally:
        consumer.close()
    return {
        "records": count,
        "bytes": nbytes,
        "seconds": seconds,
        "rate_rps": count / seconds,
        "rate_mbps": nbytes / seconds / 1e6,
        "errors": errors + (records - count),
    }


def _shape_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("size", type=int)
    p.add_argument("--max-size", type=int, default=0, help="sizes log-uniform from SIZE to this")
    p.add_argument("--keys", type=int, default=0, help="keyed records over this many keys")
    p.add_argument("--partitions", type=int, default=8, help="unkeyed: record i to i mod this")
    p.add_argument("--set", action="append", default=[], help="producer setting KEY=VALUE")
    p.add_argument("--text", action="store_true", help="compressible values (lz4 workload)")
    p.add_argument("--schema-id", type=int, help="values in the wire format with this schema ID")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m scripts.bench.loops")
    sub = p.add_subparsers(dest="cmd", required=True)
    pp = sub.add_parser("produce")
    pp.add_argument("bootstrap")
    pp.add_argument("topic")
    pp.add_argument("records", type=int)
    _shape_args(pp)
    pc = sub.add_parser("paced")
    pc.add_argument("bootstrap")
    pc.add_argument("topic")
    pc.add_argument("rate", type=float)
    pc.add_argument("seconds", type=float)
    _shape_args(pc)
    cp = sub.add_parser("consume")
    cp.add_argument("bootstrap")
    cp.add_argument("topic")
    cp.add_argument("records", type=int)
    args = p.parse_args(argv)
    if args.cmd == "consume":
        out = consume(args.bootstrap, args.topic, args.records)
    else:
        settings = dict(kv.split("=", 1) for kv in args.set)
        shape = Records(
            args.size, args.max_size, args.keys, args.partitions, args.text, args.schema_id
        )
        if args.cmd == "produce":
            out = produce(args.bootstrap, args.topic, args.records, shape, settings)
        else:
            out = paced(args.bootstrap, args.topic, args.rate, args.seconds, shape, settings)
    print(json.dumps(out))
    return 0 if out["errors"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
