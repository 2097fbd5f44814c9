"""Which plan --exactly-once runs on each engine, and the router rule under it (no broker)."""

from __future__ import annotations

import dataclasses

import pytest

from kmirror.config.model import ClusterConfig, DrConfig, MirrorConfig
from kmirror.errors import ConfigError
from kmirror.mirror.engine import Plan, plan_for
from kmirror.mirror.hybrid import MAX_PROBE_BACKOFF_S, Router

pytestmark = pytest.mark.unit


def eos(**changes: object) -> MirrorConfig:
    base = MirrorConfig(
        source=ClusterConfig("source", "127.0.0.1:1"),
        target=ClusterConfig("target", "127.0.0.1:2"),
        group_id="g",
        exactly_once=True,
    )
    return dataclasses.replace(base, **changes)


@pytest.mark.parametrize("engine", ["batch", "auto"])
def test_exactly_once_on_the_batch_engines_is_the_transactional_hybrid(engine: str) -> None:
    assert plan_for(eos(engine=engine)) == Plan("hybrid", True)


def test_exactly_once_on_the_record_engine_is_the_record_paths_transactional_copier() -> None:
    assert plan_for(eos(engine="record")) == Plan("record", True)


def test_auto_takes_the_record_path_for_what_batches_cannot_do_also_under_exactly_once() -> None:
    assert plan_for(eos(engine="auto", partitioning="hash")) == Plan("record", True)
    assert plan_for(eos(engine="auto", dr=DrConfig(provenance_header=True))) == Plan("record", True)


def test_batch_refuses_what_it_cannot_do_also_under_exactly_once() -> None:
    with pytest.raises(ConfigError, match="--engine batch cannot copy this mirror"):
        plan_for(eos(engine="batch", dr=DrConfig(provenance_header=True)))


def test_a_router_without_probing_keeps_record_path_partitions_there() -> None:
    router = Router(probe=False)
    router.add(("t", 0))
    router.to_record(("t", 0), now=0.0)
    assert router.due(now=MAX_PROBE_BACKOFF_S * 10) == []
    assert not router.on_batch(("t", 0))
