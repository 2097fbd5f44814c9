"""Runs `num.streams` stream processes in one consumer group and serves their metrics.

Streams are processes, not threads: a stream is CPU bound in Python and threads would share one
core under the GIL. Kafka's group protocol spreads partitions over streams and over replicas.
The supervisor is also a proper PID 1: it forwards SIGTERM, reaps every child and exits with
the streams' code (the first non-zero one). Streams die with it (lifeline.py), also when it is
killed with SIGKILL outside a container.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing as mp
import os
import queue
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

from prometheus_client import CollectorRegistry, Gauge

from kmirror import __version__
from kmirror.app.lifeline import SnapshotQueue, ThrottledLog
from kmirror.app.streamproc import SHUTDOWN_GRACE_S, stream_main
from kmirror.config.model import MirrorConfig
from kmirror.dr.service import DrService
from kmirror.errors import CommitError
from kmirror.metrics.aggregate import StreamsCollector
from kmirror.metrics.http import HealthServer
from kmirror.mirror.engine import Plan, plan_for
from kmirror.mirror.stream import DEFAULT_TUNING, StreamState, Tuning
from kmirror.mirror.topicconfigs import ConfigSync
from kmirror.schemas.service import SchemaSyncService

log = logging.getLogger(__name__)

# A commit may flush for up to message.timeout.ms; a stream silent for longer is stuck.
HEARTBEAT_STALE_S = 120.0


StreamMain = Callable[[MirrorConfig, int, Any, int, Plan, Tuning], None]


class Supervisor:
    def __init__(
        self,
        config: MirrorConfig,
        registry: CollectorRegistry | None = None,
        target: StreamMain = stream_main,
        tuning: Tuning = DEFAULT_TUNING,
        plan: Plan | None = None,
    ) -> None:
        self._config = config
        # The engine, decided once here (a refusal is a ConfigError before anything starts);
        # every stream process gets this plan and builds what it names.
        self._plan = plan if plan is not None else plan_for(config)
        self._target = target
        self._tuning = tuning
        self._registry = registry or CollectorRegistry()
        self._streams = StreamsCollector()
        self._registry.register(self._streams)
        info = Gauge(
            "kmirror_info",
            "kmirror build and dialect",
            ["version", "dialect"],
            registry=self._registry,
        )
        info.labels(__version__, config.dialect).set(1)
        self._states: dict[int, dict[str, Any]] = {}
        self._pids: dict[int, int] = {}  # pid -> stream id
        self._codes: dict[int, int] = {}  # stream id -> exit code
        self._stop_requested = 0
        self._stop_sent = False
        self._deadline: float | None = None
        self._server: HealthServer | None = None
        self._unhealthy = ""  # the last liveness failure logged, so it is logged once
        self._snapshot_failures = ThrottledLog(log, "reading a stream's metrics and heartbeat")

    # -- probes --------------------------------------------------------------------------------

    def healthy(self) -> tuple[bool, str]:
        ok, why, cause = self._liveness()
        if not ok and cause != self._unhealthy:
            # The probe's answer goes to the kubelet only: say it where an operator looks.
            log.error("liveness failing: %s", why)
        self._unhealthy = cause
        return ok, why

    def _liveness(self) -> tuple[bool, str, str]:
        """(ok, the probe's answer, a cause that stays the same while the failure lasts)."""
        now = time.time()
        for sid in range(self._config.num_streams):
            if sid in self._codes:
                why = f"stream {sid} exited with code {self._codes[sid]}"
                return False, why, why
            beat = self._states.get(sid, {}).get("heartbeat")
            if beat is not None and now - beat > HEARTBEAT_STALE_S:
                return False, f"stream {sid} silent for {now - beat:.0f}s", f"{sid} silent"
        return True, "ok", ""

    def ready(self) -> tuple[bool, str]:
        if self._stop_requested:
            return False, "stopping"
        for sid in range(self._config.num_streams):
            st = self._states.get(sid)
            if st is None or not st["connected"]:
                return False, f"stream {sid} not connected yet"
            if not StreamState(**st).ready:
                return False, f"stream {sid} waiting for its first assignment"
        return True, "ready"

    # -- lifecycle -----------------------------------------------------------------------------

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self._stop_requested += 1
        if signum == signal.SIGINT and self._stop_requested > 1:
            # Second Ctrl-C: the user wants out now.
            for pid in self._pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            os._exit(130)

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        if self._config.metrics_port:
            self._server = HealthServer(
                self._config.metrics_port, self._registry, self.healthy, self.ready
            )
            self._server.start()
        dr = DrService(self._config, self._registry) if self._config.dr.enabled else None
        schemas = None
        if self._config.schemas is not None:
            schemas = SchemaSyncService(self._config, self._registry)
            schemas.initial()  # before any stream: a record never precedes its schema
        ctx = mp.get_context("spawn")
        inbox = SnapshotQueue(ctx=ctx)
        for sid in range(self._config.num_streams):
            proc = ctx.Process(
                target=self._target,
                args=(self._config, sid, inbox, os.getpid(), self._plan, self._tuning),
                name=f"kmirror-stream-{sid}",
                daemon=False,
            )
            proc.start()
            assert proc.pid is not None
            self._pids[proc.pid] = sid
        log.info("started streams=%d group=%s", self._config.num_streams, self._config.group_id)
        if dr is not None:
            dr.start()  # checkpoints, group sync, heartbeats (kmirror/dr/service.py)
        done = threading.Event()
        if self._config.sync_topic_configs:
            ConfigSync(self._config, self._registry).start(done)
        if schemas is not None:
            schemas.start(done)
        try:
            while len(self._codes) < self._config.num_streams:
                self._drain(inbox)
                self._reap_children()
                self._maybe_stop()
        finally:
            if dr is not None:
                dr.stop.set()
                dr.join(SHUTDOWN_GRACE_S)
            done.set()
            self._drain(inbox)
            if self._server:
                self._server.stop()
        failed = [c for sid, c in sorted(self._codes.items()) if c != 0]
        code = failed[0] if failed else 0
        log.info("kmirror exiting code=%d", code)
        return code

    def _drain(self, inbox: Any) -> None:
        deadline = time.monotonic() + 0.2
        while True:
            try:
                sid, state, families = inbox.get(timeout=max(deadline - time.monotonic(), 0))
            except queue.Empty:
                return
            except Exception as exc:
                # A lost snapshot makes /metrics stale and, if it lasts, /healthz fail: say why.
                self._snapshot_failures.failed(exc)
                return
            self._states[sid] = state
            self._streams.update(sid, families)

    def _reap_children(self) -> None:
        # waitpid(-1): as PID 1 we also collect zombies that are not ours.
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            sid = self._pids.pop(pid, None)
            if sid is None:
                continue
            code = os.waitstatus_to_exitcode(status)
            if code == -signal.SIGTERM and self._stop_sent:
                # Our SIGTERM arrived before the stream installed its handler, i.e. before it
                # created any client: nothing was sent, nothing to commit.
                code = 0
            code = 128 - code if code < 0 else code  # killed by a signal: shell convention
            if code == 0 and not self._stop_requested:
                code = 1  # a stream has no business ending on its own
            self._codes[sid] = code
            if code == CommitError.exit_code:
                log.error(
                    "stream %d stopped without its final commit (exit %d): a restart copies the "
                    "records since its last commit again (duplicates, no loss)",
                    sid,
                    code,
                )
            elif code != 0:
                log.error("stream %d exited code=%d; stopping the others", sid, code)
            if code != 0:
                self._stop_requested = max(self._stop_requested, 1)

    def _maybe_stop(self) -> None:
        if not self._stop_requested:
            return
        if not self._stop_sent:
            self._stop_sent = True
            self._deadline = time.monotonic() + SHUTDOWN_GRACE_S
            log.info("stopping: flushing and committing")
            for pid in self._pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
        elif self._deadline is not None and time.monotonic() > self._deadline:
            log.error("streams did not stop within %.0fs; killing them", SHUTDOWN_GRACE_S)
            for pid in self._pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            self._deadline = None


def run_mirror(config: MirrorConfig, tuning: Tuning = DEFAULT_TUNING) -> int:
    return Supervisor(config, tuning=tuning).run()
