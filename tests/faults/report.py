"""Rewrite the results tables of docs/reliability.md from bench/results/<stem>-{short,full}.json
(stem `faults`: the single-broker scenarios; `faults3`: the 3-broker ones) and the soak's from
bench/results/soak.json.

    .venv/bin/python -m tests.faults.report          # print the tables
    .venv/bin/python -m tests.faults.report --write  # replace them in docs/reliability.md

The tables sit between `<!-- <stem>:short -->` / `<!-- <stem>:full -->` and
`<!-- /<stem>:... -->` markers, the soak's between `<!-- soak -->` and `<!-- /soak -->`; the
rest of the document is left alone.
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
SOAK = RESULTS / "soak.json"

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
      "src-partitioned", "half-open", "resets", "k8s-pod-delete-upgrade")
      for engine in ("record", "batch") for eos in ("", "-eos")),
]  # fmt: skip


def _s(value: Any) -> str:
    return "-" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def table(doc: dict[str, Any]) -> str:
    rows = sorted(
        doc["scenarios"],
        key=lambda s: ORDER.index(s["scenario"]) if s["scenario"] in ORDER else 99,
    )

    def run(s: dict[str, Any]) -> str:
        return f"{s.get('created') or doc['created']} (git {s.get('git') or doc.get('git') or '?'})"

    runs = sorted({run(s) for s in rows})
    out = [
        f"Run{'s' if len(runs) > 1 else ''} {', '.join(runs)}, {doc['host']['cpus']} CPUs, "
        f"load {doc['rate_records_per_s']} records/s, commit interval "
        f"{doc['commit_interval_ms']} ms, session timeout {doc['session_timeout_ms']} ms"
        f"{'; each row names its run' if len(runs) > 1 else ''}.",
        "",
        "| scenario | faults | produced | mirrored | missing | duplicates "
        "| recovery median / max (s) | catch-up (s) | mirror exit codes |"
        + (" run |" if len(runs) > 1 else ""),
        "|---|---:|---:|---:|---:|---:|---|---:|---|" + ("---|" if len(runs) > 1 else ""),
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
            + (f" {run(s)} |" if len(runs) > 1 else "")
        )
    return "\n".join(out)


def render(stem: str, mode: str) -> str:
    path = RESULTS / f"{stem}-{mode}.json"
    if not path.exists():
        return f"(no {path.relative_to(REPO_ROOT)} yet)"
    return table(json.loads(path.read_text()))


def soak_table(doc: dict[str, Any]) -> str:
    """The soak's figures: what ran, at what load and load average, and what it measured."""
    st, sm, res, la = doc["settings"], doc["summary"], doc["result"], doc["load_average"]
    cap = doc.get("capacity")
    judged = "judged" if sm["slopes_judged"] else "reported only, window under 30 min"
    return "\n".join([
        f"Run {doc['created']} (git {doc.get('git') or '?'}, {doc['host']['cpus']} CPUs): "
        f"{st['seconds'] / 60:g} min, a fault every {st['every_s']:g} s (held {st['hold_s']:g} s), "
        f"engine {st['engine']}, {'exactly-once' if st['eos'] else 'at-least-once'}; "
        f"load average {la['start']} at the start, mean {la['mean']}, peak {la['max']}.",
        "",
        "| capacity (records/s) | load asked / achieved (records/s) | why | faults "
        "| RSS slope (MB/h) | fd slope (/h) | RSS first / last / peak (MB) | fds first / last "
        "/ peak | peak lag | produced | missing | duplicates | mirror exit codes |",
        "|---:|---|---|---:|---:|---:|---|---|---:|---:|---:|---:|---|",
        f"| {_s(cap and cap['records_per_s'])} | {doc['rate']['records_per_s']} / "
        f"{_s(sm['load_records_per_s'])} | {doc['rate']['why']} | {res['faults']} | "
        f"{sm['rss_slope_mb_per_h']} | {sm['fd_slope_per_h']} | {_s(sm['rss_mb_first'])} / "
        f"{_s(sm['rss_mb_last'])} / {_s(sm['rss_mb_max'])} | {_s(sm['fds_first'])} / "
        f"{_s(sm['fds_last'])} / {_s(sm['fds_max'])} | {_s(sm['lag_max'])} | {res['produced']} "
        f"| **{res['missing']}** | {res['duplicates']} | "
        f"{', '.join(str(c) for c in res['mirror_exits']) or '-'} |",
        "",
        f"Slopes over {sm['window_s']:g} s after a warm-up of {sm['warmup_s']:g} s ({judged}); "
        f"faults: {', '.join(f['what'] for f in res['details'].get('faults', [])) or 'none'}.",
    ])  # fmt: skip


def replace(text: str, stem: str, mode: str | None, body: str) -> str:
    tag = stem if mode is None else f"{stem}:{mode}"
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
        if SOAK.exists():
            print(f"## soak\n\n{soak_table(json.loads(SOAK.read_text()))}\n")
        return 0
    text = DOC.read_text(encoding="utf-8")
    for stem in STEMS:
        for mode in modes:
            if (RESULTS / f"{stem}-{mode}.json").exists():
                text = replace(text, stem, mode, render(stem, mode))
    if SOAK.exists():
        text = replace(text, "soak", None, soak_table(json.loads(SOAK.read_text())))
    DOC.write_text(text, encoding="utf-8")
    print(f"updated {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
