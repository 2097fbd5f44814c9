"""One broker JVM: its generated files, storage format, launch, liveness and kill."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

from scripts.kafkalocal.java import cds_args, cds_pending_file, cds_publish, java_bin
from scripts.kafkalocal.spec import (
    HOST,
    LOG_TAIL_LINES,
    ClusterError,
    ClusterSpec,
    cluster_dir,
    files,
    save_spec,
)

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


def write_config(spec: ClusterSpec) -> None:
    f = files(spec.name)
    props = server_properties(spec, f["data"])
    lines = [f"# Written by kafka-local for cluster {spec.name!r}; --set overrides applied."]
    lines += [f"{k}={v}" for k, v in props.items()]
    f["props"].write_text("\n".join(lines) + "\n")
    f["log4j"].write_text(LOG4J2_PROPERTIES)
    save_spec(spec)


def format_storage(spec: ClusterSpec, jars: Path, cluster_id: str) -> None:
    f = files(spec.name)
    cds, dump = cds_args("storage-tool", jars, spec.name)
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
    cds_publish(dump if proc.returncode == 0 else None)
    if dump is not None and proc.returncode != 0:
        dump.unlink(missing_ok=True)
    if proc.returncode != 0:
        out = (proc.stdout + proc.stderr).strip().splitlines()[-LOG_TAIL_LINES:]
        raise ClusterError(f"{spec.name}: StorageTool format failed:\n" + "\n".join(out))


def launch(spec: ClusterSpec, jars: Path, truncate_log: bool) -> int:
    f = files(spec.name)
    cds, dump = cds_args("broker", jars, spec.name)
    pending = cds_pending_file(spec.name)
    if dump is not None:
        pending.write_text(f"{dump}\n")  # published by stop_one after a clean exit
    else:
        pending.unlink(missing_ok=True)
    cmd = [
        java_bin(),
        f"-Xms{min(spec.heap_mb, 256)}m",
        f"-Xmx{spec.heap_mb}m",
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


def read_pid(name: str) -> int | None:
    try:
        return int(files(name)["pid"].read_text().strip())
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
    props = str(files(name)["props"]).encode()
    return b"kafka.Kafka" in cmdline and props in cmdline


def kill(pid: int, name: str, timeout: float) -> bool:
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
