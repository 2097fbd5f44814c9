"""One stream process: started by the supervisor (spawn), it runs one mirror stream and sends
its metrics and heartbeat to the supervisor once a second. It stops on SIGTERM (flush, commit,
exit 0), when its supervisor dies (lifeline.py), or with the stream's error and exit code."""

from __future__ import annotations

import logging
import signal
import sys
import threading
import time
from dataclasses import asdict
from types import FrameType
from typing import Any

from kmirror.app.lifeline import ParentWatch, ThrottledLog, set_parent_death_signal
from kmirror.config.model import MirrorConfig
from kmirror.errors import KmirrorError
from kmirror.logsetup import configure_for
from kmirror.metrics.aggregate import snapshot
from kmirror.metrics.worker import WorkerMetrics
from kmirror.mirror.engine import Plan
from kmirror.mirror.stream import DEFAULT_TUNING, Stream, StreamState, Tuning

log = logging.getLogger(__name__)

PUBLISH_INTERVAL_S = 1.0
# How long the supervisor waits for its streams to stop, and an orphaned stream for itself.
SHUTDOWN_GRACE_S = 30.0


def stream_main(
    config: MirrorConfig,
    stream_id: int,
    outbox: Any,
    parent: int,
    plan: Plan,
    tuning: Tuning = DEFAULT_TUNING,
) -> None:
    configure_for(config)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    # SIGTERM when the supervisor dies (even by SIGKILL): the normal flush-and-commit stop.
    set_parent_death_signal(signal.SIGTERM)
    watch = ParentWatch(parent, stop.set, SHUTDOWN_GRACE_S).start()
    metrics = WorkerMetrics()
    failures = ThrottledLog(log, f"stream {stream_id}: sending metrics and heartbeat")
    last = 0.0

    def publish(state: StreamState, force: bool = False) -> None:
        nonlocal last
        now = time.monotonic()
        if watch.orphaned.is_set() or not (force or now - last >= PUBLISH_INTERVAL_S):
            return
        last = now
        try:
            outbox.put_nowait((stream_id, asdict(state), snapshot(metrics.registry)))
        except Exception as exc:  # a full pipe must never stop the copy, but is reported
            failures.failed(exc)

    # The supervisor's plan: the stream builds the copier it names, deciding nothing again.
    stream = Stream(config, metrics, stop, stream_id, plan.copier, on_tick=publish, tuning=tuning)
    code = 0
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
