"""Waiting for a call that may never return (librdkafka's close and commit have no timeout)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def run_bounded(fn: Callable[[], T], timeout: float, name: str = "kmirror-bounded") -> T:
    """fn()'s result or exception, or TimeoutError when it has not returned within timeout.

    fn runs in a daemon thread, which is left behind on a timeout: the process can exit
    without it, and whatever fn holds (e.g. a client handle) stays referenced, so it is not
    destroyed (which could block as well) while the process exits."""
    outcome: list[T] = []
    failure: list[BaseException] = []

    def call() -> None:
        try:
            outcome.append(fn())
        except BaseException as exc:  # handed to the caller's thread
            failure.append(exc)

    worker = threading.Thread(target=call, name=name, daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise TimeoutError(f"{name} did not return within {timeout:.0f}s")
    if failure:
        raise failure[0]
    return outcome[0]
