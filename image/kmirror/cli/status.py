"""`kmirror status`: per source partition, how far the mirror is (kmirror.progress.status has
the columns). Reads only, joins no group.

A running mirror with its control API on knows its positions live (kmirror.app.api's GET
/status): asked first. When none answers, the columns come from what the mirror persisted at
its last commit (up to a commit interval old), and stderr says so.
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
from kmirror.progress.status import rows_from_doc, status_doc, status_rows, table


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
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print(table(rows_from_doc(doc)))
        print(f"total lag {doc['lag']} record(s), group {config.group_id}")
        for line in control_lines(doc.get("control")):
            print(line)
    return 0


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
