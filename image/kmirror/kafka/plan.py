"""What a mirror would copy: the source topics its selection matches, their target names and
the state of each target topic (`kmirror check`, `kmirror status`, the control API's /status).
Connects to both clusters with a bounded check (kmirror.kafka.connect) and writes nothing."""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import KafkaError

from kmirror.config.model import MirrorConfig
from kmirror.kafka import clients
from kmirror.kafka.connect import await_metadata


def _topics(config: MirrorConfig, side: clients.Side, timeout: float) -> dict[str, int]:
    errors: list[KafkaError] = []
    admin = clients.admin(config, side, {"error_cb": errors.append})
    cluster = config.source if side == "source" else config.target
    # A refused password or certificate is reported at once, an unreachable address after
    # `timeout` seconds (connect.py).
    md = await_metadata(
        admin,
        lambda: admin.poll(0),
        errors,
        time.monotonic() + timeout,
        side,
        cluster.bootstrap_servers,
    )
    return {n: len(t.partitions) for n, t in md.topics.items() if t.error is None}


def plan(config: MirrorConfig, timeout: float) -> list[dict[str, Any]]:
    """Per selected source topic: its target, partition counts and what `run` would do."""
    source = _topics(config, "source", timeout)
    target = _topics(config, "target", timeout)
    rows = []
    for topic in config.topics.select(set(source)):
        dst, how = config.rename.explain(topic)  # the one mapping, and what named it
        have = target.get(dst)
        if have is None:
            action = "create" if config.create_topics else "missing"
        elif have < source[topic] and config.keeps_partitions:
            action = "too-few-partitions"
        else:
            action = "ok"
        rows.append(
            {
                "source": topic,
                "target": dst,
                "named_by": how,
                "partitions": source[topic],
                "target_partitions": have,
                "action": action,
            }
        )
    return rows
