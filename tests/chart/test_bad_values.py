"""Bad values fail at `helm template` / `helm install` time, and the message says what to set.
values.schema.json catches types, enums, ranges and the cluster and security rules (generated from
the image's model: tests/chart/test_rules.py); the validateValues helper the rest."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.chart import chartlib
from tests.chart.chartlib import MINIMAL

pytestmark = pytest.mark.chart

T = chartlib.helm_template
SCHEMA = "values don't meet the specifications of the schema"
HELPER = "VALUES VALIDATION:"

KUDO = {
    "thisCluster": {"bootstrapServers": "this:9092"},
    "external": {"bootstrapServers": "ext:9092", "clusterType": "DESTINATION"},
}
SASL_SOURCE = {
    "bootstrapServers": "s:9096",
    "securityProtocol": "SASL_SSL",
    "sasl": {"mechanism": "PLAIN", "existingSecret": "creds"},
}

# (id, values, where the message comes from, substrings it must contain)
CASES: list[tuple[str, Any, str, list[str]]] = [
    # ------------------------------------------------------------------ schema
    (
        "negative-replicas",
        [MINIMAL, {"replicaCount": -1}],
        SCHEMA,
        ["/replicaCount", "minimum: got -1, want 0"],
    ),
    (
        "unknown-cluster-type",
        [KUDO, {"external": {"clusterType": "MIRROR"}}],
        SCHEMA,
        ["/external/clusterType", "'SOURCE', 'DESTINATION'"],
    ),
    (
        "misspelt-value",
        [MINIMAL, {"replicas": 2}],
        SCHEMA,
        ["additional properties 'replicas' not allowed"],
    ),
    (
        "misspelt-nested-value",
        [MINIMAL, {"source": {"bootstrapServer": "x:1"}}],
        SCHEMA,
        ["/source", "'bootstrapServer' not allowed"],
    ),
    ("zero-streams", [MINIMAL, {"numStreams": 0}], SCHEMA, ["/numStreams", "minimum"]),
    (
        "unknown-protocol",
        [MINIMAL, {"source": {"securityProtocol": "TLS"}}],
        SCHEMA,
        ["/source/securityProtocol", "'SASL_SSL'"],
    ),
    (
        "unknown-sasl-mechanism",
        [MINIMAL, {"target": {"sasl": {"mechanism": "GSSAPI"}}}],
        SCHEMA,
        ["/target/sasl/mechanism", "'SCRAM-SHA-512'"],
    ),
    ("bad-digest", [MINIMAL, {"image": {"digest": "latest"}}], SCHEMA, ["/image/digest", "sha256"]),
    ("numeric-tag", [MINIMAL, {"image": {"tag": 1.1}}], SCHEMA, ["/image/tag", "want string"]),
    ("unknown-log-level", [MINIMAL, {"logLevel": "TRACE"}], SCHEMA, ["/logLevel", "'DEBUG'"]),
    (
        "unknown-rename-policy",
        [MINIMAL, {"rename": {"policy": "mm2"}}],
        SCHEMA,
        ["/rename/policy", "'identity', 'prefix'"],
    ),
    (
        "bad-source-alias",
        [MINIMAL, {"rename": {"sourceAlias": "a b"}}],
        SCHEMA,
        ["/rename/sourceAlias"],
    ),
    (
        "malformed-topic-map",
        [MINIMAL, {"rename": {"map": "orders->shop.orders"}}],
        SCHEMA,
        ["/rename/map"],
    ),
    (
        "replication-factor-zero",
        [MINIMAL, {"replicationFactor": 0}],
        SCHEMA,
        ["/replicationFactor"],
    ),
    (
        "commit-interval-zero",
        [MINIMAL, {"offsetCommitIntervalMs": 0}],
        SCHEMA,
        ["/offsetCommitIntervalMs", "minimum"],
    ),
    (
        "abort-not-bool",
        [MINIMAL, {"abortOnSendFailure": "yes"}],
        SCHEMA,
        ["/abortOnSendFailure", "want boolean"],
    ),
    ("metrics-port-zero", [MINIMAL, {"metrics": {"port": 0}}], SCHEMA, ["/metrics/port"]),
    (
        "unknown-validation-mode",
        [MINIMAL, {"validation": {"mode": "full"}}],
        SCHEMA,
        ["/validation/mode", "'count', 'digest', 'sample'"],
    ),
    (
        "bad-hook-delete-policy",
        [MINIMAL, {"validation": {"hook": {"deletePolicy": "always"}}}],
        SCHEMA,
        ["/validation/hook/deletePolicy"],
    ),
    (
        "extra-env-without-name",
        [MINIMAL, {"extraEnv": [{"value": "x"}]}],
        SCHEMA,
        ["/extraEnv/0", "name"],
    ),
    (
        "pull-policy",
        [MINIMAL, {"image": {"pullPolicy": "always"}}],
        SCHEMA,
        ["/image/pullPolicy", "'IfNotPresent'"],
    ),
    # ------------------------------------------------------------------ helper
    (
        "no-clusters",
        {},
        HELPER,
        ["source.bootstrapServers", "target.bootstrapServers", "replicaCount: 0"],
    ),
    (
        "no-target",
        {"source": {"bootstrapServers": "s:9092"}},
        HELPER,
        ["No target cluster: set target.bootstrapServers"],
    ),
    (
        "kudo-without-cluster-type",
        {**KUDO, "external": {"bootstrapServers": "ext:9092"}},
        HELPER,
        ["external.clusterType", "SOURCE", "DESTINATION"],
    ),
    (
        "kudo-without-this-cluster",
        {"external": {"bootstrapServers": "ext:9092", "clusterType": "SOURCE"}},
        HELPER,
        ["thisCluster.bootstrapServers", "external.clusterType=SOURCE"],
    ),
    (
        "external-with-explicit-source",
        [KUDO, {"source": {"bootstrapServers": "s:9092"}}],
        HELPER,
        ["external / thisCluster combined with source / target", "one way only"],
    ),
    (
        "external-with-explicit-target-security",
        [KUDO, {"target": {"securityProtocol": "SSL"}}],
        HELPER,
        ["combined with source / target"],
    ),
    (
        "not-host-port",
        [MINIMAL, {"source": {"bootstrapServers": "kafka-0,kafka-1:9092"}}],
        SCHEMA,
        ["/source/bootstrapServers", "'kafka-0,kafka-1:9092' does not match"],
    ),
    (
        "sasl-without-mechanism",
        [MINIMAL, {"source": {"securityProtocol": "SASL_SSL"}}],
        SCHEMA,
        ["/source/sasl/mechanism", "'PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512', 'OAUTHBEARER'"],
    ),
    (
        "sasl-without-secret",
        [MINIMAL, {"source": {**SASL_SOURCE, "sasl": {"mechanism": "PLAIN"}}}],
        SCHEMA,
        ["/source/sasl/existingSecret", "minLength"],
    ),
    (
        "sasl-empty-keys",
        [MINIMAL, {"source": {**SASL_SOURCE, "sasl": {**SASL_SOURCE["sasl"], "passwordKey": ""}}}],
        SCHEMA,
        ["/source/sasl/passwordKey", "minLength"],
    ),
    (
        "oidc-without-endpoint-client-and-secret",
        [
            MINIMAL,
            {"target": {"securityProtocol": "SASL_SSL", "sasl": {"mechanism": "OAUTHBEARER"}}},
        ],
        SCHEMA,
        [
            "/auth/target/oauthbearer/tokenEndpointUrl",
            "/auth/target/oauthbearer/clientId",
            "/auth/target/oauthbearer/existingSecret",
        ],
    ),
    (
        "unsecured-oauthbearer-without-claims",
        [
            MINIMAL,
            {
                "source": {
                    "securityProtocol": "SASL_PLAINTEXT",
                    "sasl": {"mechanism": "OAUTHBEARER"},
                },
                "auth": {"source": {"oauthbearer": {"method": "unsecured"}}},
            },
        ],
        SCHEMA,
        ["/auth/source/oauthbearer/unsecuredConfig", "minLength"],
    ),
    (
        "unknown-oauthbearer-method",
        [MINIMAL, {"auth": {"source": {"oauthbearer": {"method": "jwt-bearer"}}}}],
        SCHEMA,
        ["/auth/source/oauthbearer/method"],
    ),
    (
        "sasl-settings-on-plaintext",
        [MINIMAL, {"target": {"sasl": {"existingSecret": "creds", "mechanism": "PLAIN"}}}],
        SCHEMA,
        ["/target/securityProtocol", "'SASL_PLAINTEXT', 'SASL_SSL'"],
    ),
    (
        "tls-on-sasl-plaintext",
        [
            MINIMAL,
            {
                "source": {
                    **SASL_SOURCE,
                    "securityProtocol": "SASL_PLAINTEXT",
                    "tls": {"caSecret": "ca"},
                }
            },
        ],
        SCHEMA,
        ["/source/securityProtocol", "must be one of 'SSL', 'SASL_SSL'"],
    ),
    (
        "key-password-without-client-cert",
        [MINIMAL, {"target": {"securityProtocol": "SSL", "tls": {"keyPasswordKey": "p"}}}],
        SCHEMA,
        ["/target/tls/clientCertSecret", "minLength"],
    ),
    (
        "kudo-security-names-the-kudo-block",
        [KUDO, {"external": {"securityProtocol": "SASL_SSL"}}],
        SCHEMA,
        ["/external/sasl/mechanism", "'PLAIN'"],
    ),
    (
        "same-cluster-both-sides",
        {"source": {"bootstrapServers": "k:9092"}, "target": {"bootstrapServers": "k:9092"}},
        HELPER,
        ["Source and target are the same cluster", "rename.policy: prefix"],
    ),
    (
        "password-in-extra-properties",
        [MINIMAL, {"extraConsumerProperties": {"ssl.key.password": "hunter2"}}],
        HELPER,
        ["extraConsumerProperties.ssl.key.password", "ConfigMap", "sasl.existingSecret"],
    ),
    (
        "jaas-in-extra-properties",
        [MINIMAL, {"extraProducerProperties": {"sasl.jaas.config": "x"}}],
        HELPER,
        ["extraProducerProperties.sasl.jaas.config"],
    ),
    (
        "bootstrap-in-extra-properties",
        [MINIMAL, {"extraConsumerProperties": {"bootstrap.servers": "x:1"}}],
        HELPER,
        ["extraConsumerProperties.bootstrap.servers"],
    ),
    (
        "group-in-extra-properties",
        [MINIMAL, {"extraConsumerProperties": {"group.id": "g"}}],
        HELPER,
        ["extraConsumerProperties.group.id", "consumerGroup"],
    ),
    (
        "extra-env-shadows-a-value",
        [MINIMAL, {"extraEnv": [{"name": "SOURCE_CLUSTER_BOOTSTRAP_SERVERS", "value": "x:1"}]}],
        HELPER,
        ["kmirror: extraEnv", "SOURCE_CLUSTER_BOOTSTRAP_SERVERS is set by the chart"],
    ),
    (
        "extra-env-shadows-a-secret",
        [
            MINIMAL,
            {
                "source": SASL_SOURCE,
                "extraEnv": [{"name": "SOURCE_CLUSTER_SASL_USERNAME", "value": "me"}],
            },
        ],
        HELPER,
        ["SOURCE_CLUSTER_SASL_USERNAME is set by the chart"],
    ),
    (
        "literal-credential-in-extra-env",
        [MINIMAL, {"extraEnv": [{"name": "AWS_SECRET_ACCESS_KEY", "value": "abc"}]}],
        HELPER,
        ["AWS_SECRET_ACCESS_KEY looks like a credential", "valueFrom.secretKeyRef"],
    ),
    (
        "validation-extra-env-shadows",
        [MINIMAL, {"validation": {"extraEnv": [{"name": "LOG_LEVEL", "value": "DEBUG"}]}}],
        HELPER,
        ["kmirror: validation.extraEnv", "LOG_LEVEL"],
    ),
    # Blank is the default (.*), as for the image; commas alone leave no pattern.
    ("empty-whitelist", [MINIMAL, {"whitelist": " , "}], SCHEMA, ["/whitelist", "does not match"]),
    (
        "two-node-affinities",
        [MINIMAL, {"nodeAffinity": {"x": 1}, "affinity": {"nodeAffinity": {"y": 1}}}],
        HELPER,
        ["nodeAffinity and affinity.nodeAffinity are both set"],
    ),
    (
        "pdb-both-budgets",
        [MINIMAL, {"pdb": {"minAvailable": 1, "maxUnavailable": 1}}],
        HELPER,
        ["Set only one of pdb.minAvailable and pdb.maxUnavailable"],
    ),
    (
        "pdb-no-budget",
        [MINIMAL, {"pdb": {"maxUnavailable": ""}}],
        HELPER,
        ["pdb.create is true: set pdb.maxUnavailable"],
    ),
    (
        "both-monitors",
        [MINIMAL, {"serviceMonitor": {"enabled": True}, "podMonitor": {"enabled": True}}],
        HELPER,
        ["Enable either the ServiceMonitor or the PodMonitor"],
    ),
    (
        "service-monitor-without-service",
        [MINIMAL, {"serviceMonitor": {"enabled": True}, "service": {"enabled": False}}],
        HELPER,
        ["set service.enabled: true, or use podMonitor"],
    ),
    (
        "hook-deadline-below-wait",
        [MINIMAL, {"validation": {"hook": {"waitTimeoutSeconds": 600}}}],
        HELPER,
        ["validation.hook.activeDeadlineSeconds", "above validation.hook.waitTimeoutSeconds (600)"],
    ),
    (
        "test-deadline-below-wait",
        [MINIMAL, {"validation": {"waitTimeoutSeconds": 900}}],
        HELPER,
        ["validation.test.activeDeadlineSeconds", "(900)"],
    ),
]


@pytest.mark.parametrize(("case", "values", "origin", "expected"), CASES, ids=[c[0] for c in CASES])
def test_bad_values_fail_with_a_message(
    helm_template: Callable[..., Any], case: str, values: Any, origin: str, expected: list[str]
) -> None:
    err = helm_template(values, expect_fail=True)
    flat = " ".join(err.split())  # messages wrap at ~100 columns
    assert origin in flat, err
    for text in expected:
        assert text in flat, f"{case}: {text!r} missing from\n{err}"


def test_every_problem_is_reported_at_once() -> None:
    err = T(
        [
            {"source": {"bootstrapServers": "s:9092"}, "rename": {"policy": "prefix"}},
            {"extraConsumerProperties": {"sasl.password": "x"}},
            {"pdb": {"maxUnavailable": ""}},
            {"serviceMonitor": {"enabled": True}, "podMonitor": {"enabled": True}},
        ],
        expect_fail=True,
    )
    assert err.count("kmirror: ") == 4, err  # no target, the property, the pdb, the monitors


def test_replica_count_zero_still_refuses_conflicts() -> None:
    # Disabled mirrors need no cluster, but contradictory settings stay errors.
    T({"replicaCount": 0})
    err = T([KUDO, {"replicaCount": 0, "source": {"bootstrapServers": "s:1"}}], expect_fail=True)
    assert "combined with source / target" in err
    err = T({"replicaCount": 0, "source": {"bootstrapServers": "nope"}}, expect_fail=True)
    assert "'nope' does not match" in err


def test_rename_prefix_allows_the_same_cluster() -> None:
    T(
        {
            "source": {"bootstrapServers": "k:9092"},
            "target": {"bootstrapServers": "k:9092"},
            "rename": {"policy": "prefix"},
        }
    )


@pytest.mark.parametrize(
    "values",
    [
        [MINIMAL, {"extraConsumerProperties": {"fetch.max.bytes": 1, "client.rack": "a"}}],
        [MINIMAL, {"extraEnv": [{"name": "TZ", "value": "UTC"}]}],
        [MINIMAL, {"validation": {"waitTimeoutSeconds": 900, "test": {"enabled": False}}}],
        [MINIMAL, {"source": {"bootstrapServers": "[::1]:9092"}}],
        [
            MINIMAL,
            {
                "extraEnv": [
                    {
                        "name": "API_TOKEN",
                        "valueFrom": {"secretKeyRef": {"name": "s", "key": "token"}},
                    }
                ]
            },
        ],
    ],
    ids=["harmless-properties", "harmless-env", "no-test-no-deadline", "ipv6", "secret-env"],
)
def test_near_misses_render(values: Any) -> None:
    assert T(values).deployment
