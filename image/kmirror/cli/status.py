"""`kmirror status`: per source partition, how far the mirror is (kmirror.progress.status has
the columns). Reads only, joins no group.

A running mirror with its control API on knows its positions live (kmirror.app.api's GET
/status): asked first. When none answers, the columns come from what the mirror persisted at
its last commit (up to a commit interval old), and stderr says so. With schema mirroring on,
the subjects behind on the target follow (both registries read, nothing written).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from typing import Any

from kmirror.cli.control import UnreachableError, ask
from kmirror.cli.flags import options_from
from kmirror.config.dialects.loader import load_config
from kmirror.config.model import MirrorConfig
from kmirror.errors import KmirrorError
from kmirror.progress.status import rows_from_doc, status_doc, status_rows, table
from kmirror.schemas.check import schema_plan


def status(args: argparse.Namespace) -> int:
    config = load_config(options_from(args))
    for note in config.notes:
        print(f"warning: {note}", file=sys.stderr)
    doc = None
    if config.control.enabled and not args.persisted:
        try:
            docs = ask(config, args, "GET", "/status?flow=" + config.flow)["flows"]
            doc = docs[0]
        except UnreachableError as exc:
            print(f"note: {exc}: showing what the mirror persisted at its last commit",
                  file=sys.stderr)  # fmt: skip
    if doc is None:
        doc = status_doc(config, status_rows(config, args.timeout))
    if config.schemas is not None:
        doc = {**doc, "schemas": schema_status(config)}
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print(table(rows_from_doc(doc)))
        print(f"total lag {doc['lag']} record(s), group {config.group_id}")
        for line in control_lines(doc.get("control")) + schema_lines(doc.get("schemas")):
            print(line)
    return 0


def schema_status(config: MirrorConfig) -> dict[str, Any]:
    """The subjects behind on the target (versions the source has and the target not yet),
    read from both registries like `kmirror check`. An unreachable registry is reported, not
    fatal: the partitions' status above is still worth showing."""
    try:
        rows = schema_plan(config)
    except KmirrorError as exc:
        return {"error": str(exc)}
    behind = [r for r in rows if r["action"] != "ok"]
    return {"subjects": len(rows), "behind": len(behind), "rows": behind}


def schema_lines(schemas: Mapping[str, Any] | None) -> list[str]:
    if not schemas:
        return []
    if "error" in schemas:
        return [f"schemas: registries not read: {schemas['error']}"]
    out = [f"schemas: {schemas['behind']} of {schemas['subjects']} subject(s) behind"]
    for r in schemas["rows"]:
        out.append(
            f"  {r['subject']} -> {r['target_subject']}: {r['versions']} version(s), "
            f"target {r['target_versions']} ({r['action']})"
        )
    return out


def control_lines(control: Mapping[str, Any] | None) -> list[str]:
    """What the running mirror's control state changes about the copy (nothing when it is
    copying everything, or when the status was read from the last commit)."""
    if not control:
        return []
    out = []
    if control["paused"]:
        out.append("paused: " + ", ".join(control["paused"]))
    drain = control["drain"]
    if drain is not None and drain["complete"]:
        out.append(
            f"drained (drain {drain['id']}): every partition committed up to the source end "
            "captured at the drain; copying nothing more"
        )
    elif drain is not None:
        step = "capturing the source ends" if drain["capturing"] else "draining"
        out.append(f"{step} (drain {drain['id']}): {drain['records_left']} record(s) left")
    if control["throttle_set_at_run_time"]:
        out.append("throttle set at run time: " + json.dumps(control["throttle"]))
    if not control["applied"]:
        out.append("(not every stream acts on this yet)")
    return out
