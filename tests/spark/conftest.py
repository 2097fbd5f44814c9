"""One SparkSession for the whole spark suite (starting a JVM costs seconds), plus helpers
that "mirror" topics by copying records with kafkatools, faithfully or with damage."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

from kmirror.config.model import ClusterConfig, MirrorConfig
from tests.kafkatools import Clusters, Rec, consume_all, produce

pytest.importorskip("pyspark")

from pyspark.sql import DataFrame, SparkSession

KAFKA_SCHEMA = (
    "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, "
    "timestampType int, headers array<struct<key:string,value:binary>>"
)


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    from kmirror_validate import sparkio

    session = sparkio.build_session(
        "local[2]",
        sparkio.connector_jars(),
        {
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
        },
    )
    yield session
    session.stop()


def config_for(clusters: Clusters, **changes: Any) -> MirrorConfig:
    """The model the mirror would use for the two test clusters (PLAINTEXT)."""
    return MirrorConfig(
        source=ClusterConfig("source", clusters.source_bootstrap),
        target=ClusterConfig("target", clusters.target_bootstrap),
        group_id="kmirror-validate-test",
        **changes,
    )


def copy_topic(
    clusters: Clusters,
    topic: str,
    target_topic: str | None = None,
    damage: Callable[[list[Rec]], list[Rec]] | None = None,
) -> list[Rec]:
    """Mirror by hand: read every committed source record, optionally damage the list, then
    produce each record to the same partition with its key, value, headers and timestamp.
    Returns the source records."""
    records = consume_all(clusters.source_bootstrap, topic)
    out = damage(list(records)) if damage else records
    if out:
        produce(clusters.target_bootstrap, target_topic or topic, out)
    return records


def kafka_rows(spark: SparkSession, rows: Sequence[tuple[Any, ...]]) -> DataFrame:
    """A DataFrame shaped like Spark's Kafka source, from
    (topic, partition, offset, key, value, timestamp ms, headers)."""
    return spark.createDataFrame(
        [
            (k, v, t, p, o, dt.datetime.fromtimestamp(ts / 1000, dt.UTC), 0, h)
            for t, p, o, k, v, ts, h in rows
        ],
        KAFKA_SCHEMA,
    )
