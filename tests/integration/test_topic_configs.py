"""Keep the target like the source: topic configs follow source changes on the topics kmirror
created; a target topic someone else configured is left alone and its drift reported."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
)

from tests.integration.test_metrics import gauge
from tests.kafkatools import Clusters, delete_topic, list_topics, unique, wait_until
from tests.mirrorproc import MirrorProcess, mirror_args
from tests.promtext import sample

pytestmark = pytest.mark.integration


def topic_config(bootstrap: str, topic: str) -> dict[str, str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    entries = admin.describe_configs([res], request_timeout=10)[res].result()
    return {k: str(e.value) for k, e in entries.items()}


def set_config(bootstrap: str, topic: str, **values: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    entries = [
        ConfigEntry(k.replace("_", "."), v, incremental_operation=AlterConfigOpType.SET)
        for k, v in values.items()
    ]
    res = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=entries)
    for fut in admin.incremental_alter_configs([res], request_timeout=10).values():
        fut.result()


def test_topic_configs_follow_the_source(tmp_path: Path, clusters: Clusters, make_topic) -> None:
    src, dst = clusters.source_bootstrap, clusters.target_bootstrap
    base = unique("cfgsync")
    ours, theirs = f"{base}-ours", f"{base}-theirs"
    make_topic(src, ours, config={"retention.ms": "111111111"})
    make_topic(src, theirs, config={"retention.ms": "222222222"})
    # Configured on the target by someone else before the mirror started.
    make_topic(dst, theirs, config={"retention.ms": "333333333"})
    args = mirror_args(
        tmp_path, clusters, unique("g"), f"{base}-.*", None, None,
        "--sync-topic-configs-interval-s", "1", "--refresh-topics-interval-s", "1",
    )  # fmt: skip
    try:
        with MirrorProcess(args, tmp_path / "mirror.log") as mirror:
            mirror.wait_ready(90)
            wait_until(lambda: ours in list_topics(dst), 60, 0.5, "the target topic created")
            assert topic_config(dst, ours)["retention.ms"] == "111111111"
            # A change on the source reaches the target; an excluded config does not.
            set_config(src, ours, retention_ms="444444444", message_timestamp_type="LogAppendTime")
            wait_until(
                lambda: topic_config(dst, ours)["retention.ms"] == "444444444",
                60,
                0.5,
                "the new retention.ms on the target",
            )
            assert topic_config(dst, ours)["message.timestamp.type"] == "CreateTime"
            metrics = mirror.get("/metrics")[1]
            synced = sample(metrics, "kmirror_topics_synced_configs_total")
            assert synced is not None and synced >= 1, metrics

            def drift_reported() -> float | None:
                return gauge(
                    mirror.get("/metrics")[1], "kmirror_topics_drifted_configs", theirs, -1
                )

            assert wait_until(drift_reported, 60, 0.5, "the drift metric") == 1
            assert f"target topic {theirs} differs from source topic {theirs}" in mirror.log
            assert "retention.ms (source 222222222, target 333333333)" in mirror.log
            assert topic_config(dst, theirs)["retention.ms"] == "333333333"  # not touched
            assert (
                gauge(mirror.get("/metrics")[1], "kmirror_topics_drifted_configs", ours, -1) is None
            )
            assert mirror.stop() == 0, mirror.log
    finally:
        with contextlib.suppress(Exception):
            delete_topic(dst, ours, wait=False)
