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
    return 0
