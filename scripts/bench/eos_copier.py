"""The cost of exactly-once on the batch path, copier alone: BatchCopier at least once
against BatchCopier with BatchExactlyOnce as its guarantee (a commit of every partition's
transaction every second) copying the same source topic, in this process, alternately. No
consumer group, no start-up in the window.

    PYTHONPATH=image python -m scripts.bench.eos_copier --records 2000000 \\
        --source 127.0.0.1:19092 --target 127.0.0.1:29092

Prints records/s and CPU µs per record of each run. Creates its topics and deletes them.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

from kmirror.config.model import ClusterConfig, MirrorConfig
from kmirror.mirror.batch.copier import BatchCopier
from kmirror.mirror.batch.fencing import Fenced
from kmirror.mirror.batch.guarantee import BatchExactlyOnce
from kmirror.progress.book import ProgressBook
from tests.kafkatools import create_topic, delete_topic, end_offsets, produce, unique

COMMIT_INTERVAL_S = 1.0


def copy(source: str, target: str, topic: str, partitions: int, eos: bool) -> tuple[float, float]:
    """Copy the topic to a new target topic; (seconds, CPU seconds) from the first step to the
    last acknowledgement (exactly-once: to the last commit)."""
    dst = unique("eos-bench-dst")
    create_topic(target, dst, partitions=partitions)
    config = MirrorConfig(
        source=ClusterConfig("source", source),
        target=ClusterConfig("target", target),
        group_id=unique("eos-bench"),
    )
    ends = end_offsets(source, topic)
    keys = [(topic, p) for p in range(partitions)]
    book = ProgressBook()
    txn = BatchExactlyOnce(config, Fenced(book))
    if eos:
        create_topic(target, config.progress_topic, partitions=1)
        copier = BatchCopier(config, book, guarantee=txn)
        txn.open(keys)
    else:
        copier = BatchCopier(config, book)
    copier.assign({k: (dst, 0) for k in keys})
    start, cpu = time.monotonic(), time.process_time()
    last = start
    try:
        while any(book[k].acked < ends[k[1]] for k in keys):
            copier.step(0.1)
            if eos and time.monotonic() - last > COMMIT_INTERVAL_S:
                assert copier.flush(30)
                txn.commit(book, keys, 30)
                last = time.monotonic()
        assert copier.flush(30)
        if eos:
            assert txn.commit(book, keys, 30) == {k: ends[k[1]] for k in keys}
        return time.monotonic() - start, time.process_time() - cpu
    finally:
        copier.close()
        delete_topic(target, dst, wait=False)
        if eos:
            delete_topic(target, config.progress_topic, wait=False)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m scripts.bench.eos_copier", description=__doc__)
    ap.add_argument("--records", type=int, default=2_000_000)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--source", default="127.0.0.1:19092")
    ap.add_argument("--target", default="127.0.0.1:29092")
    args = ap.parse_args(argv)
    topic = unique("eos-bench")
    create_topic(args.source, topic, partitions=args.partitions)
    try:
        rows = [
            {"key": b"k%d" % i, "value": b"v" * 100, "partition": i % args.partitions}
            for i in range(args.records)
        ]
        produce(args.source, topic, rows, **{"linger.ms": 50, "batch.size": 1_000_000})
        for _ in range(args.reps):
            for eos in (False, True):
                seconds, cpu = copy(args.source, args.target, topic, args.partitions, eos)
                print(
                    f"{'exactly-once' if eos else 'at-least-once'}: {args.records:,} records in "
                    f"{seconds:.2f} s = {args.records / seconds:,.0f} records/s, "
                    f"{cpu / args.records * 1e6:.2f} CPU µs/record",
                    flush=True,
                )
    finally:
        delete_topic(args.source, topic, wait=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
