"""Medians, ratios, the markdown table and the PNG chart of a benchmark result.

python -m scripts.bench.report bench/results/full-<stamp>.json   # re-render .md and .png
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

CEILING_LABELS = {
    "producer-perf": "raw produce, Java ProducerPerformance",
    "python-produce": "raw produce, confluent-kafka loop",
    "python-consume": "raw consume, confluent-kafka loop",
}
METRICS = ("rate_rps", "rate_mbps", "first_record_s", "cpu_s_per_m", "peak_rss_mb", "copy_s")


def _median(values: list[float]) -> float | None:
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else None


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def summarize(result: dict[str, Any]) -> dict[str, Any]:
    plan = result["meta"]["plan"]
    contenders = {c["name"]: c for c in plan["contenders"]}
    out: dict[str, Any] = {"workloads": {}, "all_verified": True}
    for w in plan["workloads"]:
        wname = w["name"]
        runs = [r for r in result["runs"] if r["workload"] == wname]
        ceil_runs = [r for r in result["ceilings"] if r["workload"] == wname]
        ceilings: dict[str, Any] = {}
        for kind in plan["ceilings"]:
            mine = [r for r in ceil_runs if r["ceiling"] == kind]
            ok = [r for r in mine if r.get("verified")]
            ceilings[kind] = {
                "label": CEILING_LABELS.get(kind, kind),
                "reps": len(mine),
                "verified": len(ok),
                "rate_rps": _median([r["rate_rps"] for r in ok]),
                "rate_mbps": _median([r["rate_mbps"] for r in ok]),
                "cpu_s_per_m": _median(
                    [r["cpu_s"] / r["records"] * 1e6 for r in ok if r.get("cpu_s") is not None]
                ),
            }
            out["all_verified"] &= bool(mine) and len(ok) == len(mine)
        per: dict[str, Any] = {}
        for name, c in contenders.items():
            mine = [r for r in runs if r["contender"] == name]
            ok = [r for r in mine if r.get("verified")]
            s: dict[str, Any] = {
                "label": c["label"],
                "kind": c["kind"],
                "parallelism": c["parallelism"],
                "reps": len(mine),
                "verified": len(ok),
                "all_verified": bool(mine) and len(ok) == len(mine),
                "records": w["records"],
            }
            for m in METRICS:
                s[m] = _median([r.get(m) for r in ok])
            lats = [r["latency"] for r in ok if "latency" in r]
            if lats:
                s["latency_p50_ms"] = _median([x["p50_ms"] for x in lats])
                s["latency_p99_ms"] = _median([x["p99_ms"] for x in lats])
                s["latency_max_ms"] = _median([x["max_ms"] for x in lats])
                s["latency_cpu_s_per_m"] = _median([x["cpu_s_per_m"] for x in lats])
            out["all_verified"] &= s["all_verified"]
            per[name] = s
        mm2 = {s["parallelism"]: s for s in per.values() if s["kind"] == "mm2"}
        best_mm2 = max((s["rate_rps"] or 0 for s in mm2.values()), default=None)
        for s in per.values():
            if s["kind"] != "kmirror":
                continue
            same = mm2.get(s["parallelism"])
            s["ratio_vs_mm2_same"] = _ratio(s["rate_rps"], same["rate_rps"] if same else None)
            s["ratio_vs_mm2_best"] = _ratio(s["rate_rps"], best_mm2)
            # Issue 12's CPU goal: at most a fifth of MM2's CPU per record.
            s["cpu_ratio_vs_mm2_same"] = _ratio(
                s["cpu_s_per_m"], same["cpu_s_per_m"] if same else None
            )
            s["ratio_vs_python_produce"] = _ratio(
                s["rate_rps"], ceilings.get("python-produce", {}).get("rate_rps")
            )
            s["ratio_vs_producer_perf"] = _ratio(
                s["rate_rps"], ceilings.get("producer-perf", {}).get("rate_rps")
            )
            s["ratio_vs_python_consume"] = _ratio(
                s["rate_rps"], ceilings.get("python-consume", {}).get("rate_rps")
            )
        out["workloads"][wname] = {
            "records": w["records"],
            "record_bytes": w["size"],
            "contenders": per,
            "ceilings": ceilings,
        }
    return out


# -- markdown ----------------------------------------------------------------------------------


def _f(v: float | None, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def markdown(result: dict[str, Any]) -> str:
    meta = result["meta"]
    summ = result["summary"]
    plan = meta["plan"]
    reps = plan["reps"]
    lines = [
        f"Mode `{meta['mode']}`, {reps} repetition(s), medians; "
        f"{meta['host']['cpus']} CPUs, load average at start "
        f"{meta['host']['load_avg_start'][0]:.1f}, at end {meta.get('load_avg_end', [0])[0]:.1f}; "
        f"run took {meta.get('duration_s', 0) / 60:.1f} min.",
        f"Command: `{meta['command']}`",
        "",
        _versions(meta.get("versions", {})),
        "",
        "| Workload | Contender | records/s | MB/s | ÷ MM2 (same parallelism) | ÷ best MM2 "
        "| ÷ raw produce (confluent-kafka) | ÷ raw produce (Java) | CPU s / M records "
        "| CPU ÷ MM2 | peak RSS MB | start → first record s | verified |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for wname, ws in summ["workloads"].items():
        head = f"{ws['records']:,} x {ws['record_bytes']} B"
        for s in ws["contenders"].values():
            lines.append(
                f"| {wname} ({head}) | {s['label']} | {_f(s['rate_rps'], ',.0f')} "
                f"| {_f(s['rate_mbps'], '.1f')} | {_f(s.get('ratio_vs_mm2_same'), '.2f')} "
                f"| {_f(s.get('ratio_vs_mm2_best'), '.2f')} "
                f"| {_f(s.get('ratio_vs_python_produce'), '.2f')} "
                f"| {_f(s.get('ratio_vs_producer_perf'), '.2f')} "
                f"| {_f(s['cpu_s_per_m'], '.1f')} | {_f(s.get('cpu_ratio_vs_mm2_same'), '.2f')} "
                f"| {_f(s['peak_rss_mb'], ',.0f')} "
                f"| {_f(s['first_record_s'], '.1f')} | {s['verified']}/{s['reps']} |"
            )
    lines += [
        "",
        "| Workload | Ceiling | records/s | MB/s | CPU s / M records | verified |",
        "|---|---|--:|--:|--:|--:|",
    ]
    for wname, ws in summ["workloads"].items():
        for c in ws["ceilings"].values():
            lines.append(
                f"| {wname} | {c['label']} | {_f(c['rate_rps'], ',.0f')} "
                f"| {_f(c['rate_mbps'], '.1f')} | {_f(c['cpu_s_per_m'], '.1f')} "
                f"| {c['verified']}/{c['reps']} |"
            )
    lat_rows = [
        (wname, s)
        for wname, ws in summ["workloads"].items()
        for s in ws["contenders"].values()
        if "latency_p50_ms" in s
    ]
    if lat_rows:
        lines += [
            "",
            f"End-to-end latency at {plan['latency_rate_rps']:,} records/s for "
            f"{plan['latency_seconds']:g} s (record CreateTime on the source → received by a "
            "consumer on the target):",
            "",
            "| Contender | p50 ms | p99 ms | max ms | CPU s / M records at this rate |",
            "|---|--:|--:|--:|--:|",
        ]
        for _, s in lat_rows:
            lines.append(
                f"| {s['label']} | {_f(s['latency_p50_ms'], '.0f')} "
                f"| {_f(s['latency_p99_ms'], '.0f')} | {_f(s['latency_max_ms'], '.0f')} "
                f"| {_f(s['latency_cpu_s_per_m'], '.0f')} |"
            )
    return "\n".join(lines) + "\n"


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
    names = list(next(iter(summ["workloads"].values()))["contenders"]) if wnames else []
    labels = {n: summ["workloads"][wnames[0]]["contenders"][n]["label"] for n in names}
    colors = ["#1f77b4", "#6baed6", "#d62728", "#fc9272", "#2ca02c", "#98df8a", "#9467bd"]
    fig, axes = plt.subplots(2, 2, figsize=(13, 8.5))
    width = 0.8 / max(len(names), 1)

    def bars(ax: Any, key: str, title: str, ylabel: str) -> None:
        for i, n in enumerate(names):
            vals = [summ["workloads"][w]["contenders"][n].get(key) or 0 for w in wnames]
            xs = [j + (i - (len(names) - 1) / 2) * width for j in range(len(wnames))]
            ax.bar(xs, vals, width, label=labels[n], color=colors[i % len(colors)])
        ax.set_xticks(range(len(wnames)), wnames)
        ax.set_title(title)
        ax.set_ylabel(ylabel)

    ax = axes[0][0]
    bars(ax, "rate_rps", "Drain throughput (median)", "records/s")
    styles = {"producer-perf": "--", "python-produce": ":", "python-consume": "-."}
    for j, w in enumerate(wnames):
        for kind, c in summ["workloads"][w]["ceilings"].items():
            if c["rate_rps"]:
                ax.hlines(
                    c["rate_rps"],
                    j - 0.45,
                    j + 0.45,
                    colors="black",
                    linestyles=styles.get(kind, "-"),
                    label=c["label"] if j == 0 else None,
                )
    top = max(
        [
            s.get("rate_rps") or 0
            for ws in summ["workloads"].values()
            for s in ws["contenders"].values()
        ]
        + [
            c.get("rate_rps") or 0
            for ws in summ["workloads"].values()
            for c in ws["ceilings"].values()
        ]
        + [1]
    )
    ax.set_ylim(0, top * 1.5)  # room for the legend above the bars
    ax.legend(fontsize=7, loc="upper center", ncol=2)
    bars(axes[0][1], "cpu_s_per_m", "CPU seconds per million records (process tree)", "CPU s")
    bars(axes[1][1], "peak_rss_mb", "Peak RSS (process tree)", "MB")

    ax = axes[1][0]
    lat = [
        (summ["workloads"][w]["contenders"][n], n)
        for w in wnames
        for n in names
        if "latency_p50_ms" in summ["workloads"][w]["contenders"][n]
    ]
    if lat:
        xs = range(len(lat))
        ax.bar([x - 0.2 for x in xs], [s["latency_p50_ms"] for s, _ in lat], 0.4, label="p50")
        ax.bar([x + 0.2 for x in xs], [s["latency_p99_ms"] for s, _ in lat], 0.4, label="p99")
        ax.set_xticks(list(xs), [n for _, n in lat])
        ax.legend(fontsize=8)
    plan = result["meta"]["plan"]
    ax.set_title(f"End-to-end latency at {plan['latency_rate_rps']:,} rec/s (median of runs)")
    ax.set_ylabel("ms")
    fig.suptitle(
        f"kmirror vs Apache MirrorMaker 2 — {result['meta']['mode']} run, "
        f"{plan['reps']} repetition(s), {result['meta']['host']['cpus']} CPUs"
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
