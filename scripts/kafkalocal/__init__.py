"""Named KRaft Kafka clusters on this machine, for tests, demos and benchmarks.

One import path for everybody: ``from scripts import kafkalocal`` (tests, ``scripts/demo.py``,
``scripts/bench``); the command line is ``scripts/kafka-local`` (``cli.main``).

Each cluster is one JVM (combined broker + controller) started from the jars that
``scripts/resolve-jars kafka`` puts in the cache. Its files live in
``${KMIRROR_CACHE:-~/.cache/kmirror}/clusters/<name>/``::

    cluster.json        name, port, controller port, --set overrides (used by start/restart/env)
    cluster.id          16 random bytes, URL-safe base64 without padding
    server.properties   generated, then --set overrides applied
    log4j2.properties   console appender; stdout+stderr go to broker.log
    broker.log          appended across stop/start, truncated by a fresh start
    kafka.pid
    data/               log.dirs (KRaft metadata log included)

A multi-broker cluster (``quorum``: N such nodes named ``<name>-<id>``, RF 3,
``min.insync.replicas=2``, optionally each behind a Toxiproxy proxy) keeps its layout in
``clusters/<name>/quorum.json`` and its proxy's files beside it.

Modules: ``spec`` (names, ports, files), ``java`` (jars, java, class-data sharing), ``broker``
(one JVM: config, format, launch, kill), ``health`` (probe, status), ``lifecycle`` (up, start,
stop, down, restart), ``proxy`` (a cluster's Toxiproxy server), ``quorum`` (multi-broker
clusters), ``cli``.
"""

from scripts.kafkalocal.broker import pid_alive, read_pid, server_properties
from scripts.kafkalocal.cli import main
from scripts.kafkalocal.health import log_tail, port_open, probe, status
from scripts.kafkalocal.java import java_bin, kafka_jar_dir
from scripts.kafkalocal.lifecycle import down, restart, start, stop, stop_one, up
from scripts.kafkalocal.quorum import (
    Quorum,
    known_quorums,
    load_quorum,
    quorum_down,
    quorum_specs,
    quorum_up,
)
from scripts.kafkalocal.spec import (
    DEFAULT_CLUSTERS,
    HOST,
    RESOLVE_JARS,
    START_TIMEOUT_S,
    ClusterError,
    ClusterSpec,
    ClusterStatus,
    StartResult,
    cache_dir,
    cluster_dir,
    clusters_root,
    env_lines,
    files,
    known_clusters,
    load_spec,
)

__all__ = [
    "DEFAULT_CLUSTERS",
    "HOST",
    "RESOLVE_JARS",
    "START_TIMEOUT_S",
    "ClusterError",
    "ClusterSpec",
    "ClusterStatus",
    "Quorum",
    "StartResult",
    "cache_dir",
    "cluster_dir",
    "clusters_root",
    "down",
    "env_lines",
    "files",
    "java_bin",
    "kafka_jar_dir",
    "known_clusters",
    "known_quorums",
    "load_quorum",
    "load_spec",
    "log_tail",
    "main",
    "pid_alive",
    "port_open",
    "probe",
    "quorum_down",
    "quorum_specs",
    "quorum_up",
    "read_pid",
    "restart",
    "server_properties",
    "start",
    "status",
    "stop",
    "stop_one",
    "up",
]
