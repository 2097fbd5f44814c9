"""A stream ties itself to its supervisor: orphan detection and reported (not silent) failures."""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal
import subprocess
import sys
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


def test_the_hard_stop_comes_even_when_the_graceful_stop_hangs() -> None:
    exits: list[int] = []
    done = threading.Event()
    hang = threading.Event()  # never set: a graceful stop that waits for ever (a held lock)

    def exit_hard(code: int) -> None:
        exits.append(code)
        done.set()

    watch = ParentWatch(os.getppid() + 1, hang.wait, grace=0.1, poll=0.01, exit_hard=exit_hard)
    watch.start()
    assert done.wait(30), "the hard stop never came"
    assert exits == [ORPHAN_EXIT_CODE]


# A stream's main loop: it looks at its stop event all the time (Event.wait takes the event's
# lock), while signals arrive. A handler calling stop.set() there deadlocks on that lock.
SIGNALLED_LOOP = """
import signal, sys, threading
from kmirror.app.lifeline import stop_on_signals
stop = threading.Event()
stop_on_signals(stop, signal.SIGTERM, signal.SIGINT)
print("ready", flush=True)
while not stop.wait(0.0001):
    pass
print("stopped", flush=True)
"""


def test_a_burst_of_signals_stops_the_process_and_never_hangs_it() -> None:
    for _ in range(5):
        proc = subprocess.Popen(
            [sys.executable, "-c", SIGNALLED_LOOP], stdout=subprocess.PIPE, text=True
        )
        try:
            assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
            for _ in range(200):
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGTERM)
            code = proc.wait(20)  # a TimeoutExpired here: the process hangs
            assert proc.stdout.read() == "stopped\n", code
            # Once Python finalizes, a signal left of the burst ends it by default: still stopped.
            assert code in (0, -signal.SIGTERM)
        finally:
            proc.kill()
            proc.wait()
