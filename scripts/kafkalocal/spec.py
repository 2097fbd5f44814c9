"""What a cluster is and where its files live: names, ports, the per-cluster directory."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
RESOLVE_JARS = REPO_ROOT / "scripts" / "resolve-jars"

HOST = "127.0.0.1"
DEFAULT_CLUSTERS: dict[str, int] = {"source": 19092, "target": 29092}
START_TIMEOUT_S = 90.0
HEAP_MB = 512  # a broker's -Xmx; the nodes of a multi-broker cluster get less (quorum.py)
STOP_TIMEOUT_S = 20.0
LOG_TAIL_LINES = 40

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


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
    heap_mb: int = HEAP_MB

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

    @property
    def ports(self) -> list[int]:
        """Every port the broker listens on: client, controller and any extra listener."""
        extra = re.findall(r":(\d+)(?:,|$)", self.overrides.get("listeners", ""))
        return sorted({self.port, self.controller_port, *(int(p) for p in extra)})


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


def cache_dir() -> Path:
    return Path(os.environ.get("KMIRROR_CACHE") or Path.home() / ".cache" / "kmirror")


def clusters_root() -> Path:
    return cache_dir() / "clusters"


def cluster_dir(name: str) -> Path:
    return clusters_root() / name


def files(name: str) -> dict[str, Path]:
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
    meta = files(name)["meta"]
    if meta.exists():
        raw = json.loads(meta.read_text())
        return ClusterSpec(
            raw["name"],
            int(raw["port"]),
            dict(raw.get("overrides", {})),
            heap_mb=int(raw.get("heap_mb", HEAP_MB)),
        )
    if name in DEFAULT_CLUSTERS:
        return ClusterSpec(name, DEFAULT_CLUSTERS[name])
    raise ClusterError(f"unknown cluster {name!r} (no {meta})")


def save_spec(spec: ClusterSpec) -> None:
    meta = {
        "name": spec.name,
        "host": HOST,
        "port": spec.port,
        "controller_port": spec.controller_port,
        "overrides": spec.overrides,
        "heap_mb": spec.heap_mb,
    }
    files(spec.name)["meta"].write_text(json.dumps(meta, indent=2) + "\n")


def stored_cluster_id(name: str) -> str | None:
    try:
        return files(name)["id"].read_text().strip() or None
    except OSError:
        return None


def env_lines(names: Iterable[str] | None = None) -> list[str]:
    """KMIRROR_<NAME>_BOOTSTRAP=... for the given clusters (default: source, target, known)."""
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
