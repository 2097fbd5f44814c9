"""The supervisor with real child processes (no broker): exit codes, logs, probes."""

from __future__ import annotations

import logging
import queue
import socket
import sys
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from kmirror.app.supervisor import Supervisor
from kmirror.config.model import ClusterConfig, DrConfig, MirrorConfig
from kmirror.errors import CommitError, ConfigError
from kmirror.metrics.http import HealthServer
from kmirror.mirror.engine import Plan

pytestmark = pytest.mark.unit


def config(**kw: Any) -> MirrorConfig:
    return MirrorConfig(
        source=ClusterConfig("source", "127.0.0.1:1"),
        target=ClusterConfig("target", "127.0.0.1:2"),
        group_id="g",
        metrics_port=0,
        **kw,
    )


def uncommitted_stream(
    config: MirrorConfig,
    stream_id: int,
    outbox: Any,
    parent: int,
    plan: Plan,
    tuning: Any,
    link: Any,
) -> None:
    """A stream whose final commit failed (the contract: it exits with CommitError's code)."""
    sys.exit(CommitError.exit_code)


def planned_stream(
    config: MirrorConfig,
    stream_id: int,
    outbox: Any,
    parent: int,
    plan: Plan,
    tuning: Any,
    link: Any,
) -> None:
    """Exits 42 when it was handed the hybrid transactional plan, 9 otherwise (a stream's exit
    0 without a stop request counts as a failure, 1)."""
    sys.exit(42 if plan == Plan("hybrid", exactly_once=True) else 9)


def test_a_stop_without_the_final_commit_exits_non_zero_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sup = Supervisor(config(), CollectorRegistry(), target=uncommitted_stream)
    with caplog.at_level(logging.INFO, "kmirror.app.supervisor"):
        code = sup.run()
    assert code == CommitError.exit_code != 0
    assert "stopped without its final commit" in caplog.text


class BrokenInbox:
    def get(self, timeout: float) -> Any:
        raise EOFError("Ran out of input")


def test_a_lost_snapshot_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    sup = Supervisor(config(), CollectorRegistry())
    with caplog.at_level(logging.WARNING, "kmirror.app.supervisor"):
        sup._drain(BrokenInbox())
    assert "reading a stream's metrics and heartbeat failed: EOFError" in caplog.text


def test_liveness_failure_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    sup = Supervisor(config(), CollectorRegistry())
    sup._states[(0, 0)] = {"heartbeat": 1.0, "connected": True, "selected": 1, "assigned": 1}
    with caplog.at_level(logging.ERROR, "kmirror.app.supervisor"):
        assert not sup.healthy()[0]
        assert not sup.healthy()[0]
    assert caplog.text.count("liveness failing: stream 0 silent") == 1


def test_idle_member_of_the_group_is_ready() -> None:
    sup = Supervisor(config(num_streams=2), CollectorRegistry())
    base = {"heartbeat": 1.0, "connected": True, "selected": 1}
    sup._states[(0, 0)] = {**base, "assigned": 1, "joined": True}
    sup._states[(0, 1)] = {**base, "assigned": 0, "joined": False}
    assert sup.ready() == (False, "stream 1 waiting for its first assignment")
    sup._states[(0, 1)]["joined"] = True
    assert sup.ready() == (True, "ready")


def test_metrics_port_in_use_is_bad_input() -> None:
    with socket.socket() as busy:
        busy.bind(("0.0.0.0", 0))
        busy.listen()
        port = busy.getsockname()[1]
        server = HealthServer(port, CollectorRegistry(), lambda: (True, ""), lambda: (True, ""))
        with pytest.raises(ConfigError, match=f"metrics port {port} is already in use") as exc:
            server.start()
    assert "--metrics-port" in str(exc.value)
    assert exc.value.exit_code == 2


def test_queue_empty_is_not_a_failure(caplog: pytest.LogCaptureFixture) -> None:
    class Quiet:
        def get(self, timeout: float) -> Any:
            raise queue.Empty

    sup = Supervisor(config(), CollectorRegistry())
    with caplog.at_level(logging.WARNING):
        sup._drain(Quiet())
    assert not caplog.records


def test_the_engine_is_decided_once_and_handed_to_every_stream_process() -> None:
    """The supervisor decides (a refusal before anything starts); each stream process gets the
    plan, pickled across spawn, and decides nothing itself."""
    sup = Supervisor(config(num_streams=2, exactly_once=True), CollectorRegistry(),
                     target=planned_stream)  # fmt: skip
    assert sup.run() == 42


def test_a_plan_the_batch_engine_cannot_run_is_refused_before_any_stream_starts() -> None:
    with pytest.raises(ConfigError, match="--engine batch cannot copy this mirror"):
        Supervisor(config(engine="batch", dr=DrConfig(provenance_header=True)),
                   CollectorRegistry(), target=planned_stream)  # fmt: skip
