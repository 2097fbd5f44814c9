"""Disaster-recovery settings in the three dialects, and MM2's topic rules (no loops)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kmirror.config.model import (
    ClusterConfig,
    DrConfig,
    MirrorConfig,
    RenamePolicy,
    TopicSelection,
)
from kmirror.errors import ConfigError
from tests.unit.config.conftest import load

pytestmark = pytest.mark.unit

Write = Callable[[str, str], str]
MM2 = "clusters=A, B\nA.bootstrap.servers=a:1\nB.bootstrap.servers=b:1\nA->B.enabled=true\n"
KUDO = ["--this-bootstrap-servers", "a:1", "--external-bootstrap-servers", "b:1",
        "--external-cluster-type", "SOURCE"]  # fmt: skip


def mm1(write: Write) -> list[str]:
    c = write("c.properties", "bootstrap.servers=s:1\ngroup.id=g\n")
    p = write("p.properties", "bootstrap.servers=t:1\n")
    return ["--consumer.config", c, "--producer.config", p, "--whitelist", "orders"]


def test_mm2_defaults_are_mm2s(write: Write) -> None:
    dr = load(["--mm2.config", write("m.properties", MM2)]).dr
    assert (dr.emit_checkpoints, dr.emit_heartbeats, dr.sync_group_offsets) == (True, True, False)
    assert (dr.checkpoints_interval_s, dr.heartbeats_interval_s) == (60.0, 1.0)
    assert dr.sync_group_offsets_interval_s == 60.0
    assert dr.group_matches("billing") and not dr.group_matches("console-consumer-42")
    assert not dr.group_matches("connect-x") and not dr.group_matches("__x")


def test_mm2_keys_flow_specific_win(write: Write) -> None:
    path = write(
        "m.properties",
        MM2 + "emit.checkpoints.interval.seconds=5\nA->B.emit.checkpoints.interval.seconds=2\n"
        "A->B.sync.group.offsets.enabled=true\nsync.group.offsets.interval.seconds=3\n"
        "emit.heartbeats.enabled=false\ngroups=app-.*, billing\ngroups.exclude=app-test\n",
    )
    c = load(["--mm2.config", path])
    assert c.dr.checkpoints_interval_s == 2.0
    assert (c.dr.sync_group_offsets, c.dr.sync_group_offsets_interval_s) == (True, 3.0)
    assert not c.dr.emit_heartbeats
    assert c.dr.group_matches("app-1") and c.dr.group_matches("billing")
    assert not c.dr.group_matches("app-test") and not c.dr.group_matches("other")
    assert not any("emit." in n or "groups" in n for n in c.notes)


def test_mm1_and_kudo_default_off_flags_and_env_switch_on(write: Write) -> None:
    for argv in (mm1(write), KUDO):
        c = load(argv)
        assert not c.dr.enabled
        assert c.target_topic("heartbeats") == "heartbeats"  # default mirror unchanged
        on = load([*argv, "--emit-checkpoints", "true", "--groups", "app-.*"])
        assert on.dr.emit_checkpoints and not on.dr.emit_heartbeats
        assert on.dr.group_matches("app-1") and not on.dr.group_matches("b")
        env = load(argv, {"KMIRROR_SYNC_GROUP_OFFSETS": "true",
                          "KMIRROR_SYNC_GROUP_OFFSETS_INTERVAL_SECONDS": "7"})  # fmt: skip
        assert env.dr.sync_group_offsets and env.dr.sync_group_offsets_interval_s == 7.0


def test_bad_values_name_the_setting(write: Write) -> None:
    with pytest.raises(ConfigError, match=r"emit\.checkpoints\.interval\.seconds"):
        load(["--mm2.config", write("m.properties", MM2 + "emit.checkpoints.interval.seconds=0\n")])
    with pytest.raises(ConfigError, match="--emit-heartbeats"):
        load([*KUDO, "--emit-heartbeats", "maybe"])
    with pytest.raises(ConfigError, match="groups"):
        DrConfig(groups=("app[",))


def config(kind: str, dialect: str = "mm1", include: str = ".*") -> MirrorConfig:
    return MirrorConfig(
        ClusterConfig("A", "a:1"),
        ClusterConfig("B", "b:1"),
        "g",
        topics=TopicSelection(include=(include,)),
        rename=RenamePolicy(kind, "A", ".", "B"),  # type: ignore[arg-type]
        dialect=dialect,
    )


def test_prefix_policy_never_mirrors_a_topic_back_where_it_came_from() -> None:
    c = config("prefix")
    topics = {"orders", "B.orders", "C.B.orders", "C.orders", "B"}
    assert c.topics.select(topics) == ["B", "C.orders", "orders"]
    assert c.target_topic("C.orders") == "A.C.orders"


def test_mm2_heartbeats_always_cross_prefixed_and_never_loop() -> None:
    for kind in ("prefix", "identity"):
        c = config(kind, "mm2", include="orders")
        picked = c.topics.select({"orders", "heartbeats", "C.heartbeats", "B.heartbeats", "x"})
        assert picked == ["C.heartbeats", "heartbeats", "orders"]
        assert c.target_topic("heartbeats") == "A.heartbeats"
    ident = config("identity", "mm2")
    assert ident.target_topic("orders") == "orders"
    assert ident.topics.select({"B.orders"}) == ["B.orders"]  # names carry no origin here


def test_target_alias_flag_for_mm1(write: Write) -> None:
    c = load([*mm1(write), "--rename-policy", "prefix", "--source-alias", "A",
              "--target-alias", "B"])  # fmt: skip
    assert c.topics.select({"orders", "B.orders"}) == ["orders"]
