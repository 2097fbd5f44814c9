"""The benchmark harness works end to end: a smoke run (small backlogs, one repetition) through
every contender, MirrorMaker 2 included, every ceiling, the latency phase, the sustained-rate
search, the mixed workload's loaders, and the schema-ID translation with its two registries.

No timing assertions: performance is `make bench` (docs/benchmarks.md). The smoke run starts its
own two clusters (bsmoke-src 19592, bsmoke-tgt 29592) and registries (19642, 29642) and stops
them, so it needs nothing from the session's clusters and registries.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.bench

REPO_ROOT = Path(__file__).resolve().parents[2]
CONTENDERS = {"kmirror-1", "kmirror-2", "kmirror-1-eos", "mm2-1", "mm2-2", "kmirror-1-translate"}
TRANSLATE = "kmirror-1-translate"  # hosts no phases: their records are not framed
MIXED_CONTENDERS = {"kmirror-1"}  # MirrorMaker 2 starts are the smoke run's dearest part
CEILINGS = {"producer-perf", "python-produce", "python-consume"}


@dataclass(frozen=True)
class Smoke:
    proc: subprocess.CompletedProcess[str]
    json_path: Path
    result: dict[str, Any]

    def runs(self, workload: str) -> dict[str, dict[str, Any]]:
        return {r["contender"]: r for r in self.result["runs"] if r["workload"] == workload}


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> Smoke:
    out = tmp_path_factory.mktemp("bench")
    proc = subprocess.run(
        [sys.executable, "-m", "scripts.bench.run", "--smoke", "--out-dir", str(out)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    results = sorted(out.glob("smoke-*.json"))
    assert results, f"no result JSON (exit {proc.returncode}):\n{proc.stderr[-4000:]}"
    return Smoke(proc, results[-1], json.loads(results[-1].read_text()))


def _copied_all(r: dict[str, Any]) -> None:
    assert r["verified"], f"{r['contender']}: {r.get('error')}\n{r.get('log_tail', '')}"
    assert r["complete"]
    assert sum(r["target_end"]) == r["records"] > 0
    assert r["rate_rps"] > 0
    # A smoke run's copy window lasts well under a second, a few CPU clock ticks at most:
    # only the whole run's CPU must be measurable.
    assert r["cpu_s_total"] > 0
    assert r["cpu_s_per_m"] >= 0
    assert r["peak_rss_mb"] > 0
    assert r["first_record_s"] > 0


def test_every_contender_copied_every_record(smoke: Smoke) -> None:
    runs = smoke.runs("100B")
    assert set(runs) == CONTENDERS
    for name, r in runs.items():
        _copied_all(r)
        if name == TRANSLATE:
            assert "latency" not in r
            continue
        lat = r["latency"]
        assert lat["verified"]
        assert lat["received"] == lat["sent"] > 0
        assert 0 < lat["p50_ms"] <= lat["p99_ms"]
        # The target topic uses LogAppendTime: every leg of the path is timed.
        assert set(lat["breakdown"]) == {"source", "mirror", "reader"}
    assert smoke.proc.returncode == 0, smoke.proc.stderr[-4000:]


def test_schema_ids_translated_and_kept(smoke: Smoke) -> None:
    """100B's values are framed: the translating contender's copy carries the target
    registry's ID (another than the source's: decoys went first) and deserializes there; every
    other contender's copy the source's ID, as it came."""
    runs = smoke.runs("100B")
    checks = {name: r["schema_check"] for name, r in runs.items()}
    source_ids = {c["source_id"] for c in checks.values()}
    assert len(source_ids) == 1
    translated = checks.pop(TRANSLATE)
    assert translated["target_id"] not in source_ids
    assert translated["deserialized"] is True
    assert translated["sampled"] > 0
    for name, c in checks.items():
        if name.endswith("-eos"):
            assert "skipped" in c  # exactly-once: target offsets are not the source's
            continue
        assert c["target_id"] in source_ids and c["sampled"] > 0, (name, c)
    assert "schema_check" not in next(iter(smoke.runs("mixed").values()))


def test_mixed_workload_is_keyed_small_batches(smoke: Smoke) -> None:
    runs = smoke.runs("mixed")
    assert set(runs) == MIXED_CONTENDERS
    for r in runs.values():
        _copied_all(r)
    preload = next(p for p in smoke.result["preloads"] if p["workload"] == "mixed")
    assert preload["producers"] == 2
    shape = preload["batch_shape"]
    assert shape["batches"] > 0
    per_batch = shape["records_per_batch"]
    assert 1 <= per_batch["min"] <= per_batch["max"] <= 50


def test_sustained_search_ran(smoke: Smoke) -> None:
    sustained = smoke.runs("100B")["kmirror-1"]["sustained"]
    assert sustained["steps"], sustained
    for step in sustained["steps"]:
        assert not step["error"], step
        assert step["records"] > 0
    assert all("sustained" not in r for n, r in smoke.runs("100B").items() if n != "kmirror-1")


def test_every_ceiling_measured(smoke: Smoke) -> None:
    assert {c["ceiling"] for c in smoke.result["ceilings"]} == CEILINGS
    for c in smoke.result["ceilings"]:
        assert c["verified"], f"{c['ceiling']}: {c.get('error')}"
        assert c["rate_rps"] > 0


def test_summary_table_and_chart(smoke: Smoke) -> None:
    summary = smoke.result["summary"]
    assert summary["all_verified"]
    ws = summary["workloads"]["100B"]
    assert set(ws["contenders"]) == CONTENDERS
    for name in ("kmirror-1", "kmirror-2"):
        s = ws["contenders"][name]
        assert s["ratio_vs_mm2_same"] > 0
        assert s["ratio_vs_ingest_ceiling"] > 0
    assert ws["contenders"]["kmirror-1-eos"]["ratio_vs_at_least_once"] > 0
    assert ws["contenders"][TRANSLATE]["ratio_vs_without_translate"] > 0
    assert "sustained_rps" in summary["phases"]["kmirror-1"]
    table = smoke.json_path.with_suffix(".md").read_text()
    assert "| Workload | Contender | records/s" in table
    assert "MirrorMaker 2 tasks.max=2" in table
    assert "Sustained rate" in table
    assert "records per batch" in table
    assert table in smoke.proc.stdout
    png = smoke.json_path.with_suffix(".png").read_bytes()
    assert png.startswith(b"\x89PNG")
