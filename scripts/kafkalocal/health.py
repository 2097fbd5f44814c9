"""Is a cluster up: its port, a metadata request, its status and the tail of its log."""

from __future__ import annotations

import contextlib
import logging
import socket
import time
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from scripts.kafkalocal.broker import kill, pid_alive, read_pid
from scripts.kafkalocal.spec import (
    HOST,
    LOG_TAIL_LINES,
    STOP_TIMEOUT_S,
    ClusterError,
    ClusterSpec,
    ClusterStatus,
    files,
    load_spec,
    stored_cluster_id,
)

# librdkafka logs every refused connection while a broker starts; keep probes quiet.
_QUIET = logging.getLogger("kafkalocal.librdkafka")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False


def port_open(port: int, host: str = HOST) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.5):
        return True
    return False


def probe(bootstrap: str, timeout: float = 5.0) -> str | None:
    """The cluster id if a broker at bootstrap answers a metadata request, else None."""
    conf: dict[str, Any] = {"bootstrap.servers": bootstrap, "logger": _QUIET}
    admin = AdminClient(conf)
    try:
        md = admin.list_topics(timeout=timeout)
    except KafkaException:
        return None
    if not md.brokers:
        return None
    return str(md.cluster_id) if md.cluster_id else None


def under_replicated(bootstrap: str, timeout: float = 5.0) -> list[str]:
    """Partitions (internal topics included) whose in-sync replicas are fewer than their
    replicas, as "topic[partition]"; raises ClusterError when the cluster does not answer."""
    conf: dict[str, Any] = {"bootstrap.servers": bootstrap, "logger": _QUIET}
    try:
        md = AdminClient(conf).list_topics(timeout=timeout)
    except KafkaException as exc:
        raise ClusterError(f"no metadata from {bootstrap}: {exc}") from exc
    return [
        f"{name}[{p.id}]"
        for name, t in md.topics.items()
        for p in t.partitions.values()
        if len(p.isrs) < len(p.replicas)
    ]


def status(name: str, probe_timeout: float = 3.0) -> ClusterStatus:
    spec = load_spec(name)
    pid = read_pid(name)
    running = pid is not None and pid_alive(pid, name)
    cid = probe(spec.bootstrap, probe_timeout) if running and port_open(spec.port) else None
    healthy = cid is not None and cid == stored_cluster_id(name)
    return ClusterStatus(name, spec.bootstrap, pid if running else None, running, healthy, cid)


def log_tail(name: str, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = files(name)["log"].read_text(errors="replace")
    except OSError:
        return "(no broker.log)"
    return "\n".join(text.splitlines()[-lines:])


def wait_healthy(spec: ClusterSpec, pid: int, cluster_id: str, deadline: float) -> None:
    """Return once the broker answers with its own cluster id; kill it and raise otherwise."""
    t0 = time.monotonic()
    while True:
        if not pid_alive(pid, spec.name):
            raise ClusterError(
                f"{spec.name}: broker (pid {pid}) exited during start-up; last lines of "
                f"{files(spec.name)['log']}:\n{log_tail(spec.name)}"
            )
        remaining = deadline - time.monotonic()
        if port_open(spec.port) and probe(spec.bootstrap, max(0.5, min(5.0, remaining))) == (
            cluster_id
        ):
            return
        if time.monotonic() >= deadline:
            kill(pid, spec.name, STOP_TIMEOUT_S)
            raise ClusterError(
                f"{spec.name}: not healthy at {spec.bootstrap} after {time.monotonic() - t0:.0f}s "
                f"(killed pid {pid}); last lines of {files(spec.name)['log']}:\n"
                f"{log_tail(spec.name)}"
            )
        time.sleep(0.25)
