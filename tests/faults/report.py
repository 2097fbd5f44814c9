"""Rewrite the results tables of docs/reliability.md from bench/results/<stem>-{short,full}.json
(stem `faults`: the single-broker scenarios; `faults3`: the 3-broker ones).

    .venv/bin/python -m tests.faults.report          # print the tables
    .venv/bin/python -m tests.faults.report --write  # replace them in docs/reliability.md

The tables sit between `<!-- <stem>:short -->` / `<!-- <stem>:full -->` and
`<!-- /<stem>:... -->` markers; the rest of the document is left alone.
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

STEMS = ("faults", "faults3")
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
    *(f"{name}-{engine}{eos}" for name in ("leaders", "leader-kill9", "rolling-restart",
      "below-min-isr", "rtt-100ms", "src-leaders", "src-leader-kill9", "src-rolling-restart",
      "src-partitioned", "half-open", "resets")
      for engine in ("record", "batch") for eos in ("", "-eos")),
]  # fmt: skip


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


def render(stem: str, mode: str) -> str:
    path = RESULTS / f"{stem}-{mode}.json"
    if not path.exists():
        return f"(no {path.relative_to(REPO_ROOT)} yet)"
    return table(json.loads(path.read_text()))


def replace(text: str, stem: str, mode: str, body: str) -> str:
    tag = f"{stem}:{mode}"
    pattern = re.compile(rf"(<!-- {tag} -->\n).*?(\n<!-- /{tag} -->)", re.S)
    if not pattern.search(text):
        raise SystemExit(f"{DOC}: no <!-- {tag} --> ... <!-- /{tag} --> markers")
    return pattern.sub(lambda m: m[1] + body + m[2], text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--mode", choices=["short", "full"], action="append")
    args = parser.parse_args(argv)
    modes = args.mode or ["short", "full"]
    if not args.write:
        for stem in STEMS:
            for mode in modes:
                print(f"## {stem} {mode}\n\n{render(stem, mode)}\n")
        return 0
    text = DOC.read_text(encoding="utf-8")
    for stem in STEMS:
        for mode in modes:
            if (RESULTS / f"{stem}-{mode}.json").exists():
                text = replace(text, stem, mode, render(stem, mode))
    DOC.write_text(text, encoding="utf-8")
    print(f"updated {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
