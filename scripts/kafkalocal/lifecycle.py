"""Start, stop and restart clusters, several in parallel, each until it answers or fails."""

from __future__ import annotations

import base64
import os
import shutil
import sys
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from scripts.kafkalocal import broker
from scripts.kafkalocal.health import port_open, wait_healthy
from scripts.kafkalocal.java import cds_pending_file, cds_publish, kafka_jar_dir
from scripts.kafkalocal.spec import (
    DEFAULT_CLUSTERS,
    START_TIMEOUT_S,
    STOP_TIMEOUT_S,
    ClusterError,
    ClusterSpec,
    StartResult,
    cluster_dir,
    files,
    known_clusters,
    load_spec,
    stored_cluster_id,
)


def new_cluster_id() -> str:
    """16 random bytes, URL-safe base64 without padding; never starting with '-' (a command
    line would take it for an option; Kafka's Uuid.randomUuid() skips those too)."""
    while True:
        cid = base64.urlsafe_b64encode(os.urandom(16)).rstrip(b"=").decode()
        if not cid.startswith("-"):
            return cid


def _reuse_running(spec: ClusterSpec, pid: int, t0: float, deadline: float) -> StartResult:
    current = load_spec(spec.name)
    if current.port != spec.port:
        raise ClusterError(
            f"{spec.name}: already running on port {current.port} (pid {pid}); "
            f"`kafka-local down {spec.name}` first"
        )
    if spec.overrides and spec.overrides != current.overrides:
        print(f"{spec.name}: already running; --set ignored (restart to apply)", file=sys.stderr)
    running_id = stored_cluster_id(spec.name) or ""
    wait_healthy(current, pid, running_id, deadline)
    took = time.monotonic() - t0
    return StartResult(spec.name, spec.bootstrap, pid, running_id, took, True)


def _start_one(spec: ClusterSpec, fresh: bool, timeout: float) -> StartResult:
    t0 = time.monotonic()
    deadline = t0 + timeout
    f = files(spec.name)
    pid = broker.read_pid(spec.name)
    if pid is not None and broker.pid_alive(pid, spec.name):
        return _reuse_running(spec, pid, t0, deadline)

    for port in spec.ports:
        if port_open(port):
            raise ClusterError(f"{spec.name}: port {port} is already in use by another process")

    cluster_dir(spec.name).mkdir(parents=True, exist_ok=True)
    f["pid"].unlink(missing_ok=True)
    cid = stored_cluster_id(spec.name)
    new_data = fresh or cid is None or not (f["data"] / "meta.properties").exists()
    if new_data:
        shutil.rmtree(f["data"], ignore_errors=True)
        cid = spec.cluster_id or new_cluster_id()
        f["id"].write_text(cid + "\n")
    assert cid is not None
    f["data"].mkdir(exist_ok=True)
    broker.write_config(spec)
    jars = kafka_jar_dir()
    if new_data:
        broker.format_storage(spec, jars, cid)
    t_format = time.monotonic() - t0
    pid = broker.launch(spec, jars, truncate_log=new_data)
    wait_healthy(spec, pid, cid, deadline)
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
        for p in s.ports:
            if p in ports:
                raise ClusterError(f"port {p} used by both {ports[p]} and {s.name}")
            ports[p] = s.name
    return _start_many(specs, fresh, timeout)


def start(names: Iterable[str], timeout: float = START_TIMEOUT_S) -> dict[str, StartResult]:
    """Start stopped clusters with their existing data and settings; wait until healthy."""
    return _start_many([load_spec(n) for n in names], False, timeout)


def stop_one(name: str, keep: bool = True, timeout: float = STOP_TIMEOUT_S) -> str:
    """Stop one cluster; remove its data unless keep. Returns a one-line summary."""
    f = files(name)
    pid = broker.read_pid(name)
    t0 = time.monotonic()
    clean_exit = False
    if pid is not None and broker.pid_alive(pid, name):
        killed = broker.kill(pid, name, timeout)
        clean_exit = not killed
        how = "killed (SIGKILL)" if killed else "stopped"
        msg = f"{name}: {how} pid {pid} in {time.monotonic() - t0:.1f}s"
    else:
        msg = f"{name}: not running"
    f["pid"].unlink(missing_ok=True)
    pending = cds_pending_file(name)
    if pending.exists():
        tmp = Path(pending.read_text().strip())
        if clean_exit:
            cds_publish(tmp)
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
