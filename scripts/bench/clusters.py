"""The dedicated clusters a benchmark starts for itself (kafka-local, never the session's
shared pair): started fresh, and one left over by an interrupted run of the same names stopped
and wiped first."""

from __future__ import annotations

from collections.abc import Sequence

from scripts import kafkalocal

# Two brokers starting on 2 busy cores: kafka-local's 90 s is not always enough.
START_TIMEOUT_S = 240.0
# A deleted topic's files go at once, not a minute later (Kafka's default): each run deletes
# the last run's copy on the target before it starts (run.py), and with the default that copy's
# files were removed, and their dirty pages written back, in the middle of the next run.
BROKER_SETTINGS = {"log.segment.delete.delay.ms": "0"}


def fresh(clusters: Sequence[tuple[str, int]]) -> list[str]:
    """Start `clusters` ((name, port) pairs) with empty data directories; their bootstraps."""
    names = [n for n, _ in clusters]
    leftovers = [n for n in names if n in kafkalocal.known_clusters()]
    if leftovers:
        kafkalocal.down(leftovers, keep=False)
    specs = [kafkalocal.ClusterSpec(n, port, dict(BROKER_SETTINGS)) for n, port in clusters]
    kafkalocal.up(specs, fresh=True, timeout=START_TIMEOUT_S)
    return [s.bootstrap for s in specs]
