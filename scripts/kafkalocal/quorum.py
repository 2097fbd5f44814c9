"""Multi-broker clusters: N KRaft nodes, each a broker and a controller voter, with production's
replication settings (replication factor 3, ``min.insync.replicas=2``, internal topics the
same), optionally behind Toxiproxy so that every client connection can be slowed or broken.

Each node is a kafka-local cluster of its own name, ``<name>-<node id>`` (its files, pid and
log under ``clusters/<name>-<id>/``), so ``stop``, ``start``, ``restart`` and ``kill`` work on
one node; the quorum's own directory ``clusters/<name>/`` holds ``quorum.json`` (the layout)
and the proxy's files, and ``<name>`` stands for all its nodes on the command line.

Ports (PORT = the cluster's port):

* not proxied: node i listens on PORT + 2(i-1) (controller +1); clients use those ports.
* proxied: Toxiproxy listens on PORT .. PORT+N-1 (proxy ``<name>-<i>`` in front of node i),
  its API on PORT+9; node i has PLAINTEXT (brokers among themselves, health checks) on
  PORT + 10i, CONTROLLER on +1 and CLIENT on +2. The CLIENT listener advertises the proxy's
  port, so a client that bootstraps through a proxy is handed proxied addresses for every
  broker, and replication between the brokers never crosses the proxy.

Combined nodes rather than separate controllers: three JVMs per cluster instead of four, so
two such clusters fit on a 2-core machine; a small heap each (QUORUM_HEAP_MB).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from scripts.kafkalocal import proxy
from scripts.kafkalocal.broker import pid_alive, read_pid
from scripts.kafkalocal.health import under_replicated
from scripts.kafkalocal.lifecycle import new_cluster_id, start, stop, up
from scripts.kafkalocal.spec import (
    HOST,
    START_TIMEOUT_S,
    ClusterError,
    ClusterSpec,
    StartResult,
    cluster_dir,
    clusters_root,
)

QUORUM_HEAP_MB = 320
MAX_BROKERS = 9
API_OFFSET = 9  # proxied: Toxiproxy's API at PORT+9
NODE_STRIDE = 10  # proxied: node i at PORT + 10i


def replication(brokers: int) -> dict[str, str]:
    """Production's settings where the cluster is large enough: RF 3, min ISR 2."""
    rf = min(brokers, 3)
    isr = 2 if rf >= 3 else 1
    return {
        "default.replication.factor": str(rf),
        "min.insync.replicas": str(isr),
        "offsets.topic.replication.factor": str(rf),
        "transaction.state.log.replication.factor": str(rf),
        "transaction.state.log.min.isr": str(isr),
        "share.coordinator.state.topic.replication.factor": str(rf),
        "share.coordinator.state.topic.min.isr": str(isr),
    }


@dataclass(frozen=True)
class Quorum:
    """A multi-broker cluster's layout (see the module doc for the ports)."""

    name: str
    port: int
    brokers: int = 3
    proxied: bool = False
    overrides: dict[str, str] = field(default_factory=dict, hash=False)  # every node's --set
    cluster_id: str = field(default_factory=new_cluster_id, compare=False)

    def __post_init__(self) -> None:
        if not 1 <= self.brokers <= MAX_BROKERS:
            raise ClusterError(f"{self.name}: brokers must be 1..{MAX_BROKERS}")
        top = self.port + (NODE_STRIDE * self.brokers + 2 if self.proxied else 2 * self.brokers)
        ClusterSpec(self.name, self.port)  # the name's and the first port's checks
        if top > 65535:
            raise ClusterError(f"{self.name}: ports {self.port}..{top} out of range")

    @property
    def node_ids(self) -> list[int]:
        return list(range(1, self.brokers + 1))

    def node_name(self, node_id: int) -> str:
        return f"{self.name}-{node_id}"

    def node_port(self, node_id: int) -> int:
        """The node's own PLAINTEXT port (brokers among themselves, health checks)."""
        if self.proxied:
            return self.port + NODE_STRIDE * node_id
        return self.port + 2 * (node_id - 1)

    def client_port(self, node_id: int) -> int:
        """Where clients reach the node: its proxy, else its own port."""
        return self.port + node_id - 1 if self.proxied else self.node_port(node_id)

    @property
    def api_port(self) -> int | None:
        return self.port + API_OFFSET if self.proxied else None

    @property
    def bootstrap(self) -> str:
        """What clients use (through the proxies when proxied)."""
        return ",".join(f"{HOST}:{self.client_port(i)}" for i in self.node_ids)

    @property
    def direct_bootstrap(self) -> str:
        """The nodes' own listeners, around the proxies."""
        return ",".join(f"{HOST}:{self.node_port(i)}" for i in self.node_ids)

    def routes(self) -> list[proxy.Route]:
        """One Toxiproxy proxy per broker: name, listen port, the node's CLIENT port."""
        if not self.proxied:
            return []
        return [
            (self.node_name(i), self.client_port(i), self.node_port(i) + 2) for i in self.node_ids
        ]

    def specs(self) -> list[ClusterSpec]:
        ports = {i: self.node_port(i) for i in self.node_ids}
        voters = ",".join(f"{i}@{HOST}:{p + 1}" for i, p in ports.items())
        out = []
        for i, p in ports.items():
            props = {
                "node.id": str(i),
                "controller.quorum.voters": voters,
                **replication(self.brokers),
            }
            if self.proxied:
                props.update(
                    {
                        "listeners": f"PLAINTEXT://{HOST}:{p},CONTROLLER://{HOST}:{p + 1},"
                        f"CLIENT://{HOST}:{p + 2}",
                        "advertised.listeners": f"PLAINTEXT://{HOST}:{p},"
                        f"CLIENT://{HOST}:{self.client_port(i)}",
                        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,"
                        "CONTROLLER:PLAINTEXT,CLIENT:PLAINTEXT",
                    }
                )
            props.update(self.overrides)
            spec = ClusterSpec(
                self.node_name(i), p, props, cluster_id=self.cluster_id, heap_mb=QUORUM_HEAP_MB
            )
            out.append(spec)
        return out

    def to_json(self) -> str:
        raw = {
            "name": self.name,
            "port": self.port,
            "brokers": self.brokers,
            "proxied": self.proxied,
            "overrides": self.overrides,
            "cluster_id": self.cluster_id,
            "bootstrap": self.bootstrap,
            "direct_bootstrap": self.direct_bootstrap,
            "toxiproxy": None if self.api_port is None else proxy.api_url(self.api_port),
        }
        return json.dumps(raw, indent=2) + "\n"


def quorum_specs(name: str, port: int, nodes: int) -> list[ClusterSpec]:
    """The nodes of an unproxied cluster (ports port, port+2, ...). Start them together with
    up(..., fresh=True): a node answers only once a majority of voters runs."""
    return Quorum(name, port, nodes).specs()


def _meta(name: str) -> str:
    return str(cluster_dir(name) / "quorum.json")


def load_quorum(name: str) -> Quorum | None:
    """The layout of the multi-broker cluster called name (None: not one)."""
    try:
        with open(_meta(name)) as f:
            raw = json.load(f)
    except OSError:
        return None
    return Quorum(
        raw["name"],
        int(raw["port"]),
        int(raw["brokers"]),
        bool(raw["proxied"]),
        dict(raw.get("overrides", {})),
        str(raw["cluster_id"]),
    )


def known_quorums() -> list[str]:
    root = clusters_root()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / "quorum.json").exists())


def expand(names: list[str]) -> list[str]:
    """Node names: a multi-broker cluster's name stands for all its nodes."""
    out: list[str] = []
    for n in names:
        q = load_quorum(n)
        out += [q.node_name(i) for i in q.node_ids] if q is not None else [n]
    return out


def quorum_up(
    quorums: Sequence[Quorum], timeout: float = START_TIMEOUT_S
) -> dict[str, StartResult]:
    """Start every node of these clusters together (fresh data) and, for a proxied one, its
    Toxiproxy first; return once every node answers. Refuses while a node of a name runs."""
    for q in quorums:
        names = [q.node_name(i) for i in q.node_ids]
        busy = [n for n in names if (pid := read_pid(n)) is not None and pid_alive(pid, n)]
        if busy:
            raise ClusterError(
                f"{q.name}: {', '.join(busy)} already running; `kafka-local down {q.name}` first"
            )
        if (cluster_dir(q.name) / "cluster.json").exists():
            raise ClusterError(f"{q.name}: a single-broker cluster has that name; choose another")
    try:
        for q in quorums:
            cluster_dir(q.name).mkdir(parents=True, exist_ok=True)
            with open(_meta(q.name), "w") as f:
                f.write(q.to_json())
            if q.proxied:
                proxy.start(q.name, q.api_port or 0, q.routes())
        results = up([s for q in quorums for s in q.specs()], fresh=True, timeout=timeout)
    except ClusterError:
        for q in quorums:
            if load_quorum(q.name) is not None:
                quorum_down(q.name, keep=True)
        raise
    for q in quorums:
        print(f"{q.name}: {q.brokers} brokers, bootstrap {q.bootstrap}")
    return results


def quorum_down(name: str, keep: bool = False) -> list[str]:
    """Stop every node and the proxy; remove their data and files unless keep."""
    q = load_quorum(name)
    if q is None:
        raise ClusterError(f"{name}: not a multi-broker cluster (no {_meta(name)})")
    lines = stop([q.node_name(i) for i in q.node_ids], keep=True)
    line = proxy.stop(name)
    lines += [line] if line else []
    if not keep:
        for d in [cluster_dir(q.node_name(i)) for i in q.node_ids] + [cluster_dir(name)]:
            shutil.rmtree(d, ignore_errors=True)
        lines.append(f"{name}: data removed")
    return lines


def wait_in_sync(q: Quorum, timeout: float) -> float:
    """Seconds until no partition of the cluster lacks an in-sync replica."""
    t0 = time.monotonic()
    lagging: list[str] = ["(no answer yet)"]
    while time.monotonic() - t0 < timeout:
        with contextlib.suppress(ClusterError):
            lagging = under_replicated(q.direct_bootstrap)
            if not lagging:
                return time.monotonic() - t0
        time.sleep(0.5)
    raise ClusterError(
        f"{q.name}: {len(lagging)} partition(s) still under-replicated after {timeout:.0f}s: "
        f"{', '.join(lagging[:5])}"
    )


def roll(name: str, timeout: float = START_TIMEOUT_S) -> list[str]:
    """A rolling restart, as an operator does one: each node in turn stopped cleanly (its
    leaderships move first), started again, and the next one only once every partition is
    fully in sync again (else two replicas down could leave a partition below its minimum)."""
    q = load_quorum(name)
    if q is None:
        raise ClusterError(f"{name}: not a multi-broker cluster (no {_meta(name)})")
    lines = []
    for i in q.node_ids:
        t0 = time.monotonic()
        stop([q.node_name(i)], keep=True)
        start([q.node_name(i)], timeout)
        synced = wait_in_sync(q, timeout)
        took = time.monotonic() - t0
        lines.append(f"{q.node_name(i)}: restarted, in sync after {took:.1f}s ({synced:.1f}s wait)")
    return lines
