"""A stream ties itself to its supervisor: orphan detection and reported (not silent) failures."""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading

import pytest

from kmirror.app.lifeline import ORPHAN_EXIT_CODE, ParentWatch, SnapshotQueue, ThrottledLog

pytestmark = pytest.mark.unit


def test_a_new_parent_pid_stops_gracefully_then_hard() -> None:
    stopped = threading.Event()
    exits: list[int] = []
    done = threading.Event()

    def exit_hard(code: int) -> None:
        exits.append(code)
        done.set()

    # A parent pid that is not ours: what a stream sees once its supervisor died.
    watch = ParentWatch(os.getppid() + 1, stopped.set, grace=0, poll=0.01, exit_hard=exit_hard)
    watch.start()
    assert done.wait(30)
    assert stopped.is_set() and watch.orphaned.is_set()
    assert exits == [ORPHAN_EXIT_CODE]


def test_a_living_parent_is_left_alone() -> None:
    stopped = threading.Event()
    watch = ParentWatch(os.getppid(), stopped.set, grace=0, poll=0.01, exit_hard=lambda c: None)
    watch.start()
    assert not stopped.wait(0.2)
    assert watch.parent_alive() and not watch.orphaned.is_set()


def test_repeated_failures_are_logged_once_then_counted(caplog: pytest.LogCaptureFixture) -> None:
    log = logging.getLogger("test.throttle")
    throttle = ThrottledLog(log, "sending a snapshot", every=3600)
    with caplog.at_level(logging.WARNING, "test.throttle"):
        for _ in range(5):
            throttle.failed(BrokenPipeError("pipe closed"))
    assert [r.getMessage() for r in caplog.records] == [
        "sending a snapshot failed: BrokenPipeError: pipe closed"
    ]
    throttle._last = -float("inf")  # the reporting period has passed
    with caplog.at_level(logging.WARNING, "test.throttle"):
        throttle.failed(OSError("again"))
    assert "(4 more since the last report)" in caplog.records[-1].getMessage()


def test_a_snapshot_that_cannot_be_sent_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    outbox = SnapshotQueue(ctx=multiprocessing.get_context("spawn"))
    with caplog.at_level(logging.WARNING, "kmirror.app.lifeline"):
        outbox.put_nowait(lambda: None)  # pickled by the queue's thread: fails there
        outbox.close()
        outbox.join_thread()
    assert "sending metrics and heartbeat to the supervisor failed: " in caplog.text
