"""The shape of a topic's record batches on the source: how many records each batch holds.

What the mirror meets depends on it (the batch path copies batches as they are; a producer
re-batches), and confluent-kafka never shows batches, so this reads them with kafka-python:
raw Fetch responses (v12), split into batches by kafka-python's `MemoryRecords`. It reads
`SAMPLE_BYTES` (at least one batch) from the start, the middle and the last tenth of every
partition.

    python -m scripts.bench.batchshape BOOTSTRAP TOPIC PARTITIONS

The bench clusters have one broker, the leader of every partition: requests go to it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

from kafka.net.manager import KafkaConnectionManager
from kafka.net.selector import NetworkSelector
from kafka.protocol.consumer.fetch import FetchRequest
from kafka.record.memory_records import MemoryRecords

SAMPLE_BYTES = 512 * 1024
TIMEOUT_S = 30.0


class _Source:
    def __init__(self, bootstrap: str) -> None:
        self._net = NetworkSelector()
        self._manager = KafkaConnectionManager(self._net, bootstrap_servers=[bootstrap])
        self._manager.bootstrap(timeout_ms=int(TIMEOUT_S * 1000))

    def fetch(self, topic: str, partition: int, offset: int) -> tuple[bytes, int]:
        """(the raw batches from `offset`, at most SAMPLE_BYTES plus one batch; the high
        watermark)."""
        part = FetchRequest.FetchTopic.FetchPartition(
            partition=partition,
            current_leader_epoch=-1,
            fetch_offset=offset,
            log_start_offset=-1,
            partition_max_bytes=SAMPLE_BYTES,
        )
        request = FetchRequest(
            replica_id=-1,
            max_wait_ms=0,
            min_bytes=0,
            max_bytes=SAMPLE_BYTES,
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            topics=[FetchRequest.FetchTopic(topic=topic, partitions=[part])],
            forgotten_topics_data=[],
            rack_id="",
            version=12,
        )
        future = self._manager.send(request, node_id=self._manager.least_loaded_node())
        deadline = time.monotonic() + TIMEOUT_S
        while not future.is_done and time.monotonic() < deadline:
            self._net.poll(timeout_ms=200, future=future)
        if not future.succeeded():
            raise RuntimeError(f"fetch {topic}[{partition}]@{offset}: {future.exception}")
        answer = future.value.responses[0].partitions[0]
        if answer.error_code:
            raise RuntimeError(f"fetch {topic}[{partition}]@{offset}: error {answer.error_code}")
        return bytes(answer.records or b""), int(answer.high_watermark)

    def close(self) -> None:
        self._manager.close()


def sample(bootstrap: str, topic: str, partitions: int) -> dict[str, Any]:
    """Records per batch over the sampled batches of every partition."""
    source = _Source(bootstrap)
    counts: list[int] = []
    sizes: list[int] = []
    codecs: set[int] = set()
    try:
        for p in range(partitions):
            seen: set[int] = set()
            _, high = source.fetch(topic, p, 0)
            for start in (0, high // 2, high - high // 10):
                offset, read = start, 0
                while read < SAMPLE_BYTES and offset < high:
                    data, high = source.fetch(topic, p, offset)
                    batches = list(MemoryRecords(data))
                    if not batches:
                        break
                    read += len(data)
                    offset = batches[-1].next_offset
                    for batch in batches:
                        if batch.base_offset in seen or batch.is_control_batch:
                            continue
                        seen.add(batch.base_offset)
                        counts.append(batch.records_count)
                        sizes.append(batch.size_in_bytes)
                        codecs.add(batch.compression_type)
    finally:
        source.close()
    return summarize(counts, sizes, codecs)


def summarize(counts: list[int], sizes: list[int], codecs: set[int]) -> dict[str, Any]:
    if not counts:
        return {"batches": 0}
    ordered = sorted(counts)

    def pct(q: float) -> int:
        return ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))]

    total = sum(counts)
    return {
        "batches": len(counts),
        "records": total,
        "records_per_batch": {
            "mean": round(total / len(counts), 2),
            # The batch an average record sits in (big batches weigh more).
            "record_weighted_mean": round(sum(c * c for c in counts) / total, 2),
            "min": ordered[0],
            "p10": pct(10),
            "p50": pct(50),
            "p90": pct(90),
            "max": ordered[-1],
            "share_1_to_50": round(sum(1 for c in counts if c <= 50) / len(counts), 3),
        },
        "bytes_per_batch_mean": round(statistics.fmean(sizes)),
        "codecs": sorted(codecs),
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m scripts.bench.batchshape", description=__doc__)
    ap.add_argument("bootstrap")
    ap.add_argument("topic")
    ap.add_argument("partitions", type=int)
    args = ap.parse_args(argv)
    print(json.dumps(sample(args.bootstrap, args.topic, args.partitions), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
