"""Minimal confluent-kafka loops: the Python client's own ceilings, and the preloader.

Run as a subprocess so the harness measures them like any contender (own process, own CPU):

    python -m scripts.bench.loops produce BOOTSTRAP TOPIC RECORDS SIZE [--partitions 8]
    python -m scripts.bench.loops consume BOOTSTRAP TOPIC RECORDS

Both print one JSON object on stdout. Both use kmirror's own client defaults
(PRODUCER_DEFAULTS + PRODUCER_FORCED, CONSUMER_DEFAULTS + CONSUMER_FORCED), so the ceilings show
what the same client settings can do without the mirror around them.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
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


def produce(
    bootstrap: str,
    topic: str,
    records: int,
    size: int,
    partitions: int,
    settings: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """records values of size bytes, no key, partition i % partitions; flushed and acknowledged.
    settings: producer overrides (the shape of the source's batches: linger, codec)."""
    failed = [0]

    def on_delivery(err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            failed[0] += 1

    producer = Producer(
        {**producer_conf(bootstrap), **(settings or {}), "on_delivery": on_delivery}
    )
    value = payload(size)
    produce_ = producer.produce
    poll = producer.poll
    t0 = time.monotonic()
    for i in range(records):
        while True:
            try:
                produce_(topic, value, partition=i % partitions)
                break
            except BufferError:
                poll(0.05)
        if not i % POLL_EVERY:
            poll(0)
    remaining = producer.flush(120)
    seconds = time.monotonic() - t0
    return {
        "records": records,
        "bytes": records * size,
        "seconds": seconds,
        "rate_rps": records / seconds,
        "rate_mbps": records * size / seconds / 1e6,
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
            for m in consumer.consume(CONSUME_BATCH, 0.2):
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


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m scripts.bench.loops")
    sub = p.add_subparsers(dest="cmd", required=True)
    pp = sub.add_parser("produce")
    pp.add_argument("bootstrap")
    pp.add_argument("topic")
    pp.add_argument("records", type=int)
    pp.add_argument("size", type=int)
    pp.add_argument("--partitions", type=int, default=8)
    pp.add_argument("--set", action="append", default=[], help="producer setting KEY=VALUE")
    cp = sub.add_parser("consume")
    cp.add_argument("bootstrap")
    cp.add_argument("topic")
    cp.add_argument("records", type=int)
    args = p.parse_args(argv)
    if args.cmd == "produce":
        settings = dict(kv.split("=", 1) for kv in args.set)
        out = produce(
            args.bootstrap, args.topic, args.records, args.size, args.partitions, settings
        )
    else:
        out = consume(args.bootstrap, args.topic, args.records)
    print(json.dumps(out))
    return 0 if out["errors"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
