"""The `mirror` image, run as Kubernetes would run it (read-only root, UID 65532, no
capabilities), configured by environment variables and the built-in templates only."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from tests.image.conftest import NO_SHELL, Container, Images, podman, run_once
from tests.kafkatools import (
    Clusters,
    Rec,
    consume_all,
    end_offsets,
    produce,
    topic_partitions,
    wait_until,
)
from tests.mirrorproc import free_port

pytestmark = pytest.mark.image

REPO = Path(__file__).resolve().parents[2]
SECRET_IN_CONTAINER = "/run/secrets/source-password"


def records(n: int, partitions: int) -> list[dict[str, object]]:
    base = int(time.time() * 1000) - 3_600_000
    edge: list[dict[str, object]] = [
        {"partition": 0, "key": None, "value": b"null key", "timestamp": base - 5},
        {"partition": 0, "key": b"", "value": b"", "timestamp": base - 4},
        {"partition": 1 % partitions, "key": b"tomb", "value": None, "timestamp": base - 3},
        {
            "partition": 0,
            "key": b"\x00\xff",
            "value": bytes(range(256)) * 40,
            "headers": [("dup", b"a"), ("dup", b"b"), ("nil", None), ("", b"x")],
            "timestamp": base - 2,
        },
    ]
    return edge + [
        {
            "partition": i % partitions,
            "key": f"k{i}".encode(),
            "value": f"v{i}".encode() * (i % 7),
            "headers": [("i", str(i).encode())],
            "timestamp": base + i,
        }
        for i in range(n)
    ]


def target_has(clusters: Clusters, topic: str, count: int) -> Callable[[], bool]:
    def check() -> bool:
        try:
            return sum(end_offsets(clusters.target_bootstrap, topic).values()) >= count
        except Exception:
            return False

    return check


def committed(clusters: Clusters, group: str, topic: str) -> dict[int, int]:
    partitions = topic_partitions(clusters.source_bootstrap, topic)
    consumer = Consumer({"bootstrap.servers": clusters.source_bootstrap, "group.id": group})
    try:
        tps = consumer.committed([TopicPartition(topic, p) for p in partitions], timeout=10)
        return {tp.partition: tp.offset for tp in tps}
    finally:
        consumer.close()


def contents(recs: list[Rec]) -> list[tuple[object, ...]]:
    return [r.content() for r in recs]


def http_status(port: int, path: str) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as response:
            return int(response.status)
    except OSError:
        return 0


def wait_ready(container: Container, port: int) -> None:
    def ready() -> bool:
        if not container.running():
            raise AssertionError(f"the mirror container exited early:\n{container.logs()}")
        return http_status(port, "/readyz") == 200

    wait_until(ready, 120, 0.5, message="/readyz of the mirror container")


# --------------------------------------------------------------------------- no broker


def test_image_is_hardened(images: Images) -> None:
    config = json.loads(
        podman("image", "inspect", "--format", "{{json .Config}}", images.mirror).stdout
    )
    assert config["User"] == "65532:65532"
    assert config["Entrypoint"] == ["/opt/kmirror/bin/kmirror", "entrypoint"]  # exec form
    assert not config.get("Cmd")
    assert "/tmp" in config["Volumes"]
    labels = config["Labels"]
    assert labels["org.opencontainers.image.version"] == images.mirror.rsplit(":", 1)[1]
    assert labels["org.opencontainers.image.revision"] not in ("", "unknown")
    assert "org.opencontainers.image.source" in labels
    assert labels["org.opencontainers.image.base.name"].startswith("docker.io/library/debian")
    probe = """
import json, os, shutil, stat
from importlib import resources
setuid = []
for root, dirs, files in os.walk("/"):
    if root.startswith(("/proc", "/sys", "/dev")):
        dirs[:] = []
        continue
    for f in files:
        p = os.path.join(root, f)
        try:
            if os.lstat(p).st_mode & (stat.S_ISUID | stat.S_ISGID):
                setuid.append(p)
        except OSError:
            pass
print(json.dumps({
    "uid": os.getuid(),
    "tools": [t for t in ("gcc", "cc", "c++", "make", "pip", "pip3") if shutil.which(t)],
    "apt_lists": os.listdir("/var/lib/apt/lists"),
    "debs": [f for f in os.listdir("/var/cache/apt/archives") if f.endswith(".deb")],
    "pip_in_venv": os.path.exists("/opt/kmirror/bin/pip"),
    "root_cache": os.path.exists("/root/.cache"),
    "setuid": setuid,
    "templates": {n: resources.files("kmirror").joinpath("templates", n).read_text()
                  for n in ("consumer.properties", "producer.properties",
                            "tools-log4j.properties")},
}))
"""
    result = run_once(images.mirror, {}, ["--entrypoint", "/opt/kmirror/bin/python"], ["-c", probe])
    assert result.returncode == 0, result.stderr
    facts = json.loads(result.stdout)
    assert facts["uid"] == 65532
    assert facts["tools"] == []
    assert facts["apt_lists"] == [] and facts["debs"] == []
    assert not facts["pip_in_venv"] and not facts["root_cache"]
    assert facts["setuid"] == []
    for name, text in facts["templates"].items():  # the image carries config-templates/
        assert text == (REPO / "config-templates" / name).read_text(encoding="utf-8"), name


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (
            {"SINK_CLUSTER_BOOTSTRAP_SERVERS": "127.0.0.1:1"},
            "required environment variable not set: SOURCE_CLUSTER_BOOTSTRAP_SERVERS",
        ),
        (
            {
                "MIRROR_MAKER_EXTERNAL_BOOTSTRAP_SERVERS": "a:1",
                "MIRROR_MAKER_THIS_BOOTSTRAP_SERVERS": "b:1",
                "MIRROR_MAKER_EXTERNAL_CLUSTER_TYPE": "MIRROR",
            },
            "MIRROR_MAKER_EXTERNAL_CLUSTER_TYPE must be SOURCE or DESTINATION, not 'MIRROR'",
        ),
    ],
)
def test_configuration_error_exits_2_naming_the_variable(
    images: Images, env: dict[str, str], expected: str
) -> None:
    result = run_once(images.mirror, env, NO_SHELL)
    assert result.returncode == 2, result.stdout + result.stderr
    assert expected in result.stderr
    assert "Traceback" not in result.stderr


def test_render_in_the_image_masks_secrets(images: Images, secret_file: tuple[Path, str]) -> None:
    path, value = secret_file
    env = {
        "SOURCE_CLUSTER_BOOTSTRAP_SERVERS": "src:9092",
        "SINK_CLUSTER_BOOTSTRAP_SERVERS": "dst:9092",
        "SOURCE_CLUSTER_SASL_PASSWORD_FILE": SECRET_IN_CONTAINER,
        "KMIRROR_EXTRA_CONSUMER_PROPERTIES": "sasl.password=${SOURCE_CLUSTER_SASL_PASSWORD}",
    }
    mount = ["--volume", f"{path}:{SECRET_IN_CONTAINER}:ro", *NO_SHELL]
    result = run_once(
        images.mirror,
        env,
        [*mount, "--entrypoint", "/opt/kmirror/bin/kmirror"],
        ["render", "--json"],
    )
    assert result.returncode == 0, result.stderr
    assert value not in result.stdout + result.stderr
    doc = json.loads(result.stdout)
    assert doc["files"]["consumer.properties"]["properties"]["sasl.password"] == "***"
    assert doc["files"]["consumer.properties"]["properties"]["bootstrap.servers"] == "src:9092"


# --------------------------------------------------------------------------- against clusters


def test_mirrors_byte_for_byte_and_stops_on_sigterm(
    images: Images,
    clusters: Clusters,
    make_topic: Callable[..., str],
    make_group_id: Callable[..., str],
    secret_file: tuple[Path, str],
) -> None:
    """Seed variable names; `podman stop` (SIGTERM) ends it with 0 and every offset committed;
    the mounted secret is read, rendered and never printed."""
    topic = make_topic(clusters.source_bootstrap, partitions=3)
    group = make_group_id("img")
    produce(clusters.source_bootstrap, topic, records(600, 3))
    source = consume_all(clusters.source_bootstrap, topic)
    path, value = secret_file
    port = free_port()
    env = {
        "SOURCE_CLUSTER_BOOTSTRAP_SERVERS": clusters.source_bootstrap,
        "SINK_CLUSTER_BOOTSTRAP_SERVERS": clusters.target_bootstrap,
        "SOURCE_CLUSTER_CONSUMER_GROUP": group,
        "WHITELISTED_TOPICS": topic,
        "NUM_STREAMS": "2",
        "MIRROR_MAKER_OFFSET_COMMIT_INTERVAL": "1000",
        "KMIRROR_METRICS_PORT": str(port),
        "SOURCE_CLUSTER_SASL_PASSWORD_FILE": SECRET_IN_CONTAINER,
        # librdkafka ignores sasl.password on PLAINTEXT: the secret is really read and
        # rendered, so the test proves it never reaches the output.
        "KMIRROR_EXTRA_CONSUMER_PROPERTIES": "sasl.password=${SOURCE_CLUSTER_SASL_PASSWORD}",
    }
    extra = ["--volume", f"{path}:{SECRET_IN_CONTAINER}:ro", *NO_SHELL]
    with Container(images.mirror, env, extra) as container:
        wait_ready(container, port)
        wait_until(target_has(clusters, topic, len(source)), 120, 0.5, message="target caught up")
        podman("stop", "--time", "30", container.name, timeout=60)
        code, logs = container.exit_code(), container.logs()
    assert code == 0, logs
    assert contents(consume_all(clusters.target_bootstrap, topic)) == contents(source)
    assert committed(clusters, group, topic) == end_offsets(clusters.source_bootstrap, topic)
    assert value not in logs
    assert "sasl.password=***" in logs  # the masked render log
    assert "kmirror exiting code=0" in logs


def test_kudo_mode_and_sigterm_as_pid_1(
    images: Images,
    clusters: Clusters,
    make_topic: Callable[..., str],
    make_group_id: Callable[..., str],
) -> None:
    """KUDO variables (the external cluster is the source); `podman kill --signal TERM` goes
    to PID 1, which is kmirror itself, and the container exits 0 with offsets committed."""
    topic = make_topic(clusters.source_bootstrap, partitions=2)
    group = make_group_id("kudo")
    produce(clusters.source_bootstrap, topic, records(300, 2))
    source = consume_all(clusters.source_bootstrap, topic)
    env = {
        "MIRROR_MAKER_THIS_BOOTSTRAP_SERVERS": clusters.target_bootstrap,
        "MIRROR_MAKER_EXTERNAL_BOOTSTRAP_SERVERS": clusters.source_bootstrap,
        "MIRROR_MAKER_EXTERNAL_CLUSTER_TYPE": "SOURCE",
        "MIRROR_MAKER_TOPIC_WHITELIST": topic,
        "SOURCE_CLUSTER_CONSUMER_GROUP": group,
        "MIRROR_MAKER_OFFSET_COMMIT_INTERVAL": "1000",
        "KMIRROR_METRICS_PORT": "0",
        "KMIRROR_LOG_FORMAT": "json",
    }
    with Container(images.mirror, env, NO_SHELL) as container:
        wait_until(target_has(clusters, topic, len(source)), 120, 0.5, message="target caught up")
        top = podman("top", container.name, "pid", "args").stdout
        podman("kill", "--signal", "TERM", container.name)
        code, logs = container.wait(60), container.logs()
    pid1 = [line for line in top.splitlines()[1:] if line.split()[0] == "1"]
    assert pid1 and "/opt/kmirror/bin/kmirror entrypoint" in pid1[0], top
    assert code == 0, logs
    json_lines = [json.loads(line) for line in logs.splitlines() if line.startswith("{")]
    assert json_lines and all(doc["level"] and doc["message"] for doc in json_lines)
    assert contents(consume_all(clusters.target_bootstrap, topic)) == contents(source)
    assert committed(clusters, group, topic) == end_offsets(clusters.source_bootstrap, topic)
