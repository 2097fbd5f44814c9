"""How large a batch each target topic takes: its `max.message.bytes` (the topic's own value or
the broker's default), asked once per topic with DescribeConfigs, capped by the producer's
`batch.size` and `message.max.bytes` (what one request may carry).

A source batch is copied whatever its size (the target refuses it with a clear error when it
is too large, as before), but merged batches must stay under the bound, or re-batching would
turn source batches the target accepts into one it refuses: a source topic created with a
small `max.message.bytes` has a target twin with the same setting. Until a topic's answer
is in, its batches are sent one by one, as they came.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from kafka.future import Future
from kafka.protocol.admin.configs import DescribeConfigsRequest

from kmirror.kafka.wire import Link

log = logging.getLogger(__name__)

TOPIC = 2  # DescribeConfigs resource type
DESCRIBE_VERSION = 1
KEY = "max.message.bytes"
DEFAULT_PRODUCER_BOUND = 1_000_000  # librdkafka's batch.size and message.max.bytes
RETRY_S = 1.0  # a topic that is not there yet (or a lost answer) is asked again after this
AUTHORIZATION = {29: "TOPIC_AUTHORIZATION_FAILED", 31: "CLUSTER_AUTHORIZATION_FAILED"}


def producer_bound(producer_conf: Mapping[str, str]) -> int:
    """The largest batch the producer settings allow (librdkafka's keys; Java's batch.size and
    max.request.size arrive translated to them)."""
    keys = ("batch.size", "message.max.bytes")
    return min(int(producer_conf.get(k, DEFAULT_PRODUCER_BOUND)) for k in keys)


class TopicLimits:
    """The bound per target topic; driven by the copier's loop (``poll``), no thread."""

    def __init__(self, link: Link, producer_max: int) -> None:
        self._link = link
        self._producer_max = producer_max
        self._bounds: dict[str, int] = {}
        self._wanted: set[str] = set()
        self._asking: dict[str, Future] = {}
        self._retry_at: dict[str, float] = {}

    def want(self, topic: str) -> None:
        if topic not in self._bounds:
            self._wanted.add(topic)

    def bound(self, topic: str) -> int | None:
        """The largest batch to build for this topic, None while unknown (send as they came)."""
        return self._bounds.get(topic)

    def forget(self, topic: str) -> None:
        """The target refused a merged batch as too large: its limit changed, ask again."""
        self._bounds.pop(topic, None)
        self._wanted.add(topic)

    def poll(self) -> None:
        """Take the answers that came, ask for the topics still unknown (one request each:
        a missing topic fails alone)."""
        for topic, future in list(self._asking.items()):
            if future.is_done:
                del self._asking[topic]
                self._answer(topic, future)
        now = time.monotonic()
        waiting = {
            t for t in self._wanted - self._asking.keys() if self._retry_at.get(t, 0.0) <= now
        }
        if not waiting:
            return
        node = self._link.any_node()
        if node is None:
            return
        for topic in sorted(waiting):
            self._asking[topic] = self._link.send(node, _request(topic))

    def _answer(self, topic: str, future: Future) -> None:
        self._retry_at[topic] = time.monotonic() + RETRY_S
        if future.failed():
            return  # asked again after RETRY_S
        (result,) = future.value.results
        code = int(result.error_code)
        if code in AUTHORIZATION:
            # Not allowed to read topic configs: the producer's bound, which the broker's
            # default max.message.bytes (1048588) is above. Only a topic set lower needs it.
            log.warning(
                "target topic %s: cannot read its max.message.bytes (%s: grant DESCRIBE_CONFIGS "
                "on the topic); merged batches are bounded by the producer's %d bytes",
                topic, AUTHORIZATION[code], self._producer_max,
            )  # fmt: skip
            self._settle(topic, self._producer_max)
            return
        if code != 0:
            return  # e.g. the topic is not there yet: asked again after RETRY_S
        values = {c.name: c.value for c in result.configs}
        limit = int(values.get(KEY) or self._producer_max)
        self._settle(topic, min(limit, self._producer_max))

    def _settle(self, topic: str, bound: int) -> None:
        self._bounds[topic] = bound
        self._wanted.discard(topic)
        self._retry_at.pop(topic, None)


def _request(topic: str) -> Any:
    return DescribeConfigsRequest(
        resources=[
            DescribeConfigsRequest.DescribeConfigsResource(
                resource_type=TOPIC, resource_name=topic, configuration_keys=[KEY]
            )
        ],
        include_synonyms=False,
        version=DESCRIBE_VERSION,
    )
