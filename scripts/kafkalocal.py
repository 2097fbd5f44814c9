"""Named KRaft Kafka clusters on this machine, for tests, demos and benchmarks: single-node by
default, or `--nodes N` brokers in one quorum (quorum_specs).

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

The CLI is ``scripts/kafka-local``; tests import this module (``tests/conftest.py``).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import json
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

REPO_ROOT = Path(__file__).resolve().parent.parent
RESOLVE_JARS = REPO_ROOT / "scripts" / "resolve-jars"

HOST = "127.0.0.1"
DEFAULT_CLUSTERS: dict[str, int] = {"source": 19092, "target": 29092}
START_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 20.0
LOG_TAIL_LINES = 40
JVM_HEAP = ["-Xms256m", "-Xmx512m"]

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")

# librdkafka logs every refused connection while a broker starts; keep probes quiet.
_QUIET = logging.getLogger("kafkalocal.librdkafka")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False

# Brokers started by this process: kept so they can be reaped (no zombies, no ResourceWarning).
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}

LOG4J2_PROPERTIES = """\
# Written by kafka-local. Console only: the process's stdout/stderr go to broker.log.
status = warn
name = kafka-local
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.statechange.name = state.change.logger
logger.statechange.level = WARN
logger.requestchannel.name = kafka.network.RequestChannel$
logger.requestchannel.level = WARN
"""


class ClusterError(RuntimeError):
    """A cluster could not be started, stopped or found."""


@dataclass(frozen=True)
class ClusterSpec:
    """What a cluster should look like: name, client port and server.properties overrides."""

    name: str
    port: int
    overrides: dict[str, str] = field(default_factory=dict, hash=False)
    # The id a fresh data directory is formatted with (nodes of one quorum share it); None: new.
    cluster_id: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not _NAME_RE.match(self.name):
            raise ClusterError(f"invalid cluster name {self.name!r}")
        if not 1024 <= self.port <= 65534:
            raise ClusterError(f"{self.name}: port {self.port} out of range")

    @property
    def controller_port(self) -> int:
        return self.port + 1

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.port}"


@dataclass(frozen=True)
class ClusterStatus:
    name: str
    bootstrap: str
    pid: int | None
    running: bool
    healthy: bool
    cluster_id: str | None

    @property
    def state(self) -> str:
        if self.healthy:
            return "healthy"
        if self.running:
            return "running (not answering)"
        return "stopped"


@dataclass(frozen=True)
class StartResult:
    name: str
    bootstrap: str
    pid: int
    cluster_id: str
    seconds: float
    reused: bool


# --------------------------------------------------------------------------- paths


def cache_dir() -> Path:
    return Path(os.environ.get("KMIRROR_CACHE") or Path.home() / ".cache" / "kmirror")


def clusters_root() -> Path:
    return cache_dir() / "clusters"


def cluster_dir(name: str) -> Path:
    return clusters_root() / name


def _files(name: str) -> dict[str, Path]:
    d = cluster_dir(name)
    return {
        "meta": d / "cluster.json",
        "id": d / "cluster.id",
        "props": d / "server.properties",
        "log4j": d / "log4j2.properties",
        "log": d / "broker.log",
        "pid": d / "kafka.pid",
        "data": d / "data",
    }


def known_clusters() -> list[str]:
    """Names with a cluster.json or a pid file under the clusters directory."""
    root = clusters_root()
    if not root.is_dir():
        return []
    return sorted(
        p.name
        for p in root.iterdir()
        if p.is_dir() and ((p / "cluster.json").exists() or (p / "kafka.pid").exists())
    )


def load_spec(name: str) -> ClusterSpec:
    """The spec a cluster was last started with (defaults for source/target)."""
    meta = _files(name)["meta"]
    if meta.exists():
        raw = json.loads(meta.read_text())
        return ClusterSpec(raw["name"], int(raw["port"]), dict(raw.get("overrides", {})))
    if name in DEFAULT_CLUSTERS:
        return ClusterSpec(name, DEFAULT_CLUSTERS[name])
    raise ClusterError(f"unknown cluster {name!r} (no {meta})")


def _save_spec(spec: ClusterSpec) -> None:
    meta = {
        "name": spec.name,
        "host": HOST,
        "port": spec.port,
        "controller_port": spec.controller_port,
        "overrides": spec.overrides,
    }
    _files(spec.name)["meta"].write_text(json.dumps(meta, indent=2) + "\n")


# --------------------------------------------------------------------------- java


def kafka_jar_dir() -> Path:
    """The resolved Kafka jar directory (runs resolve-jars; milliseconds when warm)."""
    env = os.environ.get("KMIRROR_KAFKA_JARS")
    if env:
        return Path(env)
    proc = subprocess.run(
        [str(RESOLVE_JARS), "--print-dir", "kafka"],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise ClusterError(f"resolve-jars kafka failed:\n{proc.stderr.strip()}")
    return Path(proc.stdout.strip().splitlines()[-1])


def java_bin() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise ClusterError("java not found (Kafka 4 needs Java 17+)")
    return found


def new_cluster_id() -> str:
    """16 random bytes, URL-safe base64 without padding; never starting with '-' (a command
    line would take it for an option; Kafka's Uuid.randomUuid() skips those too)."""
    while True:
        cid = base64.urlsafe_b64encode(os.urandom(16)).rstrip(b"=").decode()
        if not cid.startswith("-"):
            return cid


# --------------------------------------------------------------------------- class-data sharing
#
# Under load a Kafka JVM spends most of its start-up loading classes. An AppCDS archive of the
# classes a previous run loaded halves that (measured: 10 s -> 5.5 s on 2 busy cores). The first
# JVM of a kind dumps one at exit (-XX:ArchiveClassesAtExit, written on a clean exit only); later
# ones map it (-XX:SharedArchiveFile). The name is keyed on the JVM and the jar set, and a JVM
# that finds the archive unusable just starts without it (-Xshare:auto). KMIRROR_KAFKA_CDS=0
# turns this off.


def _cds_enabled() -> bool:
    return os.environ.get("KMIRROR_KAFKA_CDS", "1") not in ("0", "false", "no", "")


def _cds_archive(kind: str, jars: Path) -> Path:
    java = Path(java_bin()).resolve()
    libjvm = next(iter(java.parent.parent.glob("lib/server/libjvm.so")), java)
    stamp = jars / ".stamp"
    key_src = "|".join(
        [
            str(java),
            str(libjvm.stat().st_mtime_ns),
            str(jars.resolve()),
            stamp.read_text().strip() if stamp.exists() else "",
        ]
    )
    key = hashlib.sha256(key_src.encode()).hexdigest()[:16]
    return cache_dir() / "cds" / f"{kind}-{key}.jsa"


def _cds_args(kind: str, jars: Path, owner: str) -> tuple[list[str], Path | None]:
    """JVM flags for CDS and, when this JVM is to dump the archive, its temporary path."""
    if not _cds_enabled():
        return [], None
    archive = _cds_archive(kind, jars)
    if archive.exists():
        return [f"-XX:SharedArchiveFile={archive}"], None
    archive.parent.mkdir(parents=True, exist_ok=True)
    for stale in archive.parent.glob(f"{archive.name}.{owner}.*.tmp"):
        stale.unlink(missing_ok=True)  # left by a JVM that never exited cleanly
    tmp = archive.with_name(f"{archive.name}.{owner}.{os.getpid()}.tmp")
    return [f"-XX:ArchiveClassesAtExit={tmp}"], tmp


def _cds_publish(tmp: Path | None) -> None:
    """Move a dumped archive into place (first one wins); drop it if incomplete."""
    if tmp is None:
        return
    final = tmp.with_name(tmp.name.split(".jsa.", 1)[0] + ".jsa")
    if tmp.exists() and tmp.stat().st_size > 0 and not final.exists():
        os.replace(tmp, final)
    tmp.unlink(missing_ok=True)


def _cds_pending_file(name: str) -> Path:
    return cluster_dir(name) / "cds-pending"


def server_properties(spec: ClusterSpec, data_dir: Path) -> dict[str, str]:
    """Single node, combined broker+controller; every replication factor / min ISR at 1."""
    props = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@{HOST}:{spec.controller_port}",
        "listeners": f"PLAINTEXT://{HOST}:{spec.port},CONTROLLER://{HOST}:{spec.controller_port}",
        "advertised.listeners": f"PLAINTEXT://{HOST}:{spec.port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": str(data_dir),
        "num.partitions": "1",
        "default.replication.factor": "1",
        "min.insync.replicas": "1",
        "offsets.topic.replication.factor": "1",
        # 50 partitions by default: creating them on first group use costs seconds on 2 cores.
        "offsets.topic.num.partitions": "10",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "10",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
    }
    props.update(spec.overrides)  # --set wins, new keys are appended
    return props


def _write_config(spec: ClusterSpec) -> None:
    f = _files(spec.name)
    props = server_properties(spec, f["data"])
    lines = [f"# Written by kafka-local for cluster {spec.name!r}; --set overrides applied."]
    lines += [f"{k}={v}" for k, v in props.items()]
    f["props"].write_text("\n".join(lines) + "\n")
    f["log4j"].write_text(LOG4J2_PROPERTIES)
    _save_spec(spec)


def _format_storage(spec: ClusterSpec, jars: Path, cluster_id: str) -> None:
    f = _files(spec.name)
    cds, dump = _cds_args("storage-tool", jars, spec.name)
    cmd = [
        java_bin(),
        "-Xmx256m",
        "-XX:TieredStopAtLevel=1",  # a short-lived tool: start fast, peak speed irrelevant
        *cds,
        f"-Dlog4j2.configurationFile={f['log4j']}",
        "-cp",
        f"{jars}/*",
        "kafka.tools.StorageTool",
        "format",
        f"--cluster-id={cluster_id}",
        f"--config={f['props']}",
        "--ignore-formatted",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    _cds_publish(dump if proc.returncode == 0 else None)
    if dump is not None and proc.returncode != 0:
        dump.unlink(missing_ok=True)
    if proc.returncode != 0:
        out = (proc.stdout + proc.stderr).strip().splitlines()[-LOG_TAIL_LINES:]
        raise ClusterError(f"{spec.name}: StorageTool format failed:\n" + "\n".join(out))


def _launch(spec: ClusterSpec, jars: Path, truncate_log: bool) -> int:
    f = _files(spec.name)
    cds, dump = _cds_args("broker", jars, spec.name)
    pending = _cds_pending_file(spec.name)
    if dump is not None:
        pending.write_text(f"{dump}\n")  # published by stop_one after a clean exit
    else:
        pending.unlink(missing_ok=True)
    cmd = [
        java_bin(),
        *JVM_HEAP,
        *cds,
        "-XX:+ExitOnOutOfMemoryError",
        "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile={f['log4j']}",
        "-cp",
        f"{jars}/*",
        "kafka.Kafka",
        str(f["props"]),
    ]
    with open(f["log"], "wb" if truncate_log else "ab") as log:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        log.write(f"=== kafka-local: starting {spec.name} at {stamp} ===\n".encode())
        log.flush()
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=cluster_dir(spec.name),
            start_new_session=True,  # outlives the CLI; Ctrl-C in a shell does not reach it
        )
    _CHILDREN[proc.pid] = proc
    f["pid"].write_text(f"{proc.pid}\n")
    return proc.pid


# --------------------------------------------------------------------------- probing


def read_pid(name: str) -> int | None:
    try:
        return int(_files(name)["pid"].read_text().strip())
    except (OSError, ValueError):
        return None


def pid_alive(pid: int, name: str) -> bool:
    """True if pid is a live (not zombie) kafka.Kafka JVM of this cluster."""
    child = _CHILDREN.get(pid)
    if child is not None:
        # Our own child: waitpid is the truth (and /proc/<pid>/cmdline reads empty for a moment
        # right after exec, before the kernel has laid out the new argv).
        if child.poll() is None:
            return True
        _CHILDREN.pop(pid, None)
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    if stat.rsplit(")", 1)[-1].split()[0] in ("Z", "X"):
        return False
    props = str(_files(name)["props"]).encode()
    return b"kafka.Kafka" in cmdline and props in cmdline


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


def _stored_cluster_id(name: str) -> str | None:
    try:
        return _files(name)["id"].read_text().strip() or None
    except OSError:
        return None


def status(name: str, probe_timeout: float = 3.0) -> ClusterStatus:
    spec = load_spec(name)
    pid = read_pid(name)
    running = pid is not None and pid_alive(pid, name)
    cid = probe(spec.bootstrap, probe_timeout) if running and port_open(spec.port) else None
    healthy = cid is not None and cid == _stored_cluster_id(name)
    return ClusterStatus(name, spec.bootstrap, pid if running else None, running, healthy, cid)


def log_tail(name: str, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = _files(name)["log"].read_text(errors="replace")
    except OSError:
        return "(no broker.log)"
    return "\n".join(text.splitlines()[-lines:])


# --------------------------------------------------------------------------- start / stop


def _wait_healthy(spec: ClusterSpec, pid: int, cluster_id: str, deadline: float) -> None:
    t0 = time.monotonic()
    while True:
        if not pid_alive(pid, spec.name):
            raise ClusterError(
                f"{spec.name}: broker (pid {pid}) exited during start-up; last lines of "
                f"{_files(spec.name)['log']}:\n{log_tail(spec.name)}"
            )
        remaining = deadline - time.monotonic()
        if port_open(spec.port) and probe(spec.bootstrap, max(0.5, min(5.0, remaining))) == (
            cluster_id
        ):
            return
        if time.monotonic() >= deadline:
            _kill(pid, spec.name, STOP_TIMEOUT_S)
            raise ClusterError(
                f"{spec.name}: not healthy at {spec.bootstrap} after {time.monotonic() - t0:.0f}s "
                f"(killed pid {pid}); last lines of {_files(spec.name)['log']}:\n"
                f"{log_tail(spec.name)}"
            )
        time.sleep(0.25)


def _start_one(spec: ClusterSpec, fresh: bool, timeout: float) -> StartResult:
    t0 = time.monotonic()
    deadline = t0 + timeout
    f = _files(spec.name)
    pid = read_pid(spec.name)
    if pid is not None and pid_alive(pid, spec.name):
        current = load_spec(spec.name)
        if current.port != spec.port:
            raise ClusterError(
                f"{spec.name}: already running on port {current.port} (pid {pid}); "
                f"`kafka-local down {spec.name}` first"
            )
        if spec.overrides and spec.overrides != current.overrides:
            print(
                f"{spec.name}: already running; --set ignored (restart to apply)",
                file=sys.stderr,
            )
        running_id = _stored_cluster_id(spec.name) or ""
        _wait_healthy(current, pid, running_id, deadline)
        took = time.monotonic() - t0
        return StartResult(spec.name, spec.bootstrap, pid, running_id, took, True)

    for port in (spec.port, spec.controller_port):
        if port_open(port):
            raise ClusterError(f"{spec.name}: port {port} is already in use by another process")

    cluster_dir(spec.name).mkdir(parents=True, exist_ok=True)
    f["pid"].unlink(missing_ok=True)
    cid = _stored_cluster_id(spec.name)
    new_data = fresh or cid is None or not (f["data"] / "meta.properties").exists()
    if new_data:
        shutil.rmtree(f["data"], ignore_errors=True)
        cid = spec.cluster_id or new_cluster_id()
        f["id"].write_text(cid + "\n")
    assert cid is not None
    f["data"].mkdir(exist_ok=True)
    _write_config(spec)
    jars = kafka_jar_dir()
    if new_data:
        _format_storage(spec, jars, cid)
    t_format = time.monotonic() - t0
    pid = _launch(spec, jars, truncate_log=new_data)
    _wait_healthy(spec, pid, cid, deadline)
    took = time.monotonic() - t0
    detail = f"format {t_format:.1f}s, new data" if new_data else "existing data"
    print(
        f"{spec.name}: healthy at {spec.bootstrap} (pid {pid}, cluster id {cid}) "
        f"in {took:.1f}s ({detail})"
    )
    return StartResult(spec.name, spec.bootstrap, pid, cid, took, False)


def _start_many(
    specs: Sequence[ClusterSpec], fresh: bool, timeout: float
) -> dict[str, StartResult]:
    if not specs:
        return {}
    t0 = time.monotonic()
    errors: list[str] = []
    results: dict[str, StartResult] = {}
    with ThreadPoolExecutor(max_workers=len(specs)) as pool:
        futures = {s.name: pool.submit(_start_one, s, fresh, timeout) for s in specs}
        for name, fut in futures.items():
            try:
                results[name] = fut.result()
            except ClusterError as exc:
                errors.append(str(exc))
    if errors:
        raise ClusterError("\n\n".join(errors))
    for r in results.values():
        if r.reused:
            print(f"{r.name}: already running and healthy at {r.bootstrap} (pid {r.pid}), reused")
    started = [r for r in results.values() if not r.reused]
    if len(started) > 1:
        print(f"started {len(started)} clusters in {time.monotonic() - t0:.1f}s")
    return results


def up(
    specs: Iterable[ClusterSpec] | None = None,
    *,
    fresh: bool = False,
    timeout: float = START_TIMEOUT_S,
) -> dict[str, StartResult]:
    """Start clusters in parallel (default: source and target) and wait until each answers.

    A running healthy cluster is reused. Otherwise existing data is reused unless ``fresh``.
    Raises ClusterError (with the last log lines) if any is not healthy within ``timeout``.
    """
    if specs is None:
        specs = [ClusterSpec(n, p) for n, p in DEFAULT_CLUSTERS.items()]
    specs = list(specs)
    ports: dict[int, str] = {}
    for s in specs:
        for p in (s.port, s.controller_port):
            if p in ports:
                raise ClusterError(f"port {p} used by both {ports[p]} and {s.name}")
            ports[p] = s.name
    return _start_many(specs, fresh, timeout)


def quorum_specs(name: str, port: int, nodes: int) -> list[ClusterSpec]:
    """A cluster of `nodes` brokers, each also a controller voter: nodes `<name>-1..N` on client
    ports port, port+2, ... (controllers +1). Start them together with up(..., fresh=True): a
    node answers only once a majority of voters runs. The bootstrap is every node's address."""
    if nodes < 1:
        raise ClusterError(f"{name}: nodes must be >= 1")
    cid = new_cluster_id()
    specs = [ClusterSpec(f"{name}-{i + 1}", port + 2 * i) for i in range(nodes)]
    voters = ",".join(f"{i + 1}@{HOST}:{s.controller_port}" for i, s in enumerate(specs))
    return [
        ClusterSpec(
            s.name,
            s.port,
            {"node.id": str(i + 1), "controller.quorum.voters": voters},
            cluster_id=cid,
        )
        for i, s in enumerate(specs)
    ]


def start(names: Iterable[str], timeout: float = START_TIMEOUT_S) -> dict[str, StartResult]:
    """Start stopped clusters with their existing data and settings; wait until healthy."""
    return _start_many([load_spec(n) for n in names], False, timeout)


def _kill(pid: int, name: str, timeout: float) -> bool:
    """SIGTERM, wait up to timeout, then SIGKILL (at once if timeout <= 0). True if killed."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM if timeout > 0 else signal.SIGKILL)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid, name):
            break
        time.sleep(0.1)
    else:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        kill_deadline = time.monotonic() + 10
        while pid_alive(pid, name) and time.monotonic() < kill_deadline:
            time.sleep(0.05)
        _reap(pid)
        return True
    _reap(pid)
    return False


def _reap(pid: int) -> None:
    child = _CHILDREN.pop(pid, None)
    if child is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=5)


def stop_one(name: str, keep: bool = True, timeout: float = STOP_TIMEOUT_S) -> str:
    """Stop one cluster; remove its data unless keep. Returns a one-line summary."""
    f = _files(name)
    pid = read_pid(name)
    t0 = time.monotonic()
    clean_exit = False
    if pid is not None and pid_alive(pid, name):
        killed = _kill(pid, name, timeout)
        clean_exit = not killed
        how = "killed (SIGKILL)" if killed else "stopped"
        msg = f"{name}: {how} pid {pid} in {time.monotonic() - t0:.1f}s"
    else:
        msg = f"{name}: not running"
    f["pid"].unlink(missing_ok=True)
    pending = _cds_pending_file(name)
    if pending.exists():
        tmp = Path(pending.read_text().strip())
        if clean_exit:
            _cds_publish(tmp)
        else:
            tmp.unlink(missing_ok=True)  # no clean exit seen: the dump may be incomplete
        pending.unlink(missing_ok=True)
    if not keep:
        shutil.rmtree(f["data"], ignore_errors=True)
        for key in ("id", "meta", "props", "log4j"):
            f[key].unlink(missing_ok=True)
        msg += ", data removed"
    return msg


def stop(names: Iterable[str], keep: bool = True, timeout: float = STOP_TIMEOUT_S) -> list[str]:
    """Stop clusters in parallel (SIGTERM, then SIGKILL after timeout)."""
    names = list(names)
    if not names:
        return []
    with ThreadPoolExecutor(max_workers=len(names)) as pool:
        return list(pool.map(lambda n: stop_one(n, keep, timeout), names))


def down(names: Iterable[str] | None = None, keep: bool = False) -> list[str]:
    """Stop clusters (default: every known one) and remove their data unless keep."""
    return stop(known_clusters() if names is None else names, keep=keep)


def restart(names: Iterable[str], timeout: float = START_TIMEOUT_S) -> dict[str, StartResult]:
    names = list(names)
    for line in stop(names, keep=True):
        print(line)
    return start(names, timeout)


def env_lines(names: Iterable[str] | None = None) -> list[str]:
    wanted = list(names) if names else [*DEFAULT_CLUSTERS, *known_clusters()]
    seen: set[str] = set()
    out = []
    for n in wanted:
        if n in seen:
            continue
        seen.add(n)
        var = re.sub(r"[^A-Z0-9]", "_", n.upper())
        out.append(f"KMIRROR_{var}_BOOTSTRAP={load_spec(n).bootstrap}")
    return out


# --------------------------------------------------------------------------- CLI


def _parse_clusters(items: Sequence[str] | None) -> dict[str, int]:
    if not items:
        return dict(DEFAULT_CLUSTERS)
    out: dict[str, int] = {}
    for item in items:
        name, sep, port = item.partition("=")
        if not sep or not port.isdigit():
            raise ClusterError(f"--cluster wants NAME=PORT, got {item!r}")
        out[name] = int(port)
    return out


def _parse_sets(items: Sequence[str] | None, names: Iterable[str]) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {n: {} for n in names}
    for item in items or []:
        name, sep, kv = item.partition(":")
        key, sep2, value = kv.partition("=")
        if not sep or not sep2 or not key:
            raise ClusterError(f"--set wants NAME:key=value, got {item!r}")
        if name not in out:
            raise ClusterError(f"--set {item!r}: no cluster named {name!r} in this command")
        out[name][key.strip()] = value.strip()
    return out


def _print_status(names: Sequence[str]) -> None:
    rows = [status(n) for n in names]
    print(f"{'NAME':<12} {'BOOTSTRAP':<18} {'PID':>8}  STATE")
    for r in rows:
        pid = str(r.pid) if r.pid else "-"
        print(f"{r.name:<12} {r.bootstrap:<18} {pid:>8}  {r.state}")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="kafka-local",
        description="Start/stop named KRaft Kafka clusters (single-node or --nodes N) on 127.0.0.1",
    )
    sub = p.add_subparsers(dest="cmd", required=True)

    up_p = sub.add_parser("up", help="start clusters (default: source=19092, target=29092)")
    up_p.add_argument(
        "--cluster",
        action="append",
        metavar="NAME=PORT",
        help="a cluster and its client port (controller: PORT+1); repeatable",
    )
    up_p.add_argument(
        "--set",
        action="append",
        metavar="NAME:key=value",
        help="server.properties override for one cluster; repeatable",
    )
    up_p.add_argument("--fresh", action="store_true", help="wipe existing data first")
    up_p.add_argument(
        "--nodes",
        type=int,
        default=1,
        help="brokers per cluster (>1: nodes NAME-1..N on ports PORT, PORT+2, ...; fresh data)",
    )
    up_p.add_argument("--timeout", type=float, default=START_TIMEOUT_S)

    down_p = sub.add_parser("down", help="stop clusters and remove their data")
    down_p.add_argument("--keep", action="store_true", help="keep the data")
    down_p.add_argument("names", nargs="*", metavar="NAME")

    sub.add_parser("status", help="name, bootstrap, pid and health of each cluster")

    for cmd, text in (
        ("restart", "stop (keeping data) and start again"),
        ("start", "start with existing data and settings"),
        ("stop", "stop, keeping data"),
    ):
        sp = sub.add_parser(cmd, help=text)
        sp.add_argument("names", nargs="+", metavar="NAME")
        if cmd != "stop":
            sp.add_argument("--timeout", type=float, default=START_TIMEOUT_S)

    env_p = sub.add_parser("env", help="print KMIRROR_<NAME>_BOOTSTRAP=... lines")
    env_p.add_argument("names", nargs="*", metavar="NAME")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args: Any = build_parser().parse_args(argv)
    try:
        if args.cmd == "up":
            ports = _parse_clusters(args.cluster)
            sets = _parse_sets(args.set, ports)
            if args.nodes > 1:
                specs = [s for n, p in ports.items() for s in quorum_specs(n, p, args.nodes)]
                up(specs, fresh=True, timeout=args.timeout)
            else:
                specs = [ClusterSpec(n, p, sets[n]) for n, p in ports.items()]
                up(specs, fresh=args.fresh, timeout=args.timeout)
        elif args.cmd == "down":
            names = args.names or known_clusters()
            if not names:
                print("no clusters")
            for line in down(names, keep=args.keep):
                print(line)
        elif args.cmd == "status":
            names = known_clusters()
            if names:
                _print_status(names)
            else:
                print(f"no clusters under {clusters_root()}")
        elif args.cmd == "restart":
            restart(args.names, args.timeout)
        elif args.cmd == "start":
            start(args.names, args.timeout)
        elif args.cmd == "stop":
            for line in stop(args.names, keep=True):
                print(line)
        elif args.cmd == "env":
            print("\n".join(env_lines(args.names)))
    except ClusterError as exc:
        print(f"kafka-local: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
