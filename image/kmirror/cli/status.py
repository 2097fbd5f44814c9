"""`kmirror status`: per source partition, how far the mirror is. Reads only, joins no group.

Columns: the source's end offset; *copied*, the source offset up to which the target
acknowledged every record (from the mirror's progress record on the target, when it keeps one);
*committed*, the mirror group's committed source offset (what a restart resumes from); the
target partition's end offset; *lag*, source end minus copied (or committed when no progress
record exists), i.e. records not yet on the target.

Committed offsets are read with a consumer that never subscribes (`Consumer.committed`), not
with `AdminClient.list_consumer_group_offsets`, which crashes the process in confluent-kafka 2.16.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec  # type: ignore[attr-defined]

from kmirror.cli.check import plan
from kmirror.config.dialects.loader import load_config
from kmirror.config.model import MirrorConfig
from kmirror.config.secret import unseal
from kmirror.errors import ClusterError
from kmirror.mirror.progress import Key, decode_record


@dataclass(frozen=True)
class Row:
    topic: str
    partition: int
    target_topic: str
    source_start: int
    source_end: int
    copied: int | None
    committed: int | None
    target_end: int | None
    lag: int


def _offsets(admin: AdminClient, tps: list[Key], spec: Any, side: str) -> dict[Key, int]:
    if not tps:
        return {}
    asked = {TopicPartition(t, p): spec for t, p in tps}
    out: dict[Key, int] = {}
    for tp, fut in admin.list_offsets(asked, request_timeout=30).items():
        try:
            out[(tp.topic, tp.partition)] = int(fut.result().offset)
        except KafkaException as exc:
            raise ClusterError(
                f"could not read {side} offsets of {tp.topic}[{tp.partition}]: {exc.args[0]}"
            ) from exc
    return out


def _committed(config: MirrorConfig, tps: list[Key]) -> dict[Key, int]:
    consumer = Consumer(
        {**config.consumer_conf(), "logger": logging.getLogger("kmirror.librdkafka")}
    )
    try:
        got = consumer.committed([TopicPartition(t, p) for t, p in tps], timeout=30)
    except KafkaException as exc:
        raise ClusterError(
            f"could not read the committed offsets of group '{config.group_id}': {exc.args[0]}"
        ) from exc
    finally:
        consumer.close()
    return {(tp.topic, tp.partition): tp.offset for tp in got if tp.offset >= 0}


def read_progress(config: MirrorConfig, admin: AdminClient, timeout: float) -> dict[Key, int]:
    """Acknowledged source position per partition from the progress topic (latest record per
    key wins; a tombstone forgets the partition). Empty when there is no progress topic."""
    topic = config.progress_topic
    # All topics, not list_topics(topic): a request naming the topic would auto-create it on a
    # broker with auto.create.topics.enable=true, and status writes nothing.
    md = admin.list_topics(timeout=timeout)
    meta = md.topics.get(topic)
    if meta is None or meta.error is not None:
        return {}
    parts = [(topic, p) for p in meta.partitions]
    starts = _offsets(admin, parts, OffsetSpec.earliest(), "target")  # type: ignore[no-untyped-call]
    ends = _offsets(admin, parts, OffsetSpec.latest(), "target")  # type: ignore[no-untyped-call]
    todo = {k: e for k, e in ends.items() if e > starts[k]}
    acked: dict[Key, int] = {}
    if not todo:
        return acked
    conf = {
        **unseal(config.target.client_conf("consumer")),
        "group.id": f"{config.group_id}.status",  # required by the client; assign() joins none
        "enable.auto.commit": False,
        "enable.partition.eof": True,
        "isolation.level": "read_committed",
        "logger": logging.getLogger("kmirror.librdkafka"),
    }
    consumer = Consumer(conf)
    try:
        consumer.assign([TopicPartition(t, p, starts[(t, p)]) for t, p in todo])
        deadline = time.monotonic() + timeout
        while todo:
            if time.monotonic() > deadline:
                raise ClusterError(f"could not read the progress topic {topic} within {timeout}s")
            for msg in consumer.consume(1000, 0.5):
                key = (topic, int(msg.partition() or 0))
                err = msg.error()
                if err is not None and err.code() == KafkaError._PARTITION_EOF:
                    # The end, also when the last offsets are transaction markers (not read).
                    todo.pop(key, None)
                    continue
                if err is not None:
                    raise ClusterError(f"reading the progress topic {topic}: {err}")
                if int(msg.offset() or 0) + 1 >= todo.get(key, 0):
                    todo.pop(key, None)
                src_topic, partition, book = decode_record(msg.key() or b"", msg.value())
                if book is None:
                    acked.pop((src_topic, partition), None)
                else:
                    acked[(src_topic, partition)] = book.acked
    finally:
        consumer.close()
    return acked


def status_rows(config: MirrorConfig, timeout: float) -> list[Row]:
    topics = plan(config, timeout)  # bounded connection check of both clusters
    source = AdminClient(dict[str, Any](config.admin_conf("source")))
    target = AdminClient(dict[str, Any](config.admin_conf("target")))
    tps = [(r["source"], p) for r in topics for p in range(r["partitions"])]
    names = {r["source"]: r["target"] for r in topics}
    starts = _offsets(source, tps, OffsetSpec.earliest(), "source")  # type: ignore[no-untyped-call]
    ends = _offsets(source, tps, OffsetSpec.latest(), "source")  # type: ignore[no-untyped-call]
    committed = _committed(config, tps)
    copied = read_progress(config, target, timeout)
    # Target ends per partition only mean something when partition numbers are kept.
    have = {r["target"]: r["target_partitions"] or 0 for r in topics}
    same = config.keeps_partitions
    tgt = [(names[t], p) for t, p in tps if same and p < have[names[t]]]
    target_ends = _offsets(target, tgt, OffsetSpec.latest(), "target")  # type: ignore[no-untyped-call]
    rows = []
    for t, p in tps:
        done = copied.get((t, p), committed.get((t, p), starts[(t, p)]))
        rows.append(
            Row(
                topic=t,
                partition=p,
                target_topic=names[t],
                source_start=starts[(t, p)],
                source_end=ends[(t, p)],
                copied=copied.get((t, p)),
                committed=committed.get((t, p)),
                target_end=target_ends.get((names[t], p)),
                lag=max(ends[(t, p)] - max(done, starts[(t, p)]), 0),
            )
        )
    return rows


def table(rows: list[Row]) -> str:
    head = ("topic", "partition", "source end", "copied", "committed", "target end", "lag")
    body = [
        (
            r.topic,
            str(r.partition),
            str(r.source_end),
            *("-" if v is None else str(v) for v in (r.copied, r.committed, r.target_end)),
            str(r.lag),
        )
        for r in rows
    ]
    widths = [max(len(c) for c in col) for col in zip(head, *body, strict=True)]
    lines = []
    for cells in (head, *body):
        first, *rest = zip(cells, widths, strict=True)
        line = "  ".join([first[0].ljust(first[1]), *(c.rjust(w) for c, w in rest)])
        lines.append(line.rstrip())
    return "\n".join(lines)


def status(args: argparse.Namespace) -> int:
    config = load_config(args)
    for note in config.notes:
        print(f"warning: {note}", file=sys.stderr)
    rows = status_rows(config, args.timeout)
    if args.json:
        doc = {
            "group": config.group_id,
            "progress_topic": config.progress_topic,
            "partitions": [asdict(r) for r in rows],
            "lag": sum(r.lag for r in rows),
        }
        print(json.dumps(doc, indent=2))
    else:
        print(table(rows))
        print(f"total lag {sum(r.lag for r in rows)} record(s), group {config.group_id}")
    return 0
