"""Replication factor of created target topics: the source topic's when the target has enough
brokers, else the target broker's default (with a warning). Needs a 3-broker cluster of its own
(scripts/kafkalocal quorum_specs, ports 24092-24097, below Linux's ephemeral range
so no client connection can hold one; KMIRROR_RF_PORT to move them), started
and removed by this module: 8 s to start on this machine at load 7.5, 20-50 s for the module.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from scripts import kafkalocal
from tests.kafkatools import (
    Clusters,
    admin,
    create_topic,
    list_topics,
    produce,
    unique,
    wait_until,
)
from tests.mirrorproc import MirrorProcess, write_properties

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def three_brokers() -> Iterator[str]:
    kl = kafkalocal
    specs = kl.quorum_specs(unique("rf3"), int(os.environ.get("KMIRROR_RF_PORT", "24092")), 3)
    names = [s.name for s in specs]
    started = time.monotonic()
    try:
        kl.up(specs, fresh=True, timeout=240)
        print(f"[rf3] 3 brokers up in {time.monotonic() - started:.1f}s")
        bootstrap = ",".join(s.bootstrap for s in specs)
        # A fresh quorum is slow at its first replicated topic and first idempotent producer:
        # pay that here, not inside the mirror's 30 s wait for new target partitions.
        warm = create_topic(bootstrap, unique("warm"), 3, replication_factor=3, timeout=180)
        produce(bootstrap, warm, [{"value": b"w"}], timeout=180)
        yield bootstrap
    finally:
        kl.down(names, keep=False)
        for name in names:  # broker.log too: nothing of this cluster stays behind
            shutil.rmtree(kl.cluster_dir(name), ignore_errors=True)


def replication_factor(bootstrap: str, topic: str) -> int:
    md = admin(bootstrap).list_topics(timeout=10)
    return len(md.topics[topic].partitions[0].replicas)


def mirror_args(tmp: Path, source: str, target: str, whitelist: str, *extra: str) -> list[str]:
    cprops = write_properties(
        tmp / "consumer.properties", {"bootstrap.servers": source, "group.id": unique("g")}
    )
    pprops = write_properties(tmp / "producer.properties", {"bootstrap.servers": target})
    return [
        "run", "--consumer.config", str(cprops), "--producer.config", str(pprops),
        "--whitelist", whitelist, *extra,
    ]  # fmt: skip


def test_replication_factor_follows_the_source(
    tmp_path: Path, three_brokers: str, clusters: Clusters
) -> None:
    base = unique("rf")
    create_topic(three_brokers, f"{base}-three", 2, replication_factor=3, timeout=60)
    create_topic(three_brokers, f"{base}-two", 2, replication_factor=2, timeout=60)
    # Within the 3-broker cluster (prefix rename): the target has enough brokers for both.
    args = mirror_args(
        tmp_path, three_brokers, three_brokers, f"{base}-(three|two)",
        "--rename-policy", "prefix", "--source-alias", "src",
    )  # fmt: skip
    with MirrorProcess(args, tmp_path / "inside.log") as mirror:
        wanted = {f"src.{base}-three", f"src.{base}-two"}
        wait_until(lambda: wanted <= list_topics(three_brokers), 120, 0.5, "targets created")
        mirror.wait_ready(120)  # past the wait for the new partitions to come online
        assert mirror.stop() == 0, mirror.log
    assert replication_factor(three_brokers, f"src.{base}-three") == 3
    assert replication_factor(three_brokers, f"src.{base}-two") == 2

    # To the 1-broker target: the broker default (1), and a warning naming the topic.
    args = mirror_args(tmp_path, three_brokers, clusters.target_bootstrap, f"{base}-three")
    with MirrorProcess(args, tmp_path / "outside.log") as mirror:
        target = clusters.target_bootstrap
        wait_until(lambda: f"{base}-three" in list_topics(target), 120, 0.5, "target created")
        mirror.wait_ready(120)
        assert mirror.stop() == 0, mirror.log
    assert replication_factor(target, f"{base}-three") == 1
    assert f"source topic {base}-three has replication factor 3 but the target only 1" in (
        mirror.log
    )
