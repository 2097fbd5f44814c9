"""One flow's control in the supervisor: its state on the target (kmirror.control.store), the
orders its streams follow (kmirror.app.channel), what they report back, and the actions of the
control API (kmirror.app.api): pause, resume, drain, throttle, status.

The state is read at start, before any stream is started (a paused topic stays paused through a
restart or a kill -9), then every POLL_S by a thread of the supervisor (changes made through
another replica). An action writes its record and reads the topic back (`ControlStore.write`):
every replica, this one included, acts on what the topic says.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from kmirror.app.channel import Orders, Report
from kmirror.config.model import MirrorConfig
from kmirror.config.throttle import ThrottleSettings
from kmirror.control import state as records
from kmirror.control.state import ControlState, Drain, DrainReport
from kmirror.control.store import POLL_S, ControlStore
from kmirror.control.throttle import share
from kmirror.errors import ConfigError, KmirrorError
from kmirror.kafka.cluster import Cluster
from kmirror.kafka.plan import plan
from kmirror.partitions import SourcePartition
from kmirror.progress.status import status_doc, status_rows

log = logging.getLogger(__name__)

STATUS_TIMEOUT_S = 10.0
CAPTURE_WAIT_S = 10.0  # at most, for this replica's streams to hold before a drain's capture

Send = Callable[[int, Orders], None]  # stream id -> its queue


class FlowControl:
    def __init__(self, config: MirrorConfig, send: Send) -> None:
        self.config = config
        self._send = send
        self._lock = threading.Lock()  # the store's clients are not shared between threads
        # push() runs in the control loop, the API's threads and a reload: one at a time, so
        # the newest orders are the last ones sent.
        self._pushing = threading.Lock()
        self._store = ControlStore(config) if config.control.enabled else None
        self._version = 0
        self._sent: tuple[ControlState, ThrottleSettings, MirrorConfig] | None = None
        self.reports: dict[int, Report] = {}
        self._reload: MirrorConfig | None = None
        self._shares: dict[int, ThrottleSettings] = {}

    @property
    def state(self) -> ControlState:
        return self._store.state if self._store is not None else ControlState()

    def start(self) -> Orders:
        """Read the state before the streams start; their first orders."""
        if self._store is not None:
            with self._lock:
                self._store.ensure()
                self._store.refresh()
            self._announce()
        return self.orders(0)

    def _announce(self) -> None:
        state = self.state
        if state.paused:
            log.warning("control: topics paused flow=%s topics=%s", self.config.flow,
                        ",".join(sorted(state.paused)))  # fmt: skip
        if state.drain is not None:
            log.warning("control: drained flow=%s drain=%s", self.config.flow, state.drain.id)

    def orders(self, stream: int) -> Orders:
        state = self.state
        throttle = state.throttle_for(self.config.throttle)
        return Orders(
            self._version,
            state,
            share(throttle, stream, self.reports, self.config.num_streams),
            self._reload,
        )

    def poll(self) -> None:
        """Read changes made elsewhere; send the streams new orders when anything changed (the
        state, the throttle shares as streams' partitions move between backlog and tail)."""
        if self._store is not None:
            with self._lock:
                self._store.refresh()
        self.push()

    def push(self, force: bool = False) -> None:
        with self._pushing:
            self._push(force)

    def _push(self, force: bool) -> None:
        state = self.state
        throttle = state.throttle_for(self.config.throttle)
        shares = [
            share(throttle, sid, self.reports, self.config.num_streams)
            for sid in range(self.config.num_streams)
        ]
        key = (state, throttle, self.config)
        if (
            not force
            and key == self._sent
            and all(self._shares.get(sid) == s for sid, s in enumerate(shares))
        ):
            return
        if key != self._sent:
            self._version += 1
        self._sent = key
        self._shares = dict(enumerate(shares))
        for sid, mine in enumerate(shares):
            self._send(sid, Orders(self._version, state, mine, self._reload))

    def reconfigure(self, config: MirrorConfig) -> None:
        """A reloaded configuration (kmirror.app.reload): to every stream."""
        self.config = config
        self._reload = config
        self.push(force=True)

    def applied(self) -> bool:
        """Every stream acts on the newest state."""
        return all(
            self.reports.get(sid, Report()).applied >= self._version
            for sid in range(self.config.num_streams)
        )

    # -- actions --------------------------------------------------------------------------------

    def _write(self, record: tuple[bytes, bytes | None]) -> ControlState:
        if self._store is None:
            raise ConfigError("the control API is off: set --control-token-file")
        with self._lock:
            state = self._store.write(*record)
        self.push()
        return state

    def pause(self, topic: str, by: str) -> ControlState:
        return self._write(records.pause_record(topic, time.time(), by))

    def resume(self, topic: str) -> ControlState:
        return self._write(records.resume_record(topic))

    def drain(self) -> Drain:
        """Stop every stream where it is (the drain `capturing`), then capture the source's end
        offsets of every selected topic (read_committed: what the mirror can copy) and drain
        to them (kmirror.control.state.Drain says why in two steps)."""
        drain = Drain(uuid.uuid4().hex[:12], time.time(), {}, capturing=True)
        self._write(records.drain_record(drain))
        try:
            # This replica's streams say when they hold; other replicas read the topic every
            # POLL_S and act within a step.
            deadline = time.monotonic() + CAPTURE_WAIT_S
            while not self.applied() and time.monotonic() < deadline:
                time.sleep(0.1)
            time.sleep(POLL_S + 0.5)
            topics = plan(self.config, STATUS_TIMEOUT_S)
            tps = [(r["source"], p) for r in topics for p in range(r["partitions"])]
            marks = Cluster(self.config, "source", STATUS_TIMEOUT_S).watermarks(tps)
        except KmirrorError:
            self._write(records.drain_record(None))  # not left holding everything
            raise
        drain = Drain(drain.id, drain.at, {k: hi for k, (_, hi) in marks.items()})
        self._write(records.drain_record(drain))
        return drain

    def cancel_drain(self) -> ControlState:
        return self._write(records.drain_record(None))

    def set_throttle(self, settings: ThrottleSettings | None) -> ControlState:
        return self._write(records.throttle_record(settings))

    # -- reading --------------------------------------------------------------------------------

    def positions(self) -> dict[SourcePartition, tuple[int, int]]:
        out: dict[SourcePartition, tuple[int, int]] = {}
        for report in self.reports.values():
            out.update(report.positions)
        return out

    def drain_report(self) -> DrainReport | None:
        drain = self.state.drain
        if drain is None:
            return None
        source = Cluster(self.config, "source", STATUS_TIMEOUT_S)
        committed = {
            k: c.offset for k, c in source.committed(self.config.group_id, drain.ends).items()
        }
        for key, (_, done) in self.positions().items():
            if key in drain.ends and done >= 0:
                committed[key] = max(done, committed.get(key, -1))
        return DrainReport(drain.id, drain.ends, committed, drain.capturing)

    def status(self) -> dict[str, Any]:
        rows = status_rows(self.config, STATUS_TIMEOUT_S, self.positions())
        state = self.state
        held = {k for r in self.reports.values() for k in r.held}
        doc = status_doc(self.config, rows)
        for row in doc["partitions"]:
            key = (row["topic"], row["partition"])
            row["paused"] = row["topic"] in state.paused
            row["held"] = key in held
        report = self.drain_report()
        doc["control"] = {
            "paused": sorted(state.paused),
            "paused_at": dict(state.paused_at),
            "drain": None if report is None else report.to_json(),
            "throttle": state.throttle_for(self.config.throttle).to_json(),
            "throttle_set_at_run_time": state.throttle is not None,
            "applied": self.applied(),
        }
        return doc

    def close(self) -> None:
        if self._store is not None:
            with self._lock:
                self._store.close()


def flows_by_name(flows: list[FlowControl]) -> Mapping[str, FlowControl]:
    return {f.config.flow: f for f in flows}
