"""`scripts/kafka-local`: the command line over the lifecycle functions."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from scripts.kafkalocal.health import status
from scripts.kafkalocal.lifecycle import down, quorum_specs, restart, start, stop, up
from scripts.kafkalocal.spec import (
    DEFAULT_CLUSTERS,
    START_TIMEOUT_S,
    ClusterError,
    ClusterSpec,
    clusters_root,
    env_lines,
    known_clusters,
)


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


def _print_lines(lines: Iterable[str]) -> None:
    for line in lines:
        print(line)


def _cmd_up(args: Any) -> None:
    ports = _parse_clusters(args.cluster)
    sets = _parse_sets(args.set, ports)
    if args.nodes > 1:
        specs = [s for n, p in ports.items() for s in quorum_specs(n, p, args.nodes)]
        up(specs, fresh=True, timeout=args.timeout)
    else:
        specs = [ClusterSpec(n, p, sets[n]) for n, p in ports.items()]
        up(specs, fresh=args.fresh, timeout=args.timeout)


def _cmd_down(args: Any) -> None:
    names = args.names or known_clusters()
    if not names:
        print("no clusters")
    _print_lines(down(names, keep=args.keep))


def _cmd_status(args: Any) -> None:
    names = known_clusters()
    if not names:
        print(f"no clusters under {clusters_root()}")
        return
    rows = [status(n) for n in names]
    print(f"{'NAME':<12} {'BOOTSTRAP':<18} {'PID':>8}  STATE")
    for r in rows:
        pid = str(r.pid) if r.pid else "-"
        print(f"{r.name:<12} {r.bootstrap:<18} {pid:>8}  {r.state}")


COMMANDS: dict[str, Callable[[Any], object]] = {
    "up": _cmd_up,
    "down": _cmd_down,
    "status": _cmd_status,
    "restart": lambda a: restart(a.names, a.timeout),
    "start": lambda a: start(a.names, a.timeout),
    "stop": lambda a: _print_lines(stop(a.names, keep=True)),
    "env": lambda a: print("\n".join(env_lines(a.names))),
}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="kafka-local",
        description="Start/stop named single-node KRaft Kafka clusters on 127.0.0.1.",
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
        COMMANDS[args.cmd](args)
    except ClusterError as exc:
        print(f"kafka-local: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0
