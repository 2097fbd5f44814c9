"""The largest batch each target topic takes (kmirror.mirror.batch.limits), without a broker:
DescribeConfigs requests go to an in-memory link whose answers the test gives."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from kmirror.mirror.batch.limits import TopicLimits, producer_bound
from tests.unit.mirror.batch.helpers import Link

pytestmark = pytest.mark.unit


def reply(link: Link, code: int, value: str | None = None) -> None:
    request, future = link.sent[-1]
    (resource,) = request.resources
    configs = [] if value is None else [SimpleNamespace(name="max.message.bytes", value=value)]
    result = SimpleNamespace(error_code=code, resource_name=resource.resource_name, configs=configs)
    future.success(SimpleNamespace(results=[result]))


def asked(link: Link) -> list[Any]:
    return [r.resources[0].resource_name for r, _ in link.sent]


def answered(
    code: int, value: str | None = None, producer_max: int = 1_000_000
) -> tuple[Link, TopicLimits]:
    """Limits that asked for topic "t" once and took this answer."""
    link = Link()
    limits = TopicLimits(link, producer_max)  # type: ignore[arg-type]
    limits.want("t")
    limits.poll()
    reply(link, code, value)
    limits.poll()
    return link, limits


def test_the_bound_is_the_topics_max_message_bytes_capped_by_the_producer() -> None:
    link = Link()
    limits = TopicLimits(link, 1_000_000)  # type: ignore[arg-type]
    limits.want("small")
    limits.want("large")
    limits.poll()
    assert asked(link) == ["large", "small"] and limits.bound("small") is None
    reply(link, 0, "20000")  # "small" was asked last
    link.sent[0][1].success(
        SimpleNamespace(
            results=[SimpleNamespace(error_code=0, configs=[
                SimpleNamespace(name="max.message.bytes", value="1048588")])]
        )
    )  # fmt: skip
    limits.poll()
    assert (limits.bound("small"), limits.bound("large")) == (20000, 1_000_000)
    limits.poll()
    assert len(link.sent) == 2  # known: not asked again


def test_a_topic_not_there_yet_is_asked_again_later() -> None:
    link, limits = answered(3)  # UNKNOWN_TOPIC_OR_PARTITION
    assert limits.bound("t") is None and len(link.sent) == 1  # not at once: after RETRY_S
    limits._retry_at["t"] = 0.0  # RETRY_S later
    limits.poll()
    assert asked(link) == ["t", "t"]


def test_without_the_right_to_read_configs_the_producers_bound_applies() -> None:
    _, limits = answered(29, producer_max=500_000)  # TOPIC_AUTHORIZATION_FAILED
    assert limits.bound("t") == 500_000


def test_a_refused_merged_batch_makes_it_ask_again() -> None:
    link, limits = answered(0, "100000")
    limits.forget("t")
    assert limits.bound("t") is None
    limits.poll()
    assert asked(link) == ["t", "t"]


def test_the_producer_bound_is_the_smaller_of_batch_size_and_message_max_bytes() -> None:
    assert producer_bound({}) == 1_000_000
    assert producer_bound({"batch.size": "16384"}) == 16384
    assert producer_bound({"message.max.bytes": "200000", "batch.size": "900000"}) == 200000
