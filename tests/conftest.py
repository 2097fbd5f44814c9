"""Shared fixtures: the two local Kafka clusters, unique names and throw-away topics.

Clusters come from ``KMIRROR_SOURCE_BOOTSTRAP`` / ``KMIRROR_TARGET_BOOTSTRAP`` when both are set
(``scripts/kafka-local env`` prints them for the clusters it runs); otherwise the first test that
asks for ``clusters`` starts ``source`` (127.0.0.1:19092) and ``target`` (127.0.0.1:29092) with
scripts.kafkalocal (or the pair ``KMIRROR_LOCAL_CLUSTERS`` names), and the session stops them at
its end (atexit as a backstop). Tests that need
no broker start nothing.
"""

from __future__ import annotations

import atexit
import contextlib
import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from scripts import kafkalocal
from tests import prebuild
from tests.aclclusters import acl_clusters  # noqa: F401 - session fixture
from tests.kafkatools import Clusters, create_topic, delete_topic, unique
from tests.schemaregistry import schema_registries  # noqa: F401 - session fixture
from tests.securecluster import secure_cluster  # noqa: F401 - session fixture


def _late(item: pytest.Item) -> int:
    """0 for most tests; 1 for the image tests, 2 for the k8s tests: they run last, so the
    builds started below have the rest of the run to use the CPU the other tests leave idle."""
    if item.get_closest_marker("k8s") is not None:
        return 2
    return 1 if item.get_closest_marker("image") is not None else 0


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_late)  # stable: the order within each part stays


def pytest_collection_finish(session: pytest.Session) -> None:
    if session.config.option.collectonly:
        return
    late = {_late(i) for i in session.items}
    if late & {1, 2}:  # the k8s tests push the images
        prebuild.IMAGES.start()
    if 2 in late and os.geteuid() == 0:
        prebuild.KUBERNETES.start()


def pytest_sessionfinish() -> None:
    prebuild.KUBERNETES.stop()
    prebuild.IMAGES.stop()


def _local_name_for(bootstrap: str) -> str | None:
    """The kafka-local cluster serving bootstrap on this machine, if any."""
    for name in kafkalocal.known_clusters():
        with contextlib.suppress(Exception):
            if kafkalocal.load_spec(name).bootstrap == bootstrap:
                return str(name)
    return None


def _running(name: str) -> bool:
    pid = kafkalocal.read_pid(name)
    return pid is not None and bool(kafkalocal.pid_alive(pid, name))


def _local_pair() -> dict[str, int]:
    """The pair this session starts: `source` and `target` unless KMIRROR_LOCAL_CLUSTERS names
    another (`SOURCE=PORT,TARGET=PORT`: make test runs two sessions side by side, each with a
    pair of its own; scripts/run-tests)."""
    given = os.environ.get("KMIRROR_LOCAL_CLUSTERS")
    if not given:
        return dict(kafkalocal.DEFAULT_CLUSTERS)
    pair = {}
    for item in given.split(","):
        name, _, port = item.strip().partition("=")
        if not name or not port.isdigit():
            raise pytest.UsageError(
                f"KMIRROR_LOCAL_CLUSTERS={given!r}: want SOURCE=PORT,TARGET=PORT"
            )
        pair[name] = int(port)
    if len(pair) != 2:
        raise pytest.UsageError(f"KMIRROR_LOCAL_CLUSTERS={given!r}: want two clusters")
    return pair


@pytest.fixture(scope="session")
def clusters() -> Iterator[Clusters]:
    """The source and target clusters (started on first use unless given by the environment)."""
    src = os.environ.get("KMIRROR_SOURCE_BOOTSTRAP")
    tgt = os.environ.get("KMIRROR_TARGET_BOOTSTRAP")
    if src and tgt:
        src_name = _local_name_for(src)
        tgt_name = _local_name_for(tgt)
        managed = src_name is not None and tgt_name is not None
        yield Clusters(src, tgt, src_name or "source", tgt_name or "target", managed)
        return

    pair = _local_pair()
    names = list(pair)
    specs = [kafkalocal.ClusterSpec(n, port) for n, port in pair.items()]
    # Stop only what this session starts; a cluster someone left running stays running.
    ours = [n for n in names if not _running(n)]

    def stop_ours() -> None:
        if ours:
            for line in kafkalocal.down(list(ours), keep=False):
                print(f"[clusters] {line}")
            ours.clear()

    atexit.register(stop_ours)
    try:
        results = kafkalocal.up(specs, fresh=True)
    except kafkalocal.ClusterError as exc:
        stop_ours()
        pytest.fail(f"could not start the local Kafka clusters:\n{exc}", pytrace=False)
    try:
        yield Clusters(
            results[names[0]].bootstrap,
            results[names[1]].bootstrap,
            names[0],
            names[1],
            managed=True,
        )
    finally:
        stop_ours()


class KafkaLocal:
    """Stop/start/restart the local clusters from a test; stopped ones restart at teardown."""

    def __init__(self, clusters: Clusters) -> None:
        self._aliases = {
            "source": clusters.source_name,
            "target": clusters.target_name,
            clusters.source_name: clusters.source_name,
            clusters.target_name: clusters.target_name,
        }
        self._stopped: set[str] = set()

    def _name(self, name: str) -> str:
        try:
            return self._aliases[name]
        except KeyError:
            raise ValueError(f"unknown cluster {name!r}; use 'source' or 'target'") from None

    def stop(self, name: str) -> None:
        """Stop a cluster, keeping its data (SIGTERM, SIGKILL after 20 s)."""
        n = self._name(name)
        kafkalocal.stop([n], keep=True)
        self._stopped.add(n)

    def kill(self, name: str) -> None:
        """Stop a cluster without a clean shutdown (SIGKILL at once)."""
        n = self._name(name)
        kafkalocal.stop([n], keep=True, timeout=0)
        self._stopped.add(n)

    def start(self, name: str, timeout: float = 90.0) -> None:
        """Start a stopped cluster with its data; returns when it answers metadata requests."""
        n = self._name(name)
        kafkalocal.start([n], timeout)
        self._stopped.discard(n)

    def restart(self, name: str, timeout: float = 90.0) -> None:
        n = self._name(name)
        kafkalocal.stop([n], keep=True)
        self._stopped.add(n)
        self.start(n, timeout)

    def is_healthy(self, name: str) -> bool:
        return bool(kafkalocal.status(self._name(name)).healthy)

    def restore(self) -> None:
        for n in sorted(self._stopped):
            kafkalocal.start([n])
        self._stopped.clear()


@pytest.fixture
def kafka_local(clusters: Clusters) -> Iterator[KafkaLocal]:
    """Fault injection on the local clusters: stop/start/restart/kill. Any cluster a test left
    stopped is started again at teardown, so one failing test cannot take the rest down."""
    if not clusters.managed:
        pytest.skip(
            "fault tests need clusters run by scripts/kafka-local on this machine; "
            f"{clusters.source_bootstrap} / {clusters.target_bootstrap} (from "
            "KMIRROR_*_BOOTSTRAP) are not"
        )
    control = KafkaLocal(clusters)
    try:
        yield control
    finally:
        control.restore()


@pytest.fixture
def unique_name() -> Callable[..., str]:
    """unique_name(prefix="t") -> "prefix-<12 hex>"."""
    return unique


@pytest.fixture
def make_group_id() -> Callable[..., str]:
    """make_group_id(prefix="g") -> a consumer group id no other test uses."""

    def make(prefix: str = "g") -> str:
        return unique(prefix)

    return make


MakeTopic = Callable[..., str]


@pytest.fixture
def make_topic() -> Iterator[MakeTopic]:
    """make_topic(bootstrap, name=None, partitions=1, config=None) -> name.

    Creates the topic, waits until metadata shows it, and deletes it after the test
    (set KMIRROR_KEEP_TOPICS=1 to keep them for a post-mortem).
    """
    created: list[tuple[str, str]] = []

    def make(
        bootstrap: str,
        name: str | None = None,
        partitions: int = 1,
        config: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> str:
        topic = name or unique("topic")
        create_topic(bootstrap, topic, partitions, config, **kwargs)
        created.append((bootstrap, topic))
        return topic

    yield make
    if os.environ.get("KMIRROR_KEEP_TOPICS"):
        return
    for bootstrap, topic in created:
        with contextlib.suppress(Exception):
            delete_topic(bootstrap, topic, timeout=10, wait=False)
