"""`kmirror entrypoint`, the image's exec-form ENTRYPOINT, and `kmirror render`, its dry run.

The entrypoint is PID 1 in the container. It renders the templates (kmirror.entrypoint), writes
them for people to read, and runs the mirror in this same process with the configuration built
from the rendered settings in memory (`kmirror.cli.run.start`): the supervisor then handles
SIGTERM (flush, commit, exit 0), reaps every child with waitpid(-1) and its exit code becomes
the container's. A SIGTERM that arrives before the supervisor has taken over ends the
entrypoint with 0 at once; PID 1 would otherwise ignore it (no default action for PID 1).
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import os
import shlex
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType

from kmirror.config.dialects.options import Options
from kmirror.entrypoint.render import build_plan, plan_config, write_files
from kmirror.logsetup import configure_from_env

log = logging.getLogger(__name__)

# Runs a whole kmirror command line (cli.main.main, handed in: this module does not import it).
Dispatch = Callable[[Sequence[str]], int]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], dispatch: Dispatch) -> None:
    """Add `render` and `entrypoint` to the `kmirror` command line (cli/main.py calls this);
    `dispatch` runs the command given after `kmirror entrypoint`."""
    render_p = sub.add_parser(
        "render",
        help="render the config templates from the environment and print them, secrets masked",
        description="Render consumer.properties, producer.properties and tools-log4j.properties "
        "from the environment exactly as the container entrypoint does, check them like "
        "`kmirror run` would, and print them with every secret as ***. Writes nothing unless "
        "--output-dir is given.",
    )
    render_p.add_argument(
        "--output-dir", metavar="DIR", help="also write the rendered files there (mode 0600)"
    )
    render_p.add_argument("--json", action="store_true", help="machine-readable output")
    render_p.set_defaults(handler=render)
    entry = sub.add_parser(
        "entrypoint",
        help="the container entrypoint: render the templates from the environment, run the mirror",
        description="Load the optional .env file (KMIRROR_ENV_FILE), render the templates into "
        "KMIRROR_CONFIG_DIR (files mode 0600), log them with secrets masked and run the mirror "
        "with that configuration. Every variable is listed in docs/configuration.md "
        "(`kmirror env-docs`). Arguments (the container's CMD, Kubernetes `args`): `kmirror "
        "run` flags such as --no-create-topics, applied over the environment's settings; a "
        "first argument that is a command (`run --mm2-config mm2.properties`, `check ...`) runs "
        "that kmirror command instead, without rendering anything.",
        # Every argument is the container's, flags included: `+` is no prefix anyone uses.
        prefix_chars="+",
        add_help=False,
    )
    entry.add_argument("args", nargs="*", metavar="ARG")
    entry.set_defaults(
        handler=functools.partial(entrypoint, dispatch=dispatch), entrypoint_help=entry.format_help
    )


class _Stopped(BaseException):
    """SIGTERM before the mirror's supervisor installed its own handler."""


def _stop(signum: int, frame: FrameType | None) -> None:
    raise _Stopped(signum)


def entrypoint(args: argparse.Namespace, dispatch: Dispatch) -> int:
    extra: list[str] = list(getattr(args, "args", None) or [])
    if extra[:1] in (["-h"], ["--help"]):
        print(args.entrypoint_help())
        return 0
    previous = signal.signal(signal.SIGTERM, _stop)
    try:
        if extra and not extra[0].startswith("-"):
            # A command of its own (e.g. the chart's mm2Config mode): run it as given, like an
            # image's CMD replaces the default; the supervisor still becomes PID 1 here.
            return dispatch(extra)
        return _entrypoint(extra)
    except _Stopped:
        log.info("SIGTERM before the mirror started: nothing to flush, exiting")
        return 0
    finally:
        signal.signal(signal.SIGTERM, previous)


def _entrypoint(extra: list[str]) -> int:
    plan = build_plan(os.environ)
    configure_from_env(plan.environ, plan.secrets())
    for note in plan.notes:
        log.warning("config: %s", note)
    # For people to read and to rerun by hand (the command logged below); the mirror gets the
    # configuration in memory.
    directory = write_files(plan)
    for rendered in plan.files:
        log.info("rendered %s from %s (secrets masked):\n%s", directory / rendered.name,
                 plan.origins[rendered.name], _indent(rendered.masked()))  # fmt: skip
    # The mirror reads KMIRROR_* settings from the environment: give it the .env file's too.
    for key, value in plan.dotenv.items():
        os.environ.setdefault(key, value)
    config = plan_config(plan, _run_flags(extra))
    log.info("starting: kmirror %s", shlex.join([*plan.argv(directory), *extra]))
    from kmirror.cli import run  # the mirror's modules: not needed by `render` or `--help`

    return run.start(config)


def render(args: argparse.Namespace) -> int:
    plan = build_plan(os.environ)
    directory = Path(args.output_dir) if args.output_dir else None
    if directory is not None:
        write_files(plan, directory)
    # Loaded like the entrypoint loads it: same errors and warnings, naming the files where
    # they are (or where the entrypoint would put them).
    config = plan_config(plan, directory=directory)
    warnings = [*plan.notes, *config.notes]
    argv = ["kmirror", *plan.argv(directory)]
    if args.json:
        doc = {
            "files": {
                f.name: {
                    "template": plan.origins[f.name],
                    "properties": {k: str(v) for k, v in f.props.items()},
                }
                for f in plan.files
            },
            "command": argv,
            "warnings": warnings,
        }
        print(json.dumps(doc, indent=2))
    else:
        for rendered in plan.files:
            print(f"# {rendered.name} (from {plan.origins[rendered.name]})")
            print(rendered.masked())
        print(f"# command\n{shlex.join(argv)}")
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def _run_flags(extra: list[str]) -> Options:
    """The container's arguments as `kmirror run` options (a bad one: usage and exit 2)."""
    from kmirror.cli.flags import add_config_arguments, options_from

    parser = argparse.ArgumentParser(prog="kmirror entrypoint", add_help=False)
    add_config_arguments(parser)
    return options_from(parser.parse_args(extra))


def _indent(text: str) -> str:
    return "\n".join(f"  {line}" for line in text.splitlines())
