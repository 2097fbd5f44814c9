"""Runs the stream processes of every flow, each flow's streams in its consumer group, and
serves their metrics (and, when configured, the control API) on one port.

Streams are processes, not threads: a stream is CPU bound in Python and threads would share one
core under the GIL. Kafka's group protocol spreads partitions over streams and over replicas.
The supervisor is also a proper PID 1: it forwards SIGTERM, reaps every child and exits with
the streams' code (the first non-zero one). Streams die with it (lifeline.py), also when it is
killed with SIGKILL outside a container.

Several flows (mm2.properties with `A->C` and `B->C` enabled: MM2's multi-cluster mode) run
side by side: streams, control state (kmirror.app.control) and the services around them
(kmirror.app.services: disaster recovery, topic config sync, schemas) per flow, every metric
carrying a `flow` label. Settings of the process itself (the metrics port, logging, the control
API's credentials) are the same in every flow (kmirror.config.dialects.flows checks).

SIGHUP (and, opt-in, a changed configuration file) reloads the configuration without a restart:
kmirror.app.reload loads it again from its `ConfigSource`, and `_reconfigure` hands what may
change live to the streams (their orders) and the services.
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
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any

from prometheus_client import CollectorRegistry, Gauge

from kmirror import __version__
from kmirror.app.api import ControlApi
from kmirror.app.channel import Orders
from kmirror.app.control import FlowControl
from kmirror.app.lifeline import SnapshotQueue, ThrottledLog, relay_signals
from kmirror.app.reload import ConfigSource, Reloader
from kmirror.app.services import FlowServices
from kmirror.app.streamproc import SHUTDOWN_GRACE_S, StreamLink, stream_main
from kmirror.config.model import MirrorConfig
from kmirror.control.store import POLL_S
from kmirror.errors import CommitError, KmirrorError
from kmirror.logsetup import set_level
from kmirror.metrics.aggregate import FlowsCollector, StreamsCollector
from kmirror.metrics.http import HealthServer, server_tls
from kmirror.metrics.mm2 import Mm2Collector
from kmirror.mirror.engine import Plan, plan_for
from kmirror.mirror.stream import DEFAULT_TUNING, StreamState, Tuning

log = logging.getLogger(__name__)

# A commit may flush for up to message.timeout.ms; a stream silent for longer is stuck.
HEARTBEAT_STALE_S = 120.0
DR_RESTART_GRACE_S = 10.0  # a reload waits this long for the old disaster-recovery thread

StreamMain = Callable[[MirrorConfig, int, Any, int, Plan, Tuning, StreamLink], None]
Slot = tuple[int, int]  # (flow index, stream id)


class Supervisor:
    def __init__(
        self,
        config: MirrorConfig | Sequence[MirrorConfig],
        registry: CollectorRegistry | None = None,
        target: StreamMain = stream_main,
        tuning: Tuning = DEFAULT_TUNING,
        source: ConfigSource | None = None,
    ) -> None:
        self.flows = [config] if isinstance(config, MirrorConfig) else list(config)
        self._config = self.flows[0]  # the process's settings (the same in every flow)
        # The engine of each flow, decided once here (a refusal is a ConfigError before
        # anything starts); every stream process gets its flow's plan and builds what it names.
        self._plans = [plan_for(flow) for flow in self.flows]
        self._target = target
        self._tuning = tuning
        self._registry = registry or CollectorRegistry()
        self._streams = StreamsCollector()
        self._registry.register(self._streams)
        self.services = FlowsCollector()  # the per-flow services' metrics, with a flow label
        self._registry.register(self.services)
        if self._config.mm2_metric_names:  # MirrorMaker 2's names too (kmirror.metrics.mm2)
            self._registry.register(
                Mm2Collector(
                    self._streams,
                    {c.flow: c.target.alias for c in self.flows},
                    {c.flow: c.num_streams for c in self.flows},
                )
            )
        info = Gauge(
            "kmirror_info",
            "kmirror build and dialect",
            ["version", "dialect"],
            registry=self._registry,
        )
        info.labels(__version__, self._config.dialect).set(1)
        self._slots: list[Slot] = [
            (f, sid) for f, c in enumerate(self.flows) for sid in range(c.num_streams)
        ]
        self._states: dict[Slot, dict[str, Any]] = {}
        self._pids: dict[int, Slot] = {}
        self._codes: dict[Slot, int] = {}  # exit codes
        self._queues: dict[Slot, Any] = {}  # the streams' orders (kmirror.app.channel)
        self.controls = [FlowControl(c, self._sender(f)) for f, c in enumerate(self.flows)]
        self._services: list[FlowServices] = []
        self._reloader = (
            None
            if source is None
            else Reloader(source, self.flows, self._reconfigure, self._registry)
        )
        self._stop_requested = 0
        self._stop_sent = False
        self._deadline: float | None = None
        self._server: HealthServer | None = None
        self._unhealthy = ""  # the last liveness failure logged, so it is logged once
        self._snapshot_failures = ThrottledLog(log, "reading a stream's metrics and heartbeat")
        self._control_failures = ThrottledLog(log, "reading the control topic")
        self._sending = ThrottledLog(log, "sending a stream its orders")

    def _name(self, slot: Slot) -> str:
        flow, sid = slot
        return (
            f"stream {sid}" if len(self.flows) == 1 else f"stream {sid} of {self.flows[flow].flow}"
        )

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
        for slot in self._slots:
            if slot in self._codes:
                why = f"{self._name(slot)} exited with code {self._codes[slot]}"
                return False, why, why
            beat = self._states.get(slot, {}).get("heartbeat")
            if beat is not None and now - beat > HEARTBEAT_STALE_S:
                name = self._name(slot)
                return False, f"{name} silent for {now - beat:.0f}s", f"{name} silent"
        return True, "ok", ""

    def ready(self) -> tuple[bool, str]:
        if self._stop_requested:
            return False, "stopping"
        for slot in self._slots:
            st = self._states.get(slot)
            if st is None or not st["connected"]:
                return False, f"{self._name(slot)} not connected yet"
            if not StreamState(**st).ready:
                return False, f"{self._name(slot)} waiting for its first assignment"
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

    def _serve(self) -> None:
        control = self._config.control
        routes = ControlApi(self.controls, control, self._registry) if control.enabled else None
        tls = None
        if control.tls_cert is not None and control.tls_key is not None:
            tls = server_tls(control.tls_cert, control.tls_key, control.tls_client_ca)
        self._server = HealthServer(
            self._config.metrics_port,
            self._registry,
            self.healthy,
            self.ready,
            routes=routes,
            tls=tls,
        )
        self._server.start()

    def _on_hangup(self) -> None:
        """SIGHUP, from the signal relay's thread (never inside the handler: lifeline.py)."""
        if self._reloader is None:
            log.warning("SIGHUP: this mirror has no configuration source to reload; ignored")
        else:
            self._reloader.request()

    def _reconfigure(self, flows: list[MirrorConfig]) -> None:
        """A reload's new configurations (kmirror.app.reload checked that only what may change
        live differs), in the order of self.flows."""
        set_level(flows[0].log_level)
        for f, config in enumerate(flows):
            self.flows[f] = config
            self.controls[f].reconfigure(config)  # the streams, through their orders
            self._services[f].reconfigure(config, DR_RESTART_GRACE_S)
        self._config = self.flows[0]

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        # SIGHUP reloads the configuration; the streams ignore it (streamproc.py).
        relay_signals({signal.SIGHUP: self._on_hangup})
        if self._config.metrics_port:
            self._serve()
        services = self._services = [FlowServices(c, self.services) for c in self.flows]
        for service in services:
            service.initial()  # before any stream: a record never precedes its schema
        # Paused topics and drains are read before any stream copies (a restart stays paused).
        first = [control.start() for control in self.controls]
        ctx = mp.get_context("spawn")
        inbox = SnapshotQueue(ctx=ctx)
        for slot in self._slots:
            flow, sid = slot
            self._queues[slot] = ctx.Queue()
            link = StreamLink(flow, self._queues[slot], first[flow])
            proc = ctx.Process(
                target=self._target,
                args=(
                    self.flows[flow],
                    sid,
                    inbox,
                    os.getpid(),
                    self._plans[flow],
                    self._tuning,
                    link,
                ),
                name=f"kmirror-stream-{sid}" if len(self.flows) == 1 else f"kmirror-{flow}-{sid}",
                daemon=False,
            )
            proc.start()
            assert proc.pid is not None
            self._pids[proc.pid] = slot
        for c in self.flows:
            log.info("started flow=%s streams=%d group=%s", c.flow, c.num_streams, c.group_id)
        done = threading.Event()
        for service in services:
            service.start(done)  # checkpoints, group sync, heartbeats, topic configs, schemas
        threading.Thread(target=self._control_loop, args=(done,), name="kmirror-control",
                         daemon=True).start()  # fmt: skip
        if self._reloader is not None:
            self._reloader.start(done)
        try:
            while len(self._codes) < len(self._slots):
                self._drain(inbox)
                self._reap_children()
                self._maybe_stop()
        finally:
            done.set()
            for service in services:
                service.stop(SHUTDOWN_GRACE_S)
            self._drain(inbox)
            for control in self.controls:
                control.close()
            if self._server:
                self._server.stop()
        failed = [c for slot, c in sorted(self._codes.items()) if c != 0]
        code = failed[0] if failed else 0
        log.info("kmirror exiting code=%d", code)
        return code

    def _control_loop(self, done: threading.Event) -> None:
        """Changes made through other replicas, and new throttle shares, every POLL_S."""
        while not done.wait(POLL_S):
            for control in self.controls:
                try:
                    control.poll()
                except KmirrorError as exc:
                    self._control_failures.failed(exc)

    def _sender(self, flow: int) -> Callable[[int, Orders], None]:
        return lambda sid, orders: self._send((flow, sid), orders)

    def _send(self, slot: Slot, orders: Orders) -> None:
        q = self._queues.get(slot)
        if q is None:
            return  # not started yet: the stream starts with the state as it is then
        try:
            q.put_nowait(orders)
        except Exception as exc:
            self._sending.failed(exc)

    def _drain(self, inbox: Any) -> None:
        deadline = time.monotonic() + 0.2
        while True:
            try:
                slot, state, families, report = inbox.get(
                    timeout=max(deadline - time.monotonic(), 0)
                )
            except queue.Empty:
                return
            except Exception as exc:
                # A lost snapshot makes /metrics stale and, if it lasts, /healthz fail: say why.
                self._snapshot_failures.failed(exc)
                return
            flow, sid = slot
            self._states[slot] = state
            self._streams.update(sid, families, self.flows[flow].flow)
            self.controls[flow].reports[sid] = report

    def _reap_children(self) -> None:
        # waitpid(-1): as PID 1 we also collect zombies that are not ours.
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            slot = self._pids.pop(pid, None)
            if slot is None:
                continue
            code = os.waitstatus_to_exitcode(status)
            if code == -signal.SIGTERM and self._stop_sent:
                # Our SIGTERM arrived before the stream installed its handler, i.e. before it
                # created any client: nothing was sent, nothing to commit.
                code = 0
            code = 128 - code if code < 0 else code  # killed by a signal: shell convention
            if code == 0 and not self._stop_requested:
                code = 1  # a stream has no business ending on its own
            self._codes[slot] = code
            name = self._name(slot)
            if code == CommitError.exit_code:
                log.error(
                    "%s stopped without its final commit (exit %d): a restart copies the "
                    "records since its last commit again (duplicates, no loss)",
                    name,
                    code,
                )
            elif code != 0:
                log.error("%s exited code=%d; stopping the others", name, code)
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


def run_mirror(
    config: MirrorConfig | Sequence[MirrorConfig],
    tuning: Tuning = DEFAULT_TUNING,
    source: ConfigSource | None = None,
) -> int:
    return Supervisor(config, tuning=tuning, source=source).run()
