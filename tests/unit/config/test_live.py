"""What a reload may change on a running mirror (kmirror.config.live): the live/not-live diff of
two configurations and the refusal message an operator reads."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from kmirror.config.live import compare, compare_flows
from kmirror.config.model import ClusterConfig, DrConfig, MirrorConfig, TopicSelection
from kmirror.config.secret import Secret
from kmirror.config.throttle import parse_throttle
from kmirror.config.topicmap import TopicMapping

pytestmark = pytest.mark.unit


def config(**kw: Any) -> MirrorConfig:
    return MirrorConfig(
        source=kw.pop("source", ClusterConfig("source", "127.0.0.1:1")),
        target=ClusterConfig("target", "127.0.0.1:2"),
        group_id=kw.pop("group_id", "g"),
        **kw,
    )


def test_the_same_configuration_changes_nothing() -> None:
    reload = compare(config(), config())
    assert reload.applies and reload.changed == () and reload.refused == ()


def test_patterns_throttles_dr_and_log_level_change_live() -> None:
    old = config(topics=TopicSelection(include=("a",)))
    new = config(
        topics=TopicSelection(include=("a", "b"), exclude=("b-old",)),
        throttle=parse_throttle("backlog.bytes=1000", "--throttle"),
        dr=DrConfig(emit_checkpoints=True, checkpoints_interval_s=5),
        log_level="DEBUG",
        notes=("a warning of the new parse",),  # warnings never block a reload
    )
    reload = compare(old, new)
    assert reload.applies
    assert set(reload.changed) == {"topics", "throttle", "dr", "log_level"}


def test_each_setting_that_needs_a_restart_is_named_and_nothing_applies() -> None:
    old = config(source=ClusterConfig("source", "127.0.0.1:1", consumer={"fetch.min.bytes": "1"}))
    new = config(
        source=ClusterConfig("source", "127.0.0.1:9", consumer={"fetch.min.bytes": "2"}),
        group_id="other",
        num_streams=3,
        engine="record",
        exactly_once=True,
        topics=TopicSelection(include=("b",)),  # live, but the reload is refused as a whole
    )
    reload = compare(old, new)
    assert not reload.applies
    assert set(reload.refused) == {
        "source.bootstrap_servers",
        "source.consumer.fetch.min.bytes",
        "group_id",
        "num_streams",
        "engine",
        "exactly_once",
    }
    message = reload.refusal()
    assert message.startswith("reload refused: ")
    for name in reload.refused:
        assert name in message
    assert "restart kmirror to apply them" in message
    assert "running configuration stays" in message


def test_a_refusal_names_a_changed_credential_but_never_shows_it() -> None:
    def cluster(password: str) -> ClusterConfig:
        return ClusterConfig("source", "127.0.0.1:1", common={"sasl.password": Secret(password)})

    reload = compare(config(source=cluster("old-s3cret")), config(source=cluster("new-s3cret")))
    assert reload.refused == ("source.common.sasl.password",)
    assert "s3cret" not in reload.refusal()


def test_the_provenance_header_is_decided_when_a_stream_starts() -> None:
    reload = compare(config(), config(dr=DrConfig(provenance_header=True)))
    assert reload.refused == ("dr.provenance_header",)


def test_a_mapping_for_topics_not_mirrored_yet_applies() -> None:
    mapping = TopicMapping(explicit=(("new-topic", "renamed"),))
    old = config()
    new = config(rename=dataclasses.replace(old.rename, mapping=mapping))
    reload = compare(old, new, mirrored=["orders"])
    assert reload.applies and reload.changed == ("rename.mapping",)


def test_a_mapping_that_renames_a_mirrored_topic_is_refused() -> None:
    mapping = TopicMapping(explicit=(("orders", "orders.v2"),))
    old = config()
    new = config(rename=dataclasses.replace(old.rename, mapping=mapping))
    reload = compare(old, new, mirrored=["orders", "payments"])
    assert not reload.applies
    assert "rename.mapping" in reload.refused
    assert any("'orders' ('orders' -> 'orders.v2')" in r for r in reload.refused)
    assert not any("payments" in r for r in reload.refused)


def test_a_new_rename_policy_is_refused() -> None:
    old = config()
    new = config(rename=dataclasses.replace(old.rename, kind="prefix"))
    assert compare(old, new).refused == ("rename.kind",)


def test_flows_are_compared_by_name_and_a_new_or_gone_flow_is_refused() -> None:
    ab = config()
    ac = config(source=ClusterConfig("other", "127.0.0.1:3"))
    out = compare_flows([ab], [config(log_level="DEBUG"), ac])
    assert out[ab.flow].applies and out[ab.flow].changed == ("log_level",)
    assert not out[ac.flow].applies
    assert "new in the configuration" in out[ac.flow].refusal()
    gone = compare_flows([ab, ac], [ab])
    assert "no longer in the configuration" in gone[ac.flow].refusal()
