"""Helpers for the disaster-recovery tests: an A->B mm2.properties, consumer groups that really
consume and commit, hand-written progress records, and Java's RemoteClusterUtils."""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

from kmirror.progress.book import PartitionBook
from kmirror.progress.codec import encode_record
from tests.kafkatools import LOG, Clusters, commit_offsets, create_topic, list_topics
from tests.mirrorproc import REPO_ROOT

Key = tuple[str, int]


def mm2_config(tmp: Path, clusters: Clusters, group: str, topics: str, **extra: str) -> list[str]:
    """`--mm2-config FILE` for the flow A->B (source -> target), checkpoints every second."""
    props = {
        "clusters": "A, B",
        "A.bootstrap.servers": clusters.source_bootstrap,
        "B.bootstrap.servers": clusters.target_bootstrap,
        "A->B.enabled": "true",
        "A->B.topics": topics,
        "A->B.consumer.group.id": group,
        "offset.flush.interval.ms": "500",
        "emit.checkpoints.interval.seconds": "1",
        "sync.group.offsets.interval.seconds": "1",
        "replication.factor": "1",
        **{k.replace("_", ".") if "." not in k else k: v for k, v in extra.items()},
    }
    path = tmp / f"mm2-{group}.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()), encoding="utf-8")
    return ["--mm2-config", str(path)]


def member(bootstrap: str, group: str, eof: bool = False) -> Consumer:
    """A consumer that joins `group` like an application does (read_committed)."""
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "enable.partition.eof": eof,
            "logger": LOG,
        }
    )


def consume_and_commit(
    bootstrap: str, topic: str, group: str, per_partition: int, partitions: int
) -> list[bytes]:
    """A real group member that processes `per_partition` records of every partition (one at a
    time, read_committed), commits what it processed and leaves — like an application stopped
    part-way. Returns the values it processed."""
    c = member(bootstrap, group)
    seen: list[bytes] = []
    done: dict[int, int] = {}  # partition -> records processed
    last: dict[int, int] = {}  # partition -> offset of the last processed record
    try:
        c.subscribe([topic])
        while len(done) < partitions or min(done.values()) < per_partition:
            msg = c.poll(30)
            assert msg is not None, f"group {group} processed {len(seen)} records of {topic}"
            p = int(msg.partition() or 0)
            if msg.error() is None and done.get(p, 0) < per_partition:
                seen.append(msg.value() or b"")
                done[p] = done.get(p, 0) + 1
                last[p] = int(msg.offset() or 0)
        commit_offsets(c, [TopicPartition(topic, p, o + 1) for p, o in last.items()])
    finally:
        c.close()
    return seen


def consume_rest(bootstrap: str, topic: str, group: str) -> list[bytes]:
    """The same group on another cluster: everything from its committed offsets to the end."""
    c = member(bootstrap, group, eof=True)
    seen: list[bytes] = []
    try:
        c.subscribe([topic])
        done: set[int] = set()
        assigned: set[int] = set()
        while not assigned or done < assigned:
            msg = c.poll(30)
            assert msg is not None, f"group {group} stalled on {topic} after {len(seen)}"
            assigned = {tp.partition for tp in c.assignment()}
            err = msg.error()
            if err is None:
                seen.append(msg.value() or b"")
            elif err.code() == err._PARTITION_EOF:
                done.add(int(msg.partition() or 0))
    finally:
        c.close()
    return seen


def write_progress(bootstrap: str, group_id: str, books: Mapping[Key, PartitionBook]) -> None:
    """Progress records as the mirror persists them (kmirror/progress/codec.py)."""
    topic = f"kmirror-progress.{group_id}.internal"
    if topic not in list_topics(bootstrap):
        create_topic(bootstrap, topic, 1, {"cleanup.policy": "compact"})
    p = Producer({"bootstrap.servers": bootstrap, "logger": LOG})
    for (t, part), book in books.items():
        key, value = encode_record(t, part, book)
        p.produce(topic, value, key)
    assert p.flush(30) == 0


def commit_group(bootstrap: str, group: str, offsets: Mapping[Key, int]) -> None:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "logger": LOG})
    try:
        commit_offsets(c, [TopicPartition(t, p, o) for (t, p), o in offsets.items()])
    finally:
        c.close()


JAVA = """
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.mirror.RemoteClusterUtils;

public class Translate {
    public static void main(String[] args) throws Exception {
        Map<String, Object> props = new HashMap<>();
        props.put("bootstrap.servers", args[0]);
        Map<TopicPartition, OffsetAndMetadata> offsets =
            RemoteClusterUtils.translateOffsets(props, args[1], args[2], Duration.ofSeconds(30));
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
            System.out.println(e.getKey().topic() + " " + e.getKey().partition() + " "
                + e.getValue().offset());
        }
    }
}
"""


HEARTBEATS = """
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.connect.mirror.Heartbeat;

public class Heartbeats {
    public static void main(String[] args) {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        TopicPartition tp = new TopicPartition(args[1], 0);
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(
                props, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            c.assign(List.of(tp));
            long end = c.endOffsets(List.of(tp)).get(tp);
            c.seek(tp, Math.max(0, end - 50));
            long pos = c.position(tp);
            while (pos < end) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofSeconds(5))) {
                    Heartbeat hb = Heartbeat.deserializeRecord(r);
                    System.out.println(hb.sourceClusterAlias() + " " + hb.targetClusterAlias()
                        + " " + hb.timestamp());
                }
                pos = c.position(tp);
            }
        }
    }
}
"""


_COMPILED: dict[str, tuple[Path, str]] = {}


def _java(name: str, *args: str) -> list[str]:
    """Run one of the Java classes above against Apache Kafka's MM2 jars; its stdout lines.
    Both classes are compiled together, once per test session (javac takes seconds)."""
    if not _COMPILED:
        jars = subprocess.run(
            [str(REPO_ROOT / "scripts" / "resolve-jars"), "--print-dir", "mm2"],
            capture_output=True, text=True, check=True,
        ).stdout.strip().splitlines()[-1]  # fmt: skip
        out = Path(tempfile.mkdtemp(prefix="kmirror-dr-java-"))
        sources = []
        for cls, text in (("Translate", JAVA), ("Heartbeats", HEARTBEATS)):
            sources.append(out / f"{cls}.java")
            sources[-1].write_text(text, encoding="utf-8")
        cp = f"{jars}/*"
        subprocess.run(["javac", "-cp", cp, "-d", str(out), *map(str, sources)], check=True,
                       timeout=180)  # fmt: skip
        _COMPILED["classes"] = (out, cp)
    out, cp = _COMPILED["classes"]
    proc = subprocess.run(
        ["java", "-cp", f"{out}:{cp}", name, *args],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    return proc.stdout.splitlines()


def java_heartbeats(bootstrap: str, topic: str) -> list[tuple[str, str, int]]:
    """The newest heartbeats of a topic as MM2's Heartbeat.deserializeRecord reads them."""
    lines = _java("Heartbeats", bootstrap, topic)
    return [(a, b, int(ts)) for a, b, ts in (line.split() for line in lines)]


def java_translate(bootstrap: str, alias: str, group: str) -> dict[Key, int]:
    """Apache Kafka's RemoteClusterUtils.translateOffsets, compiled and run here."""
    result = {}
    for line in _java("Translate", bootstrap, alias, group):
        topic, partition, offset = line.split()
        result[(topic, int(partition))] = int(offset)
    return result
