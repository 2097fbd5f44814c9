"""Medians over the repetitions and the ratios the report shows (no formatting here).

Also reads the JSON of earlier harness versions (the latency phase inside the 100B runs, no
phase runs, no `skip`), so `python -m scripts.bench.report` can draw old results again.
"""

from __future__ import annotations

import statistics
from typing import Any

CEILING_LABELS = {
    "producer-perf": "raw produce, Java ProducerPerformance",
    "python-produce": "raw produce, confluent-kafka loop",
    "python-consume": "raw consume, confluent-kafka loop",
}
PRODUCE_CEILINGS = ("producer-perf", "python-produce")
METRICS = ("rate_rps", "rate_mbps", "first_record_s", "cpu_s_per_m", "peak_rss_mb", "copy_s")
# A variant's name is its base contender's plus a suffix; its throughput as a share of the
# base's: exactly-once of at-least-once, schema-ID translation of the same copy without it.
VARIANT_RATIOS = {"-eos": "ratio_vs_at_least_once", "-translate": "ratio_vs_without_translate"}


def median(values: list[Any]) -> float | None:
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else None


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def summarize(result: dict[str, Any]) -> dict[str, Any]:
    plan = result["meta"]["plan"]
    contenders = {c["name"]: c for c in plan["contenders"]}
    out: dict[str, Any] = {"workloads": {}, "all_verified": True}
    for w in plan["workloads"]:
        ceilings = _ceilings(w["name"], plan["ceilings"], result["ceilings"])
        out["all_verified"] &= all(c["verified"] == c["reps"] for c in ceilings.values())
        names = [n for n in contenders if n not in set(w.get("skip", ()))]
        runs = [r for r in result["runs"] if r["workload"] == w["name"]]
        per = {
            n: _contender(contenders[n], [r for r in runs if r["contender"] == n]) for n in names
        }
        out["all_verified"] &= all(s["all_verified"] for s in per.values())
        _ratios(per, ceilings)
        out["workloads"][w["name"]] = {
            "records": w["records"],
            "record_bytes": w["size"],
            "contenders": per,
            "ceilings": ceilings,
        }
    phase_runs = [r for r in result["runs"] if r["workload"] == "phases"]
    out["all_verified"] &= all(r.get("verified") for r in phase_runs)
    out["phases"] = _phases(contenders, result["runs"])
    out["preloads"] = {
        p["workload"]: {
            "rate_rps": p.get("rate_rps"),
            "seconds": p.get("seconds"),
            "producers": p.get("producers", 1),
            "batch_shape": p.get("batch_shape", {}),
        }
        for p in result.get("preloads", [])
    }
    return out


def _ceilings(wname: str, kinds: list[str], runs: list[dict[str, Any]]) -> dict[str, Any]:
    out = {}
    for kind in kinds:
        mine = [r for r in runs if r["workload"] == wname and r["ceiling"] == kind]
        if not mine:
            continue  # this workload has no ceilings
        ok = [r for r in mine if r.get("verified")]
        out[kind] = {
            "label": CEILING_LABELS.get(kind, kind),
            "reps": len(mine),
            "verified": len(ok),
            "rate_rps": median([r["rate_rps"] for r in ok]),
            "rate_mbps": median([r["rate_mbps"] for r in ok]),
            "cpu_s_per_m": median(
                [r["cpu_s"] / r["records"] * 1e6 for r in ok if r.get("cpu_s") is not None]
            ),
        }
    return out


def _contender(c: dict[str, Any], mine: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in mine if r.get("verified")]
    s: dict[str, Any] = {
        "label": c["label"],
        "kind": c["kind"],
        "parallelism": c["parallelism"],
        "exactly_once": bool(c.get("exactly_once")),
        "reps": len(mine),
        "verified": len(ok),
        # Runs that copied the whole backlog (the others were cut at max_copy_s).
        "complete": sum(1 for r in ok if r.get("complete", True)),
        "all_verified": bool(mine) and len(ok) == len(mine),
    }
    for m in METRICS:
        s[m] = median([r.get(m) for r in ok])
    lats = [r["latency"] for r in ok if "latency" in r]
    if lats:  # results of earlier harness versions: the phase inside the 100B drain
        s.update(_latency(lats))
    return s


def _ratios(per: dict[str, dict[str, Any]], ceilings: dict[str, Any]) -> None:
    mm2 = {s["parallelism"]: s for s in per.values() if s["kind"] == "mm2"}
    best_mm2 = max((s["rate_rps"] or 0 for s in mm2.values()), default=None)
    ingest = max((ceilings.get(k, {}).get("rate_rps") or 0 for k in PRODUCE_CEILINGS), default=0)
    for name, s in per.items():
        s["ratio_vs_ingest_ceiling"] = ratio(s["rate_rps"], ingest or None)
        if s["kind"] != "kmirror":
            continue
        same = mm2.get(s["parallelism"])
        s["ratio_vs_mm2_same"] = ratio(s["rate_rps"], same["rate_rps"] if same else None)
        s["ratio_vs_mm2_best"] = ratio(s["rate_rps"], best_mm2)
        s["cpu_ratio_vs_mm2_same"] = ratio(s["cpu_s_per_m"], same["cpu_s_per_m"] if same else None)
        for kind in CEILING_LABELS:
            key = "ratio_vs_" + kind.replace("-", "_")
            s[key] = ratio(s["rate_rps"], ceilings.get(kind, {}).get("rate_rps"))
        for suffix, key in VARIANT_RATIOS.items():
            base = per.get(name.removesuffix(suffix)) if name.endswith(suffix) else None
            if base is not None:
                s[key] = ratio(s["rate_rps"], base["rate_rps"])


def _latency(lats: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "latency_p50_ms": median([x["p50_ms"] for x in lats]),
        "latency_p99_ms": median([x["p99_ms"] for x in lats]),
        "latency_max_ms": median([x["max_ms"] for x in lats]),
        "latency_cpu_s_per_m": median([x.get("cpu_s_per_m") for x in lats]),
        "latency_runs": len(lats),
    }
    for leg in ("source", "mirror", "reader"):
        found = [x["breakdown"][leg] for x in lats if leg in x.get("breakdown", {})]
        if found:
            out[f"latency_{leg}_p50_ms"] = median([f["p50_ms"] for f in found])
            out[f"latency_{leg}_p99_ms"] = median([f["p99_ms"] for f in found])
    return out


def _phases(contenders: dict[str, Any], runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per contender: latency medians and the sustained rate's median over the repetitions
    (a search with no passing step counts as 0), with its ratio to MirrorMaker 2's."""
    out: dict[str, Any] = {}
    for name, c in contenders.items():
        mine = [r for r in runs if r["contender"] == name]
        s: dict[str, Any] = {
            "label": c["label"],
            "kind": c["kind"],
            "parallelism": c["parallelism"],
        }
        lats = [r["latency"] for r in mine if r.get("verified") and "latency" in r]
        if lats:
            s.update(_latency(lats))
        searches = [r["sustained"] for r in mine if r.get("verified") and "sustained" in r]
        if searches:
            s["sustained_rps"] = median([x["rate_rps"] or 0.0 for x in searches])
            s["sustained_runs"] = [x["rate_rps"] for x in searches]
            s["sustained_bounds"] = sorted({x["bound"] for x in searches})
        if len(s) > 3:
            out[name] = s
    mm2 = {s["parallelism"]: s for s in out.values() if s["kind"] == "mm2"}
    for s in out.values():
        same = mm2.get(s["parallelism"])
        if s["kind"] == "kmirror" and same is not None:
            s["sustained_ratio_vs_mm2_same"] = ratio(
                s.get("sustained_rps"), same.get("sustained_rps")
            )
    return out
