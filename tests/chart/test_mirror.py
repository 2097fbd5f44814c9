"""The mirror Deployment and its ConfigMap, value by value."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.chart import chartlib
from tests.chart.chartlib import MINIMAL, SecretRef, container, pod_metadata, pod_spec

pytestmark = pytest.mark.chart

T = chartlib.helm_template


def _with(**overrides: Any) -> list[dict[str, Any]]:
    """MINIMAL plus overrides (helm merges them like -f a -f b)."""
    return [MINIMAL, overrides]


def _env(values: Any) -> dict[str, Any]:
    docs = T(values)
    return chartlib.resolve_env(container(docs.deployment, "mirror"), docs)


# ----------------------------------------------------------------------------- defaults


def test_minimal_values_render_the_documented_defaults() -> None:
    docs = T(MINIMAL)
    assert docs.kinds() == [
        "ConfigMap",
        "Deployment",
        "Job",
        "Pod",
        "PodDisruptionBudget",
        "Service",
        "ServiceAccount",
        "ServiceAccount",
    ]
    dep = docs.deployment
    assert dep["metadata"]["name"] == chartlib.FULLNAME
    assert dep["spec"]["replicas"] == 1
    assert dep["spec"]["strategy"] == {"type": "RollingUpdate"}
    spec = pod_spec(dep)
    assert spec["serviceAccountName"] == chartlib.FULLNAME
    assert spec["automountServiceAccountToken"] is False
    assert spec["terminationGracePeriodSeconds"] == 60
    c = container(dep, "mirror")
    assert c["image"] == "ghcr.io/kmirror/mirror:0.1.0"
    assert c["imagePullPolicy"] == "IfNotPresent"
    # The image's ENTRYPOINT (`kmirror entrypoint`) runs as is.
    assert "command" not in c and "args" not in c
    assert c["ports"] == [{"name": "metrics", "containerPort": 9404, "protocol": "TCP"}]
    assert c["resources"] == {
        "requests": {"cpu": "250m", "memory": "512Mi"},
        "limits": {"cpu": "1", "memory": "1Gi"},
    }
    assert c["envFrom"] == [{"configMapRef": {"name": chartlib.FULLNAME}}]
    assert "env" not in c
    assert docs.configmap == {
        "SOURCE_CLUSTER_BOOTSTRAP_SERVERS": "src-kafka:9092",
        "SOURCE_CLUSTER_SECURITY_PROTOCOL": "PLAINTEXT",
        "SOURCE_CLUSTER_CONSUMER_GROUP": chartlib.FULLNAME,
        "SINK_CLUSTER_BOOTSTRAP_SERVERS": "tgt-kafka:9092",
        "SINK_CLUSTER_SECURITY_PROTOCOL": "PLAINTEXT",
        "WHITELISTED_TOPICS": ".*",
        "NUM_STREAMS": "1",
        "LOG_LEVEL": "INFO",
        "MIRROR_MAKER_OFFSET_COMMIT_INTERVAL": "60000",
        "MIRROR_MAKER_ABORT_ON_SEND_FAILURE": "true",
        "EXACTLY_ONCE": "false",
        "KMIRROR_RENAME_POLICY": "identity",
        "KMIRROR_SOURCE_ALIAS": "source",
        "KMIRROR_TARGET_ALIAS": "target",
        "KMIRROR_TOPIC_MAPPING_PREFIX": "false",
        # Disaster recovery: all off, as the default MM1/KUDO mirror.
        "KMIRROR_EMIT_CHECKPOINTS": "false",
        "KMIRROR_EMIT_CHECKPOINTS_INTERVAL_SECONDS": "60",
        "KMIRROR_EMIT_HEARTBEATS": "false",
        "KMIRROR_EMIT_HEARTBEATS_INTERVAL_SECONDS": "1",
        "KMIRROR_SYNC_GROUP_OFFSETS": "false",
        "KMIRROR_SYNC_GROUP_OFFSETS_INTERVAL_SECONDS": "60",
        "KMIRROR_GROUPS": ".*",
        "KMIRROR_GROUPS_EXCLUDE": "console-consumer-.*, connect-.*, __.*",
        "KMIRROR_PROVENANCE_HEADER": "false",
        # ACL sync: off, as the default MM1/KUDO mirror.
        "KMIRROR_SYNC_TOPIC_ACLS": "false",
        "KMIRROR_SYNC_TOPIC_ACLS_INTERVAL_SECONDS": "600",
        "KMIRROR_ACL_SCOPE": "mm2",
        "KMIRROR_ACL_DENY_WRITE": "false",
        "KMIRROR_PARTITIONING": "same",
        "KMIRROR_ENGINE": "auto",
        "KMIRROR_REPLICATION_FACTOR": "-1",
        "KMIRROR_SYNC_TOPIC_CONFIGS_INTERVAL_S": "600",
        "KMIRROR_METRICS_PORT": "9404",
        "KMIRROR_LOG_FORMAT": "text",
        "KMIRROR_STRICT": "false",
        "KMIRROR_CONFIG_DIR": "/tmp/kmirror",
    }


def test_probes_hit_healthz_and_readyz_on_the_metrics_port() -> None:
    c = container(T(MINIMAL).deployment)
    assert c["livenessProbe"] == {
        "httpGet": {"path": "/healthz", "port": "metrics"},
        "initialDelaySeconds": 10,
        "periodSeconds": 10,
        "timeoutSeconds": 5,
        "failureThreshold": 6,
        "successThreshold": 1,
    }
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    assert c["readinessProbe"]["failureThreshold"] == 3
    c = container(
        T(_with(livenessProbe={"enabled": False}, readinessProbe={"periodSeconds": 30})).deployment
    )
    assert "livenessProbe" not in c
    assert c["readinessProbe"]["periodSeconds"] == 30
    assert "enabled" not in c["readinessProbe"]


def test_metrics_port_sets_container_port_env_and_probe_target() -> None:
    docs = T(_with(metrics={"port": 9500}, service={"port": 80}))
    c = container(docs.deployment)
    assert c["ports"][0] == {"name": "metrics", "containerPort": 9500, "protocol": "TCP"}
    assert docs.configmap["KMIRROR_METRICS_PORT"] == "9500"
    svc = docs.one("Service")
    assert svc["spec"]["ports"] == [
        {"name": "metrics", "port": 80, "targetPort": "metrics", "protocol": "TCP"}
    ]


# ------------------------------------------------------------------- replicas and streams


@pytest.mark.parametrize("replicas", [0, 1, 3])
def test_replica_count(replicas: int) -> None:
    docs = T(_with(replicaCount=replicas))
    assert docs.deployment["spec"]["replicas"] == replicas
    assert docs.has("PodDisruptionBudget") == (replicas > 0)


def test_replica_count_zero_needs_no_cluster() -> None:
    docs = T({"replicaCount": 0})
    assert docs.deployment["spec"]["replicas"] == 0
    assert "SOURCE_CLUSTER_BOOTSTRAP_SERVERS" not in docs.configmap
    assert not docs.has("Job") and not docs.has("Pod")


def test_num_streams() -> None:
    assert T(_with(numStreams=4)).configmap["NUM_STREAMS"] == "4"


def test_exactly_once_reaches_the_entrypoint() -> None:
    from kmirror.entrypoint.render import build_plan, plan_config

    env = T(_with(exactlyOnce=True)).configmap
    assert env["EXACTLY_ONCE"] == "true"
    assert plan_config(build_plan(env)).exactly_once is True


# -------------------------------------------------------------------------------- image


@pytest.mark.parametrize(
    ("image", "global_", "expected"),
    [
        ({"tag": "1.2.3"}, {}, "ghcr.io/kmirror/mirror:1.2.3"),
        (
            {"registry": "123456789012.dkr.ecr.eu-west-1.amazonaws.com", "repository": "team/km"},
            {},
            "123456789012.dkr.ecr.eu-west-1.amazonaws.com/team/km:0.1.0",
        ),
        ({"registry": ""}, {}, "kmirror/mirror:0.1.0"),
        (
            {"tag": "1.2.3", "digest": "sha256:" + "a" * 64},
            {},
            "ghcr.io/kmirror/mirror@sha256:" + "a" * 64,
        ),
        (
            {"registry": "docker.io"},
            {"imageRegistry": "mirror.internal:5000/"},
            "mirror.internal:5000/kmirror/mirror:0.1.0",
        ),
    ],
)
def test_mirror_image_reference(
    image: dict[str, Any], global_: dict[str, Any], expected: str
) -> None:
    docs = T(_with(image=image, **{"global": global_}))
    assert container(docs.deployment)["image"] == expected


def test_pull_policy_and_pull_secrets_reach_every_pod() -> None:
    docs = T(
        _with(
            image={"pullPolicy": "Always"},
            imagePullSecrets=["a", {"name": "b"}],
            validation={"hook": {"enabled": True}},
        )
    )
    assert container(docs.deployment)["imagePullPolicy"] == "Always"
    for doc, spec in docs.pods():
        assert spec["imagePullSecrets"] == [{"name": "a"}, {"name": "b"}], doc["kind"]


def test_command_and_args_override() -> None:
    c = container(T(_with(command=["kmirror"], args=["run", "--help"])).deployment)
    assert c["command"] == ["kmirror"]
    assert c["args"] == ["run", "--help"]


# ----------------------------------------------------------------------------- clusters


def test_explicit_source_and_target() -> None:
    env = _env(_with(source={"bootstrapServers": "a:1,b:2"}, target={"bootstrapServers": "c:3"}))
    assert env["SOURCE_CLUSTER_BOOTSTRAP_SERVERS"] == "a:1,b:2"
    assert env["SINK_CLUSTER_BOOTSTRAP_SERVERS"] == "c:3"


@pytest.mark.parametrize(
    ("cluster_type", "source", "target"),
    [
        ("DESTINATION", "this-kafka:9092", "other-kafka:9092"),
        ("SOURCE", "other-kafka:9092", "this-kafka:9092"),
    ],
)
def test_kudo_cluster_type_picks_the_direction(cluster_type: str, source: str, target: str) -> None:
    env = _env(
        {
            "thisCluster": {"bootstrapServers": "this-kafka:9092"},
            "external": {"bootstrapServers": "other-kafka:9092", "clusterType": cluster_type},
        }
    )
    assert env["SOURCE_CLUSTER_BOOTSTRAP_SERVERS"] == source
    assert env["SINK_CLUSTER_BOOTSTRAP_SERVERS"] == target
    # The chart resolves the KUDO direction itself; the image sees one unambiguous pair.
    assert not any(
        k.startswith("MIRROR_MAKER_EXTERNAL") or k.startswith("MIRROR_MAKER_THIS") for k in env
    )


def test_kudo_security_follows_its_cluster() -> None:
    external = {
        "bootstrapServers": "msk:9096",
        "clusterType": "SOURCE",
        "securityProtocol": "SASL_SSL",
        "sasl": {"mechanism": "SCRAM-SHA-512", "existingSecret": "ext"},
    }
    docs = T({"thisCluster": {"bootstrapServers": "this:9092"}, "external": external})
    env = chartlib.resolve_env(container(docs.deployment), docs)
    assert env["SOURCE_CLUSTER_SECURITY_PROTOCOL"] == "SASL_SSL"
    assert env["SOURCE_CLUSTER_SASL_USERNAME"] == SecretRef("ext", "username")
    assert env["SINK_CLUSTER_SECURITY_PROTOCOL"] == "PLAINTEXT"
    external["clusterType"] = "DESTINATION"
    env = _env({"thisCluster": {"bootstrapServers": "this:9092"}, "external": external})
    assert env["SINK_CLUSTER_SECURITY_PROTOCOL"] == "SASL_SSL"
    assert env["SINK_CLUSTER_SASL_USERNAME"] == SecretRef("ext", "username")
    assert "SOURCE_CLUSTER_SASL_USERNAME" not in env


def test_sasl_ssl_with_existing_secret_and_ca() -> None:
    source = {
        "bootstrapServers": "b-1:9096",
        "securityProtocol": "SASL_SSL",
        "sasl": {
            "mechanism": "SCRAM-SHA-512",
            "existingSecret": "creds",
            "usernameKey": "user",
            "passwordKey": "pass",
        },
        "tls": {"caSecret": "ca-secret", "caKey": "root.pem"},
    }
    docs = T(_with(source=source))
    c = container(docs.deployment)
    env = chartlib.resolve_env(c, docs)
    files = chartlib.mounted_secret_files(docs.deployment, c)
    assert env["SOURCE_CLUSTER_SECURITY_PROTOCOL"] == "SASL_SSL"
    assert env["SOURCE_CLUSTER_SASL_MECHANISM"] == "SCRAM-SHA-512"
    assert env["SOURCE_CLUSTER_SASL_USERNAME"] == SecretRef("creds", "user")
    assert files[env["SOURCE_CLUSTER_SASL_PASSWORD_FILE"]] == SecretRef("creds", "pass")
    assert files[env["SOURCE_CLUSTER_SSL_CA_LOCATION"]] == SecretRef("ca-secret", "root.pem")
    assert env["SOURCE_CLUSTER_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM"] == "https"
    assert "SOURCE_CLUSTER_SSL_CERTIFICATE_LOCATION" not in env
    # The target stays PLAINTEXT with nothing mounted.
    assert env["SINK_CLUSTER_SECURITY_PROTOCOL"] == "PLAINTEXT"
    assert not any(
        k.startswith("SINK_CLUSTER_S") and k != "SINK_CLUSTER_SECURITY_PROTOCOL" for k in env
    )
    assert set(files) == {
        "/etc/kmirror/secrets/source/sasl/password",
        "/etc/kmirror/secrets/source/tls-ca/ca.crt",
    }


def test_sasl_plaintext_mounts_no_tls() -> None:
    target = {
        "bootstrapServers": "t:9092",
        "securityProtocol": "SASL_PLAINTEXT",
        "sasl": {"mechanism": "PLAIN", "existingSecret": "t-creds"},
    }
    env = _env(_with(target=target))
    assert env["SINK_CLUSTER_SASL_MECHANISM"] == "PLAIN"
    assert env["SINK_CLUSTER_SASL_PASSWORD_FILE"] == "/etc/kmirror/secrets/target/sasl/password"
    assert "SINK_CLUSTER_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM" not in env


def test_mutual_tls_with_key_password() -> None:
    target = {
        "bootstrapServers": "t:9093",
        "securityProtocol": "SSL",
        "tls": {
            "caSecret": "client-tls",
            "clientCertSecret": "client-tls",
            "keyPasswordKey": "key.pass",
            "endpointIdentificationAlgorithm": "none",
        },
    }
    docs = T(_with(target=target))
    c = container(docs.deployment)
    env = chartlib.resolve_env(c, docs)
    files = chartlib.mounted_secret_files(docs.deployment, c)
    assert files[env["SINK_CLUSTER_SSL_CA_LOCATION"]] == SecretRef("client-tls", "ca.crt")
    assert files[env["SINK_CLUSTER_SSL_CERTIFICATE_LOCATION"]] == SecretRef("client-tls", "tls.crt")
    assert files[env["SINK_CLUSTER_SSL_KEY_LOCATION"]] == SecretRef("client-tls", "tls.key")
    assert files[env["SINK_CLUSTER_SSL_KEY_PASSWORD_FILE"]] == SecretRef("client-tls", "key.pass")
    assert env["SINK_CLUSTER_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM"] == "none"
    assert "SINK_CLUSTER_SASL_USERNAME" not in env


def test_ssl_without_ca_uses_system_cas() -> None:
    env = _env(_with(source={"bootstrapServers": "s:9094", "securityProtocol": "SSL"}))
    assert env["SOURCE_CLUSTER_SECURITY_PROTOCOL"] == "SSL"
    assert "SOURCE_CLUSTER_SSL_CA_LOCATION" not in env
    assert pod_spec(
        T(_with(source={"bootstrapServers": "s:9094", "securityProtocol": "SSL"})).deployment
    )["volumes"] == [{"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}}]


# ---------------------------------------------------------------------------- mirroring


def test_mirroring_settings_reach_the_environment() -> None:
    env = _env(
        _with(
            consumerGroup="dr",
            whitelist="orders,payments",
            blacklist="orders-tmp",
            offsetCommitIntervalMs=5000,
            abortOnSendFailure=False,
            rename={"policy": "prefix", "sourceAlias": "eu"},
            partitioning="hash",
            replicationFactor=3,
            logLevel="DEBUG",
            logFormat="json",
            strict=True,
        )
    )
    assert env["SOURCE_CLUSTER_CONSUMER_GROUP"] == "dr"
    assert env["WHITELISTED_TOPICS"] == "orders,payments"
    assert env["BLACKLISTED_TOPICS"] == "orders-tmp"
    assert env["MIRROR_MAKER_OFFSET_COMMIT_INTERVAL"] == "5000"
    assert env["MIRROR_MAKER_ABORT_ON_SEND_FAILURE"] == "false"
    assert env["KMIRROR_RENAME_POLICY"] == "prefix"
    assert env["KMIRROR_SOURCE_ALIAS"] == "eu"
    assert env["KMIRROR_PARTITIONING"] == "hash"
    assert env["KMIRROR_REPLICATION_FACTOR"] == "3"
    assert env["LOG_LEVEL"] == "DEBUG"
    assert env["KMIRROR_LOG_FORMAT"] == "json"
    assert env["KMIRROR_STRICT"] == "true"


def test_engine_reaches_the_environment() -> None:
    assert _env(_with(engine="batch"))["KMIRROR_ENGINE"] == "batch"


def test_disaster_recovery_values_reach_the_environment_and_the_config() -> None:
    from kmirror.config.dialects.dr import dr_from_flags
    from kmirror.config.model import DrConfig

    env = _env(
        _with(
            rename={"policy": "prefix", "sourceAlias": "east", "targetAlias": "west"},
            disasterRecovery={
                "emitCheckpoints": True,
                "checkpointsIntervalSeconds": 5,
                "emitHeartbeats": True,
                "syncGroupOffsets": True,
                "syncGroupOffsetsIntervalSeconds": 2.5,
                "groups": "app-.*",
                "provenanceHeader": True,
            },
        )
    )
    assert env["KMIRROR_TARGET_ALIAS"] == "west"
    dr = dr_from_flags({}, {k: str(v) for k, v in env.items()}, DrConfig())
    assert (dr.emit_checkpoints, dr.emit_heartbeats, dr.sync_group_offsets) == (True, True, True)
    assert (dr.checkpoints_interval_s, dr.sync_group_offsets_interval_s) == (5.0, 2.5)
    assert dr.group_matches("app-1") and not dr.group_matches("other")
    assert not dr.group_matches("console-consumer-1")
    assert dr.provenance_header


def test_acl_sync_values_reach_the_environment_and_the_config() -> None:
    from kmirror.config.acls import AclSyncConfig
    from kmirror.config.dialects.acls import acls_from_flags

    assert "KMIRROR_ACL_PRINCIPAL_MAP" not in _env(_with())
    env = _env(
        _with(
            acls={
                "sync": True,
                "intervalSeconds": 30,
                "scope": "full",
                "principalMap": "User:alice@A -> User:alice",
                "denyWrite": True,
                "mirrorPrincipal": "User:kmirror",
            },
        )
    )
    a = acls_from_flags({}, {k: str(v) for k, v in env.items()}, AclSyncConfig())
    assert (a.enabled, a.interval_s, a.scope, a.deny_write) == (True, 30.0, "full", True)
    assert a.target_principal("User:alice@A") == "User:alice"
    assert (a.mirror_principal, a.explicit) == ("User:kmirror", True)


def test_large_commit_interval_is_not_rendered_in_float_notation() -> None:
    assert (
        _env(_with(offsetCommitIntervalMs=86400000))["MIRROR_MAKER_OFFSET_COMMIT_INTERVAL"]
        == "86400000"
    )


def test_extra_client_properties_become_properties_lines() -> None:
    env = _env(
        _with(
            extraConsumerProperties={"fetch.max.bytes": 52428800, "client.rack": "use1-az1"},
            extraProducerProperties={"compression.type": "zstd", "linger.ms": "50"},
        )
    )
    assert env["KMIRROR_EXTRA_CONSUMER_PROPERTIES"] == (
        "client.rack=use1-az1\nfetch.max.bytes=52428800"
    )
    assert env["KMIRROR_EXTRA_PRODUCER_PROPERTIES"] == "compression.type=zstd\nlinger.ms=50"
    assert "KMIRROR_EXTRA_CONSUMER_PROPERTIES" not in _env(MINIMAL)


def test_extra_env_volumes_and_mounts() -> None:
    extra_env = [
        {"name": "TZ", "value": "UTC"},
        {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
    ]
    docs = T(
        _with(
            extraEnv=extra_env,
            extraVolumes=[{"name": "tpl", "configMap": {"name": "my-tpl"}}],
            extraVolumeMounts=[{"name": "tpl", "mountPath": "/etc/kmirror/templates"}],
        )
    )
    c = container(docs.deployment)
    assert c["env"] == extra_env
    assert {"name": "tpl", "configMap": {"name": "my-tpl"}} in pod_spec(docs.deployment)["volumes"]
    assert {"name": "tpl", "mountPath": "/etc/kmirror/templates"} in c["volumeMounts"]


# ------------------------------------------------------------------------- pod settings


def test_resources_override() -> None:
    # helm merges maps with the defaults; null removes a default key.
    res = {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"cpu": None, "memory": "4Gi"}}
    assert container(T(_with(resources=res)).deployment)["resources"] == {
        "requests": {"cpu": "1", "memory": "2Gi"},
        "limits": {"memory": "4Gi"},
    }


def test_scheduling_values() -> None:
    node_affinity = {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["mirror"]}]}
            ]
        }
    }
    anti = {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname"}}
            ]
        }
    }
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "ScheduleAnyway",
        }
    ]
    tolerations = [{"key": "k", "operator": "Exists"}]
    spec = pod_spec(
        T(
            _with(
                nodeAffinity=node_affinity,
                affinity=anti,
                nodeSelector={"disk": "ssd"},
                tolerations=tolerations,
                topologySpreadConstraints=spread,
                priorityClassName="high",
            )
        ).deployment
    )
    assert spec["affinity"] == {**anti, "nodeAffinity": node_affinity}
    assert spec["nodeSelector"] == {"disk": "ssd"}
    assert spec["tolerations"] == tolerations
    assert spec["topologySpreadConstraints"] == spread
    assert spec["priorityClassName"] == "high"
    assert "affinity" not in pod_spec(T(MINIMAL).deployment)


def test_affinity_alone() -> None:
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    assert pod_spec(T(_with(affinity=anti)).deployment)["affinity"] == anti


def test_pod_annotations_and_labels_stay_out_of_the_selector() -> None:
    docs = T(_with(podAnnotations={"a": "1"}, podLabels={"team": "x"}))
    dep = docs.deployment
    meta = pod_metadata(dep)
    assert meta["annotations"]["a"] == "1"
    assert meta["labels"]["team"] == "x"
    assert dep["spec"]["selector"]["matchLabels"] == {
        "app.kubernetes.io/name": "kmirror",
        "app.kubernetes.io/instance": chartlib.RELEASE,
        "app.kubernetes.io/component": "mirror",
    }
    assert set(dep["spec"]["selector"]["matchLabels"].items()) <= set(meta["labels"].items())


def test_update_strategy_and_grace_period() -> None:
    dep = T(
        _with(updateStrategy={"type": "Recreate"}, terminationGracePeriodSeconds=120)
    ).deployment
    assert dep["spec"]["strategy"] == {"type": "Recreate"}
    assert pod_spec(dep)["terminationGracePeriodSeconds"] == 120


def test_tmp_size_limit() -> None:
    vols = pod_spec(T(_with(tmpSizeLimit="256Mi")).deployment)["volumes"]
    assert {"name": "tmp", "emptyDir": {"sizeLimit": "256Mi"}} in vols


# ----------------------------------------------------------------------------- rolling


def _checksum(values: Any) -> str:
    ann: str = pod_metadata(T(values).deployment)["annotations"]["checksum/config"]
    return ann


@pytest.mark.parametrize(
    "change",
    [
        {"whitelist": "orders"},
        {"numStreams": 2},
        {"logLevel": "DEBUG"},
        {"target": {"bootstrapServers": "other:9092"}},
        {"extraProducerProperties": {"linger.ms": "5"}},
        {"source": {"securityProtocol": "SSL"}},
    ],
    ids=lambda c: next(iter(c)),
)
def test_config_changes_roll_the_pods(change: dict[str, Any]) -> None:
    assert _checksum(MINIMAL) != _checksum([MINIMAL, change])


@pytest.mark.parametrize(
    "change",
    [
        {"replicaCount": 3},
        {"resources": {"limits": {"memory": "2Gi"}}},
        {"podLabels": {"a": "b"}},
        {"validation": {"mode": "digest"}},
    ],
    ids=lambda c: next(iter(c)),
)
def test_other_changes_keep_the_checksum(change: dict[str, Any]) -> None:
    assert _checksum(MINIMAL) == _checksum([MINIMAL, change])


# -------------------------------------------------------------------------------- names


@pytest.mark.parametrize(
    ("release", "overrides", "fullname"),
    [
        ("rel", {}, "rel-kmirror"),
        ("kmirror-prod", {}, "kmirror-prod"),
        ("rel", {"nameOverride": "mm"}, "rel-mm"),
        ("rel", {"fullnameOverride": "dr-mirror"}, "dr-mirror"),
        # helm's longest release name; the chart keeps room for "-validate" within 63.
        ("r" * 53, {}, "r" * 53),
    ],
)
def test_resource_names(release: str, overrides: dict[str, Any], fullname: str) -> None:
    docs = T([MINIMAL, overrides], release=release)
    assert docs.deployment["metadata"]["name"] == fullname
    assert docs.one("ConfigMap")["metadata"]["name"] == fullname
    assert container(docs.deployment)["envFrom"][0]["configMapRef"]["name"] == fullname
    assert docs.one("Pod")["metadata"]["name"] == f"{fullname}-test"
    for doc in docs:
        assert len(doc["metadata"]["name"]) <= 63


def test_namespace_override_and_common_metadata() -> None:
    docs = T(copy.deepcopy(chartlib.KITCHEN_SINK) | {"namespaceOverride": "mirrors"})
    for doc in docs:
        assert doc["metadata"]["namespace"] == "mirrors", doc["kind"]
        assert doc["metadata"]["labels"]["team"] == "data", doc["kind"]
        assert doc["metadata"]["annotations"]["owner"] == "data-platform", doc["kind"]
