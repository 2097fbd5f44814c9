"""Pure logic of the engine: topic selection, naming, metrics merging, logging, secrets."""

from __future__ import annotations

import json
import logging
import pickle

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from kmirror.config.model import ClusterConfig, MirrorConfig, RenamePolicy, TopicSelection
from kmirror.config.secret import Secret, mask_config
from kmirror.errors import ConfigError
from kmirror.logsetup import Redactor, from_log4j_pattern, python_level
from kmirror.metrics.aggregate import StreamsCollector, snapshot
from kmirror.metrics.worker import WorkerMetrics
from kmirror.mirror.subscription import StreamState

pytestmark = pytest.mark.unit


def config(**kw: object) -> MirrorConfig:
    return MirrorConfig(
        source=ClusterConfig("source", "127.0.0.1:1", common={"sasl.password": Secret("s3cr3t!")}),
        target=ClusterConfig("target", "127.0.0.1:2"),
        group_id="g",
        **kw,  # type: ignore[arg-type]
    )


def test_selection_full_match_and_default_excludes() -> None:
    sel = TopicSelection(include=("orders", "app\\..*"), exclude=("app\\.tmp.*",))
    topics = [
        "orders",
        "orders2",
        "app.a",
        "app.tmp1",
        "__consumer_offsets",
        "mm2-offsets.internal",
        "x.replica",
        "app.b-internal",
    ]
    assert sel.select(topics) == ["app.a", "orders"]


def test_invalid_regex_names_the_flag() -> None:
    with pytest.raises(ConfigError, match="invalid whitelist/include regex"):
        TopicSelection(include=("orders[",))


def test_rename_policies() -> None:
    assert RenamePolicy().target_topic("t") == "t"
    assert RenamePolicy("prefix", "east", "_").target_topic("t") == "east_t"


def test_forced_settings_win_and_hash_uses_java_partitioner() -> None:
    cfg = config(partitioning="hash")
    assert cfg.consumer_conf()["enable.auto.commit"] == "false"
    assert cfg.consumer_conf()["auto.offset.reset"] == "error"
    assert cfg.producer_conf()["acks"] == "all"
    assert cfg.producer_conf()["partitioner"] == "murmur2_random"
    assert cfg.consumer_conf()["sasl.password"] == "s3cr3t!"  # revealed only for the client


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"num_streams": 0}, "num.streams"),
        ({"offset_commit_interval_ms": 0}, "interval"),
        ({"replication_factor": 0}, "replication factor"),
        ({"metrics_port": 70000}, "port"),
    ],
)
def test_model_rejects_bad_values(kw: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config(**kw)


def test_bad_bootstrap_is_named() -> None:
    with pytest.raises(ConfigError, match="not host:port"):
        ClusterConfig("source", "localhost")


def test_config_pickles_for_stream_processes_and_keeps_secrets_sealed() -> None:
    cfg = config()
    again = pickle.loads(pickle.dumps(cfg))
    assert again == cfg
    assert "s3cr3t" not in repr(again)
    assert mask_config(again.source.common)["sasl.password"] == "***"


def test_excluded_topic_configs() -> None:
    cfg = config()
    assert cfg.excluded_config("min.insync.replicas")
    assert not cfg.excluded_config("retention.ms")


def test_lag_from_librdkafka_statistics() -> None:
    metrics = WorkerMetrics(CollectorRegistry())
    metrics.stats.update(
        json.dumps(
            {
                "topics": {
                    "t": {
                        "partitions": {
                            "0": {
                                "fetch_state": "active",
                                "hi_offset": 100,
                                "committed_offset": 40,
                                "app_offset": 90,
                                "lo_offset": 0,
                            },
                            "1": {
                                "fetch_state": "active",
                                "hi_offset": 10,
                                "committed_offset": -1001,
                                "app_offset": -1001,
                                "lo_offset": 3,
                            },
                            "-1": {"fetch_state": "none", "hi_offset": -1},
                            "2": {"fetch_state": "none", "hi_offset": 5, "committed_offset": 0},
                        }
                    }
                }
            }
        )
    )
    reg = metrics.registry
    assert (
        reg.get_sample_value("kmirror_mirror_lag_records", {"topic": "t", "partition": "0"}) == 60
    )
    assert reg.get_sample_value("kmirror_mirror_lag_records", {"topic": "t", "partition": "1"}) == 7
    assert (
        reg.get_sample_value("kmirror_mirror_lag_records", {"topic": "t", "partition": "2"}) is None
    )
    # Lag to the copy position: what was not handed to the target yet (no commit needed).
    copy = "kmirror_mirror_copy_lag_records"
    assert reg.get_sample_value(copy, {"topic": "t", "partition": "0"}) == 10
    assert reg.get_sample_value(copy, {"topic": "t", "partition": "1"}) == 7
    assert reg.get_sample_value(copy, {"topic": "t", "partition": "2"}) is None


def test_lag_of_partitions_the_batch_path_copies() -> None:
    """The consumer holds them paused (its statistics are stale): the engine's figures win."""
    metrics = WorkerMetrics(CollectorRegistry())
    metrics.stats.elsewhere = lambda: {("t", 0): (500, 480)}
    part = {"fetch_state": "active", "hi_offset": 100, "committed_offset": 40, "app_offset": -1001}
    metrics.stats.update(json.dumps({"topics": {"t": {"partitions": {"0": part}}}}))
    labels = {"topic": "t", "partition": "0"}
    reg = metrics.registry
    assert reg.get_sample_value("kmirror_mirror_lag_records", labels) == 460
    assert reg.get_sample_value("kmirror_mirror_copy_lag_records", labels) == 20


def test_streams_merge_into_one_exposition() -> None:
    merged = StreamsCollector()
    for sid in (0, 1):
        m = WorkerMetrics(CollectorRegistry())
        m.records.labels("t").inc(10 + sid)
        merged.update(sid, snapshot(m.registry), "a->b")
    reg = CollectorRegistry()
    reg.register(merged)
    text = generate_latest(reg).decode()
    assert text.count("# TYPE kmirror_mirror_records_total counter") == 1
    labels = {"topic": "t", "stream": "1", "flow": "a->b"}
    assert reg.get_sample_value("kmirror_mirror_records_total", labels) == 11


def test_stream_readiness() -> None:
    assert not StreamState().ready
    assert StreamState(connected=True, selected=0).ready  # nothing to mirror yet
    # Topics to mirror, not subscribed yet (their target partitions are not online): the
    # stream has work it is not doing, so a test or rollout must not treat it as started.
    assert not StreamState(connected=True, selected=2, assigned=0).ready
    assert StreamState(connected=True, selected=2, assigned=1).ready
    # An idle member of a working group (more streams than partitions) is ready.
    assert StreamState(connected=True, selected=2, assigned=0, joined=True).ready


def test_log4j_patterns_and_levels() -> None:
    assert (
        from_log4j_pattern("[%d] %p %m (%c)%n")
        == "[%(asctime)s] %(levelname)s %(message)s (%(name)s)"
    )
    assert python_level("WARN") == logging.WARNING
    assert python_level("TRACE") == logging.DEBUG


def test_redactor_masks_secret_values() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "pw is %s", ("hunter22",), None)
    Redactor(["hunter22"]).filter(record)
    assert record.getMessage() == "pw is ***"
