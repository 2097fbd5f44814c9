"""`kmirror check`: everything `run` would verify before copying, and no writes at all."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from kmirror.acls.check import acl_plan, as_json, print_acl_plan
from kmirror.cli.flags import options_from
from kmirror.config.describe import describe
from kmirror.config.dialects.loader import load_config
from kmirror.errors import TopicError
from kmirror.kafka.plan import plan
from kmirror.schemas.check import print_schema_plan, schema_plan


def check(args: argparse.Namespace) -> int:
    config = load_config(options_from(args))
    print(describe(config), file=sys.stderr)
    for note in config.notes:
        print(f"warning: {note}", file=sys.stderr)
    rows = plan(config, args.timeout)
    subjects = schema_plan(config)
    acls = acl_plan(config)
    if args.json:
        out: dict[str, Any] = {"topics": rows, "notes": list(config.notes)}
        if config.schemas is not None:
            out["schemas"] = {"id_mode": config.schemas.id_mode, "subjects": subjects}
        if acls is not None:
            out["acls"] = as_json(acls)
        print(json.dumps(out, indent=2))
    else:
        for r in rows:
            tp = "-" if r["target_partitions"] is None else r["target_partitions"]
            print(
                f"{r['source']} -> {r['target']}  ({r['named_by']})  partitions "
                f"{r['partitions']} (target {tp})  {r['action']}"
            )
        print_schema_plan(config, subjects)
        print_acl_plan(config, acls)
    # Two topics onto one target, or a loop: refused (exit 2) after the mapping was shown.
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
    return 0
