"""A stream's stop is bounded even when both clusters are gone, and says that its final commit
was not made (issue 15). The supervisor kills streams after 30 s, but an orphaned stream (its
`kmirror run` killed with -9 outside a container) has nobody to do that: the stream itself must
end."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import psutil
import pytest

from tests.conftest import KafkaLocal, MakeTopic
from tests.faults.harness import mirror_args
from tests.kafkatools import Clusters, end_offsets, produce, unique, wait_until
from tests.mirrorproc import MirrorProcess

# The stream's own bound (Tuning.shutdown_timeout_s, 20 s) plus process start-up slack.
STREAM_STOP_BOUND_S = 45.0
# Time for the stream to fetch the records produced while the target is stopped.
FETCH_WAIT_S = 2.0


@pytest.mark.faults
def test_orphaned_stream_stops_when_both_clusters_are_gone(
    tmp_path: Path, clusters: Clusters, make_topic: MakeTopic, kafka_local: KafkaLocal
) -> None:
    topic = make_topic(clusters.source_bootstrap, unique("faults-gone"), partitions=2)
    produce(clusters.source_bootstrap, topic, [{"value": b"v"}] * 100)
    args = mirror_args(tmp_path, clusters, unique("g-faults-gone"), topic)
    with MirrorProcess(args, tmp_path / "mirror.log") as m:
        assert m.proc is not None

        def copied() -> bool:
            return sum(end_offsets(clusters.target_bootstrap, topic).values()) >= 100

        wait_until(copied, 120)
        streams = psutil.Process(m.proc.pid).children()
        assert streams, m.log
        # Uncommitted work for certain: records the stream fetches while the target is already
        # gone. (Produced before stopping the target, they were sometimes copied and committed
        # in the second the brokers took to stop, and the final commit had nothing to do.)
        kafka_local.stop("target")
        produce(clusters.source_bootstrap, topic, [{"value": b"w"}] * 100)
        time.sleep(FETCH_WAIT_S)
        kafka_local.stop("source")
        os.kill(m.proc.pid, signal.SIGKILL)  # the supervisor dies: its streams are orphans
        for s in streams:
            s.send_signal(signal.SIGTERM)
        _, alive = psutil.wait_procs(streams, timeout=STREAM_STOP_BOUND_S)
        for s in alive:
            s.kill()
        assert not alive, f"stream(s) still running {STREAM_STOP_BOUND_S}s after SIGTERM:\n{m.log}"
        # Orphans are not our children (no exit code to read): the stream's own log says it.
        assert "final commit" in m.log and "stopped cleanly" not in m.log, m.log
