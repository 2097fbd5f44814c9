"""The benchmark's own arithmetic, without a broker: the sustained phase's latency from two
series of end offsets, the search's percentiles, the record shapes the loaders make (framed in
the schema wire format too), the plan's sizes and the report's ratios."""

from __future__ import annotations

import argparse
import io
import json
import math
import shutil
from collections.abc import Callable
from pathlib import Path

import fastavro
import pytest

from scripts.bench import (
    batchshape,
    latency,
    plan,
    quiet,
    report,
    run,
    summary,
    sustained,
    throttle,
    wire,
)
from scripts.bench.loops import Records

pytestmark = pytest.mark.unit


def test_latency_from_end_offsets_is_target_poll_minus_source_poll() -> None:
    # One partition from offset 10. At t=1.0 the source holds 20 (10 new records), the target
    # catches up with 5 of them at t=1.5 and with the rest at t=2.0; 5 more appended at t=2.0
    # never reach the target.
    polls: list[sustained.Poll] = [
        (0.0, [10], [10]),
        (1.0, [20], [10]),
        (1.5, [20], [15]),
        (2.0, [25], [20]),
    ]
    pairs = sustained.latencies(polls, [10])
    assert pairs == [(500.0, 5), (1000.0, 5), (math.inf, 5)]
    assert sustained.weighted_percentile(pairs, 50) == 1000.0
    assert sustained.weighted_percentile(pairs, 99) == math.inf


def test_latency_counts_every_partition_and_nothing_before_the_start() -> None:
    polls: list[sustained.Poll] = [(0.0, [3, 0], [3, 0]), (0.05, [4, 2], [4, 2])]
    pairs = sustained.latencies(polls, [3, 0])
    assert sum(n for _, n in pairs) == 3
    assert {v for v, _ in pairs} == {0.0}


class _Search(sustained.Sustained):
    """The search over scripted steps: rate -> (records/s the producers reached, p99 ms)."""

    def __init__(self, script: dict[float, tuple[float, float]]) -> None:
        super().__init__("s", "t", "x", 1, plan.Shape(100), Path("."), 1.0, lambda: True)
        self.script = script

    def _caught_up(self) -> bool:
        return True

    def step(self, rate: float) -> sustained.Step:
        achieved, p99 = self.script[rate]
        step = sustained.Step(rate, achieved=achieved, p99_ms=p99)
        step.producer_bound = achieved < sustained.PRODUCED_SHARE * rate
        step.held = p99 < sustained.LIMIT_MS
        step.passed = step.held and not step.producer_bound
        return step


def test_the_search_counts_a_rate_the_mirror_held_when_the_producers_fell_short() -> None:
    # Session 22, run A, kmirror repetition 1: the producers reached 54,556 of 64,000/s and
    # the mirror kept p99 at 902 ms - held (not the 32,000 below it); the search doubles on,
    # and ends when the producers give no more than that.
    held = _Search(
        {
            8000: (8000, 158),
            16000: (16000, 474),
            32000: (32000, 231),
            64000: (54556, 902),
            128000: (52000, 400),
        }
    ).search(8000, 9)
    assert held["rate_rps"] == 54556 and held["bound"] == "producers"
    assert held["failed_at_rps"] is None and len(held["steps"]) == 5
    # Run C, repetition 1: 30,004 of a 32,000 step held; the next step reaching 58,000 holds too.
    more = _Search(
        {8000: (8000, 193), 16000: (16000, 212), 32000: (30004, 420), 64000: (58000, 908)}
    ).search(8000, 4)
    assert more["rate_rps"] == 58000 and more["bound"] == "steps"
    # Run C, repetition 2: 53,393 of a 64,000 step and p99 1,404 ms - failed at 53,393, and the
    # search bisects below it (it ended there before, at 32,000).
    script = {8000.0: (8000.0, 205.0), 16000.0: (16000.0, 327.0), 32000.0: (31597.0, 628.0)}
    script[64000.0] = (53393.0, 1404.0)
    between = math.sqrt(32000 * 53393)
    script[between] = (between, 700.0)
    script[math.sqrt(between * 53393)] = (46970.0, 1100.0)
    failed = _Search(script).search(8000, 9)
    assert round(failed["rate_rps"]) == 41335 and round(failed["failed_at_rps"]) == 46979
    assert [round(s["rate"]) for s in failed["steps"]][3:] == [64000, 41335, 46979]
    assert failed["bound"] == "mirror"
    # The mirror's own limit: bisect between the last pass and the first failure.
    script = {8000.0: (8000.0, 100.0), 16000.0: (16000.0, 300.0), 32000.0: (32000.0, 1500.0)}
    script[math.sqrt(16000 * 32000)] = (22627.0, 1200.0)
    script[math.sqrt(16000 * math.sqrt(16000 * 32000))] = (19027.0, 700.0)
    mirror = _Search(script).search(8000, 9)
    assert round(mirror["rate_rps"]) == 19027 and mirror["bound"] == "mirror"
    assert round(mirror["failed_at_rps"]) == 22627


def test_weighted_percentile_of_nothing_is_nan() -> None:
    assert math.isnan(sustained.weighted_percentile([], 99))


def test_mixed_shape_gives_each_producer_its_cap() -> None:
    shape = plan.MIXED
    assert shape.producers == len(shape.caps)
    assert "--set=batch.num.messages=5" in shape.loop_args(0)
    assert "--set=batch.num.messages=50" in shape.loop_args(3)
    assert "--keys=10000" in shape.loop_args(1)
    # Log-uniform 100..2048: more small records than large ones.
    assert 600 < shape.mean_size < 700


def test_keyed_records_of_mixed_sizes() -> None:
    records = Records(100, 2048, 50, 16)
    sizes = [len(records.kwargs(i)["value"]) for i in range(4096)]
    assert min(sizes) >= 100 and max(sizes) <= 2048
    assert sorted(sizes)[len(sizes) // 2] < 1074  # median below the uniform mean
    keys = {records.kwargs(i)["key"] for i in range(50)}
    assert len(keys) == 50  # every key in turn
    assert "partition" not in records.kwargs(0)


def test_unkeyed_records_go_round_robin_and_text_has_the_size() -> None:
    records = Records(100, 0, 0, 8)
    assert [records.kwargs(i)["partition"] for i in range(9)] == [0, 1, 2, 3, 4, 5, 6, 7, 0]
    text = Records(100, 0, 0, 8, text=True)
    values = {text.kwargs(i)["value"] for i in range(100)}
    assert len(values) == 100 and {len(v) for v in values} == {100}


def test_framed_values_are_avro_in_the_wire_format_at_the_same_size() -> None:
    plain, framed = Records(100, 2048, 0, 8), Records(100, 2048, 0, 8, schema_id=7)
    assert [len(v) for v in framed.values] == [len(v) for v in plain.values]
    schema = fastavro.parse_schema(json.loads(wire.SCHEMA))
    for value in framed.values[:100] + Records(100, 0, 0, 8, schema_id=7).values:
        assert value[:5] == b"\x00\x00\x00\x00\x07"
        decoded = fastavro.schemaless_reader(io.BytesIO(value[5:]), schema)
        assert isinstance(decoded, dict) and len(decoded["payload"]) == len(value) - 7
    # Every length from the smallest: exact, but where Avro's length prefix grows a byte.
    sizes = {n: len(wire.frame(1, bytes(n))) for n in range(6, 300)}
    assert {n for n, got in sizes.items() if got != n} == {70}
    assert sizes[70] == 69


def _args(**kw: object) -> argparse.Namespace:
    base: dict[str, object] = dict.fromkeys(
        (
            "records",
            "records_1kb",
            "workloads",
            "latency_rate",
            "latency_seconds",
            "sustained",
            "sustained_start",
            "sustained_steps",
            "max_copy_s",
            "reps",
            "source_port",
            "target_port",
            "clusters",
            "only",
            "experiments",
            "settle_max_s",
        )
    )
    base.update(mode="full", no_phases=False, no_warmup=False)
    base.update(kw)
    return argparse.Namespace(**base)


def test_full_plan_cuts_drains_and_runs_the_phases_apart() -> None:
    p = plan.make_plan(_args())
    assert p.max_copy_s == plan.FULL_MAX_COPY_S
    assert p.phases is not None and p.phases.host is None
    assert p.phases.sustained == {"kmirror-1", "mm2-1"}
    eos = {w.name for w in p.workloads if "kmirror-1-eos" not in w.skip}
    assert eos == {"100B", "small"}
    # Schema-ID translation on the same two, whose values are then framed.
    assert {w.name for w in p.workloads if p.mirrors_schemas(w)} == {"100B", "small"}
    assert not any(plan.make_plan(_args(only="kmirror-1")).mirrors_schemas(w) for w in p.workloads)


def test_smaller_backlog_shrinks_the_ceilings_too() -> None:
    p = plan.make_plan(_args(records=1000, workloads="100B,mixed"))
    assert [(w.name, w.records, w.ceiling_records) for w in p.workloads] == [
        ("100B", 1000, 1000),
        ("mixed", 1000, 0),
    ]
    with pytest.raises(SystemExit, match="unknown workload"):
        plan.make_plan(_args(workloads="nope"))
    alone = plan.make_plan(_args(workloads="none"))  # the phases alone
    assert alone.workloads == [] and alone.phases is not None and alone.phases.host is None


def test_latency_tail_per_second_and_per_partition() -> None:
    trace = latency.Trace(8)
    for seq, ms in enumerate([10, 10, 10, 300, 10, 10, 10, 10]):
        sent = 1_000_000_000_000 + seq * 400_000_000  # records 0-2 in second 0, 3-4 in 1
        trace.received(latency.STAMP.pack(sent, seq), (0, 0), sent + ms * 1_000_000)
    assert latency.timeline(trace.sent_ms(), trace.latencies(), 99) == [10, 300, 10]
    assert latency.timeline(trace.sent_ms(), trace.latencies()) == [10, 10, 10]
    assert trace.p99_by_partition(2, trace.latencies()) == [10, 300]  # record 3 went to partition 1


def test_a_run_refuses_to_start_without_the_disk_its_backlogs_need(tmp_path: Path) -> None:
    full = plan.make_plan(_args())
    # The full run's backlogs (about 17 GB on the source), one copy again, the margin.
    assert 22e9 < full.disk_needed() < 32e9
    small = plan.make_plan(_args(records=1000))
    assert small.disk_needed() < full.disk_needed()
    free = shutil.disk_usage(tmp_path).free
    assert run.disk_problem(small, tmp_path / "not" / "yet") is None  # nearest existing parent
    huge = plan.make_plan(_args(records=int(free / 100)))  # its backlogs exceed the disk
    problem = run.disk_problem(huge, tmp_path)
    assert problem is not None and "GB free under" in problem and "--records" in problem


def test_smoke_plan_hosts_the_phases_in_the_100b_drains() -> None:
    p = plan.make_plan(_args(mode="smoke", sustained=""))
    assert p.max_copy_s is None
    assert p.phases is not None and p.phases.host == "100B" and not p.phases.sustained
    assert [p.mirrors_schemas(w) for w in p.workloads] == [True, False]  # 100B framed


def test_a_run_waits_for_a_quiet_machine_up_to_a_cap() -> None:
    t = [0.0]

    def sampler(busy: list[float]) -> Callable[[float], float]:
        def sample(seconds: float) -> float:
            t[0] += seconds
            return busy.pop(0)

        return sample

    policy = quiet.Quiet(busy_below=0.2, samples=3, sample_s=1.0, max_wait_s=10.0)
    # A busy sample breaks the run of quiet ones: three in a row are needed.
    got = quiet.wait_quiet(policy, sampler([0.9, 0.1, 0.1, 0.5, 0.1, 0.1, 0.05]), lambda: t[0])
    assert got == {"settle_s": 7.0, "busy_at_start": 0.05, "quiet_at_start": True}
    t[0] = 0.0
    got = quiet.wait_quiet(policy, sampler([0.8] * 20), lambda: t[0])
    assert got == {"settle_s": 10.0, "busy_at_start": 0.8, "quiet_at_start": False}


def test_cpu_busy_counts_io_wait_as_busy(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    # user nice system idle iowait irq softirq steal guest guest_nice
    stat.write_text("cpu  100 0 50 800 50 0 0 0 7 0\ncpu0 1 2 3\n")
    assert quiet.cpu_times(stat) == (1000, 800)
    stat.write_text("intr 1 2\n")
    with pytest.raises(RuntimeError, match="cpu line"):
        quiet.cpu_times(stat)
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemFree: 100 kB\nDirty:  3072 kB\nWriteback: 2048 kB\nWritebackTmp: 9 kB\n")
    assert quiet.dirty_mb(meminfo) == 5
    assert quiet.dirty_mb() >= 0
    # On this machine: a fraction of the CPUs, whatever they do.
    assert 0.0 <= quiet.busy_sampler()(0.05) <= 1.0


def test_warming_reads_every_segment_of_the_topic_and_no_other(tmp_path: Path) -> None:
    for part, segments in (("t-0", 2), ("t-1", 1), ("t-x-0", 1), ("tt-0", 1)):
        (tmp_path / part).mkdir()
        for i in range(segments):
            (tmp_path / part / f"{i:020d}.log").write_bytes(bytes(3 << 20))
        (tmp_path / part / "00000000000000000000.index").write_bytes(bytes(1 << 20))
    got = quiet.warm_backlog(tmp_path, "t")
    assert got["warm_mb"] == 9 and got["warm_s"] >= 0  # t-0's two segments, t-1's one
    with pytest.raises(RuntimeError, match="no log segments of nope"):
        quiet.warm_backlog(tmp_path, "nope")


def test_a_run_starts_with_the_dirty_pages_written(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("Dirty:  4096 kB\nWriteback: 1024 kB\n")
    synced: list[bool] = []
    got = quiet.flush_disk(lambda: synced.append(True), meminfo)
    assert synced == [True]  # one sync, and what was dirty before it
    assert got["dirty_mb_at_start"] == 5 and got["sync_s"] >= 0
    # The bench's brokers delete a dropped copy's files at once (not a minute into the next run).
    assert run.clusters.BROKER_SETTINGS["log.segment.delete.delay.ms"] == "0"
    # and a new group's streams join its first generation together (Kafka's default delay).
    assert run.clusters.BROKER_SETTINGS["group.initial.rebalance.delay.ms"] == "3000"


def test_full_runs_warm_up_each_kind_of_contender_once_and_smoke_runs_do_not() -> None:
    full = plan.make_plan(_args())
    assert full.warmup
    # The first plain contender of each kind: not an exactly-once or schema-translating one.
    assert [c.name for c in full.warmup_contenders()] == ["kmirror-1", "mm2-1"]
    assert plan.make_plan(_args(no_warmup=True)).warmup_contenders() == []
    assert plan.make_plan(_args(mode="smoke")).warmup_contenders() == []
    only_eos = plan.make_plan(_args(only="kmirror-1-eos,mm2-2"))
    assert [c.name for c in only_eos.warmup_contenders()] == ["mm2-2"]


def test_full_runs_wait_for_quiet_and_smoke_runs_do_not() -> None:
    assert plan.make_plan(_args()).quiet.max_wait_s == 90.0
    smoke = plan.make_plan(_args(mode="smoke"))
    assert smoke.quiet.max_wait_s == 0.0 and smoke.quiet.sample_s == 0.2
    assert plan.make_plan(_args(settle_max_s=30.0)).quiet.max_wait_s == 30.0
    # The report says how the runs started; nothing when they did not wait.
    runs = [{"settle_s": s, "quiet_at_start": s < 90} for s in (3.0, 12.0, 90.0)]
    meta = {"plan": {"quiet": run.dataclasses.asdict(plan.make_plan(_args()).quiet)}}
    line = report._quiet_line({"meta": meta, "runs": runs, "ceilings": []})
    assert "under 20% for 3 s" in line[0] and "waits 3-90 s (median 12 s)" in line[0]
    assert "1 of 3 runs started at the cap" in line[0]
    synced = [dict(r, sync_s=0.5 + i, dirty_mb_at_start=100 * i) for i, r in enumerate(runs)]
    warm = [{"workload": "100B", "contender": "mm2-1", "verified": False, "error": "boom"}]
    line = report._quiet_line({"meta": meta, "runs": synced, "ceilings": [], "warmups": warm})
    assert "at most 200 MB, the longest sync 2.5 s" in line[0]
    assert "warm-up round ran first (1 runs: 100B mm2-1: FAILED: boom)" in line[0]
    meta = {"plan": {"quiet": run.dataclasses.asdict(smoke.quiet)}}
    assert report._quiet_line({"meta": meta, "runs": runs, "ceilings": []}) == []


def test_batch_shape_summary() -> None:
    out = batchshape.summarize([5, 5, 10, 50], [600, 600, 1200, 6000], {0})
    per = out["records_per_batch"]
    assert out["batches"] == 4 and out["records"] == 70
    assert per["mean"] == 17.5 and per["min"] == 5 and per["max"] == 50
    assert per["record_weighted_mean"] == round((25 + 25 + 100 + 2500) / 70, 2)


def _result(runs: list[dict[str, object]], ceilings: list[dict[str, object]]) -> dict[str, object]:
    contenders = [
        {"name": "kmirror-1", "label": "k1", "kind": "kmirror", "parallelism": 1},
        {"name": "kmirror-1-eos", "label": "k1e", "kind": "kmirror", "parallelism": 1},
        {"name": "kmirror-1-translate", "label": "k1t", "kind": "kmirror", "parallelism": 1},
        {"name": "mm2-1", "label": "m1", "kind": "mm2", "parallelism": 1},
    ]
    workloads = [{"name": "100B", "records": 10, "size": 100, "skip": []}]
    plan_ = {"contenders": contenders, "workloads": workloads, "ceilings": ["python-produce"]}
    return {"meta": {"plan": plan_}, "runs": runs, "ceilings": ceilings, "preloads": []}


def _run(name: str, rate: float, rep: int = 1) -> dict[str, object]:
    return {"workload": "100B", "contender": name, "rep": rep, "verified": True, "rate_rps": rate}


def test_ratios_median_of_repetitions() -> None:
    runs = [_run("kmirror-1", r, i) for i, r in enumerate((90.0, 100.0, 300.0))]
    runs += [_run("kmirror-1-eos", 75.0), _run("mm2-1", 50.0), _run("kmirror-1-translate", 90.0)]
    ceilings = [
        {"workload": "100B", "ceiling": "python-produce", "verified": True, "rate_rps": 200.0}
    ]
    ceilings[0].update(rate_mbps=1.0, records=10)
    out = summary.summarize(_result(runs, ceilings))
    k1 = out["workloads"]["100B"]["contenders"]["kmirror-1"]
    assert k1["rate_rps"] == 100.0
    assert k1["ratio_vs_mm2_same"] == 2.0
    assert k1["ratio_vs_ingest_ceiling"] == 0.5
    per = out["workloads"]["100B"]["contenders"]
    assert per["kmirror-1-eos"]["ratio_vs_at_least_once"] == 0.75
    assert per["kmirror-1-translate"]["ratio_vs_without_translate"] == 0.9
    assert out["all_verified"]


def test_throttle_window_rates_use_the_samples_real_interval() -> None:
    # 1 MB/s for 20 s, then 3 MB/s for 10 s, sampled every second but 0.5 s late from t=10.
    samples = [(float(t), t * 1e6) for t in range(10)]
    samples += [(t + 0.5, (t + 0.5) * 1e6) for t in range(10, 20)]
    samples += [(t + 0.5, 20e6 + (t - 19.5) * 3e6) for t in range(20, 31)]
    r = throttle.window_rates(samples, 0.0, 30.0, 10.0)
    # The window closes at the first sample at or after t=30 (30.5): 20 MB + 10.5 s at 3 MB/s.
    assert r["seconds"] == 30.5
    assert r["mean"] == pytest.approx((20e6 + 10.5 * 3e6) / 30.5)
    assert r["parts"] == pytest.approx([10.5e6 / 10.5, (9.5e6 + 0.5 * 3e6) / 10.0, 3e6])
    assert (r["min"], r["max"]) == (pytest.approx(1e6), pytest.approx(3e6))


def test_throttle_verdict_is_the_rate_within_ten_percent_and_p99_under_a_second() -> None:
    limit = throttle.LIMIT_BPS
    assert throttle.verdict(limit * 1.09, 999.0)[0]
    assert throttle.verdict(limit * 0.91, 10.0)[0]
    assert not throttle.verdict(limit * 1.11, 10.0)[0]
    assert not throttle.verdict(limit * 0.89, 10.0)[0]
    passed, text = throttle.verdict(limit, 1000.0)
    assert not passed and "not under 1 s" in text
