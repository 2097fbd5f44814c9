"""`kmirror check`: everything `run` would verify before copying, and no writes at all. Every
flow `run` would run is checked (an mm2.properties may enable several), each shown under its
name; a problem in one flow fails the check after all were shown."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from kmirror.acls.check import acl_plan, as_json, print_acl_plan
from kmirror.cli.flags import options_from
from kmirror.config.describe import describe
from kmirror.config.dialects.loader import load_flows
from kmirror.config.model import MirrorConfig
from kmirror.errors import TopicError
from kmirror.kafka.plan import plan
from kmirror.schemas.check import print_schema_plan, schema_plan


def check(args: argparse.Namespace) -> int:
    flows = load_flows(options_from(args))
    several = len(flows) > 1
    for note in dict.fromkeys(n for c in flows for n in c.notes):
        print(f"warning: {note}", file=sys.stderr)
    docs: list[dict[str, Any]] = []
    problems: list[tuple[str, TopicError]] = []
    for config in flows:
        if several:  # before its description (stderr) and its rows (stdout)
            print(f"flow {config.flow}", file=sys.stderr if args.json else sys.stdout, flush=True)
        doc, problem = _check_flow(config, args)
        docs.append(doc)
        if problem is not None:
            problems.append((config.flow, problem))
    if args.json:
        print(json.dumps({"flows": docs} if several else docs[0], indent=2))
    # Refused (exit 2) after everything was shown.
    if len(problems) == 1 and not several:
        raise problems[0][1]
    if problems:
        raise TopicError("; ".join(f"flow {flow}: {exc}" for flow, exc in problems))
    return 0


def _check_flow(
    config: MirrorConfig, args: argparse.Namespace
) -> tuple[dict[str, Any], TopicError | None]:
    """One flow: its description, topic mapping, schema and ACL plans (text unless --json);
    its JSON document and why it cannot run (None: it can)."""
    print(describe(config), file=sys.stderr)
    rows = plan(config, args.timeout)
    subjects = schema_plan(config)
    acls = acl_plan(config)
    out: dict[str, Any] = {"flow": config.flow, "topics": rows, "notes": list(config.notes)}
    if config.schemas is not None:
        out["schemas"] = {"id_mode": config.schemas.id_mode, "subjects": subjects}
    if acls is not None:
        out["acls"] = as_json(acls)
    if not args.json:
        for r in rows:
            tp = "-" if r["target_partitions"] is None else r["target_partitions"]
            print(
                f"{r['source']} -> {r['target']}  ({r['named_by']})  partitions "
                f"{r['partitions']} (target {tp})  {r['action']}"
            )
        print_schema_plan(config, subjects)
        print_acl_plan(config, acls)
    try:
        _usable(config, rows)
    except TopicError as exc:
        return out, exc
    return out, None


def _usable(config: MirrorConfig, rows: list[dict[str, Any]]) -> None:
    """TopicError unless the flow can run: two topics onto one target, a loop, no topic, or
    target topics it cannot write."""
    config.target_names([r["source"] for r in rows])
    if not rows:
        raise TopicError(
            f"no source topic matches include={list(config.topics.include)} "
            f"exclude={list(config.topics.exclude)}: fix --whitelist/--blacklist (regexes match "
            "whole topic names)"
        )
    bad = [r for r in rows if r["action"] in ("too-few-partitions", "missing")]
    if bad:
        names = ", ".join(f"{r['target']} ({r['action']})" for r in bad)
        raise TopicError(f"target topics not usable: {names}")
