"""`scripts/kafka-local`: the command line over the lifecycle functions."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from scripts.kafkalocal import proxy
from scripts.kafkalocal.health import status
from scripts.kafkalocal.lifecycle import down, restart, start, stop, up
from scripts.kafkalocal.quorum import (
    Quorum,
    expand,
    known_quorums,
    load_quorum,
    quorum_down,
    quorum_up,
    roll,
)
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
    ports = _parse_clusters(args.cluster + args.clusters)
    sets = _parse_sets(args.set, ports)
    if (args.brokers > 1 or args.proxy) and not (args.cluster + args.clusters):
        raise ClusterError("--brokers/--proxy need named clusters: up --brokers 3 NAME=PORT ...")
    if args.brokers > 1 or args.proxy:
        quorums = [Quorum(n, p, args.brokers, args.proxy, sets[n]) for n, p in ports.items()]
        quorum_up(quorums, timeout=args.timeout)
    else:
        specs = [ClusterSpec(n, p, sets[n]) for n, p in ports.items()]
        up(specs, fresh=args.fresh, timeout=args.timeout)


def _cmd_down(args: Any) -> None:
    quorums = [n for n in args.names if load_quorum(n)] if args.names else known_quorums()
    nodes = set(expand(quorums))
    singles = [n for n in (args.names or known_clusters()) if n not in nodes and n not in quorums]
    if not singles and not quorums:
        print("no clusters")
    _print_lines(down(singles, keep=args.keep))
    for q in quorums:
        _print_lines(quorum_down(q, keep=args.keep))


def _cmd_env(args: Any) -> None:
    quorums = [n for n in args.names if load_quorum(n)] if args.names else known_quorums()
    nodes = set(expand(quorums))
    singles = [n for n in args.names if n not in quorums]
    if singles or not args.names:
        _print_lines(n for n in env_lines(singles) if n.split("=")[0] not in nodes)
    for name in quorums:
        q = load_quorum(name)
        assert q is not None
        var = name.upper().replace("-", "_").replace(".", "_")
        print(f"KMIRROR_{var}_BOOTSTRAP={q.bootstrap}")


def _cmd_status(args: Any) -> None:
    names = known_clusters()
    if not names:
        print(f"no clusters under {clusters_root()}")
        return
    rows = [status(n) for n in names]
    w = max(12, *(len(n) for n in names))
    print(f"{'NAME':<{w}} {'BOOTSTRAP':<18} {'PID':>8}  STATE")
    for r in rows:
        pid = str(r.pid) if r.pid else "-"
        print(f"{r.name:<{w}} {r.bootstrap:<18} {pid:>8}  {r.state}")
    for name in known_quorums():
        q = load_quorum(name)
        assert q is not None
        proxy_pid = proxy.running(name) if q.proxied else None
        where = f"Toxiproxy pid {proxy_pid or '- (stopped)'}, API port {q.api_port}"
        where = where if q.proxied else ""
        print(f"{name}: {q.brokers} brokers, clients use {q.bootstrap}  {where}".rstrip())


COMMANDS: dict[str, Callable[[Any], object]] = {
    "up": _cmd_up,
    "down": _cmd_down,
    "status": _cmd_status,
    "restart": lambda a: restart(expand(a.names), a.timeout),
    "start": lambda a: start(expand(a.names), a.timeout),
    "stop": lambda a: _print_lines(stop(expand(a.names), keep=True)),
    "kill": lambda a: _print_lines(stop(expand(a.names), keep=True, timeout=0)),
    "roll": lambda a: _print_lines(line for n in a.names for line in roll(n, a.timeout)),
    "env": _cmd_env,
}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="kafka-local",
        description="Start/stop named KRaft Kafka clusters on 127.0.0.1: one broker each, "
        "or several (--brokers 3: RF 3, min.insync.replicas=2), optionally behind Toxiproxy "
        "(--proxy). A multi-broker cluster's nodes are NAME-1..N; NAME stands for all of them.",
    )
    sub = p.add_subparsers(dest="cmd", required=True)

    up_p = sub.add_parser("up", help="start clusters (default: source=19092, target=29092)")
    up_p.add_argument(
        "--cluster",
        action="append",
        default=[],
        metavar="NAME=PORT",
        help="a cluster and its client port (controller: PORT+1); repeatable",
    )
    up_p.add_argument("clusters", nargs="*", metavar="NAME=PORT", help="same as --cluster")
    up_p.add_argument(
        "--set",
        action="append",
        metavar="NAME:key=value",
        help="server.properties override for one cluster; repeatable",
    )
    up_p.add_argument("--fresh", action="store_true", help="wipe existing data first")
    up_p.add_argument(
        "--brokers",
        "--nodes",
        type=int,
        default=1,
        help="brokers per cluster (>1: nodes NAME-1..N, each also a controller voter, on ports "
        "PORT, PORT+2, ...; RF 3, min.insync.replicas=2; always fresh data)",
    )
    up_p.add_argument(
        "--proxy",
        action="store_true",
        help="put Toxiproxy in front of every broker: clients use PORT..PORT+N-1 (the proxies, "
        "advertised by the brokers), the API is on PORT+9, node i on PORT+10i (+1 controller, "
        "+2 the proxied listener)",
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
        ("kill", "kill -9 (SIGKILL at once, no clean shutdown), keeping data"),
        ("roll", "rolling restart of a multi-broker cluster: node by node, each time until "
         "every partition is in sync again"),
    ):  # fmt: skip
        sp = sub.add_parser(cmd, help=text)
        sp.add_argument("names", nargs="+", metavar="NAME")
        if cmd in ("restart", "start", "roll"):
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
