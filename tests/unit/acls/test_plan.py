"""What ACL sync adds to the target (kmirror.acls.plan, pure): the topic mapping names every
target topic, the principal map renames principals, MM2's scope copies what MM2 copies, nothing
is ever removed, and read-only mirror topics deny WRITE to all but the mirror."""

from __future__ import annotations

import pytest

from kmirror.acls.plan import plan
from kmirror.config.acls import AclSyncConfig
from kmirror.config.model import ClusterConfig, MirrorConfig, RenamePolicy, TopicSelection
from kmirror.config.topicmap import TopicMapping, parse_map
from kmirror.kafka.acls import Binding

pytestmark = pytest.mark.unit

TOPICS = ["orders", "pay", "payroll", "other"]


def config(scope: str = "full", kind: str = "identity", topic_map: str = "",
           **acls: object) -> MirrorConfig:  # fmt: skip
    return MirrorConfig(
        source=ClusterConfig("A", "a:1"),
        target=ClusterConfig("B", "b:1"),
        group_id="g",
        topics=TopicSelection(include=("orders", "pay.*")),
        rename=RenamePolicy(kind=kind, source_alias="A",  # type: ignore[arg-type]
                            mapping=TopicMapping(parse_map(topic_map, "t"))),
        acls=AclSyncConfig(enabled=True, scope=scope, **acls),  # type: ignore[arg-type]
    )  # fmt: skip


def acl(resource: str, name: str, principal: str = "User:alice", operation: str = "READ",
        permission: str = "ALLOW", pattern: str = "LITERAL") -> Binding:  # fmt: skip
    return Binding(resource, name, pattern, principal, "*", operation, permission)


SOURCE = [
    acl("TOPIC", "orders"),
    acl("TOPIC", "orders", "User:bob", "WRITE"),
    acl("TOPIC", "orders", "User:carol", "ALL"),
    acl("TOPIC", "pay", "User:eve", "READ", "DENY"),
    acl("TOPIC", "pay", pattern="PREFIXED"),
    acl("TOPIC", "other"),
    acl("TOPIC", "*"),
    acl("GROUP", "g1"),
    acl("TRANSACTIONAL_ID", "tx", "User:bob", "WRITE"),
]


def test_full_scope_maps_topics_principals_and_keeps_groups_and_transactional_ids() -> None:
    c = config(topic_map="orders:shop.orders", principals=(("User:alice", "User:alice.b"),))
    todo = plan(c, SOURCE, [], TOPICS)
    assert set(todo.create) == {
        acl("TOPIC", "shop.orders", "User:alice.b"),
        acl("TOPIC", "shop.orders", "User:bob", "WRITE"),
        acl("TOPIC", "shop.orders", "User:carol", "ALL"),
        acl("TOPIC", "pay", "User:eve", "READ", "DENY"),
        # "pay" covers pay and payroll, which kept their names: still one PREFIXED ACL.
        acl("TOPIC", "pay", "User:alice.b", pattern="PREFIXED"),
        acl("GROUP", "g1", "User:alice.b"),
        acl("TRANSACTIONAL_ID", "tx", "User:bob", "WRITE"),
    }
    why = {s.binding.name: s.why for s in todo.skipped}
    assert why == {"other": "its topic is not mirrored", "*": why["*"]}
    assert "wildcard" in why["*"]
    assert todo.wanted == len(todo.create) == todo.missing


def test_mm2_scope_is_mm2s_literal_topic_acls_no_allow_write_all_as_read() -> None:
    todo = plan(config("mm2", kind="prefix"), SOURCE, [], TOPICS)
    assert set(todo.create) == {
        acl("TOPIC", "A.orders"),
        acl("TOPIC", "A.orders", "User:carol", "READ"),  # MM2: ALLOW ALL -> ALLOW READ
        acl("TOPIC", "A.pay", "User:eve", "READ", "DENY"),
    }
    reasons = " | ".join(s.why for s in todo.skipped)
    assert "never copies ALLOW WRITE" in reasons
    assert "LITERAL topic ACLs only" in reasons
    assert "topic ACLs only" in reasons


def test_prefixed_acl_follows_the_prefix_policy_or_splits_when_a_rule_moved_a_topic() -> None:
    prefixed = [acl("TOPIC", "pay", pattern="PREFIXED")]
    assert plan(config(kind="prefix"), prefixed, [], TOPICS).create == (
        acl("TOPIC", "A.pay", pattern="PREFIXED"),
    )
    moved = plan(config(topic_map="payroll:hr.payroll"), prefixed, [], TOPICS)
    assert set(moved.create) == {acl("TOPIC", "pay"), acl("TOPIC", "hr.payroll")}
    none = plan(config(), [acl("TOPIC", "zzz", pattern="PREFIXED")], [], TOPICS)
    assert none.create == () and "no mirrored topic" in none.skipped[0].why


def test_additive_and_idempotent_a_target_only_acl_is_never_touched() -> None:
    c = config()
    first = plan(c, SOURCE, [], TOPICS)
    target_only = acl("TOPIC", "orders", "User:zed", "DESCRIBE")
    after = [*first.create, target_only]
    again = plan(c, SOURCE, after, TOPICS)
    assert again.create == () and again.missing == 0
    assert again.wanted == first.wanted
    # Half there (a drift): only the missing half is created.
    half = plan(c, SOURCE, list(first.create[::2]), TOPICS)
    assert set(half.create) == set(first.create[1::2])


def test_read_only_mirror_topics_deny_write_to_all_but_the_mirror() -> None:
    c = config(deny_write=True, mirror_principal="User:mirror")
    source = [acl("TOPIC", "orders", "User:bob", "WRITE"), acl("TOPIC", "pay", "User:*", "ALL")]
    target = [acl("TOPIC", "orders", "User:mirror", "WRITE")]
    todo = plan(c, source, target, TOPICS, "User:mirror")
    denies = {b for b in todo.create if b.permission == "DENY"}
    assert denies == {acl("TOPIC", "orders", "User:bob", "WRITE", "DENY")}
    refused = [s for s in todo.skipped if "stays writable" in s.why]
    assert refused and "User:*" in refused[0].why
