"""Rewrite the results tables of docs/reliability.md from bench/results/faults-{short,full}.json.

    .venv/bin/python -m tests.faults.report          # print the tables
    .venv/bin/python -m tests.faults.report --write  # replace them in docs/reliability.md

The tables sit between `<!-- faults:short -->` / `<!-- faults:full -->` and
`<!-- /faults:... -->` markers; the rest of the document is left alone.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
RESULTS = REPO_ROOT / "bench" / "results"
DOC = REPO_ROOT / "docs" / "reliability.md"

ORDER = [
    "kill9",
    "sigterm",
    "target-restart",
    "source-restart",
    "target-down-abort-true",
    "target-down-abort-false",
    "too-large",
    "two-members",
    "two-members-cooperative",
    "stream-child-kill",
]


def _s(value: Any) -> str:
    return "-" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def table(doc: dict[str, Any]) -> str:
    rows = sorted(
        doc["scenarios"],
        key=lambda s: ORDER.index(s["scenario"]) if s["scenario"] in ORDER else 99,
    )
    out = [
        f"Run {doc['created']} (git {doc.get('git') or '?'}, {doc['host']['cpus']} CPUs, "
        f"load {doc['rate_records_per_s']} records/s, commit interval "
        f"{doc['commit_interval_ms']} ms, session timeout {doc['session_timeout_ms']} ms).",
        "",
        "| scenario | faults | produced | mirrored | missing | duplicates "
        "| recovery median / max (s) | catch-up (s) | mirror exit codes |",
        "|---|---:|---:|---:|---:|---:|---|---:|---|",
    ]
    for s in rows:
        exits = ", ".join(str(c) for c in s["mirror_exits"]) or "-"
        if len(exits) > 40:
            codes = s["mirror_exits"]
            exits = ", ".join(f"{c} (x{codes.count(c)})" for c in sorted(set(codes)))
        out.append(
            f"| {s['scenario']} | {s['faults']} | {s['produced']} | {s['mirrored']} | "
            f"**{s['missing']}** | {s['duplicates']} | {_s(s['recovery_median_s'])} / "
            f"{_s(s['recovery_max_s'])} | {_s(s['catch_up_s'])} | {exits} |"
        )
    return "\n".join(out)


def render(mode: str) -> str:
    path = RESULTS / f"faults-{mode}.json"
    if not path.exists():
        return f"(no {path.relative_to(REPO_ROOT)} yet)"
    return table(json.loads(path.read_text()))


def replace(text: str, mode: str, body: str) -> str:
    pattern = re.compile(rf"(<!-- faults:{mode} -->\n).*?(\n<!-- /faults:{mode} -->)", re.S)
    if not pattern.search(text):
        raise SystemExit(f"{DOC}: no <!-- faults:{mode} --> ... <!-- /faults:{mode} --> markers")
    return pattern.sub(lambda m: m[1] + body + m[2], text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--mode", choices=["short", "full"], action="append")
    args = parser.parse_args(argv)
    modes = args.mode or ["short", "full"]
    if not args.write:
        for mode in modes:
            print(f"## {mode}\n\n{render(mode)}\n")
        return 0
    text = DOC.read_text(encoding="utf-8")
    for mode in modes:
        if (RESULTS / f"faults-{mode}.json").exists():
            text = replace(text, mode, render(mode))
    DOC.write_text(text, encoding="utf-8")
    print(f"updated {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
