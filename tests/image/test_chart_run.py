"""Render-and-run: the chart and the images agree. The chart is rendered with values pointing at
the local clusters and at the images this session built; the mirror container of the rendered
Deployment, and then the validation container of the rendered post-install hook Job, are run
exactly as rendered (entrypoint, arguments, environment, user, read-only root, /tmp) with
podman. The mirror must copy the records byte for byte and stop cleanly; the hook must pass."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kmirror import __version__
from tests.chart import chartlib
from tests.image.conftest import Images, podman
from tests.image.test_mirror_image import committed, contents, records, target_has
from tests.kafkatools import Clusters, consume_all, end_offsets, produce, wait_until
from tests.mirrorproc import free_port

pytestmark = pytest.mark.image

PARTITIONS = 3


def chart_values(clusters: Clusters, topic: str, group: str, port: int) -> dict[str, Any]:
    """What a user of the local clusters would write in values.yaml."""
    return {
        "image": {"registry": "localhost", "repository": "kmirror", "tag": __version__},
        "source": {"bootstrapServers": clusters.source_bootstrap},
        "target": {"bootstrapServers": clusters.target_bootstrap},
        "whitelist": topic,
        "consumerGroup": group,
        "metrics": {"port": port},
        "offsetCommitIntervalMs": 1000,  # the hook compares what the mirror has committed
        "validation": {
            "image": {
                "registry": "localhost",
                "repository": "kmirror-validate",
                "tag": __version__,
            },
            "mode": "digest",
            "waitTimeoutSeconds": 120,
            "hook": {"enabled": True},
        },
    }


def wait_mirrored(container: str, clusters: Clusters, topic: str, count: int) -> None:
    """Until the target topic has `count` records; fails at once if the container exits."""

    def mirrored() -> bool:
        state = podman("inspect", "--format", "{{.State.Running}}", container, check=False)
        if state.stdout.strip() != "true":
            logs = podman("logs", container, check=False)
            raise AssertionError(f"the rendered mirror exited:\n{logs.stdout}{logs.stderr}")
        return target_has(clusters, topic, count)()

    wait_until(mirrored, 120, 0.5, f"{count} records on the target topic {topic}")


def test_rendered_mirror_and_hook_run_in_the_built_images(
    images: Images,
    clusters: Clusters,
    unique_name: Callable[..., str],
    make_topic: Callable[..., str],
) -> None:
    topic = unique_name("it-chart")
    group = unique_name("chart-run")
    make_topic(clusters.source_bootstrap, topic, partitions=PARTITIONS)
    sent = records(300, PARTITIONS)
    produce(clusters.source_bootstrap, topic, sent)

    docs = chartlib.helm_template(chart_values(clusters, topic, group, free_port()))
    mirror = chartlib.run_spec(docs)
    assert mirror.image == images.mirror, "the rendered Deployment must name the built image"
    job = next(d for d in docs.of_kind("Job"))
    hook = chartlib.run_spec(docs, job, "validate")
    assert hook.image == images.validate
    test_pod = next(d for d in docs.of_kind("Pod"))
    # `helm test` runs the same container as the hook, but over whole topics: the hook is
    # bounded to the last records the mirror has copied. Running one proves both.
    bounds = ["--to=copied", "--last=1000", "--wait-timeout=120"]
    test_spec = chartlib.run_spec(docs, test_pod, "validate")
    assert dataclasses.replace(
        test_spec, args=[a for a in test_spec.args if a not in bounds]
    ) == dataclasses.replace(hook, args=[a for a in hook.args if a not in bounds])

    name = f"kmirror-chart-{uuid.uuid4().hex[:10]}"
    podman(*mirror.podman_args(name, detach=True))
    try:
        wait_mirrored(name, clusters, topic, len(sent))
        source = consume_all(clusters.source_bootstrap, topic)
        target = consume_all(clusters.target_bootstrap, topic)
        assert contents(target) == contents(source)

        # The hook compares what the mirror has copied (committed): wait for the commit.
        wait_until(lambda: committed(clusters, group, topic)
                   == end_offsets(clusters.source_bootstrap, topic), 120, 0.5,
                   "the mirror's commit of every record")  # fmt: skip
        # The hook Job's container, run while the mirror runs, as after `helm install`.
        result = podman(*hook.podman_args(f"{name}-hook"), timeout=600, check=False)
        output = result.stdout + result.stderr
        assert result.returncode == 0, output[-6000:]
        assert (
            f"kmirror-validate: OK (digest mode, 1 topics, {PARTITIONS} partitions, "
            f"{len(sent)} source records, {len(sent)} target records"
        ) in output

        # A rollout or scale-down: SIGTERM, flush, commit, exit 0.
        podman("stop", "--time", "30", name, timeout=60)
        code = podman("inspect", "--format", "{{.State.ExitCode}}", name).stdout.strip()
        assert code == "0", podman("logs", name, check=False).stderr[-4000:]
        assert committed(clusters, group, topic) == end_offsets(clusters.source_bootstrap, topic)
    finally:
        podman("rm", "--force", "--volumes", "--time", "0", name, check=False)


def test_rendered_mm2_mode_runs_the_users_mm2_properties(
    images: Images,
    clusters: Clusters,
    tmp_path: Path,
    unique_name: Callable[..., str],
    make_topic: Callable[..., str],
) -> None:
    """mm2Config mode as rendered: the file from a Secret, `kmirror entrypoint run --mm2-config`,
    the chart's flags (group, port, --refresh-topics-interval-s), and no environment that could
    override the file: MirrorMaker 2's default policy names the target topic `east.<topic>`."""
    topic = unique_name("it-chart-mm2")
    group = unique_name("chart-mm2")
    make_topic(clusters.source_bootstrap, topic, partitions=PARTITIONS)
    sent = records(200, PARTITIONS)
    produce(clusters.source_bootstrap, topic, sent)
    mm2 = (
        "clusters = east, west\n"
        f"east.bootstrap.servers = {clusters.source_bootstrap}\n"
        f"west.bootstrap.servers = {clusters.target_bootstrap}\n"
        "east->west.enabled = true\n"
        f"east->west.topics = {topic}\n"
        "emit.heartbeats.enabled = false\n"
        "offset.flush.interval.ms = 1000\n"
    )
    values = {
        "image": {"registry": "localhost", "repository": "kmirror", "tag": __version__},
        "mm2Config": {"enabled": True, "existingSecret": "mm2", "flow": "east->west"},
        "consumerGroup": group,
        "metrics": {"port": free_port()},
        "topicRefreshIntervalSeconds": 2,
        "validation": {"test": {"enabled": False}, "hook": {"enabled": False}},
    }
    mirror = chartlib.run_spec(chartlib.helm_template(values))
    assert mirror.image == images.mirror and not mirror.command and not mirror.env
    name = f"kmirror-chart-mm2-{uuid.uuid4().hex[:10]}"
    secrets = {chartlib.SecretRef("mm2", "mm2.properties"): mm2}
    podman(*mirror.podman_args(name, secrets=secrets, secret_dir=tmp_path, detach=True))
    target = f"east.{topic}"
    try:
        wait_mirrored(name, clusters, target, len(sent))
        assert contents(consume_all(clusters.target_bootstrap, target)) == contents(
            consume_all(clusters.source_bootstrap, topic)
        )
        podman("stop", "--time", "30", name, timeout=60)
        logs = podman("logs", name, check=False)
        code = podman("inspect", "--format", "{{.State.ExitCode}}", name).stdout.strip()
        assert code == "0", logs.stderr[-4000:]
        assert "dialect=mm2" in logs.stdout + logs.stderr
        assert committed(clusters, group, topic) == end_offsets(clusters.source_bootstrap, topic)
    finally:
        podman("rm", "--force", "--volumes", "--time", "0", name, check=False)
