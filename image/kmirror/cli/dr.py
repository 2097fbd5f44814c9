"""`kmirror offsets` (read-only), `kmirror failover` and `kmirror failback`: a consumer group
across the clusters.

All take the mirror's own configuration (any dialect), so they find the same clusters, the same
checkpoints topic and the same progress as the mirror. Failover moves a group from A to B;
failback moves it back to the source topics on A, exactly, with the configuration of the same
A->B flow (docs/disaster-recovery.md). The reverse flow B->A, when records were produced on B
meanwhile, comes from the same mm2.properties (`--reverse-flow`, default: the swapped flow when
the file enables it) or, in the other dialects, from its consumer group (`--reverse-group-id`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable, Sequence

from kmirror.cli.flags import options_from
from kmirror.config.dialects.loader import load_config
from kmirror.config.dialects.options import Options
from kmirror.config.model import MirrorConfig
from kmirror.errors import ConfigError


def _num(value: int | None) -> str:
    return "-" if value is None else str(value)


def _table(rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())


def reverse_config(args: argparse.Namespace, config: MirrorConfig) -> MirrorConfig | None:
    """The B->A flow, when one is given or the mm2.properties enables the swapped flow."""
    from kmirror.dr.failback import reverse_of

    options = options_from(args)
    if args.reverse_flow:
        if config.dialect != "mm2":
            raise ConfigError(
                "--reverse-flow names a flow of the mm2.properties file: with MirrorMaker 1 "
                "or KUDO flags give the reverse mirror's consumer group, --reverse-group-id"
            )
        return load_config(_flow(options, args.reverse_flow))
    if args.reverse_group_id:
        return reverse_of(config, args.reverse_group_id, args.reverse_progress_topic or "")
    if config.dialect == "mm2":
        swapped = f"{config.target.alias}->{config.source.alias}"
        try:
            return load_config(_flow(options, swapped))
        except ConfigError:
            return None  # the file does not enable it
    return None


def _flow(options: Options, flow: str) -> Options:
    """The options loading another flow of the same file (its own group and progress topic)."""
    return dataclasses.replace(options, flow=flow, group_id=None, progress_topic=None)


def offsets_cmd(args: argparse.Namespace) -> int:
    from kmirror.dr.groupview import offsets

    config = load_config(options_from(args))
    rows = offsets(config, args.group, reverse_config(args, config))
    if args.json:
        print(
            json.dumps({"group": args.group, "partitions": [r.as_dict() for r in rows]}, indent=2)
        )
        return 0
    head = ("target topic", "partition", "source committed", "translated", "checkpoint",
            "target committed", "target end", "lag", "failback")  # fmt: skip
    _table([head] + [
        (r.target_topic, str(r.partition), _num(r.source_committed), _num(r.translated),
         _num(r.checkpoint), _num(r.target_committed), _num(r.target_end), _num(r.lag),
         _num(r.failback))
        for r in rows
    ])  # fmt: skip
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
    return _write(
        args.dry_run,
        args.group,
        lambda: apply(config, args.group, moves),
        f"failover: group {args.group} now resumes on the target "
        f"({config.target.bootstrap_servers}) at {len(moves)} translated offset(s)",
    )


def _write(dry_run: bool, group: str, write: Callable[[], None], done: str) -> int:
    """The end of a command that moves a group: nothing on a dry run, else write and say so."""
    if dry_run:
        print(f"dry run: nothing written to group {group}", file=sys.stderr)
        return 0
    write()
    print(done, file=sys.stderr)
    return 0


def failback_cmd(args: argparse.Namespace) -> int:
    from kmirror.dr import failback

    config = load_config(options_from(args))
    reverse = reverse_config(args, config)
    verb = "would set" if args.dry_run else "set"
    if args.start_reverse:
        if reverse is None:
            raise ConfigError(
                "--start-reverse needs the reverse flow: --reverse-flow B->A (mm2.properties) "
                "or --reverse-group-id GROUP (the B->A mirror's consumer group)"
            )
        starts = failback.start_reverse_plan(config, reverse)
        for s in starts:
            print(
                f"{verb} {reverse.group_id} {s.target_topic}[{s.partition}]: "
                f"{_num(s.before)} -> {s.after}"
            )
        return _write(
            args.dry_run,
            reverse.group_id,
            lambda: failback.apply_start(config, reverse, starts),
            f"the reverse flow (group {reverse.group_id}) starts {len(starts)} partition(s) "
            "after the last copy of this flow",
        )
    if not args.group:
        raise ConfigError("kmirror failback needs --group GROUP (or --start-reverse)")
    plan = failback.failback_plan(config, args.group, reverse)
    for b in plan:
        where = f"(target offset {b.on_target}, {b.via or 'unknown'})"
        print(
            f"{verb} {args.group} {b.source_topic}[{b.partition}]: {_num(b.before)} -> "
            f"{_num(b.after)} {where}" + (f": {b.why}" if b.why else "")
        )
    offsets = failback.check_plan(config, args.group, plan)
    return _write(
        args.dry_run,
        args.group,
        lambda: failback.apply(config, args.group, offsets),
        f"failback: group {args.group} now resumes on the source "
        f"({config.source.bootstrap_servers}) at {len(offsets)} translated offset(s)",
    )


def _reverse_arguments(cmd: argparse.ArgumentParser) -> None:
    group = cmd.add_argument_group("the reverse flow B->A (records produced on B meanwhile)")
    group.add_argument(
        "--reverse-flow", metavar="B->A",
        help="mm2.properties: the reverse flow (default: the swapped flow, when enabled)",
    )  # fmt: skip
    group.add_argument(
        "--reverse-group-id", metavar="GROUP",
        help="MM1/KUDO: the consumer group of the mirror running B->A",
    )  # fmt: skip
    group.add_argument(
        "--reverse-progress-topic", metavar="TOPIC",
        help="its progress topic on A (default kmirror-progress.<group>.internal)",
    )  # fmt: skip


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from kmirror.cli.flags import add_config_arguments

    for name, text, handler in (
        ("offsets", "read-only: a consumer group's offsets on both clusters, translated, lag, "
         "failback", offsets_cmd),
        ("failover", "move a consumer group to the target at its checkpointed offsets",
         failover_cmd),
        ("failback", "move a consumer group back to the source topics at exactly the next "
         "record it had not consumed on the target", failback_cmd),
    ):  # fmt: skip
        cmd = sub.add_parser(name, help=text)
        add_config_arguments(cmd)
        cmd.add_argument("--group", required=name != "failback", help="the consumer group")
        if name == "offsets":
            cmd.add_argument("--json", action="store_true", help="machine-readable on stdout")
        else:
            cmd.add_argument("--dry-run", action="store_true", help="print, write nothing")
        if name != "failover":
            _reverse_arguments(cmd)
        if name == "failback":
            cmd.add_argument(
                "--start-reverse", action="store_true",
                help="prepare the reverse flow: its group on B starts each mirrored partition "
                "after the last copy of this flow (records produced on B only, none back)",
            )  # fmt: skip
        cmd.set_defaults(handler=handler)
