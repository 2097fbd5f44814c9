"""What the supervisor and its stream processes tell each other besides metrics.

Supervisor -> stream, on a queue per stream: `Orders`, the whole desired state each time (the
flow's control state, this stream's share of the throttles, a reloaded configuration), so a
stream that missed one is right again with the next, and the newest one wins.

Stream -> supervisor, with every metrics snapshot on the shared inbox
(kmirror.metrics.aggregate): `Report`, the stream's live positions (its progress book) and the
orders version it has applied.
"""

from __future__ import annotations

import queue
from dataclasses import dataclass, field
from typing import Any

from kmirror.config.model import MirrorConfig
from kmirror.config.throttle import ThrottleSettings
from kmirror.control.state import ControlState
from kmirror.partitions import SourcePartition


@dataclass(frozen=True)
class Orders:
    version: int
    state: ControlState = field(default_factory=ControlState)
    # This stream's share of the flow's throttles (kmirror.control.throttle.share).
    throttle: ThrottleSettings = field(default_factory=ThrottleSettings)
    # A configuration reloaded while running (kmirror.app.reload); None: unchanged.
    config: MirrorConfig | None = None


@dataclass(frozen=True)
class Report:
    # Per owned source partition: (acknowledged, committed) source offsets.
    positions: dict[SourcePartition, tuple[int, int]] = field(default_factory=dict)
    applied: int = 0  # the last Orders.version the stream acts on
    # Partitions held at their limit (paused, or drained to their end).
    held: tuple[SourcePartition, ...] = ()
    # Source topics with partitions in each class now (backlog, tail): who shares the throttles.
    backlog: tuple[str, ...] = ()
    tail: tuple[str, ...] = ()


def latest(orders: Any) -> Orders | None:
    """The newest Orders waiting on a stream's queue, None when there are none."""
    found = None
    while True:
        try:
            found = orders.get_nowait()
        except queue.Empty:
            return found
