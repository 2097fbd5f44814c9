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
#
# A new consumer group's first rebalance waits Kafka's default 3 s for more members, as on a
# production broker (kafka-local sets 0 for its tests): with 0, a mirror's second stream, which
# subscribed 15 ms after the first, missed the group's first generation, the first stream took
# every partition and a rebalance 5 s later split them - inside the 10 s copy window of every
# two-stream drain (session 22's run A). MirrorMaker 2's Connect group waits the same 3 s.
BROKER_SETTINGS = {"log.segment.delete.delay.ms": "0", "group.initial.rebalance.delay.ms": "3000"}


def fresh(clusters: Sequence[tuple[str, int]]) -> list[str]:
    """Start `clusters` ((name, port) pairs) with empty data directories; their bootstraps."""
    names = [n for n, _ in clusters]
    leftovers = [n for n in names if n in kafkalocal.known_clusters()]
    if leftovers:
        kafkalocal.down(leftovers, keep=False)
    specs = [kafkalocal.ClusterSpec(n, port, dict(BROKER_SETTINGS)) for n, port in clusters]
    kafkalocal.up(specs, fresh=True, timeout=START_TIMEOUT_S)
    return [s.bootstrap for s in specs]
