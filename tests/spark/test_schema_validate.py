"""kmirror-validate with schema registries: records whose schema IDs were translated compare
equal modulo the ID map (payloads byte for byte), and every schema ID used on the target must
resolve there to the schema its source ID names.

The target side is written the way the mirror writes it: the subjects copied by kmirror's
registry sync, each record's ID rewritten with the pairs the sync returned. The validator builds
its own pairs, by looking the source's versions up in the target registry."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest
from confluent_kafka.schema_registry import Schema
from pyspark.sql import SparkSession

from kmirror.config.model import TopicSelection
from kmirror.config.schemas import RegistryEndpoint, SchemaSettings
from kmirror.schemas.sync import RegistrySync
from kmirror.schemas.wire import rewrite
from kmirror_validate.validate import Options, prepare, run
from tests.conftest import MakeTopic
from tests.kafkatools import Clusters, Rec, produce
from tests.schemadata import avro_writer, client, register_avro
from tests.schemaregistry import Registries
from tests.spark.conftest import config_for, copy_topic

pytestmark = pytest.mark.spark

STRANGER = 2**31 - 11  # an ID no registry here has


def test_translated_ids_compare_equal_and_unknown_target_ids_fail(
    spark: SparkSession,
    clusters: Clusters,
    schema_registries: Registries,
    make_topic: MakeTopic,
    unique_name: Callable[[str], str],
) -> None:
    uid = unique_name("u").split("-")[1]
    src = client(schema_registries.source_url)
    client(schema_registries.target_url).register_schema(f"f-{uid}", Schema('"int"', "AVRO"))
    topic = make_topic(clusters.source_bootstrap, f"v-{uid}")
    make_topic(clusters.target_bootstrap, topic)
    register_avro(src, topic, f"addr-{uid}", 1)
    write = avro_writer(src, topic)
    produce(clusters.source_bootstrap, topic,
            [{"key": b"k%d" % i, "value": write({"id": i, "ship_to": {"city": "c"}})}
             for i in range(5)])  # fmt: skip
    settings = SchemaSettings(
        RegistryEndpoint("source", schema_registries.source_url),
        RegistryEndpoint("target", schema_registries.target_url),
        subjects=(f".*{uid}.*",),
    )
    pairs = RegistrySync(settings, lambda t: t).sync_all()
    assert any(s != t for s, t in pairs.items())

    def mirrored(records: list[Rec]) -> list[Rec]:
        ids = {**pairs, STRANGER: STRANGER}  # copied as it is
        return [dataclasses.replace(r, value=rewrite(r.value, ids)) for r in records]

    # And one record whose ID the target registry does not know, copied as it is.
    stranger = b"\x00" + STRANGER.to_bytes(4, "big") + b"payload"
    produce(clusters.source_bootstrap, topic, [{"value": stranger}])
    copy_topic(clusters, topic, damage=mirrored)
    config = config_for(clusters, schemas=settings)
    report = run(spark, prepare(config, Options(), TopicSelection(include=(topic,))))
    # Every record compares equal modulo the ID map (payloads byte for byte) ...
    assert all(t.ok for t in report.topics), report.summary()
    assert report.totals()["matched"] == 6
    # ... but one ID used on the target does not resolve there: the validation fails.
    assert report.schemas["ids_used"] == 2
    assert report.schemas["unresolved_ids"] == [STRANGER]
    assert not report.ok
    assert f"schema IDs [{STRANGER}] used on the target do not resolve" in report.summary()
