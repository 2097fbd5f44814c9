"""`kmirror offsets` (read-only) and `kmirror failover`: a consumer group across the clusters.

Both take the mirror's own configuration (any dialect), so they find the same clusters, the
same checkpoints topic and the same progress as the mirror. Failback is `failover` with the
configuration of the reverse flow (docs/disaster-recovery.md).
"""

from __future__ import annotations

import argparse
import json
import sys

from kmirror.cli.flags import options_from
from kmirror.config.dialects.loader import load_config


def _num(value: int | None) -> str:
    return "-" if value is None else str(value)


def offsets_cmd(args: argparse.Namespace) -> int:
    from kmirror.dr.groupview import offsets

    config = load_config(options_from(args))
    rows = offsets(config, args.group)
    if args.json:
        print(
            json.dumps({"group": args.group, "partitions": [r.as_dict() for r in rows]}, indent=2)
        )
        return 0
    head = ("target topic", "partition", "source committed", "translated", "checkpoint",
            "target committed", "target end", "lag")  # fmt: skip
    table = [head] + [
        (r.target_topic, str(r.partition), _num(r.source_committed), _num(r.translated),
         _num(r.checkpoint), _num(r.target_committed), _num(r.target_end), _num(r.lag))
        for r in rows
    ]  # fmt: skip
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    return 0


def failover_cmd(args: argparse.Namespace) -> int:
    from kmirror.dr.groupview import apply, failover_plan

    config = load_config(options_from(args))
    moves = failover_plan(config, args.group)
    verb = "would set" if args.dry_run else "set"
    for m in moves:
        print(
            f"{verb} {args.group} {m.topic}[{m.partition}]: {_num(m.before)} -> {m.after} "
            f"(source offset {m.upstream})"
        )
    if args.dry_run:
        print(f"dry run: nothing written to group {args.group}", file=sys.stderr)
        return 0
    apply(config, args.group, moves)
    print(
        f"failover: group {args.group} now resumes on the target "
        f"({config.target.bootstrap_servers}) at {len(moves)} translated offset(s)",
        file=sys.stderr,
    )
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from kmirror.cli.flags import add_config_arguments

    for name, text, handler in (
        ("offsets", "read-only: a consumer group's offsets on both clusters, translated, lag",
         offsets_cmd),
        ("failover", "move a consumer group to the target at its checkpointed offsets",
         failover_cmd),
    ):  # fmt: skip
        cmd = sub.add_parser(name, help=text)
        add_config_arguments(cmd)
        cmd.add_argument("--group", required=True, help="the consumer group")
        if name == "offsets":
            cmd.add_argument("--json", action="store_true", help="machine-readable on stdout")
        else:
            cmd.add_argument("--dry-run", action="store_true", help="print, write nothing")
        cmd.set_defaults(handler=handler)
