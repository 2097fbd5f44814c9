"""The source -> target schema ID map, persisted in a compacted topic on the target (like the
progress book), so a restarted mirror translates with the IDs it used before without asking
either registry, and registers nothing again.

One record per source ID: key the source ID (decimal text), value `{"target": <id>}`. Pairs
are written, and acknowledged, before the first record that uses them is handed to the target.
Every stream reads the whole topic at start (it is small: one record per schema version).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping

from kmirror.config.model import MirrorConfig
from kmirror.errors import ClusterError
from kmirror.kafka.topicreader import TopicReader
from kmirror.kafka.writer import AckedWriter

log = logging.getLogger(__name__)

LOAD_TIMEOUT_S = 30.0
WRITE_TIMEOUT_S = 30.0


def encode(source_id: int, target_id: int) -> tuple[bytes, bytes]:
    return str(source_id).encode(), json.dumps({"target": target_id}).encode()


def decode(key: bytes | None, value: bytes | None) -> tuple[int, int] | None:
    """(source, target) of a record; None for anything else (a tombstone, a stranger)."""
    try:
        return int(key or b""), int(json.loads(value or b"{}")["target"])
    except (ValueError, KeyError, TypeError):
        return None


class IdStore:
    def __init__(
        self, config: MirrorConfig, topic: str, ensure_topic: Callable[[str], None]
    ) -> None:
        self.topic = topic
        self._config = config
        self._ensure_topic = ensure_topic
        self._writer = AckedWriter(config)

    def load(self) -> dict[int, int]:
        """Every pair in the topic (created when missing), read to its end."""
        self._ensure_topic(self.topic)
        reader = TopicReader(
            self._config, "target", self.topic, f"{self._config.group_id}.schema-ids"
        )
        pairs: dict[int, int] = {}
        try:
            for key, value in reader.read(LOAD_TIMEOUT_S) or []:
                pair = decode(key, value)
                if pair is not None:
                    pairs[pair[0]] = pair[1]
        finally:
            reader.close()
        log.info("schema ID map: %d pair(s) read from %s", len(pairs), self.topic)
        return pairs

    def save(self, pairs: Mapping[int, int]) -> None:
        """Write the pairs and wait until the target acknowledged every one."""
        if not pairs:
            return
        records = [encode(source_id, target_id) for source_id, target_id in pairs.items()]
        why = self._writer.write(self.topic, records, WRITE_TIMEOUT_S, partition=0)
        if why is not None:
            raise ClusterError(
                f"could not write the schema ID map to '{self.topic}' on the target ({why}); "
                "no record that needs these IDs was copied"
            )

    def close(self) -> None:
        self._writer.close()
