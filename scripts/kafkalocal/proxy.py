"""The Toxiproxy server in front of a multi-broker cluster: one process per cluster, one proxy
per broker, created from a config file at start (``-config``), so the proxies exist before the
first client connects. Its files sit beside the quorum's (``clusters/<name>/``):
``toxiproxy.json`` (the proxies), ``toxiproxy.log``, ``toxiproxy.pid``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

from scripts.kafkalocal.health import port_open
from scripts.kafkalocal.spec import HOST, STOP_TIMEOUT_S, ClusterError, cache_dir, cluster_dir
from scripts.toxiproxy import Toxiproxy, ToxiproxyError

START_TIMEOUT_S = 30.0

# Servers started by this process, reaped when stopped (no zombies).
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}

Route = tuple[str, int, int]  # proxy name, listen port, upstream port


def binary() -> Path:
    found = cache_dir() / "bin" / "toxiproxy-server"
    if not found.exists():
        raise ClusterError(
            f"{found} not found: a proxied cluster needs Toxiproxy. Build it with "
            "`make go-tools` (or `scripts/build-go-tools toxiproxy-server toxiproxy-cli`)"
        )
    return found


def _files(name: str) -> dict[str, Path]:
    d = cluster_dir(name)
    return {"config": d / "toxiproxy.json", "log": d / "toxiproxy.log", "pid": d / "toxiproxy.pid"}


def api_url(api_port: int) -> str:
    return f"http://{HOST}:{api_port}"


def _pid(name: str) -> int | None:
    try:
        return int(_files(name)["pid"].read_text().strip())
    except (OSError, ValueError):
        return None


def running(name: str) -> int | None:
    """The pid of this cluster's Toxiproxy server if it runs (not a zombie)."""
    pid = _pid(name)
    if pid is None:
        return None
    child = _CHILDREN.get(pid)
    if child is not None:
        return pid if child.poll() is None else None
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return None
    config = str(_files(name)["config"]).encode()
    alive = state not in ("Z", "X") and b"toxiproxy-server" in cmdline and config in cmdline
    return pid if alive else None


def start(name: str, api_port: int, routes: list[Route], timeout: float = START_TIMEOUT_S) -> int:
    """Start the server with these proxies; return its pid once every proxy listens."""
    exe = binary()
    stop(name)
    for port in (api_port, *(listen for _, listen, _ in routes)):
        if port_open(port):
            raise ClusterError(f"{name}: port {port} (Toxiproxy) is already in use")
    f = _files(name)
    cluster_dir(name).mkdir(parents=True, exist_ok=True)
    config = [
        {"name": p, "listen": f"{HOST}:{listen}", "upstream": f"{HOST}:{up}", "enabled": True}
        for p, listen, up in routes
    ]
    f["config"].write_text(json.dumps(config, indent=2) + "\n")
    cmd = [str(exe), "-host", HOST, "-port", str(api_port), "-config", str(f["config"])]
    with open(f["log"], "ab") as log:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=cluster_dir(name),
            env={**os.environ, "LOG_LEVEL": "warn"},  # not a line per client connection
            start_new_session=True,
        )
    _CHILDREN[proc.pid] = proc
    f["pid"].write_text(f"{proc.pid}\n")
    client = Toxiproxy(api_url(api_port), timeout=2)
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise ClusterError(
                f"{name}: toxiproxy-server exited ({proc.returncode}); see {f['log']}"
            )
        with contextlib.suppress(ToxiproxyError):
            if set(client.proxies()) >= {p for p, _, _ in routes} and all(
                port_open(listen) for _, listen, _ in routes
            ):
                return proc.pid
        if time.monotonic() >= deadline:
            stop(name)
            raise ClusterError(f"{name}: Toxiproxy not ready after {timeout:.0f}s; see {f['log']}")
        time.sleep(0.1)


def stop(name: str) -> str | None:
    """Stop the cluster's server (SIGTERM, SIGKILL after the stop timeout); a summary line."""
    pid = running(name)
    _files(name)["pid"].unlink(missing_ok=True)
    if pid is None:
        return None
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    child = _CHILDREN.pop(pid, None)
    while time.monotonic() < deadline and _alive(pid, child):
        time.sleep(0.05)
    if _alive(pid, child):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    if child is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=5)
    return f"{name}: stopped Toxiproxy pid {pid}"


def _alive(pid: int, child: subprocess.Popen[bytes] | None) -> bool:
    if child is not None:
        return child.poll() is None
    return Path(f"/proc/{pid}").exists()
