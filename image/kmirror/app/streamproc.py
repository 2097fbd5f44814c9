"""One stream process: started by the supervisor (spawn), it runs one mirror stream, sends its
metrics, heartbeat and positions to the supervisor once a second, and follows the orders the
supervisor sends it (kmirror.app.channel: paused topics, a drain, its throttle share, a
reloaded configuration). It stops on SIGTERM (flush, commit, exit 0), when its supervisor dies
(lifeline.py), or with the stream's error and exit code."""

from __future__ import annotations

import gc
import logging
import signal
import sys
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any

from kmirror.app.allocator import settle_allocator
from kmirror.app.channel import Orders, Report, latest
from kmirror.app.lifeline import (
    ParentWatch,
    ThrottledLog,
    set_parent_death_signal,
    stop_on_signals,
)
from kmirror.config.model import MirrorConfig
from kmirror.control.gate import Gate
from kmirror.errors import KmirrorError
from kmirror.logsetup import configure_for, set_level
from kmirror.metrics.aggregate import snapshot
from kmirror.metrics.partitions import PartitionFigures
from kmirror.metrics.worker import WorkerMetrics
from kmirror.mirror.engine import Plan
from kmirror.mirror.stream import DEFAULT_TUNING, Stream, StreamState, Tuning

log = logging.getLogger(__name__)

PUBLISH_INTERVAL_S = 1.0
ORDERS_INTERVAL_S = 0.1  # how often the loop looks for new orders
# How long the supervisor waits for its streams to stop, and an orphaned stream for itself.
SHUTDOWN_GRACE_S = 30.0
# Allocations between two passes of the collector over the youngest objects (Python's default
# is 700): see settle_garbage_collector.
YOUNG_GENERATION_THRESHOLD = 10_000


@dataclass(frozen=True)
class StreamLink:
    """A stream's side of the channel: its flow's index, its orders queue, its first orders."""

    flow: int
    orders: Any
    first: Orders


def stream_main(
    config: MirrorConfig,
    stream_id: int,
    outbox: Any,
    parent: int,
    plan: Plan,
    tuning: Tuning = DEFAULT_TUNING,
    link: StreamLink | None = None,
) -> None:
    # A reload is the supervisor's (SIGHUP to it alone); a hangup of the whole process group
    # (a closed terminal) must not end a stream without its final commit.
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    configure_for(config)
    stop = threading.Event()

    stop_on_signals(stop, signal.SIGTERM, signal.SIGINT)
    # SIGTERM when the supervisor dies (even by SIGKILL): the normal flush-and-commit stop.
    set_parent_death_signal(signal.SIGTERM)
    watch = ParentWatch(parent, stop.set, SHUTDOWN_GRACE_S).start()
    metrics = WorkerMetrics(partitions=PartitionFigures() if config.mm2_metric_names else None)
    gate = Gate(on_throttled=metrics.throttled)
    follower = Follower(gate, link)
    failures = ThrottledLog(log, f"stream {stream_id}: sending metrics and heartbeat")
    last = 0.0
    slot = (link.flow if link is not None else 0, stream_id)

    def publish(state: StreamState, force: bool = False) -> None:
        nonlocal last
        follower.follow(stream)
        now = time.monotonic()
        if watch.orphaned.is_set() or not (force or now - last >= PUBLISH_INTERVAL_S):
            return
        last = now
        try:
            report = follower.report(stream)
            outbox.put_nowait((slot, asdict(state), snapshot(metrics.registry), report))
        except Exception as exc:  # a full pipe must never stop the copy, but is reported
            failures.failed(exc)

    # The supervisor's plan: the stream builds the copier it names, deciding nothing again.
    stream = Stream(
        config, metrics, stop, stream_id, plan.copier, on_tick=publish, tuning=tuning, gate=gate
    )
    code = 0
    settle_allocator()
    settle_garbage_collector()
    try:
        stream.run()
        log.info("stream %d stopped cleanly", stream_id)
    except KmirrorError as exc:
        log.error("stream %d stopped: %s", stream_id, exc)
        code = exc.exit_code
    except Exception:
        log.exception("stream %d crashed", stream_id)
        code = 1
    publish(stream.state, force=True)
    if not watch.parent_alive():
        # Nobody reads the queue any more: flushing it into a full pipe would block forever.
        outbox.cancel_join_thread()
    outbox.close()
    outbox.join_thread()
    sys.exit(code)


def settle_garbage_collector() -> None:
    """Take what the process built so far (modules, clients, configuration) out of the cyclic
    garbage collector's reach before the copy loop starts.

    The loop allocates a few short-lived objects per source batch, so the collector runs every
    few hundred batches, and each older-generation pass walked every long-lived object of the
    process again: 15 % of a stream's CPU time on batches of 5 records (py-spy, one stream).
    Frozen, those objects are never walked (nor freed: they live as long as the process
    anyway); the loop's own garbage is collected as before, only less often
    (YOUNG_GENERATION_THRESHOLD), so that most of it (a batch lives until the target
    acknowledges it) is gone before a pass looks at it. Both together took the collector from
    15 % to 4-6 % of that stream's time (docs/benchmarks.md, Session 15)."""
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_GENERATION_THRESHOLD, older, oldest)


class Follower:
    """Applies the supervisor's orders to the stream's gate (and configuration), and reports
    back what the stream has and holds."""

    def __init__(self, gate: Gate, link: StreamLink | None) -> None:
        self._gate = gate
        self._link = link
        self._config: MirrorConfig | None = None  # the last reloaded configuration applied
        self._applied = 0
        self._next = 0.0
        if link is not None:
            self._apply(link.first, None)

    def follow(self, stream: Stream) -> None:
        now = time.monotonic()
        if self._link is None or now < self._next:
            return
        self._next = now + ORDERS_INTERVAL_S
        orders = latest(self._link.orders)
        if orders is not None:
            self._apply(orders, stream)

    def _apply(self, orders: Orders, stream: Stream | None) -> None:
        self._gate.update(orders.state, orders.throttle)
        config = orders.config
        if config is not None and stream is not None and config != self._config:
            set_level(config.log_level)
            stream.reconfigure(config)
            self._config = config
        self._applied = orders.version

    def report(self, stream: Stream) -> Report:
        positions = stream.positions()
        backlog, tail = self._gate.classes(positions)
        held = tuple(
            k
            for k, (acked, _) in sorted(positions.items())
            if (limit := self._gate.limit(k)) is not None and (limit == 0 or acked >= limit)
        )
        return Report(positions, self._applied, held, backlog, tail)
