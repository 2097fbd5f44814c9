"""`kmirror` command line. Diagnostics go to stderr; `check --json` and `status --json` print
JSON on stdout."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence
from types import FrameType

from kmirror import __version__
from kmirror.errors import KmirrorError
from kmirror.logsetup import configure

log = logging.getLogger("kmirror")

Handler = Callable[[argparse.Namespace], int]


def build_parser() -> argparse.ArgumentParser:
    from kmirror.cli.flags import add_config_arguments

    parser = argparse.ArgumentParser(
        prog="kmirror",
        description="Byte-exact Kafka cluster mirroring, at least once or exactly once. Accepts "
        "MirrorMaker 1 flags, MirrorMaker 2 mm2.properties and KUDO-style parameters.",
    )
    parser.add_argument("--version", action="version", version=f"kmirror {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="mirror topics from the source to the target cluster")
    add_config_arguments(run)
    run.set_defaults(handler=_cmd("kmirror.cli.run", "run"))

    check = sub.add_parser(
        "check", help="validate the config, connect to both clusters, show the topic mapping"
    )
    add_config_arguments(check)
    check.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    check.add_argument(
        "--timeout", type=float, default=15.0, help="seconds to wait for each cluster (default 15)"
    )
    check.set_defaults(handler=_cmd("kmirror.cli.check", "check"))

    status = sub.add_parser(
        "status",
        help="per partition: source end, copied, committed, target end and lag (reads only)",
    )
    add_config_arguments(status)
    status.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    status.add_argument(
        "--timeout", type=float, default=15.0, help="seconds to wait for each cluster (default 15)"
    )
    status.add_argument(
        "--persisted",
        action="store_true",
        help="do not ask the running mirror: what it persisted at its last commit",
    )
    from kmirror.cli import control

    control.add_client_arguments(status, timeout=False)
    status.set_defaults(handler=_cmd("kmirror.cli.status", "status"))
    control.register(sub, _cmd)

    from kmirror.cli import dr

    dr.register(sub)

    env_docs = sub.add_parser("env-docs", help="print every environment variable as markdown")
    env_docs.set_defaults(handler=_cmd("kmirror.cli.envdocs", "env_docs"))

    from kmirror.cli import entrypoint

    entrypoint.register(sub, dispatch=main)
    return parser


def _cmd(module: str, func: str) -> Handler:
    def handler(args: argparse.Namespace) -> int:
        fn: Handler = getattr(importlib.import_module(module), func)
        return fn(args)

    return handler


def _stop_before_start(signum: int, frame: FrameType | None) -> None:
    # Nothing has been consumed or produced yet: stopping now is a clean stop. The
    # supervisor installs the real handlers once it runs.
    raise SystemExit(0 if signum == signal.SIGTERM else 130)


def main(argv: Sequence[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _stop_before_start)
    signal.signal(signal.SIGINT, _stop_before_start)
    parser = build_parser()
    args = parser.parse_args(argv)
    # Until a command configures logging from its settings (run, entrypoint).
    configure("INFO", pattern="%p %m", replace=False)
    try:
        code: int = args.handler(args)
        return code
    except KmirrorError as exc:
        print(f"kmirror: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130


def entry() -> None:
    code = main()
    # Leave without the interpreter's finalization. librdkafka's clients run native threads
    # (a service's client can still be in a TLS handshake when its thread missed the stop's
    # grace), and tearing them down during finalization once crashed the process with
    # SIGSEGV right after "kmirror exiting code=3" (the bad-input catalogue's wrong CA): the
    # exit code scripts and Kubernetes act on must be the one kmirror decided. Everything
    # meant for the user is flushed first; the stream processes have exited by now.
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    entry()
