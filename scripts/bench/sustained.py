"""The sustained phase: the highest producer rate at which a mirror keeps p99 latency under 1 s.

A step produces `rate` records/s for a few seconds into the source (the workload's shape,
several producer processes), and meanwhile reads the end offsets of every partition on both
clusters every POLL_S. A record's latency is the poll that first sees it on the target minus
the poll that first saw it on the source: the time from its source append to its target append,
to within one poll. The topics are new for the run and at-least-once mirrors write each record
once, so target offset n holds source offset n (checked at the end: equal end offsets). This
needs no reader of the target, whose own CPU at 100,000s of records/s would distort what it
measures, and it works with any load generator.

A step passes when p99 < LIMIT_MS, the producers reached 95 % of the rate, and nothing exceeds
the source. The search doubles the rate from `start` while steps pass, then bisects between the
last pass and the first failure until they are within PRECISION; before each step it waits until
the target has caught up (a mirror that never does ends the search). The result is the highest
rate the mirror held, and whether the producers (not the mirror) set the bound.

A step whose producers fell short of its rate (they share the 2 cores with the mirror and the
brokers, and reached 50-63 k records/s of 64,000 steps) counts at the rate they did produce
(since session 22): held there, the search goes on doubling, unless that rate is no higher than
what already passed (the producers can give no more: the search ends); failed there, the search
bisects below it. Before, such a step counted as a failure at its nominal rate and ended the
search, whose result was the step below it, half the rate: in seven of kmirror's searches in
the runs published from 28 to 29 November the producers reached 52,244-74,648 records/s of a
64,000 or 128,000 step and the mirror kept p99 at 192-903 ms, and the search reported 32,000
or 64,000; MirrorMaker 2's searches never held such a step.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scripts.bench import kafkaio
from scripts.bench.contenders import REPO_ROOT
from scripts.bench.plan import Shape

POLL_S = 0.05
LIMIT_MS = 1000.0
PRECISION = 1.25  # stop bisecting when the failing rate is within 25 % of the passing one
SETTLE_S = 3.0  # after the load: how long stragglers may still arrive (p99 < 1 s needs less)
CATCH_UP_S = 60.0
PRODUCED_SHARE = 0.95

Poll = tuple[float, list[int], list[int]]  # (monotonic time, source ends, target ends)


@dataclass
class Step:
    rate: float
    achieved: float = 0.0
    records: int = 0
    p50_ms: float = math.inf
    p99_ms: float = math.inf
    max_ms: float = math.inf
    passed: bool = False
    held: bool = False  # no error and p99 under the limit, at the rate produced (`achieved`)
    producer_bound: bool = False
    error: str = ""
    loaders: list[dict[str, Any]] = field(default_factory=list)

    def describe(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        for k in ("p50_ms", "p99_ms", "max_ms"):
            out[k] = None if math.isinf(out[k]) else round(out[k], 1)
        out["achieved"] = round(self.achieved)
        return out


PRODUCERS_SHORT = "the producers could not reach the rate"


def _bound(stopped: str, worst: float | None) -> str:
    """What ended the search: the producers could not go faster (the mirror's limit is above),
    the mirror failed a step (its limit is between the result and `failed_at_rps`), or the
    step budget ran out before any step failed (the result is a lower bound)."""
    if stopped == PRODUCERS_SHORT:
        return "producers"
    return "mirror" if worst is not None else "steps"


def latencies(polls: list[Poll], start: list[int]) -> list[tuple[float, int]]:
    """(latency ms, records) pairs over every record appended to the source after `start`:
    per partition, the source's and the target's end offsets as step functions of the poll
    time; a record never seen on the target has an infinite latency."""
    out: list[tuple[float, int]] = []
    for p, first in enumerate(start):
        src = [(t, s[p]) for t, s, _ in polls]
        tgt = [(t, g[p]) for t, _, g in polls]
        end = src[-1][1]
        offset, i, j = first, 0, 0
        while offset < end:
            while src[i][1] <= offset:
                i += 1
            while j < len(tgt) and tgt[j][1] <= offset:
                j += 1
            upto = min(src[i][1], tgt[j][1] if j < len(tgt) else end)
            lat = (tgt[j][0] - src[i][0]) * 1000 if j < len(tgt) else math.inf
            out.append((lat, upto - offset))
            offset = upto
    return out


def weighted_percentile(pairs: list[tuple[float, int]], q: float) -> float:
    total = sum(n for _, n in pairs)
    if not total:
        return math.nan
    rank = math.ceil(q / 100 * total)
    seen = 0
    for value, n in sorted(pairs):
        seen += n
        if seen >= rank:
            return value
    return math.inf


class Sustained:
    def __init__(
        self,
        source: str,
        target: str,
        topic: str,
        partitions: int,
        shape: Shape,
        log_dir: Path,
        step_s: float,
        alive: Callable[[], bool],
        tick: Callable[[str], None] | None = None,
    ) -> None:
        self.source, self.target, self.topic = source, target, topic
        self.partitions, self.shape, self.log_dir = partitions, shape, log_dir
        self.step_s = step_s
        self.alive = alive
        self.tick = tick or (lambda text: None)

    def search(self, start: float, max_steps: int) -> dict[str, Any]:
        steps: list[Step] = []
        best: float | None = None  # highest rate that passed
        worst: float | None = None  # lowest rate that failed
        rate = start
        stopped = ""
        while len(steps) < max_steps:
            if not self._caught_up():
                stopped = f"the target did not catch up within {CATCH_UP_S:.0f} s"
                break
            step = self.step(rate)
            steps.append(step)
            if step.error:
                stopped = step.error
                break
            if step.passed:
                best = max(best or 0.0, rate)
            elif step.held:  # the producers fell short; the mirror held what they produced
                if best is not None and step.achieved <= best:
                    stopped = PRODUCERS_SHORT
                    break  # no higher rate to be had from them
                best = step.achieved
            elif step.producer_bound:
                worst = min(worst or math.inf, step.achieved)  # failed at what was produced
            else:
                worst = min(worst or math.inf, rate)
            if worst is None:
                rate *= 2
            elif best is None:
                rate /= 2
            elif worst / best <= PRECISION:
                break
            else:
                rate = math.sqrt(best * worst)
        return {
            "rate_rps": best,
            "failed_at_rps": worst,
            "bound": _bound(stopped, worst),
            "stopped": stopped,
            "limit_ms": LIMIT_MS,
            "step_s": self.step_s,
            "steps": [s.describe() for s in steps],
        }

    def _ends(self) -> tuple[list[int], list[int]]:
        return (
            kafkaio.end_offsets(self.source, self.topic, self.partitions),
            kafkaio.end_offsets(self.target, self.topic, self.partitions),
        )

    def _caught_up(self) -> bool:
        deadline = time.monotonic() + CATCH_UP_S
        while time.monotonic() < deadline and self.alive():
            src, tgt = self._ends()
            if src == tgt:
                return True
            time.sleep(POLL_S * 4)
        return False

    def step(self, rate: float) -> Step:
        step = Step(rate)
        start, _ = self._ends()
        loaders = self._start_loaders(rate)
        polls: list[Poll] = []
        done_at: float | None = None
        while True:
            src, tgt = self._ends()
            now = time.monotonic()
            polls.append((now, src, tgt))
            if done_at is None and all(p.poll() is not None for p in loaders):
                done_at = now
            if done_at is not None and (tgt == src or now - done_at > SETTLE_S):
                break
            if not self.alive():
                step.error = "the contender exited"
                break
            self.tick(f"sustained {rate:,.0f}/s: {sum(tgt):,}/{sum(src):,} on the target")
            time.sleep(POLL_S)
        step.loaders = [self._result(p) for p in loaders]
        step.achieved = sum(r.get("rate_rps", 0.0) for r in step.loaders)
        errors = sum(r.get("errors", 1) for r in step.loaders)
        pairs = latencies(polls, start)
        step.records = sum(n for _, n in pairs)
        step.p50_ms = weighted_percentile(pairs, 50)
        step.p99_ms = weighted_percentile(pairs, 99)
        step.max_ms = max((v for v, _ in pairs), default=math.inf)
        over = any(g > s for g, s in zip(polls[-1][2], polls[-1][1], strict=True))
        if over:
            step.error = f"target ahead of the source: {polls[-1][2]} > {polls[-1][1]}"
        elif errors:
            step.error = f"the producers lost {errors} records"
        step.producer_bound = step.achieved < PRODUCED_SHARE * rate
        step.held = not step.error and step.p99_ms < LIMIT_MS
        step.passed = step.held and not step.producer_bound
        return step

    def _start_loaders(self, rate: float) -> list[subprocess.Popen[str]]:
        n = self.shape.producers
        self.log_dir.mkdir(parents=True, exist_ok=True)
        out = []
        for i in range(n):
            cmd = [
                sys.executable,
                "-m",
                "scripts.bench.loops",
                "paced",
                self.source,
                self.topic,
                str(rate / n),
                str(self.step_s),
                str(self.shape.size),
                f"--partitions={self.partitions}",
                *self.shape.loop_args(i),
            ]
            with (self.log_dir / f"sustained-{round(rate)}-{i}.log").open("w") as log:
                out.append(
                    subprocess.Popen(
                        cmd, stdout=subprocess.PIPE, stderr=log, text=True, cwd=REPO_ROOT
                    )
                )
        return out

    @staticmethod
    def _result(proc: subprocess.Popen[str]) -> dict[str, Any]:
        try:
            stdout, _ = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            return {"errors": 1, "error": "no result"}
        lines = [ln for ln in stdout.splitlines() if ln.startswith("{")]
        return json.loads(lines[-1]) if lines else {"errors": 1, "exit": proc.returncode}
