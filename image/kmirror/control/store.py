"""A flow's control state on the target: the compacted topic `kmirror-control.<group>.internal`
(MirrorConfig.control_topic), one record per key (kmirror.control.state says which).

Every replica's supervisor reads it every POLL_S and at start, before its streams copy
anything, so a pause made through any replica (or before a restart, or a kill -9) holds
everywhere. A change is written and acknowledged (acks=all) before the API answers, then read
back like any other record: the replica that wrote it takes no shortcut.
"""

from __future__ import annotations

import logging

from kmirror.config.model import MirrorConfig
from kmirror.control.state import ControlState, fold
from kmirror.errors import ClusterError
from kmirror.kafka.cluster import Cluster
from kmirror.kafka.topicreader import TopicReader
from kmirror.kafka.writer import AckedWriter

log = logging.getLogger(__name__)

POLL_S = 2.0  # how often every replica reads the topic for changes made elsewhere
READ_BUDGET_S = 15.0
WRITE_TIMEOUT_S = 15.0


class ControlStore:
    def __init__(self, config: MirrorConfig) -> None:
        self.topic = config.control_topic
        self._config = config
        self._reader = TopicReader(config, "target", self.topic, f"{config.group_id}.control")
        self._writer = AckedWriter(config)
        self.state = ControlState()

    def ensure(self) -> None:
        """Create the topic when missing (compacted, one partition, the mirror's replication
        factor or the broker's)."""
        rf = self._config.replication_factor
        Cluster(self._config, "target").ensure_compacted_topic(self.topic, rf)

    def refresh(self, budget_s: float = READ_BUDGET_S) -> ControlState:
        """Fold what was written since the last read into the state."""
        records = self._reader.read(budget_s)
        if records:
            self.state = fold(records, self.state)
        return self.state

    def write(self, key: bytes, value: bytes | None) -> ControlState:
        """Write one record, wait for the target's acknowledgement, read it back. Raises
        ClusterError when the target does not take it (nothing changed then)."""
        why = self._writer.write(self.topic, [(key, value)], WRITE_TIMEOUT_S)
        if why is not None:
            raise ClusterError(
                f"could not write to the control topic '{self.topic}' on the target within "
                f"{WRITE_TIMEOUT_S:.0f}s ({why}): nothing was changed; check the target cluster "
                "and the mirror's write access to the topic"
            )
        return self.refresh()

    def close(self) -> None:
        self._writer.close()
        self._reader.close()
