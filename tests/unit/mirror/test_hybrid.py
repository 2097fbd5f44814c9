"""The engine choice and the hybrid copier's routing decisions, without a broker."""

from __future__ import annotations

import dataclasses

import pytest

from kmirror.config.model import ClusterConfig, DrConfig, MirrorConfig
from kmirror.errors import ConfigError
from kmirror.mirror.engine import Plan, plan_for
from kmirror.mirror.hybrid import PROBE_BACKOFF_S, Router

pytestmark = pytest.mark.unit

KEY = ("t", 0)


def config(**changes: object) -> MirrorConfig:
    base = MirrorConfig(
        source=ClusterConfig("source", "127.0.0.1:1"),
        target=ClusterConfig("target", "127.0.0.1:2"),
        group_id="g",
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_record_engine_is_the_record_copier() -> None:
    assert plan_for(config(engine="record")).path == "record"


def test_auto_is_the_default_engine() -> None:
    assert config().engine == "auto"
    assert plan_for(config()).path == "hybrid"
    # Exactly-once on the default engine: transactions on both paths.
    assert plan_for(config(exactly_once=True)) == Plan("hybrid", True)


def test_batch_engine_is_the_hybrid_copier() -> None:
    assert plan_for(config(engine="batch")).path == "hybrid"


def test_batch_with_hash_partitioning_is_refused_naming_the_fix() -> None:
    with pytest.raises(ConfigError, match="use --partitioning same, or --engine auto"):
        config(engine="batch", partitioning="hash")


def test_auto_takes_the_record_path_for_what_batches_cannot_do() -> None:
    assert plan_for(config(engine="auto", partitioning="hash")).path == "record"
    provenance = config(engine="auto", dr=DrConfig(provenance_header=True))
    assert plan_for(provenance).path == "record"
    kerberos = ClusterConfig(
        "source", "127.0.0.1:1", common={"security.protocol": "SASL_PLAINTEXT"}
    )
    assert plan_for(config(engine="auto", source=kerberos)).path == "record"


def test_retries_after_refused_sends_stay_on_the_batch_path() -> None:
    # abort.on.send.failure=false: the hybrid copier re-sends from the last commit itself.
    for engine in ("batch", "auto"):
        assert plan_for(config(engine=engine, abort_on_send_failure=False)).path == "hybrid"


def test_batch_refuses_security_settings_it_cannot_do() -> None:
    kerberos = ClusterConfig(
        "source", "127.0.0.1:1", common={"security.protocol": "SASL_PLAINTEXT"}
    )
    with pytest.raises(ConfigError, match=r"--engine batch cannot copy this mirror.*GSSAPI"):
        plan_for(config(engine="batch", source=kerberos))


def test_unknown_engine_is_refused() -> None:
    with pytest.raises(ConfigError, match="--engine must be record, batch or auto"):
        config(engine="fast")


def test_every_partition_starts_on_the_batch_path() -> None:
    router = Router()
    router.add(KEY)
    assert router.on_batch(KEY)
    assert router.batch_keys() == [KEY]


def test_a_record_path_partition_tries_batches_again_after_a_growing_backoff() -> None:
    router = Router()
    router.add(KEY)
    router.to_record(KEY, now=100.0)
    assert not router.on_batch(KEY)
    assert router.due(100.0 + PROBE_BACKOFF_S - 1) == []
    assert router.due(100.0 + PROBE_BACKOFF_S) == [KEY]
    router.to_batch(KEY)
    assert router.on_batch(KEY) and router.due(1e9) == []
    router.to_record(KEY, now=200.0)  # fell back again: waits twice as long
    assert router.due(200.0 + PROBE_BACKOFF_S) == []
    assert router.due(200.0 + 2 * PROBE_BACKOFF_S) == [KEY]


def test_batches_that_pay_off_reset_the_backoff() -> None:
    router = Router()
    router.add(KEY)
    router.to_record(KEY, now=0.0)
    router.to_record(KEY, now=0.0)  # backoff now twice the first
    router.to_batch(KEY)
    router.paid_off(KEY)
    router.to_record(KEY, now=0.0)
    assert router.due(PROBE_BACKOFF_S) == [KEY]


def test_revoked_partitions_are_forgotten() -> None:
    router = Router()
    router.add(KEY)
    router.remove(KEY)
    assert not router.on_batch(KEY) and router.batch_keys() == []
    router.paid_off(KEY)  # a late measurement of a forgotten partition changes nothing
    assert router.routes == {}
