"""`kmirror pause`, `resume`, `drain` and `throttle`: the control API of a running mirror
(kmirror.app.api, docs/control.md) from the command line, with the same configuration flags as
`run` (the metrics port, the token file and TLS settings come from them); `kmirror status` asks
through `ask` too.

The mirror is found at --control-url, by default http(s)://127.0.0.1:<metrics port>.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import ssl
import sys
import time
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import quote

from kmirror.cli.flags import add_config_arguments, options_from
from kmirror.config.control import token_from
from kmirror.config.dialects.loader import load_config
from kmirror.config.model import MirrorConfig
from kmirror.errors import ClusterError, ConfigError

DRAIN_POLL_S = 1.0


class UnreachableError(ClusterError):
    """The mirror did not answer (not running, another port or host)."""


def add_client_arguments(parser: argparse.ArgumentParser, timeout: bool = True) -> None:
    if timeout:
        add_config_arguments(parser)
    group = parser.add_argument_group("reaching the running mirror")
    group.add_argument(
        "--control-url",
        metavar="URL",
        help="where the mirror's control API answers (default http://127.0.0.1:<metrics port>, "
        "https with --control-tls-cert)",
    )
    group.add_argument("--control-ca", metavar="FILE", help="CA that signed the mirror's TLS "
                       "certificate (default: the system's)")  # fmt: skip
    group.add_argument("--control-client-cert", metavar="FILE",
                       help="client certificate (PEM) for mutual TLS")  # fmt: skip
    group.add_argument("--control-client-key", metavar="FILE", help="its private key (PEM)")
    if timeout:
        group.add_argument("--timeout", type=float, default=15.0,
                           help="seconds to wait for the mirror (default 15)")  # fmt: skip


def ask(
    config: MirrorConfig, args: argparse.Namespace, method: str, path: str, body: Any = None
) -> Any:
    """One call to the control API; the JSON answer. Unreachable when nothing answers,
    ClusterError/ConfigError with the mirror's message otherwise."""
    if not config.control.enabled:
        raise ConfigError(
            "the control API is off in this configuration: give the mirror and this command "
            "--control-token-file (KMIRROR_CONTROL_TOKEN_FILE) or --control-tls-client-ca"
        )
    scheme = "https" if config.control.tls else "http"
    base = args.control_url or f"{scheme}://127.0.0.1:{config.metrics_port}"
    headers = {"Accept": "application/json"}
    if config.control.token_file is not None:
        headers["Authorization"] = f"Bearer {token_from(config.control.token_file)}"
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(base.rstrip("/") + path, data, headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=args.timeout, context=_tls(args)) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode(errors="replace")
        with contextlib.suppress(ValueError, KeyError, TypeError):
            detail = json.loads(detail)["error"]
        error = ConfigError if exc.code in (400, 401, 404) else ClusterError
        raise error(f"the mirror at {base} answered {exc.code}: {detail}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise UnreachableError(f"no mirror answered at {base} ({reason})") from None


def _tls(args: argparse.Namespace) -> ssl.SSLContext | None:
    if not (args.control_ca or args.control_client_cert):
        return None
    context = ssl.create_default_context(cafile=args.control_ca)
    if args.control_client_cert:
        context.load_cert_chain(args.control_client_cert, args.control_client_key)
    return context


def _query(args: argparse.Namespace) -> str:
    flow = getattr(args, "flow", None)
    return f"?flow={quote(flow)}" if flow else ""


def _config(args: argparse.Namespace) -> MirrorConfig:
    return load_config(options_from(args))


def pause(args: argparse.Namespace) -> int:
    return _topic(args, "pause")


def resume(args: argparse.Namespace) -> int:
    return _topic(args, "resume")


def _topic(args: argparse.Namespace, verb: str) -> int:
    config = _config(args)
    doc = ask(config, args, "POST", f"/topics/{quote(args.topic)}/{verb}{_query(args)}")
    for flow in doc["flows"]:
        state = "paused" if flow["paused"] else "copying"
        note = "" if flow["selected"] else " (not selected by this flow)"
        print(f"{flow['flow']}: {flow['topic']} {state}{note}")
    return 0


def drain(args: argparse.Namespace) -> int:
    config = _config(args)
    if args.cancel:
        ask(config, args, "DELETE", f"/drain{_query(args)}")
        print("drain cancelled: copying again")
        return 0
    started = ask(config, args, "POST", f"/drain{_query(args)}")
    for flow in started["flows"]:
        total = sum(end for _, _, end in flow["ends"])
        parts = len(flow["ends"])
        print(
            f"{flow['flow']}: draining to the source ends captured now ({parts} partitions, "
            f"offsets sum {total}), drain {flow['id']}"
        )
    if not args.wait:
        return 0
    deadline = time.monotonic() + args.wait_timeout
    while True:
        doc = ask(config, args, "GET", f"/drain{_query(args)}")
        reports = [f["drain"] for f in doc["flows"] if f["drain"] is not None]
        if all(r["complete"] for r in reports):
            print(json.dumps(doc, indent=2) if args.json else "drained: every partition "
                  "committed up to its end; the mirror copies nothing more")  # fmt: skip
            return 0
        if time.monotonic() > deadline:
            left = sum(r["records_left"] for r in reports)
            print(f"drain not complete after {args.wait_timeout:.0f}s: {left} record(s) left",
                  file=sys.stderr)  # fmt: skip
            return 1
        time.sleep(DRAIN_POLL_S)


def throttle(args: argparse.Namespace) -> int:
    config = _config(args)
    if args.clear:
        doc = ask(config, args, "DELETE", f"/throttle{_query(args)}")
    elif args.spec is not None:
        doc = ask(config, args, "PUT", f"/throttle{_query(args)}", {"spec": args.spec})
    else:
        doc = ask(config, args, "GET", f"/throttle{_query(args)}")
    for flow in doc["flows"]:
        where = "set at run time" if flow["set_at_run_time"] else "from the configuration"
        print(f"{flow['flow']}: {flow['spec'] or 'no limits'} ({where})")
    return 0


def register(sub: Any, command: Any) -> None:
    """The verbs, on `kmirror`'s subcommand parser (`command` wraps a handler lazily)."""
    for verb in ("pause", "resume"):
        p = sub.add_parser(verb, help=f"{verb} copying a source topic in the running mirror")
        p.add_argument("topic", help="source topic")
        add_client_arguments(p)
        p.set_defaults(handler=command("kmirror.cli.control", verb))
    p = sub.add_parser(
        "drain", help="copy up to the source's ends as of now, commit, then stop copying"
    )
    p.add_argument("--wait", action="store_true", help="wait until the drain is complete")
    p.add_argument("--wait-timeout", type=float, default=600.0, metavar="SECONDS")
    p.add_argument("--cancel", action="store_true", help="end the drain: copy again")
    p.add_argument("--json", action="store_true", help="the final report as JSON (--wait)")
    add_client_arguments(p)
    p.set_defaults(handler=command("kmirror.cli.control", "drain"))
    p = sub.add_parser("throttle", help="show or set the running mirror's throttles")
    p.add_argument("spec", nargs="?", help="[TOPIC:]backlog|tail.bytes|records=N,... to set")
    p.add_argument("--clear", action="store_true", help="back to the configuration's throttles")
    add_client_arguments(p)
    p.set_defaults(handler=command("kmirror.cli.control", "throttle"))
