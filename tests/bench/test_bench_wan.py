"""The WAN benchmark's wiring, without a broker (scripts/bench/wan.py): only the mirror's link
to the source goes through the proxy, every port stays in the range the task was given, each
contender carries its WAN settings into the files it starts with, and the table's ratios."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from scripts.bench import wan, wansettings
from scripts.bench.progress import Progress

pytestmark = pytest.mark.unit


def _bench(tmp_path: Path) -> wan.WanBench:
    return wan.WanBench(wan.make_plan(wan.parse_args([])), tmp_path, Progress())


def test_only_the_mirror_crosses_the_link_and_ports_stay_below_16000(tmp_path: Path) -> None:
    bench = _bench(tmp_path)
    assert bench.mirror_src == "127.0.0.1:13592"  # Toxiproxy
    assert bench.src == "127.0.0.1:13602"  # the broker's own listener: the harness's
    assert bench.tgt == "127.0.0.1:14592"
    q = bench.quorum
    ports = [q.port, q.api_port or 0, q.node_port(1), q.node_port(1) + 1, q.node_port(1) + 2]
    assert max([*ports, wan.TARGET[1] + 1]) < 16000
    assert [c.name for c in bench.plan.contenders] == ["kmirror-1", "mm2-1"]


def _props(path: Path) -> dict[str, str]:
    lines = [ln for ln in path.read_text().splitlines() if "=" in ln and not ln.startswith("#")]
    return dict(ln.split("=", 1) for ln in lines)


def test_each_contender_starts_with_its_wan_settings(tmp_path: Path) -> None:
    kmirror, mm2 = wansettings.contenders()
    launch = mm2.prepare(tmp_path / "mm2", "r1", "127.0.0.1:13592", "127.0.0.1:14592", ["t"])
    props = _props(launch.files["mm2"])
    assert props["srcr1.bootstrap.servers"] == "127.0.0.1:13592"
    for key, value in wansettings.MM2_WAN_CONSUMER.items():
        assert props[f"srcr1.consumer.{key}"] == value
    assert props["srcr1.consumer.max.poll.records"] == "5000"  # the benchmark's own, kept
    assert props["tgt.producer.max.in.flight.requests.per.connection"] == "5"
    launch = kmirror.prepare(tmp_path / "k", "r2", "127.0.0.1:13592", "127.0.0.1:14592", ["t"])
    consumer = _props(launch.files["consumer"])
    assert consumer["bootstrap.servers"] == "127.0.0.1:13592"
    for key, value in wansettings.KMIRROR_WAN_CONSUMER.items():
        assert consumer[key] == value


def _cell(kind: str, who: str, size: str, **values: Any) -> dict[str, Any]:
    return {"kind": kind, "rtt_ms": 100, "jitter_ms": 10, "size": size, "contender": who, **values}


def test_table_gives_the_ratio_per_cell_and_names_failures() -> None:
    meta = {
        "command": "python -m scripts.bench.wan",
        "load_avg_start": [1.0, 1.0, 1.0],
        "load_avg_end": [2.0, 2.0, 2.0],
        "started": "s",
        "finished": "f",
        "contenders": [{"name": "kmirror-1"}, {"name": "mm2-1"}],
    }
    lat = {"latency": {"p50_ms": 60.0, "p99_ms": 150.0}, "verified": True}
    cells = [
        _cell("drain", "kmirror-1", "100B", verified=True, rate_rps=300.0, rate_mbps=0.03),
        _cell("drain", "mm2-1", "100B", verified=True, rate_rps=100.0, rate_mbps=0.01),
        _cell("latency", "kmirror-1", "100B", **lat),
        _cell("drain", "kmirror-1", "1KB", verified=True, rate_rps=10.0, rate_mbps=0.01),
        _cell("drain", "mm2-1", "1KB", verified=False, error="boom"),
    ]
    rows = wan.table({"meta": meta, "cells": cells}).splitlines()
    assert "load average 1.0 at the start, 2.0 at the end" in rows[0]
    assert rows[4].startswith("| 100 ms | 100B | 300 (0.0 MB/s) | 100 (0.0 MB/s) | **3.00** |")
    assert "| 60 / 150 | - | - |" in rows[4]
    assert "| failed | - |" in rows[5]
