"""Schemas follow the data: `kmirror run` with two real schema registries (Apicurio 3.3.3, one
per cluster) copies subjects, versions, references and compatibility settings, and rewrites the
schema ID of every mirrored record so that consumers on the target read, with the target's
registry and confluent-kafka's own deserializers, the same objects as on the source: on the
batch path (the default engine: the merge kernel rewrites the IDs, compressed batches too) and
on the record path (`--engine record`)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka.schema_registry import Schema

from tests.conftest import MakeTopic
from tests.kafkatools import Clusters, consume_all, produce, wait_until
from tests.mirrorproc import QUICK_REJOIN, MirrorProcess, mirror_args, run_cli
from tests.schemadata import (
    Readers,
    avro_writer,
    client,
    json_writer,
    proto_class,
    proto_writer,
    register_avro,
    schema_id,
)
from tests.schemaregistry import Registries

pytestmark = pytest.mark.integration

PREFIX = "A"


def holds(clusters: Clusters, topic: str, count: int) -> Callable[[], bool]:
    return lambda: len(consume_all(clusters.target_bootstrap, topic)) >= count


def setup_sources(
    clusters: Clusters, reg: Registries, make_topic: MakeTopic, uid: str, codec: str = "none"
) -> dict[str, tuple[str, str]]:
    """Three topics, one per schema type, each written with two schema versions (in batches
    of a few records, compressed with `codec`); the Avro subject references another subject.
    Returns topic -> (kind, its subject's compat)."""
    conf = {"compression.type": codec, "linger.ms": 0, "batch.num.messages": 2}
    src = client(reg.source_url)
    # A schema only the target has, so that the target's IDs cannot equal the source's.
    client(reg.target_url).register_schema(f"filler-{uid}", Schema('"string"', "AVRO"))
    avro, proto, js = (make_topic(clusters.source_bootstrap, f"{k}-{uid}") for k in "apj")
    register_avro(src, avro, f"addr-{uid}", 1)
    src.set_compatibility(f"{avro}-value", "BACKWARD")
    write = avro_writer(src, avro)
    values = [write({"id": i, "ship_to": {"city": f"c{i}"}}) for i in range(3)]
    register_avro(src, avro, f"addr-{uid}", 2)
    write = avro_writer(src, avro)
    values += [write({"id": 10 + i, "ship_to": {"city": "x"}, "note": f"n{i}"}) for i in range(3)]
    values.append(b"plain bytes, not the wire format")
    produce(clusters.source_bootstrap, avro, [{"key": b"k", "value": v} for v in values], **conf)

    p1, p2 = (proto_class(f"pay{uid}", v) for v in (1, 2))
    w1, w2 = proto_writer(src, proto, p1), proto_writer(src, proto, p2)
    values = [w1(id=f"p{i}", amount=i + 0.5) for i in range(3)]
    values += [w2(id=f"q{i}", amount=2.0, currency="EUR") for i in range(3)]
    produce(clusters.source_bootstrap, proto, [{"value": v} for v in values], **conf)

    j1 = json_writer(src, js, 1)
    values = [j1({"sku": f"s{i}", "qty": i}) for i in range(3)]
    src.set_compatibility(f"{js}-value", "FORWARD")
    j2 = json_writer(src, js, 2)
    values += [j2({"sku": "t", "qty": 1, "warehouse": "w"})]
    produce(clusters.source_bootstrap, js, [{"value": v} for v in values], **conf)
    return {avro: ("avro", "BACKWARD"), proto: ("proto", "NONE"), js: ("json", "FORWARD")}


@pytest.mark.parametrize(
    ("engine", "codec"),
    [("batch", "zstd"), pytest.param("record", "none", marks=pytest.mark.slow)],
)
def test_translate_copies_subjects_and_every_record_reads_the_same_on_the_target(
    tmp_path: Path,
    clusters: Clusters,
    schema_registries: Registries,
    make_topic: MakeTopic,
    unique_name: Callable[[str], str],
    engine: str,
    codec: str,
) -> None:
    reg = schema_registries
    uid = unique_name("u").split("-")[1]
    topics = setup_sources(clusters, reg, make_topic, uid, codec)
    args = [
        # A killed member leaves the group after 6 s, not 45: the restart gets its partitions.
        *mirror_args(tmp_path, clusters, unique_name("g"), "|".join(topics), QUICK_REJOIN),
        "--rename-policy", "prefix", "--source-alias", PREFIX, "--engine", engine,
        *reg.mirror_flags(uid),
    ]  # fmt: skip
    counts = {t: len(consume_all(clusters.source_bootstrap, t)) for t in topics}
    with MirrorProcess(args, tmp_path / "m1.log") as m:
        for t, n in counts.items():
            wait_until(holds(clusters, f"{PREFIX}.{t}", n), 180, message=f"{t} mirrored")
        # One record of the Avro topic is not in the wire format (streams report each second).
        plain = r'kmirror_schema_records_not_wire_format_total\{[^}]*topic="a-[^}]*\} 1.0'
        wait_until(lambda: re.search(plain, m.get("/metrics")[1]), 30, message="counted")
        m.kill()  # kill -9: what it registered and mapped must survive
    if engine == "batch":
        assert "the record path continues" not in m.log, m.log  # every batch went as a batch

    src, dst = client(reg.source_url), client(reg.target_url)
    proto = proto_class(f"pay{uid}", 2)
    for topic, (kind, compat) in topics.items():
        subject, tsubject = f"{topic}-value", f"{PREFIX}.{topic}-value"
        assert dst.get_versions(tsubject) == src.get_versions(subject)
        for v in src.get_versions(subject):
            s, t = src.get_version(subject, v), dst.get_version(tsubject, v)
            assert (t.schema.schema_str, t.schema.schema_type) == (
                s.schema.schema_str, s.schema.schema_type)  # fmt: skip
        if compat != "NONE":
            assert dst.get_compatibility(tsubject) == compat
        ours = Readers(src, proto), Readers(dst, proto)
        source = consume_all(clusters.source_bootstrap, topic)
        target = consume_all(clusters.target_bootstrap, f"{PREFIX}.{topic}")
        assert len(source) == len(target)
        for a, b in zip(source, target, strict=True):
            assert a.key == b.key
            if not (a.value or b"").startswith(b"\x00"):
                assert a.value == b.value  # not in the wire format: byte for byte
                continue
            assert a.value is not None and b.value is not None
            assert a.value[5:] == b.value[5:]  # the payload byte for byte
            assert schema_id(b.value) != schema_id(a.value)  # translated
            assert ours[1].read(kind, b.topic, b.value) == ours[0].read(kind, a.topic, a.value)
    # The reference points at the target's copy of the referenced subject (no rename: it is
    # not a topic's subject).
    refs = dst.get_version(f"{PREFIX}.{next(iter(topics))}-value", 2).schema.references
    assert [(r.name, r.subject, r.version) for r in refs or []] == [
        ("kmirror.test.Address", f"addr-{uid}", 1)
    ]

    # A restart after kill -9 translates with the persisted map: nothing is registered again.
    avro = next(iter(topics))
    write = avro_writer(src, avro)
    produce(
        clusters.source_bootstrap, avro, [{"value": write({"id": 99, "ship_to": {"city": "r"}})}]
    )
    before = {t: dst.get_versions(f"{PREFIX}.{t}-value") for t in topics}
    with MirrorProcess(args, tmp_path / "m2.log") as m:
        wait_until(holds(clusters, f"{PREFIX}.{avro}", counts[avro] + 1), 180)
        assert m.stop() == 0, m.log
    assert "registered on the target" not in m.log
    assert re.search(r"schema ID map: [1-9]\d* pair\(s\) read", m.log), m.log
    assert {t: dst.get_versions(f"{PREFIX}.{t}-value") for t in topics} == before
    last = consume_all(clusters.target_bootstrap, f"{PREFIX}.{avro}")[-1]
    assert Readers(dst).read("avro", last.topic, last.value or b"")["id"] == 99


def test_a_version_registered_while_the_mirror_runs_reaches_the_target_before_its_record(
    tmp_path: Path,
    clusters: Clusters,
    schema_registries: Registries,
    make_topic: MakeTopic,
    unique_name: Callable[[str], str],
) -> None:
    reg = schema_registries
    uid = unique_name("u").split("-")[1]
    src, dst = client(reg.source_url), client(reg.target_url)
    topic = make_topic(clusters.source_bootstrap, f"race-{uid}")
    register_avro(src, topic, f"addr-{uid}", 1)
    write = avro_writer(src, topic)
    produce(
        clusters.source_bootstrap, topic, [{"value": write({"id": 1, "ship_to": {"city": "a"}})}]
    )
    # A long poll: only the stream itself can bring version 2 over in time (on the default
    # engine, the batch path: the kernel reports the ID unmapped, the stream resolves it).
    args = [*mirror_args(tmp_path, clusters, unique_name("g"), topic), "--exactly-once",
            *reg.mirror_flags(uid, "--schema-sync-interval-s", "600")]  # fmt: skip
    with MirrorProcess(args, tmp_path / "m.log") as m:
        wait_until(holds(clusters, topic, 1), 180)
        # Registered and used at once: the record races the registry sync.
        register_avro(src, topic, f"addr-{uid}", 2)
        write = avro_writer(src, topic)
        produce(
            clusters.source_bootstrap, topic,
            [{"value": write({"id": 2, "ship_to": {"city": "b"}, "note": "new"})}],
        )  # fmt: skip
        wait_until(holds(clusters, topic, 2), 120)
        assert m.stop() == 0, m.log
    record = consume_all(clusters.target_bootstrap, topic)[-1]
    assert record.value is not None
    # The target ID in the record was the answer to registering version 2 on the target.
    assert dst.get_version(f"{topic}-value", 2).schema_id == schema_id(record.value)
    assert Readers(dst).read("avro", topic, record.value)["note"] == "new"
    # `kmirror status`: nothing behind; a subject registered on the source since, behind.
    status = ["status", *args[1:], "--persisted"]
    res = run_cli(status)
    assert res.returncode == 0, res.stderr
    assert "schemas: 0 of 2 subject(s) behind" in res.stdout, res.stdout
    src.register_schema(f"late-{uid}-value", Schema('"string"', "AVRO"))
    res = run_cli(status)
    assert "schemas: 1 of 3 subject(s) behind" in res.stdout, res.stdout
    assert f"late-{uid}-value -> late-{uid}-value: 1 version(s), target 0 (copy)" in res.stdout


def test_preserve_on_a_registry_that_cannot_keep_ids_stops_and_registers_nothing(
    tmp_path: Path,
    clusters: Clusters,
    schema_registries: Registries,
    make_topic: MakeTopic,
    unique_name: Callable[[str], str],
) -> None:
    reg = schema_registries
    uid = unique_name("u").split("-")[1]
    src, dst = client(reg.source_url), client(reg.target_url)
    topic = make_topic(clusters.source_bootstrap, f"keep-{uid}")
    dst.register_schema(f"filler-{uid}", Schema('"string"', "AVRO"))
    src.register_schema(f"{topic}-value", Schema(json.dumps({"type": "fixed", "name": "F",
                                                             "size": 4}), "AVRO"))  # fmt: skip
    args = [*mirror_args(tmp_path, clusters, unique_name("g"), topic),
            *reg.mirror_flags(uid, "--schema-id-mode", "preserve")]  # fmt: skip
    result = run_cli([*args, "--metrics-port", "0"], timeout=180)
    assert result.returncode == 1, result.stderr
    assert "did not keep schema ID" in result.stderr and "translate" in result.stderr
    assert f"{topic}-value" not in dst.get_subjects()  # taken back: nothing half-registered
