"""The markdown tables and the PNG chart of a benchmark result (figures: scripts/bench/summary.py).

python -m scripts.bench.report bench/results/full-<stamp>.json   # re-render .md and .png
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from scripts.bench.summary import summarize

__all__ = ["chart", "markdown", "run_line", "summarize"]


def _f(v: float | None, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def run_line(r: dict[str, Any]) -> str:
    """One run in one progress line."""
    if not r.get("verified"):
        return f"FAILED: {r.get('error')}"
    parts = []
    if "rate_rps" in r:
        how = "all copied" if r.get("complete", True) else f"cut after {r['copy_s']:.1f} s"
        parts.append(
            f"{r['copied']:,} records ({how}); {r['rate_rps']:,.0f} rec/s "
            f"{r['rate_mbps']:.1f} MB/s, first record {r['first_record_s']:.1f} s, "
            f"{r['cpu_s_per_m']:.1f} CPU s/M, RSS {r['peak_rss_mb']:.0f} MB"
        )
    if "latency" in r:
        lat = r["latency"]
        text = f"latency p50 {lat['p50_ms']:.0f} ms p99 {lat['p99_ms']:.0f} ms"
        for leg, v in lat.get("breakdown", {}).items():
            text += f" [{leg} {v['p50_ms']:.1f}/{v['p99_ms']:.1f}]"
        parts.append(text)
    if "sustained" in r:
        sus = r["sustained"]
        steps = ", ".join(
            f"{s['rate']:,.0f}{_step_mark(s)}(p99 {_f(s['p99_ms'], '.0f')})" for s in sus["steps"]
        )
        parts.append(f"sustained {_f(sus['rate_rps'], ',.0f')} rec/s [{steps}]")
    return "; ".join(parts) or "ok"


def _step_mark(step: dict[str, Any]) -> str:
    """✓ passed; ≈ the producers fell short and the mirror held what they produced; ✗ failed."""
    if step["passed"]:
        return "✓"
    return f"≈{step['achieved']:,}" if step.get("held") else "✗"


def markdown(result: dict[str, Any]) -> str:
    meta = result["meta"]
    summ = result["summary"]
    plan = meta["plan"]
    host = meta["host"]
    lines = [
        f"Mode `{meta['mode']}`, {plan['reps']} repetition(s), medians; "
        f"{host['cpus']} CPUs, load average at start {host['load_avg_start'][0]:.1f}, "
        f"at end {meta.get('load_avg_end', [0])[0]:.1f}; "
        f"run took {meta.get('duration_s', 0) / 60:.1f} min.",
        f"Command: `{meta['command']}`",
        "",
        *_quiet_line(result),
        _versions(meta.get("versions", {})),
        "",
    ]
    lines += _drain_table(summ, plan)
    lines += _ceiling_table(summ)
    lines += _shape_table(summ, plan)
    lines += _latency_table(summ, plan)
    lines += _sustained_table(summ, plan)
    return "\n".join(lines) + "\n"


def _drain_table(summ: dict[str, Any], plan: dict[str, Any]) -> list[str]:
    cut = plan.get("max_copy_s")
    lines = [
        "Drain: records/s over the copy window (from the first record on the target to the "
        "whole backlog"
        + (f", or {cut:g} s, whichever came first" if cut else "")
        + "). Ingest ceiling: the best raw produce ceiling into the target.",
        "",
        "| Workload | Contender | records/s | MB/s | ÷ MM2 (same parallelism) "
        "| ÷ ingest ceiling | CPU s / M records | CPU ÷ MM2 | exactly-once ÷ at-least-once "
        "| translate ÷ without | peak RSS MB | start → first record s | copy s "
        "| verified (complete) |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for wname, ws in summ["workloads"].items():
        head = f"{ws['records']:,} x {ws['record_bytes']} B"
        for s in ws["contenders"].values():
            lines.append(
                f"| {wname} ({head}) | {s['label']} | {_f(s['rate_rps'], ',.0f')} "
                f"| {_f(s['rate_mbps'], '.1f')} | {_f(s.get('ratio_vs_mm2_same'), '.2f')} "
                f"| {_f(s.get('ratio_vs_ingest_ceiling'), '.2f')} "
                f"| {_f(s['cpu_s_per_m'], '.2f')} | {_f(s.get('cpu_ratio_vs_mm2_same'), '.2f')} "
                f"| {_f(s.get('ratio_vs_at_least_once'), '.2f')} "
                f"| {_f(s.get('ratio_vs_without_translate'), '.2f')} "
                f"| {_f(s['peak_rss_mb'], ',.0f')} | {_f(s['first_record_s'], '.1f')} "
                f"| {_f(s['copy_s'], '.1f')} "
                f"| {s['verified']}/{s['reps']} ({s.get('complete', s['verified'])}) |"
            )
    return lines


def _ceiling_table(summ: dict[str, Any]) -> list[str]:
    rows = [(w, c) for w, ws in summ["workloads"].items() for c in ws["ceilings"].values()]
    if not rows:
        return []
    lines = [
        "",
        "| Workload | Ceiling | records/s | MB/s | CPU s / M records | verified |",
        "|---|---|--:|--:|--:|--:|",
    ]
    for wname, c in rows:
        lines.append(
            f"| {wname} | {c['label']} | {_f(c['rate_rps'], ',.0f')} "
            f"| {_f(c['rate_mbps'], '.1f')} | {_f(c['cpu_s_per_m'], '.1f')} "
            f"| {c['verified']}/{c['reps']} |"
        )
    return lines


def _shape_table(summ: dict[str, Any], plan: dict[str, Any]) -> list[str]:
    pre = summ.get("preloads", {})
    shaped = [w for w in plan["workloads"] if pre.get(w["name"], {}).get("batch_shape")]
    if not shaped:
        return []
    lines = [
        "",
        "Source batches as the loaders made them (sampled at the start, middle and end of every "
        "partition):",
        "",
        "| Workload | records | partitions | bytes per record | keys | producers "
        "| load rec/s | batches sampled | records per batch: mean | p10 | p50 | p90 | max |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for w in shaped:
        p = pre[w["name"]]
        shape = p["batch_shape"]
        rpb = shape.get("records_per_batch", {})
        sizes = f"{w.get('min_size', w['size'])}-{w.get('max_size', w['size'])}"
        lines.append(
            f"| {w['name']} | {w['records']:,} | {w.get('partitions', 8)} "
            f"| {sizes if w.get('max_size', w['size']) != w['size'] else w['size']} "
            f"| {w.get('keys', 0) or '-'} | {p['producers']} | {_f(p['rate_rps'], ',.0f')} "
            f"| {shape.get('batches', 0):,} | {rpb.get('mean', '-')} | {rpb.get('p10', '-')} "
            f"| {rpb.get('p50', '-')} | {rpb.get('p90', '-')} | {rpb.get('max', '-')} |"
        )
    return lines


def _latency_table(summ: dict[str, Any], plan: dict[str, Any]) -> list[str]:
    rows = [s for s in summ.get("phases", {}).values() if "latency_p50_ms" in s]
    if not rows:
        return []
    return [
        "",
        f"End-to-end latency at {plan['latency_rate_rps']:,} records/s for "
        f"{plan['latency_seconds']:g} s (sent by the source producer → received by a consumer "
        "on the target; the legs: sent → source acknowledgement, → target append (the "
        "mirror), → received (the reader)):",
        "",
        "| Contender | p50 ms | p99 ms | max ms | source leg p50 | mirror leg p50 / p99 "
        "| reader leg p50 | CPU s / M records at this rate |",
        "|---|--:|--:|--:|--:|--:|--:|--:|",
        *[
            f"| {s['label']} | {_f(s['latency_p50_ms'], '.1f')} "
            f"| {_f(s['latency_p99_ms'], '.1f')} | {_f(s['latency_max_ms'], '.0f')} "
            f"| {_f(s.get('latency_source_p50_ms'), '.1f')} "
            f"| {_f(s.get('latency_mirror_p50_ms'), '.1f')} / "
            f"{_f(s.get('latency_mirror_p99_ms'), '.1f')} "
            f"| {_f(s.get('latency_reader_p50_ms'), '.1f')} "
            f"| {_f(s['latency_cpu_s_per_m'], '.0f')} |"
            for s in rows
        ],
    ]


def _sustained_table(summ: dict[str, Any], plan: dict[str, Any]) -> list[str]:
    rows = [s for s in summ.get("phases", {}).values() if "sustained_rps" in s]
    if not rows:
        return []
    ph = plan.get("phases") or {}
    return [
        "",
        f"Sustained rate: the highest producer rate at which p99 latency (source append → "
        f"target append) stayed under 1 s, {ph.get('sustained_partitions')} partitions, "
        f"{ph.get('sustained_producers')} producers, steps of {ph.get('sustained_step_s'):g} s:",
        "",
        "| Contender | records/s (median) | ÷ MM2 (same parallelism) | each repetition | bound |",
        "|---|--:|--:|--:|--:|",
        *[
            f"| {s['label']} | {_f(s['sustained_rps'], ',.0f')} "
            f"| {_f(s.get('sustained_ratio_vs_mm2_same'), '.2f')} "
            f"| {', '.join(_f(x, ',.0f') for x in s['sustained_runs'])} "
            f"| {', '.join(s['sustained_bounds'])} |"
            for s in rows
        ],
    ]


def _quiet_line(result: dict[str, Any]) -> list[str]:
    """How quiet the machine was when the runs started (scripts/bench/quiet.py)."""
    policy = result["meta"]["plan"].get("quiet")
    if not policy or not policy["max_wait_s"]:
        return []
    runs = [r for r in [*result["runs"], *result["ceilings"]] if "settle_s" in r]
    if not runs:
        return []
    waits = sorted(r["settle_s"] for r in runs)
    capped = sum(1 for r in runs if not r["quiet_at_start"])
    line = (
        f"Each run started on a quiet machine: CPU busy (I/O wait included) under "
        f"{policy['busy_below']:.0%} for {policy['samples']} s in a row, waiting at most "
        f"{policy['max_wait_s']:.0f} s; waits {waits[0]:.0f}-{waits[-1]:.0f} s (median "
        f"{waits[len(waits) // 2]:.0f} s), {capped} of {len(runs)} runs started at the cap."
    )
    synced = [r for r in runs if "sync_s" in r]
    if synced:
        dirty = max(r["dirty_mb_at_start"] for r in synced)
        line += (
            f" Dirty pages were written first (sync): at most {dirty:,} MB, "
            f"the longest sync {max(r['sync_s'] for r in synced):.1f} s."
        )
    warm = result.get("warmups") or []
    if warm:
        line += (
            f" An uncounted warm-up round ran first ({len(warm)} runs: "
            + ", ".join(f"{r['workload']} {r['contender']}: {run_line(r)}" for r in warm)
            + ")."
        )
    return [line, ""]


def _versions(v: dict[str, Any]) -> str:
    if not v:
        return ""
    engine = v.get("engine_changes") or []
    tree = f", working tree with {len(engine)} engine file(s) changed" if engine else ""
    return (
        f"kmirror {v.get('kmirror')} (commit {v.get('git_commit')}{tree}), confluent-kafka "
        f"{v.get('confluent_kafka')} / librdkafka {v.get('librdkafka')}; Apache Kafka brokers, "
        f"ProducerPerformance and MirrorMaker 2 from {v.get('kafka_jars')} / {v.get('mm2_jars')}; "
        f"{v.get('java')}."
    )


# -- chart -------------------------------------------------------------------------------------


def chart(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    summ = result["summary"]
    wnames = list(summ["workloads"])
    names = list(dict.fromkeys(n for ws in summ["workloads"].values() for n in ws["contenders"]))
    labels = {c["name"]: c["label"] for c in result["meta"]["plan"]["contenders"]}
    colors = ["#1f77b4", "#6baed6", "#d62728", "#fc9272", "#2ca02c", "#98df8a", "#9467bd"]
    fig, axes = plt.subplots(2, 2, figsize=(13, 8.5))
    width = 0.8 / max(len(names), 1)

    def bars(ax: Any, key: str, title: str, ylabel: str) -> None:
        for i, n in enumerate(names):
            vals = [summ["workloads"][w]["contenders"].get(n, {}).get(key) or 0 for w in wnames]
            xs = [j + (i - (len(names) - 1) / 2) * width for j in range(len(wnames))]
            ax.bar(xs, vals, width, label=labels.get(n, n), color=colors[i % len(colors)])
        ax.set_xticks(range(len(wnames)), wnames)
        ax.set_title(title)
        ax.set_ylabel(ylabel)

    ax = axes[0][0]
    bars(ax, "rate_rps", "Drain throughput (median)", "records/s")
    ax.set_yscale("log")
    if names:  # a phases-only run (--workloads none) drew no bars: no legend to draw
        ax.legend(fontsize=7, loc="upper center", ncol=2)
    bars(axes[0][1], "cpu_s_per_m", "CPU seconds per million records (process tree)", "CPU s")
    phases = summ.get("phases", {})
    lat = [(n, s) for n, s in phases.items() if "latency_p50_ms" in s]
    ax = axes[1][0]
    rate = result["meta"]["plan"].get("latency_rate_rps")
    if lat:
        xs = range(len(lat))
        ax.bar([x - 0.2 for x in xs], [s["latency_p50_ms"] for _, s in lat], 0.4, label="p50")
        ax.bar([x + 0.2 for x in xs], [s["latency_p99_ms"] for _, s in lat], 0.4, label="p99")
        ax.set_xticks(list(xs), [n for n, _ in lat], fontsize=7)
        ax.legend(fontsize=8)
    ax.set_title(f"End-to-end latency at {rate:,} rec/s" if rate else "End-to-end latency")
    ax.set_ylabel("ms")
    sus = [(n, s) for n, s in phases.items() if "sustained_rps" in s]
    ax = axes[1][1]
    if sus:
        ax.bar(range(len(sus)), [s["sustained_rps"] for _, s in sus], 0.6)
        ax.set_xticks(range(len(sus)), [n for n, _ in sus], fontsize=7)
    ax.set_title("Sustained rate with p99 < 1 s (median)")
    ax.set_ylabel("records/s")
    fig.suptitle(
        f"kmirror vs Apache MirrorMaker 2 — {result['meta']['mode']} run, "
        f"{result['meta']['plan']['reps']} repetition(s), {result['meta']['host']['cpus']} CPUs"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m scripts.bench.report RESULT.json", file=sys.stderr)
        return 2
    path = Path(args[0])
    result = json.loads(path.read_text())
    result["summary"] = summarize(result)
    path.with_suffix(".md").write_text(markdown(result))
    chart(result, path.with_suffix(".png"))
    sys.stdout.write(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
