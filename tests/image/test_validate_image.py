"""The `validate` image: the PySpark validation job with its JRE and Kafka connector jars,
run read-only as UID 65532 against the local clusters."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import pytest

from tests.image.conftest import Images, podman, run_once
from tests.kafkatools import Clusters, produce

pytestmark = pytest.mark.image


def test_validate_image_is_hardened_and_runs(images: Images) -> None:
    config = json.loads(
        podman("image", "inspect", "--format", "{{json .Config}}", images.validate).stdout
    )
    assert config["User"] == "65532:65532"
    assert config["Entrypoint"] == ["/opt/kmirror/bin/kmirror-validate"]
    assert "/tmp" in config["Volumes"]
    assert "KMIRROR_SPARK_JARS=/opt/kmirror/jars" in config["Env"]
    assert config["Labels"]["org.opencontainers.image.title"] == "kmirror-validate"
    result = run_once(images.validate, {}, args=["--help"])
    assert result.returncode == 0, result.stderr
    assert "usage: kmirror-validate" in result.stdout


def test_validation_job_in_the_image(
    images: Images,
    clusters: Clusters,
    unique_name: Callable[..., str],
    make_topic: Callable[..., str],
) -> None:
    """Two identical copies (the same records produced to both clusters) validate as equal,
    record by record, with Spark inside the image."""
    topic = unique_name("validate")
    base = int(time.time() * 1000) - 60_000
    recs = [
        {
            "partition": i % 2,
            "key": f"k{i}".encode(),
            "value": bytes([i % 256]) * (i % 40),
            "headers": [("h", str(i).encode())],
            "timestamp": base + i,
        }
        for i in range(200)
    ]
    for bootstrap in (clusters.source_bootstrap, clusters.target_bootstrap):
        make_topic(bootstrap, topic, partitions=2)
        produce(bootstrap, topic, recs)
    args = [
        "--source-bootstrap-servers",
        clusters.source_bootstrap,
        "--target-bootstrap-servers",
        clusters.target_bootstrap,
        "--topics",
        topic,
        "--mode",
        "digest",
        "--master",
        "local[1]",
        "--json",
        "--no-progress",
        "--quiet",
    ]
    result = run_once(images.validate, {}, args=args, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    report = json.loads(result.stdout)
    assert report["ok"] is True, report
