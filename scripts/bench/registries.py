"""The schema registries of a run that measures schema-ID translation (issue 23).

When a contender mirrors schemas (`schema_id_mode`, the `translate` experiment), the run starts
two Apicurio registries of its own beside its clusters (scripts/registrylocal.py; each on its
cluster's port + REGISTRY_PORT_OFFSET, and the next port for Quarkus' management), registers
SCHEMA (scripts/bench/wire.py) under `<topic>-value` in the source registry for every workload
such a contender copies, and the loaders frame those workloads' values with its ID. Every
contender copies the same framed backlog: kmirror-1 without registries is the translation's
baseline. The target registry first gets DECOYS schemas, so the target assigns another ID than
the source did and a translated record differs from its source in those 4 bytes.

After each drain of a framed workload, `check` reads a sample of the copy (the first and last
SAMPLE records of every partition) and the source records at the same offsets: each target
value must carry the ID it should (the target registry's with translation, the source's
without) and the source's payload byte for byte, and with translation the first sampled record
must deserialize with the target registry to what the source one gives with the source registry
(confluent-kafka's AvroDeserializer).
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from kmirror.schemas.wire import HEADER_SIZE, schema_id
from scripts import registrylocal
from scripts.bench import kafkaio
from scripts.bench.contenders import Contender
from scripts.bench.loops import consumer_conf
from scripts.bench.plan import Plan, Workload
from scripts.bench.wire import SCHEMA

REGISTRY_PORT_OFFSET = 50
SAMPLE = 20
READ_TIMEOUT_S = 30.0
DECOYS = [
    json.dumps({"type": "record", "name": f"Decoy{i}", "namespace": "kmirror.bench",
                "fields": [{"name": f"f{i}", "type": "long"}]})
    for i in (1, 2)
]  # fmt: skip


def subject(w: Workload) -> str:
    """TopicNameStrategy's value subject; the benchmark mirrors topics under their own names,
    so the target subject is named the same."""
    return f"{w.topic}-value"


def _client(url: str) -> SchemaRegistryClient:
    return SchemaRegistryClient({"url": url, "timeout": 30})


class Registries:
    """The run's two registries: `up` before the preloads, `down` with the clusters."""

    def __init__(self, plan: Plan) -> None:
        self.specs = [
            registrylocal.RegistrySpec(f"{name}-registry", port + REGISTRY_PORT_OFFSET)
            for name, port in (plan.source, plan.target)
        ]
        self.source_ids: dict[str, int] = {}
        self._up = False

    @property
    def urls(self) -> tuple[str, str]:
        return self.specs[0].url, self.specs[1].url

    def up(self, plan: Plan) -> dict[str, Any]:
        """Start both (a leftover of an interrupted run is stopped first: fresh in-memory
        registries), register the decoys and the workloads' subjects, and give every workload a
        schema-mirroring contender copies its schema ID."""
        for s in self.specs:
            registrylocal.stop(s.name)
        self._up = True
        t0 = time.monotonic()
        with ThreadPoolExecutor(max_workers=len(self.specs)) as pool:
            list(pool.map(registrylocal.start, self.specs))
        start_s = round(time.monotonic() - t0, 2)
        src, tgt = (_client(u) for u in self.urls)
        for i, decoy in enumerate(DECOYS):
            tgt.register_schema(f"bench-decoy{i}-value", Schema(decoy, "AVRO"))
        framed = [w for w in plan.workloads if plan.mirrors_schemas(w)]
        for w in framed:
            self.source_ids[w.name] = src.register_schema(subject(w), Schema(SCHEMA, "AVRO"))
        plan.workloads = [
            replace(w, schema_id=self.source_ids[w.name]) if w.name in self.source_ids else w
            for w in plan.workloads
        ]
        return {"urls": list(self.urls), "start_s": start_s, "source_ids": self.source_ids}

    def down(self) -> list[str]:
        if not self._up:
            return []
        self._up = False
        return [registrylocal.stop(s.name) for s in self.specs]

    def check(self, w: Workload, c: Contender, source: str, target: str) -> dict[str, Any]:
        """The sampled check above: what was sampled, and `error` naming the first bad
        record."""
        sid = self.source_ids[w.name]
        if c.exactly_once:
            # Transaction markers take target offsets: records do not sit at their source
            # offsets, so the offset-by-offset comparison does not apply.
            return {"source_id": sid, "skipped": "exactly-once: the target's offsets differ"}
        translate = c.schema_id_mode == "translate"
        expected = sid
        if translate:
            expected = _client(self.urls[1]).get_latest_version(subject(w)).schema_id or 0
        ends = dict(enumerate(kafkaio.end_offsets(target, w.topic, w.partitions)))
        ranges = [(p, 0, min(SAMPLE, e)) for p, e in ends.items()]
        ranges += [(p, max(SAMPLE, e - SAMPLE), e) for p, e in ends.items()]
        got = read(target, w.topic, ranges)
        want = read(source, w.topic, ranges)
        out: dict[str, Any] = {"sampled": len(got), "source_id": sid, "target_id": expected}
        for (p, off), value in sorted(got.items()):
            problem = _compare(want[(p, off)], value, sid, expected)
            if problem:
                out["error"] = f"{w.topic}[{p}]@{off}: {problem}"
                return out
        if translate and got:
            p, off = min(got)
            ctx = SerializationContext(w.topic, MessageField.VALUE)
            on_target = AvroDeserializer(_client(self.urls[1]))(got[(p, off)], ctx)
            on_source = AvroDeserializer(_client(self.urls[0]))(want[(p, off)], ctx)
            out["deserialized"] = on_target == on_source
            if on_target != on_source:
                out["error"] = f"{w.topic}[{p}]@{off} deserializes otherwise on the target"
        return out


def _compare(src: bytes | None, dst: bytes | None, sid: int, expected: int) -> str:
    """What is wrong with the copy `dst` of `src` ("" if nothing)."""
    if schema_id(src) != sid or src is None:
        return f"the source value is not framed with schema ID {sid}"
    if schema_id(dst) != expected or dst is None:
        return f"the target value carries schema ID {schema_id(dst)}, not {expected}"
    if dst[HEADER_SIZE:] != src[HEADER_SIZE:]:
        return "the payload differs from the source's"
    return ""


def read(
    bootstrap: str, topic: str, ranges: list[tuple[int, int, int]]
) -> dict[tuple[int, int], bytes | None]:
    """The values at offsets [start, stop) of each (partition, start, stop); each partition's
    ranges are read one after the other (one assignment per partition at a time)."""
    out: dict[tuple[int, int], bytes | None] = {}
    pending = [r for r in ranges if r[2] > r[1]]
    consumer = Consumer(consumer_conf(bootstrap))
    try:
        while pending:
            batch: dict[int, tuple[int, int, int]] = {}
            for r in pending:
                batch.setdefault(r[0], r)
            pending = [r for r in pending if batch[r[0]] is not r]
            consumer.assign([TopicPartition(topic, p, start) for p, start, _ in batch.values()])
            deadline = time.monotonic() + READ_TIMEOUT_S
            left = {p: stop - start for p, start, stop in batch.values()}
            while any(left.values()):
                if time.monotonic() > deadline:
                    raise AssertionError(f"could not read {topic} {sorted(batch.values())}")
                for m in consumer.consume(500, 0.2):
                    p, off = m.partition(), m.offset()
                    if m.error() is not None or p is None or off is None:
                        continue
                    _, start, stop = batch[p]
                    if start <= off < stop and (p, off) not in out:
                        out[(p, off)] = m.value()
                        left[p] -= 1
            consumer.unassign()
    finally:
        consumer.close()
    return out
