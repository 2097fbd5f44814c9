"""The `kmirror-batch` contender: the batch path (BatchCopier) in one process.

Takes `kmirror run`'s MirrorMaker 1 flags (as the harness passes them), copies every partition
of the whitelisted source topics from the source's log start to the same target partition
until SIGTERM. No consumer group and no commits: the benchmark measures the copy. The
benchmark's own contenders (kmirror-1, kmirror-2, ...) run the whole mirror.

    python -m scripts.bench.run --full --only kmirror-1 --experiments batch
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence

from confluent_kafka import Consumer, TopicPartition

from kmirror.app.lifeline import stop_on_signals
from kmirror.config.dialects.mm1 import load_mm1
from kmirror.mirror.batch.copier import BatchCopier
from kmirror.progress.book import ProgressBook


def _start_offsets(conf: dict[str, str], topics: list[str]) -> dict[tuple[str, int], int]:
    consumer = Consumer({**conf, "group.id": "kmirror-batch-bench"})
    try:
        md = consumer.list_topics(timeout=30)
        out = {}
        for topic in topics:
            for p in md.topics[topic].partitions:
                low, _ = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
                out[(topic, p)] = low
        return out
    finally:
        consumer.close()


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="kmirror_batch")
    ap.add_argument("command", choices=["run"])
    ap.add_argument("--consumer.config", dest="consumer", required=True)
    ap.add_argument("--producer.config", dest="producer", required=True)
    ap.add_argument("--whitelist", required=True)
    args, _ = ap.parse_known_args(argv)
    config = load_mm1(args.consumer, args.producer, whitelist=args.whitelist)
    stop = threading.Event()

    stop_on_signals(stop, signal.SIGTERM, signal.SIGINT)  # no lock in a signal handler
    source = config.admin_conf("source")
    consumer = Consumer({**source, "group.id": "kmirror-batch-bench"})
    try:
        topics = config.topics.select(set(consumer.list_topics(timeout=30).topics))
    finally:
        consumer.close()
    starts = _start_offsets(source, topics)
    copier = BatchCopier(config, ProgressBook())
    try:
        copier.assign({k: (config.target_topic(k[0]), off) for k, off in starts.items()})
        while not stop.is_set():
            copier.step(0.1)
        copier.flush(5)
    finally:
        copier.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
