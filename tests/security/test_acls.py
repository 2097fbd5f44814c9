"""ACL sync on a pair of clusters with KRaft's StandardAuthorizer and SCRAM users
(tests/aclclusters.py): after `kmirror run` the target holds exactly the source's ACLs of the
mirrored topics (renamed by the topic map), their groups and transactional IDs, with the
principal map applied; a target-only ACL survives; `kmirror check`'s dry-run diff is what the
sync then creates, and a second look finds nothing to add. The users themselves then do on the
target what they could on the source, and not more. A target without an authorizer, or a
mirror principal without ALTER there, is refused before anything changes.

One cluster pair for the whole file (session fixture), one short mirror run.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from scripts.kmirrorproc import mm1_args
from tests.aclclusters import MIRROR, AclCluster, AclClusters
from tests.kafkatools import Clusters, consume_all, create_topic, produce, wait_until
from tests.mirrorproc import MirrorProcess, run_cli
from tests.promtext import sample

pytestmark = pytest.mark.security

Acl = tuple[str, str, str, str, str, str]  # resource, name, pattern, principal, operation, perm


def acls_of(cluster: AclCluster, run: str) -> set[Acl]:
    """Every ACL of the cluster whose resource name contains `run` (this test's)."""
    anything: Any = None
    wanted = AclBindingFilter(ResourceType.ANY, anything, ResourcePatternType.ANY, anything,
                              anything, AclOperation.ANY, AclPermissionType.ANY)  # fmt: skip
    admin = AdminClient({"bootstrap.servers": cluster.plaintext})
    found = admin.describe_acls(wanted, request_timeout=30)
    return {
        (a.restype.name, a.name, a.resource_pattern_type.name, a.principal,
         a.operation.name, a.permission_type.name)
        for a in found.result()
        if run in a.name
    }  # fmt: skip


def mirror_argv(tmp_path: Path, pair: AclClusters, run: str, *extra: str) -> list[str]:
    return mm1_args(
        tmp_path, pair.source.sasl, pair.target.sasl, f"{run}-mirror", f"{run}-.*",
        consumer=pair.source.java(MIRROR), producer=pair.target.java(MIRROR),
        extra=["--topic-map", f"{run}-orders:shop.{run}.orders", *extra],
    )  # fmt: skip


FULL = ("--sync-topic-acls", "true", "--acl-scope", "full",
        "--acl-principal-map", "User:alice.a -> User:alice")  # fmt: skip


def test_target_gets_the_mapped_source_acls_and_users_can_do_the_same(
    tmp_path: Path, acl_clusters: AclClusters
) -> None:
    src, tgt = acl_clusters.source, acl_clusters.target
    run = f"acl{uuid.uuid4().hex[:8]}"
    orders, pay, other = f"{run}-orders", f"{run}-pay", f"other-{run}"
    for topic in (orders, pay, other):
        create_topic(src.plaintext, topic)
    produce(src.plaintext, orders, [{"value": b"o%d" % i} for i in range(10)])
    produce(src.plaintext, pay, [{"value": b"p%d" % i} for i in range(10)])
    source_acls = [
        ("TOPIC", orders, "LITERAL", "User:alice.a", "READ"),
        ("TOPIC", orders, "LITERAL", "User:alice.a", "DESCRIBE"),
        ("GROUP", f"{run}-g", "LITERAL", "User:alice.a", "READ"),
        ("TOPIC", pay, "LITERAL", "User:bob", "WRITE"),
        ("TOPIC", pay, "LITERAL", "User:bob", "DESCRIBE"),
        ("TRANSACTIONAL_ID", f"{run}-tx", "LITERAL", "User:bob", "WRITE"),
        ("TRANSACTIONAL_ID", f"{run}-tx", "LITERAL", "User:bob", "DESCRIBE"),
        ("TOPIC", f"{run}-pa", "PREFIXED", "User:carol", "READ"),
        ("TOPIC", other, "LITERAL", "User:bob", "READ"),  # not mirrored: not copied
    ]
    src.grant(*source_acls)
    target_only = ("TOPIC", f"shop.{run}.orders", "LITERAL", "User:carol", "DESCRIBE", "ALLOW")
    tgt.grant(target_only)
    expected = {
        ("TOPIC", f"shop.{run}.orders", "LITERAL", "User:alice", "READ", "ALLOW"),
        ("TOPIC", f"shop.{run}.orders", "LITERAL", "User:alice", "DESCRIBE", "ALLOW"),
        ("GROUP", f"{run}-g", "LITERAL", "User:alice", "READ", "ALLOW"),
        ("TOPIC", pay, "LITERAL", "User:bob", "WRITE", "ALLOW"),
        ("TOPIC", pay, "LITERAL", "User:bob", "DESCRIBE", "ALLOW"),
        ("TRANSACTIONAL_ID", f"{run}-tx", "LITERAL", "User:bob", "WRITE", "ALLOW"),
        ("TRANSACTIONAL_ID", f"{run}-tx", "LITERAL", "User:bob", "DESCRIBE", "ALLOW"),
        ("TOPIC", f"{run}-pa", "PREFIXED", "User:carol", "READ", "ALLOW"),
    }
    argv = mirror_argv(tmp_path, acl_clusters, run, *FULL)

    dry = run_cli(["check", *argv[1:]])
    assert dry.returncode == 0, dry.stderr
    diff = {line for line in dry.stdout.splitlines() if line.startswith("acl + ")}
    assert len(diff) == len(expected), dry.stdout
    assert f"acl + ALLOW User:alice READ topic shop.{run}.orders" in diff
    assert f"acl + ALLOW User:carol READ topic {run}-pa (prefixed)" in diff
    assert acls_of(tgt, run) == {target_only}, "check changed the target"

    with MirrorProcess(argv, tmp_path / "mirror.log") as m:
        m.wait_ready(120)
        for topic in (f"shop.{run}.orders", pay):
            wait_until(lambda t=topic: consume_count(tgt, t) == 10, 90, message=f"{topic} copied")
        assert m.stop() == 0, m.log
    assert acls_of(tgt, run) == expected | {target_only}

    again = run_cli(["check", *argv[1:]])
    assert again.returncode == 0, again.stderr
    assert "8 binding(s) wanted on the target, 0 to create" in again.stdout, again.stdout
    assert "acl + " not in again.stdout

    users_do_on_the_target_what_they_could_on_the_source(tgt, run)


def test_an_acl_added_on_the_source_reaches_the_target_at_the_next_sync(
    tmp_path: Path, acl_clusters: AclClusters
) -> None:
    """The periodic re-sync (MM2's sync.topic.acls.interval.seconds): an ACL granted on the
    source while the mirror runs is on the target one interval later, and counted."""
    src, tgt = acl_clusters.source, acl_clusters.target
    run = f"acl{uuid.uuid4().hex[:8]}"
    pay = f"{run}-pay"
    create_topic(src.plaintext, pay)
    src.grant(("TOPIC", pay, "LITERAL", "User:bob", "DESCRIBE"))
    argv = mirror_argv(tmp_path, acl_clusters, run, *FULL, "--sync-topic-acls-interval-s", "1")
    late = ("TOPIC", pay, "LITERAL", "User:bob", "WRITE", "ALLOW")
    with MirrorProcess(argv, tmp_path / "mirror.log") as m:
        m.wait_ready(120)
        wait_until(lambda: len(acls_of(tgt, run)) == 1, 30, message="the first sync")
        created = sample(m.get("/metrics")[1], "kmirror_acls_created_total") or 0.0
        src.grant(late[:5])
        wait_until(lambda: late in acls_of(tgt, run), 30, message="the new ACL on the target")
        after = sample(m.get("/metrics")[1], "kmirror_acls_created_total")
        assert after is not None and after >= created + 1, m.get("/metrics")[1]
        assert m.stop() == 0, m.log
    assert acls_of(tgt, run) == {late, ("TOPIC", pay, "LITERAL", "User:bob", "DESCRIBE", "ALLOW")}


def users_do_on_the_target_what_they_could_on_the_source(tgt: AclCluster, run: str) -> None:
    pay = f"{run}-pay"
    # alice reads the renamed copy in her group; bob writes transactionally to his topic.
    alice = Consumer(tgt.client("alice", **{"group.id": f"{run}-g",
                                           "auto.offset.reset": "earliest"}))  # fmt: skip
    try:
        alice.subscribe([f"shop.{run}.orders"])
        got: list[bytes] = []
        wait_until(lambda: got.extend(m.value() for m in alice.consume(10, 1) if not m.error())
                   or len(got) >= 10, 90, message="alice read the copy")  # fmt: skip
        alice.commit(asynchronous=False)
    finally:
        alice.close()
    bob = Producer(tgt.client("bob", **{"transactional.id": f"{run}-tx"}))
    bob.init_transactions(30)
    bob.begin_transaction()
    bob.produce(pay, b"from bob on the target")
    bob.commit_transaction(30)
    # ... and nothing more: alice cannot read bob's topic, bob cannot write alice's.
    with pytest.raises(KafkaException, match=r"TOPIC_AUTHORIZATION_FAILED|Not authorized|authoriz"):
        produce_as(tgt, "bob", f"shop.{run}.orders")
    nosy = Consumer(tgt.client("alice", **{"group.id": f"{run}-g"}))
    try:
        md = nosy.list_topics(pay, timeout=10)
        assert md.topics[pay].error is not None, "alice may see bob's topic on the target"
    finally:
        nosy.close()


def produce_as(cluster: AclCluster, user: str, topic: str) -> None:
    errors: list[Any] = []
    p = Producer(cluster.client(user, **{"message.timeout.ms": 10000}))
    p.produce(topic, b"x", on_delivery=lambda err, _msg: errors.append(err))
    p.flush(15)
    if errors and errors[0] is not None:
        raise KafkaException(errors[0])


def test_target_without_an_authorizer_is_refused_with_the_fix(
    tmp_path: Path, clusters: Clusters
) -> None:
    """The shared pair has no authorizer: `check` asked for ACL sync says so and exits 2."""
    argv = mm1_args(tmp_path, clusters.source_bootstrap, clusters.target_bootstrap, "g",
                    "none-such-topic-.*",
                    extra=["--sync-topic-acls", "true"])  # fmt: skip
    res = run_cli(["check", *argv[1:]])
    assert res.returncode == 2, res.stdout + res.stderr
    assert "has no authorizer" in res.stderr
    assert "authorizer.class.name" in res.stderr
    assert "sync.topic.acls.enabled=false" in res.stderr


def test_mirror_principal_without_alter_is_refused(
    tmp_path: Path, acl_clusters: AclClusters
) -> None:
    src, tgt = acl_clusters.source, acl_clusters.target
    run = f"acl{uuid.uuid4().hex[:8]}"
    src.grant(("TOPIC", f"{run}-a", "LITERAL", "User:bob", "READ"))
    argv = mm1_args(
        tmp_path, src.sasl, tgt.sasl, f"{run}-mirror", f"{run}-.*",
        consumer=src.java(MIRROR), producer=tgt.java("carol"), extra=list(FULL),
    )  # fmt: skip
    res = run_cli(["check", *argv[1:]])
    assert res.returncode == 3, res.stdout + res.stderr
    assert "needs ALTER on the cluster resource" in res.stderr
    assert acls_of(tgt, run) == set()


def test_read_only_mirror_topics_only_the_mirror_writes_there(
    tmp_path: Path, acl_clusters: AclClusters
) -> None:
    """--acl-deny-write: bob may write `pay` on the source (and, copied, on the target), but
    the DENY on the mirrored target topic wins; the mirror keeps copying."""
    src, tgt = acl_clusters.source, acl_clusters.target
    run = f"acl{uuid.uuid4().hex[:8]}"
    pay = f"{run}-pay"
    create_topic(src.plaintext, pay)
    produce(src.plaintext, pay, [{"value": b"p%d" % i} for i in range(5)])
    src.grant(("TOPIC", pay, "LITERAL", "User:bob", "WRITE"),
              ("TOPIC", pay, "LITERAL", "User:bob", "DESCRIBE"))  # fmt: skip
    argv = mirror_argv(tmp_path, acl_clusters, run, *FULL, "--acl-deny-write", "true")
    with MirrorProcess(argv, tmp_path / "mirror.log") as m:
        m.wait_ready(120)
        produce(src.plaintext, pay, [{"value": b"q%d" % i} for i in range(5)])
        wait_until(lambda: consume_count(tgt, pay) == 10, 60, message="the mirror copied all")
        assert m.stop() == 0, m.log
    assert ("TOPIC", pay, "LITERAL", "User:bob", "WRITE", "DENY") in acls_of(tgt, run)
    assert ("TOPIC", pay, "LITERAL", "User:bob", "WRITE", "ALLOW") in acls_of(tgt, run)
    produce_as(src, "bob", pay)  # still allowed on the source
    with pytest.raises(KafkaException, match=r"authoriz"):
        produce_as(tgt, "bob", pay)


def consume_count(cluster: AclCluster, topic: str) -> int:
    return len(consume_all(cluster.plaintext, topic, timeout=30))


def test_source_without_an_authorizer_or_describe_is_refused(
    tmp_path: Path, clusters: Clusters, acl_clusters: AclClusters
) -> None:
    """librdkafka lists no ACLs from a source without an authorizer, or one that refuses us
    DESCRIBE: kmirror asks first, so neither passes for "the source has no ACLs"."""
    src, tgt = acl_clusters.source, acl_clusters.target
    none_such = f"none-such-{uuid.uuid4().hex[:8]}-.*"
    plain = mm1_args(tmp_path, clusters.source_bootstrap, tgt.sasl, "g", none_such,
                     producer=tgt.java(MIRROR), extra=list(FULL))  # fmt: skip
    res = run_cli(["check", *plain[1:]])
    assert res.returncode == 2, res.stdout + res.stderr
    assert f"the source cluster at {clusters.source_bootstrap} has no authorizer" in res.stderr
    assert "authorizer.class.name" in res.stderr
    carol = mm1_args(tmp_path, src.sasl, tgt.sasl, "g", none_such,
                     consumer=src.java("carol"), producer=tgt.java(MIRROR),
                     extra=list(FULL))  # fmt: skip
    res = run_cli(["check", *carol[1:]])
    assert res.returncode == 3, res.stdout + res.stderr
    assert f"the source cluster at {src.sasl} refused us" in res.stderr
    assert "needs DESCRIBE on the cluster resource" in res.stderr
