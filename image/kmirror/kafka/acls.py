"""ACLs of one cluster through the admin client (kmirror.kafka.clients): list them, create
them, and ask before any change whether creating them can work at all.

`Binding` is kmirror's own frozen, printable form of an ACL binding (confluent-kafka's
AclBinding with plain strings), so the plan (kmirror.acls.plan) is pure and testable without a
broker. Nothing here deletes an ACL: `probe` sends a DeleteAcls request whose filter names a
topic and a principal that cannot exist (kmirror-probe-<random>), which matches nothing and so
deletes nothing; the broker answers it only when an authorizer is configured and only to a
principal allowed to ALTER the cluster, which is exactly what creating ACLs needs. (A
DescribeAcls request cannot tell: librdkafka returns an empty list from a broker without an
authorizer, and from one that refuses us DESCRIBE.) On the source, where the mirror needs only
DESCRIBE, `probe_source` sends the same request for its first answer alone (no authorizer, or
one that refuses us ALTER) and asks DescribeCluster for the operations we may do there.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from kmirror.config.model import MirrorConfig
from kmirror.errors import ClusterError, ConfigError
from kmirror.kafka import clients
from kmirror.kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

TIMEOUT_S = 30.0
RESOURCES = ("TOPIC", "GROUP", "TRANSACTIONAL_ID")


@dataclass(frozen=True, order=True)
class Binding:
    """One ACL: resource (TOPIC, GROUP, TRANSACTIONAL_ID), its name and pattern (LITERAL,
    PREFIXED), and the entry (principal, host, operation, ALLOW or DENY)."""

    resource: str
    name: str
    pattern: str
    principal: str
    host: str
    operation: str
    permission: str

    def __str__(self) -> str:
        return (
            f"{self.permission} {self.principal} {self.operation} {self.resource.lower()} "
            f"{self.name}{' (prefixed)' if self.pattern == 'PREFIXED' else ''}"
            + (f" from {self.host}" if self.host != "*" else "")
        )

    @classmethod
    def of(cls, acl: AclBinding) -> Binding:
        # confluent-kafka stores the enums (its hints also allow the names and numbers).
        values = (acl.restype, acl.resource_pattern_type, acl.operation, acl.permission_type)
        kind, pattern, op, perm = (getattr(v, "name", str(v)) for v in values)
        return cls(kind, acl.name, pattern, acl.principal, acl.host, op, perm)

    def acl(self) -> AclBinding:
        return AclBinding(
            ResourceType[self.resource],
            self.name,
            ResourcePatternType[self.pattern],
            self.principal,
            self.host,
            AclOperation[self.operation],
            AclPermissionType[self.permission],
        )


class Acls:
    """The ACLs of one side of a mirror; the admin client is made on first use."""

    def __init__(self, config: MirrorConfig, side: clients.Side) -> None:
        self._config = config
        self.side = side
        cluster = config.source if side == "source" else config.target
        self.bootstrap = cluster.bootstrap_servers
        self._admin: AdminClient | None = None

    def _client(self) -> AdminClient:
        if self._admin is None:
            self._admin = clients.admin(self._config, self.side)
        return self._admin

    def bindings(self) -> list[Binding]:
        """Every ACL of the resource kinds kmirror copies (an empty list without an
        authorizer: see the module doc)."""
        out: list[Binding] = []
        for resource in RESOURCES:
            # None: any name, principal, host (librdkafka's filter; the hints say str).
            anything: Any = None
            wanted = AclBindingFilter(
                ResourceType[resource], anything, ResourcePatternType.ANY, anything, anything,
                AclOperation.ANY, AclPermissionType.ANY,
            )  # fmt: skip
            try:
                found = self._client().describe_acls(wanted, request_timeout=TIMEOUT_S).result()
            except KafkaException as exc:
                raise self._refused("list the ACLs", exc) from exc
            out += [Binding.of(a) for a in found]
        return sorted(out)

    def probe(self) -> None:
        """ConfigError when the cluster has no authorizer, ClusterError when we may not ALTER
        the cluster (create ACLs); changes nothing (module doc)."""
        try:
            self._delete_nothing()
        except KafkaException as exc:
            raise self._refused("check that ACLs can be created", exc) from exc

    def probe_source(self) -> None:
        """ConfigError when the cluster has no authorizer (its ACLs would read as none),
        ClusterError when we may not DESCRIBE the cluster (list ACLs); changes nothing."""
        try:
            self._delete_nothing()
        except KafkaException as exc:
            if _code(exc) != KafkaError.CLUSTER_AUTHORIZATION_FAILED:  # that one: an authorizer
                raise self._refused("check that ACLs can be read", exc) from exc
        try:
            cluster = (
                self._client()
                .describe_cluster(include_authorized_operations=True, request_timeout=TIMEOUT_S)
                .result()
            )
        except KafkaException as exc:
            raise self._refused("check that ACLs can be read", exc) from exc
        # None: no operation at all (librdkafka's answer for an empty set, seen on Kafka 4).
        if AclOperation.DESCRIBE not in (cluster.authorized_operations or ()):
            raise self._denied("list the ACLs", "DESCRIBE is not among our operations there")

    def _delete_nothing(self) -> None:
        name = f"kmirror-probe-{uuid.uuid4().hex}"
        any_host: Any = None
        nothing = AclBindingFilter(ResourceType.TOPIC, name, ResourcePatternType.LITERAL,
                                   f"User:{name}", any_host, AclOperation.ANY,
                                   AclPermissionType.ANY)  # fmt: skip
        for future in self._client().delete_acls([nothing], request_timeout=TIMEOUT_S).values():
            future.result()

    def create(self, bindings: list[Binding]) -> None:
        """Create the bindings (one request). Raises naming the first that failed."""
        if not bindings:
            return
        futures = self._client().create_acls([b.acl() for b in bindings],
                                              request_timeout=TIMEOUT_S)  # fmt: skip
        failed: list[tuple[Binding, KafkaException]] = []
        for acl, future in futures.items():
            try:
                future.result()
            except KafkaException as exc:
                failed.append((Binding.of(acl), exc))
        if failed:
            binding, first = failed[0]
            raise self._refused(f"create {len(failed)} ACL(s), e.g. {binding}", first) from first

    def _refused(self, action: str, exc: KafkaException) -> ClusterError | ConfigError:
        err = exc.args[0] if exc.args else None
        code = _code(exc)
        text = err.str() if isinstance(err, KafkaError) else str(exc)
        where = f"the {self.side} cluster at {self.bootstrap}"
        if code == KafkaError.SECURITY_DISABLED:
            return ConfigError(
                f"ACL sync: {where} has no authorizer ({text}): ACLs cannot be kept there. Set "
                "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer "
                "on its brokers (KRaft), or turn ACL sync off (sync.topic.acls.enabled=false, "
                "--sync-topic-acls false)"
            )
        if code == KafkaError.CLUSTER_AUTHORIZATION_FAILED:
            return self._denied(action, text)
        return ClusterError(f"ACL sync: could not {action} on {where} ({text})")

    def _denied(self, action: str, text: str) -> ClusterError:
        need = "ALTER" if self.side == "target" else "DESCRIBE"
        return ClusterError(
            f"ACL sync: the {self.side} cluster at {self.bootstrap} refused us ({text}) when "
            f"asked to {action}: the mirror's principal needs {need} on the cluster resource "
            f"there, e.g. `kafka-acls --add --allow-principal User:<mirror> --operation "
            f"{need.title()} --cluster`"
        )


def _code(exc: KafkaException) -> Any:
    err = exc.args[0] if exc.args else None
    return err.code() if isinstance(err, KafkaError) else None
