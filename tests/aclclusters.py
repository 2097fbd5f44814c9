"""A pair of local clusters with an authorizer, for ACL sync: KRaft's StandardAuthorizer, SCRAM
users on a SASL_PLAINTEXT listener, `allow.everyone.if.no.acl.found=false`.

Each is one single-node broker (scripts/kafka-local, only server.properties overrides) with
three listeners:

    PLAINTEXT://127.0.0.1:P      test setup (users, ACLs, topics) and kafka-local's probe
    CONTROLLER://127.0.0.1:P+1
    SASL://127.0.0.1:P+2         SASL_PLAINTEXT, SCRAM-SHA-512: every client under test

The PLAINTEXT listener's principal, User:ANONYMOUS, is a super user (it is also the
broker-to-controller principal), and so is User:mirror, the mirror's. Every other user can do
only what an ACL allows. The users and their passwords: USERS (source) and USERS with the
principal map applied (target: `alice.a` on the source is `alice` on the target).

Ports KMIRROR_ACL_PORTS (default 17192,27192), names KMIRROR_ACL_NAMES (default
migrate-acl-src,migrate-acl-tgt): one pair per session, started on first use and wiped at the
end. Fixed ports stay below Linux's ephemeral range (32768-60999): there a client's outgoing
connection may hold the port when the broker binds it ("Address already in use"; the
ACL pair's earlier 37192 failed so in a clean-clone run).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from tests.securecluster import create_user, warm_up

MIRROR = "mirror"
# SCRAM users of each cluster and their passwords (test-only, random enough to be unique).
SOURCE_USERS = {"mirror": "m-pw-3f9a", "alice.a": "a-pw-71c2", "bob": "b-pw-0d4e",
                "carol": "c-pw-9b16"}  # fmt: skip
TARGET_USERS = {"mirror": "m-pw-3f9a", "alice": "a-pw-71c2", "bob": "b-pw-0d4e",
                "carol": "c-pw-9b16"}  # fmt: skip


def overrides(port: int) -> dict[str, str]:
    return {
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{port + 1},"
        f"SASL://127.0.0.1:{port + 2}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port},SASL://127.0.0.1:{port + 2}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,"
        "SASL:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "listener.name.sasl.scram-sha-512.sasl.jaas.config": (
            "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        ),
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": f"User:ANONYMOUS;User:{MIRROR}",
        "allow.everyone.if.no.acl.found": "false",
        "offsets.topic.num.partitions": "1",
        "transaction.state.log.num.partitions": "1",
    }


@dataclass(frozen=True)
class AclCluster:
    name: str
    port: int
    users: dict[str, str]

    @property
    def plaintext(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def sasl(self) -> str:
        return f"127.0.0.1:{self.port + 2}"

    def client(self, user: str, **extra: Any) -> dict[str, Any]:
        """librdkafka settings of `user` on the SASL listener."""
        return {
            "bootstrap.servers": self.sasl,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": user,
            "sasl.password": self.users[user],
            **extra,
        }

    def java(self, user: str) -> dict[str, str]:
        """The same as Java client properties (what an MM1 file holds)."""
        return {
            "bootstrap.servers": self.sasl,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule "
            f'required username="{user}" password="{self.users[user]}";',
        }

    def admin(self) -> AdminClient:
        return AdminClient({"bootstrap.servers": self.plaintext})

    def grant(self, *acls: tuple[str, ...]) -> None:
        """(resource, name, pattern, principal, operation[, permission]) as super user."""
        bindings = [
            AclBinding(ResourceType[a[0]], a[1], ResourcePatternType[a[2]], a[3], "*",
                       AclOperation[a[4]], AclPermissionType[a[5] if len(a) > 5 else "ALLOW"])
            for a in acls
        ]  # fmt: skip
        admin = self.admin()  # kept alive until the answers are in
        for future in admin.create_acls(bindings, request_timeout=30).values():
            future.result()


@dataclass(frozen=True)
class AclClusters:
    source: AclCluster
    target: AclCluster


@pytest.fixture(scope="session")
def acl_clusters() -> Iterator[AclClusters]:
    from scripts import kafkalocal as kl

    ports = [int(p) for p in os.environ.get("KMIRROR_ACL_PORTS", "17192,27192").split(",")]
    names = os.environ.get("KMIRROR_ACL_NAMES", "migrate-acl-src,migrate-acl-tgt").split(",")
    kl.down(names, keep=False)  # a leftover of an interrupted run: its users and ACLs are stale
    specs = [kl.ClusterSpec(n, p, overrides(p)) for n, p in zip(names, ports, strict=True)]
    for attempt in (1, 2):
        try:
            kl.up(specs, fresh=True, timeout=240)
            break
        except kl.ClusterError as exc:
            kl.down(names, keep=False)
            # Seen once under load (load average 12): a broker that stopped soon after its
            # start, cause not caught (its ports are in the ephemeral range, which a client
            # connection may briefly hold). A second start is cheap; a second failure is real.
            if attempt == 2:
                pytest.fail(f"could not start the ACL clusters:\n{exc}", pytrace=False)
            print(f"[acl clusters] start failed, retrying once: {str(exc)[:300]}")
    pair = AclClusters(
        AclCluster(names[0], ports[0], SOURCE_USERS), AclCluster(names[1], ports[1], TARGET_USERS)
    )
    try:
        for cluster in (pair.source, pair.target):
            for user, password in cluster.users.items():
                create_user(cluster.plaintext, user, password)
            warm_up(cluster.plaintext)
        yield pair
    finally:
        with contextlib.suppress(Exception):
            kl.down(names, keep=False)
