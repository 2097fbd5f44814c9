"""schemaRegistry values (docs/schemas.md): the image's KMIRROR_SCHEMA_* variables, credentials
and CA as files mounted from a Secret, egress to the registries, and the settings the image then
loads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kmirror.config.dialects.schemas import schemas_from_flags
from kmirror.config.secret import reveal
from tests.chart import chartlib
from tests.chart.chartlib import MINIMAL, SecretRef, container

pytestmark = pytest.mark.chart

T = chartlib.helm_template
DIR = "/etc/kmirror/secrets/target/registry"
REGISTRIES: dict[str, Any] = {
    "schemaRegistry": {
        "source": {"url": "http://registry-a:8081/apis/ccompat/v7"},
        "target": {
            "url": "https://registry-b.example.com",
            "basicAuthUser": "mirror",
            "existingSecret": "registry-b",
            "passwordKey": "pw",
            "caKey": "ca.pem",
        },
        "idMode": "translate",
        "subjects": "orders-.*",
        "syncIntervalSeconds": 5,
        "unknownId": "copy",
    }
}


def test_off_by_default_no_variable_and_nothing_mounted() -> None:
    docs = T(MINIMAL)
    c = container(docs.deployment, "mirror")
    env = chartlib.resolve_env(c, docs)
    assert not [k for k in env if k.startswith("KMIRROR_SCHEMA")]
    assert not [p for p in chartlib.mounted_secret_files(docs.deployment, c) if "registry" in p]


def test_values_reach_the_settings_the_image_loads_with_secrets_as_files(tmp_path: Path) -> None:
    docs = T([MINIMAL, REGISTRIES])
    c = container(docs.deployment, "mirror")
    env = chartlib.resolve_env(c, docs)
    files = chartlib.mounted_secret_files(docs.deployment, c)
    assert env["KMIRROR_SCHEMA_REGISTRY_TARGET_BASIC_AUTH_PASSWORD_FILE"] == f"{DIR}/password"
    assert files[f"{DIR}/password"] == SecretRef("registry-b", "pw")
    assert files[f"{DIR}/ca.crt"] == SecretRef("registry-b", "ca.pem")
    assert "KMIRROR_SCHEMA_REGISTRY_TARGET_BEARER_TOKEN_FILE" not in env
    # What the entrypoint reads, with the mounted key where the pod has it.
    secret_file = tmp_path / "password"
    secret_file.write_text("s3cret\n")
    environ = {k: str(v) for k, v in env.items() if isinstance(v, str)}
    environ["KMIRROR_SCHEMA_REGISTRY_TARGET_BASIC_AUTH_PASSWORD_FILE"] = str(secret_file)
    settings = schemas_from_flags({}, environ, None)
    assert settings is not None
    assert settings.source.url == "http://registry-a:8081/apis/ccompat/v7"
    assert settings.target.url == "https://registry-b.example.com"
    assert settings.target.basic_auth_user == "mirror"
    assert settings.target.basic_auth_password is not None
    assert reveal(settings.target.basic_auth_password) == "s3cret"
    assert settings.target.ssl_ca_location == f"{DIR}/ca.crt"
    assert (settings.id_mode, settings.unknown_id, settings.sync_interval_s) == (
        "translate",
        "copy",
        5.0,
    )
    assert list(settings.subjects) == ["orders-.*"]
    # Secrets stay out of the ConfigMap.
    assert "s3cret" not in str(docs.configmap)


def test_a_key_without_its_secret_is_refused_with_the_fix() -> None:
    values = {"schemaRegistry": {"target": {"url": "http://b:8081", "bearerTokenKey": "token"}}}
    err = T([MINIMAL, values], expect_fail=True)
    assert "schemaRegistry.target.bearerTokenKey" in err
    assert "schemaRegistry.target.existingSecret is empty" in err


def test_a_wrong_id_mode_is_refused_by_the_schema() -> None:
    err = T([MINIMAL, {"schemaRegistry": {"idMode": "copy"}}], expect_fail=True)
    assert "idMode" in err


def test_the_network_policy_lets_the_pods_reach_both_registries() -> None:
    policy = {"networkPolicy": {"enabled": True, "allowExternalEgress": False}}
    doc = T([MINIMAL, REGISTRIES, policy]).one("NetworkPolicy")
    ports = {p["port"] for rule in doc["spec"]["egress"] for p in rule.get("ports", [])}
    assert {8081, 443} <= ports
