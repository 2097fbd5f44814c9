"""The soak (issue 26; `make test-soak`, marker `soak`, in neither make test nor make
test-faults): an hour of mirroring between the two 3-broker clusters at a steady share of the
mirror's measured single-stream capacity, with one of the 3-broker suite's faults every 5
minutes, rotating through them (tests/faults/soak.py, ROTATION).

1. Capacity: a backlog copied by one mirror through the proxies, with the soak's settings
   (soak.measure_capacity); the load is 70 % of it (KMIRROR_SOAK_LOAD), or less when the
   disk cannot hold an hour of that (soakstats.planned_rate says which and why), or
   KMIRROR_SOAK_RATE records/s (no measurement).
2. The soak: one scenario (tests/faults/scenario3.py) whose faults are the rotation, one every
   KMIRROR_SOAK_FAULT_EVERY_S; before each, the backlog the last one left must be copied
   (within CATCH_UP_S: no partition stuck, the lag bounded); after each, Scenario.fault's
   checks. A sampler records the mirror's process tree (RSS, open descriptors), the lag and
   the load average every KMIRROR_SOAK_SAMPLE_S.
3. The verdict: the scenario's end (steady saw-tooth, final catch-up, the mirror's one clean
   exit) with the comparison streamed as content hashes (0 missing, 0 extra; 0 duplicates
   under KMIRROR_SOAK_EOS=1), and the slopes of RSS and descriptors after the warm-up (the
   first interval) under RSS_SLOPE_MAX_MB_H and FD_SLOPE_MAX_H, judged when that window is at
   least SLOPE_MIN_WINDOW_S (a few minutes' slope says nothing about a leak; a short run
   reports them only).

Everything lands in bench/results/soak.json, also when the scenario fails.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from tests.faults.cluster3 import Clusters3
from tests.faults.harness import RESULTS_DIR, Result, provenance
from tests.faults.scenario3 import RIDE_OUT, Scenario, guarantee
from tests.faults.soak import (
    FD_SLOPE_MAX_H,
    ROTATION,
    RSS_SLOPE_MAX_MB_H,
    SLOPE_MIN_WINDOW_S,
    Sampler,
    Settings,
    measure_capacity,
    streamed_compare,
)
from tests.faults.soakstats import planned_rate, slope, summarize

pytestmark = pytest.mark.soak

RESULT = RESULTS_DIR / "soak.json"


def _run_until(s: Scenario, when: float) -> None:
    """Let the load run until `when`; fail at once if the mirror exits."""
    while (left := when - time.monotonic()) > 0:
        s.assert_running("the soak's load")
        time.sleep(min(1.0, left))


def soak_faults(settings: Settings, samplers: list[Sampler]) -> Callable[[Scenario], None]:
    """The scenario's faults: settings.faults (names of ROTATION) in turn, the first one
    interval in (the warm-up), the last before the end; a fault that overruns its slot delays
    the next (noted as `late_s`)."""

    def faults(s: Scenario) -> None:
        sampler = Sampler(s, settings.sample_s).start()
        samplers.append(sampler)
        drained: list[dict[str, Any]] = s.res.details.setdefault("before_each_fault", [])
        try:
            k, t0 = 0, sampler.t0
            while (slot := t0 + (k + 1) * settings.every_s) < t0 + settings.seconds:
                _run_until(s, slot)
                what = settings.faults[k % len(settings.faults)]
                inject = ROTATION[what]
                began = time.monotonic()
                s.caught_up(s.progress.source_end(), f"the backlog before fault {k + 1}")
                drained.append({
                    "fault": what,
                    "at_s": round(began - t0, 1),
                    "late_s": round(began - slot, 1),
                    "backlog_copied_s": round(time.monotonic() - began, 2),
                })  # fmt: skip
                print(f"[soak] {began - t0:.0f}s: fault {k + 1}, {what}", flush=True)
                inject(s, settings.hold_s)
                k += 1
            _run_until(s, t0 + settings.seconds)
        finally:
            sampler.stop()

    return faults


def _write(doc: dict[str, Any], res: Result, samplers: list[Sampler], settings: Settings) -> None:
    """The soak's figures into doc and bench/results/soak.json."""
    samples = samplers[0].samples if samplers else []
    loads = samplers[0].loads if samplers else []
    doc["summary"] = summarize(samples, warmup_s=min(settings.every_s, settings.seconds / 2))
    doc["summary"]["slopes_judged"] = doc["summary"]["window_s"] >= SLOPE_MIN_WINDOW_S
    produced = samplers[0].produced if samplers else []
    doc["summary"]["load_records_per_s"] = round(slope(produced)) if produced else None
    doc["summary"]["sampler_errors"] = samplers[0].errors if samplers else []
    doc["load_average"] = {
        "start": doc.pop("load_average_start"),
        "mean": round(sum(loads) / len(loads), 2) if loads else None,
        "max": round(max(loads), 2) if loads else None,
        "end": round(os.getloadavg()[0], 2),
    }
    doc["result"] = {**asdict(res), **res.summary()}
    doc["samples"] = [asdict(s) for s in samples]
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"\n[soak] {RESULT}: {json.dumps(doc['summary'])}")


def test_soak(three: Clusters3, tmp_path: Path) -> None:
    """The mirror stays flat and complete for KMIRROR_SOAK_MINUTES under load and faults."""
    settings = Settings.from_env()
    samplers: list[Sampler] = []
    doc: dict[str, Any] = {
        **provenance(),
        "settings": asdict(settings),
        "load_average_start": round(os.getloadavg()[0], 2),
        "thresholds": {"rss_slope_mb_per_h": RSS_SLOPE_MAX_MB_H, "fd_slope_per_h": FD_SLOPE_MAX_H,
                       "judged_from_window_s": SLOPE_MIN_WINDOW_S},
    }  # fmt: skip
    with guarantee(settings.eos):
        if settings.rate:
            rate, why = settings.rate, "KMIRROR_SOAK_RATE"
        else:
            doc["capacity"] = measure_capacity(three, tmp_path, settings, RIDE_OUT)
            capacity = doc["capacity"]["records_per_s"]
            rate, why = planned_rate(
                capacity, settings.share, settings.seconds, settings.disk_bytes
            )
        doc["rate"] = {"records_per_s": rate, "why": why}
        print(f"\n[soak] load {rate} records/s: {why}")
        s = Scenario(
            "soak", "full", settings.engine, settings.eos, three, tmp_path, RIDE_OUT,
            rate=rate, compare=streamed_compare,
        )  # fmt: skip
        s.run(soak_faults(settings, samplers), lambda res: _write(doc, res, samplers, settings))
    summary = doc["summary"]
    assert summary["samples"] > 0, "the sampler saw no running mirror"
    if summary["slopes_judged"]:
        assert summary["rss_slope_mb_per_h"] < RSS_SLOPE_MAX_MB_H, summary
        assert summary["fd_slope_per_h"] < FD_SLOPE_MAX_H, summary
