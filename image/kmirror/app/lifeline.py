"""What ties a stream process to its supervisor: it dies with it, and what it reports is sent
or, if not, logged.

Outside a container nothing kills a process group for us: a `kill -9` of `kmirror run` (a
shell, supervisord, a VM service without cgroup kill) would leave its streams running as
orphans, still in the consumer group and still copying, beside the next kmirror. Two layers
stop them: the kernel's parent-death signal (Linux `prctl(PR_SET_PDEATHSIG)`: SIGTERM, the same
flush-and-commit path as a normal stop), and a watcher thread that notices a new parent pid
(the signal is lost if the parent died before `prctl`, and does not exist off Linux) and, if the
graceful stop does not end the process within the grace period, ends it hard.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import multiprocessing.queues
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Mapping

log = logging.getLogger(__name__)

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
PARENT_POLL_S = 1.0
# Exit code of a stream that had to be ended hard after its supervisor died: its last records
# since the last commit are copied again by the next kmirror (at least once, never a gap).
ORPHAN_EXIT_CODE = 1


def set_parent_death_signal(sig: int = signal.SIGTERM) -> bool:
    """Ask the kernel to send `sig` when the parent dies. False where that does not exist."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name, use_errno=True)
        return int(libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


class ParentWatch:
    """Watches the parent pid from a daemon thread. On its death: `on_orphan()` (a graceful
    stop), then, if the process still runs after `grace` seconds, `os._exit`."""

    def __init__(
        self,
        parent: int,
        on_orphan: Callable[[], None],
        grace: float,
        poll: float = PARENT_POLL_S,
        exit_hard: Callable[[int], None] = os._exit,
    ) -> None:
        self.parent = parent
        self._on_orphan, self._grace, self._poll = on_orphan, grace, poll
        self._exit_hard = exit_hard
        self.orphaned = threading.Event()

    def parent_alive(self) -> bool:
        return os.getppid() == self.parent

    def start(self) -> ParentWatch:
        threading.Thread(target=self._watch, name="kmirror-parent-watch", daemon=True).start()
        return self

    def _watch(self) -> None:
        while self.parent_alive():
            time.sleep(self._poll)
        self.orphaned.set()
        log.error(
            "supervisor pid=%d is gone; stopping this stream (hard stop in %.0fs)",
            self.parent,
            self._grace,
        )
        # The graceful stop runs beside the timer, never before it: whatever it waits for (a
        # lock, a stuck flush), the hard stop still comes after the grace period.
        threading.Thread(target=self._on_orphan, name="kmirror-orphan-stop", daemon=True).start()
        time.sleep(self._grace)
        log.error(
            "stream did not stop within %.0fs of its supervisor's death; exiting without its "
            "final commit (the next start copies the records since the last commit again)",
            self._grace,
        )
        self._exit_hard(ORPHAN_EXIT_CODE)


def stop_on_signals(stop: threading.Event, *signums: int) -> None:
    """Set `stop` when one of `signums` arrives (relay_signals says how)."""
    relay_signals(dict.fromkeys(signums, stop.set))


def relay_signals(actions: Mapping[int, Callable[[], None]]) -> None:
    """Run `actions[signum]` when that signal arrives, in a thread of its own, never inside
    the signal handler.

    Python runs a handler in the main thread between two bytecodes, wherever that thread is:
    also inside `stop.set()` (which holds the event's lock) when a second signal comes (the
    kernel's parent-death SIGTERM, then a user's or an init system's). A handler that calls
    `stop.set()` then waits for a lock its own thread holds, and the process hangs for good.
    Here the Python handler does nothing: the interpreter's C handler writes the signal's number
    to a socket (`signal.set_wakeup_fd`), and a daemon thread reads it and runs the action (which
    may take locks and log). A process has one wakeup fd: call this once, from the main thread;
    other signals with Python handlers of their own are written to the socket too, and skipped.
    """
    reader, writer = socket.socketpair()
    writer.setblocking(False)
    signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    for signum in actions:
        signal.signal(signum, _ignore)

    def relay(reader: socket.socket, writer: socket.socket) -> None:
        # Runs as long as the process: the writer stays open (a closed wakeup fd's number could
        # be reused by another file, which the next signal would then write into).
        while True:
            for signum in reader.recv(64):
                action = actions.get(signum)
                if action is not None:
                    action()

    threading.Thread(
        target=relay, args=(reader, writer), name="kmirror-signals", daemon=True
    ).start()


def _ignore(signum: int, frame: object) -> None:
    """The Python-level handler of a relayed signal: the relay thread acts on it."""


class ThrottledLog:
    """Logs a recurring failure at once, then at most every `every` seconds with a count, so a
    failure that repeats every second is visible without flooding the log."""

    def __init__(self, logger: logging.Logger, what: str, every: float = 60.0) -> None:
        self._log, self._what, self._every = logger, what, every
        self._last = -float("inf")
        self._suppressed = 0

    def failed(self, exc: BaseException) -> None:
        now = time.monotonic()
        if now - self._last < self._every:
            self._suppressed += 1
            return
        more = f" ({self._suppressed} more since the last report)" if self._suppressed else ""
        self._log.warning("%s failed: %s: %s%s", self._what, type(exc).__name__, exc, more)
        self._last, self._suppressed = now, 0


_feeder_failures = ThrottledLog(log, "sending metrics and heartbeat to the supervisor")


class SnapshotQueue(multiprocessing.queues.Queue):  # type: ignore[type-arg]
    """The streams' channel to the supervisor. A snapshot its background thread cannot send
    (a pickling error, a broken pipe) is logged like any other failure instead of a bare
    traceback on stderr."""

    @staticmethod
    def _on_queue_feeder_error(e: Exception, obj: object) -> None:
        _feeder_failures.failed(e)
