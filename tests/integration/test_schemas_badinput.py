"""Schema mirroring against wrong input: a registry that cannot be reached, refused credentials
or an untrusted certificate (a registry with HTTPS, basic auth and bearer tokens, started by
this module), a record naming an ID the source registry does not know, a target subject with
another history. Each is a clear error (nothing copied, nothing registered) or, where asked
for, a counted skip."""

from __future__ import annotations

import json
import re
import secrets
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from joserfc import jwt
from joserfc.jwk import RSAKey

from scripts import registrylocal
from tests.conftest import MakeTopic
from tests.kafkatools import Clusters, consume_all, produce, wait_until
from tests.mirrorproc import MirrorProcess, free_port, mirror_args, run_cli
from tests.schemaregistry import Registries
from tests.securecluster import Pki

pytestmark = pytest.mark.integration

FIXED = json.dumps({"type": "fixed", "name": "F", "size": 4})


@dataclass(frozen=True)
class Secure:
    url: str
    ca: Path
    password: str
    token: str  # a bearer token the registry accepts
    forged: str  # one signed by another key


def _token(key_pem: Path) -> str:
    now = int(time.time())
    claims = {"iss": registrylocal.BEARER_ISSUER, "sub": "mirror", "iat": now, "exp": now + 3600}
    return jwt.encode({"alg": "RS256"}, claims, RSAKey.import_key(key_pem.read_text()))


@pytest.fixture(scope="module")
def secure_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secure]:
    """Apicurio with HTTPS (a certificate from a CA made here), one basic-auth user, and
    bearer tokens signed by a key made here."""
    d = tmp_path_factory.mktemp("secure-registry")
    pki = Pki.create(d / "pki")
    for name in ("jwt", "other"):
        subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-out", d / f"{name}.key"],
                       check=True, capture_output=True)  # fmt: skip
    subprocess.run(["openssl", "rsa", "-in", d / "jwt.key", "-pubout", "-out", d / "jwt.pub"],
                   check=True, capture_output=True)  # fmt: skip
    password = secrets.token_hex(12)
    spec = registrylocal.RegistrySpec(
        "schemas-secure", free_port(2), str(pki.dir / "broker.pem"),
        str(pki.dir / "broker.key"), {"mirror": password}, str(d / "jwt.pub"),
    )  # fmt: skip
    try:
        registrylocal.start(spec)
    except registrylocal.RegistryError as exc:
        pytest.fail(f"could not start the HTTPS registry:\n{exc}", pytrace=False)
    try:
        yield Secure(spec.url, pki.ca, password, _token(d / "jwt.key"), _token(d / "other.key"))
    finally:
        registrylocal.stop(spec.name)


def check_args(tmp_path: Path, clusters: Clusters, topic: str, *schema: str) -> list[str]:
    args = mirror_args(tmp_path, clusters, "g-check", topic)
    return ["check", *args[1:], "--engine", "record", *schema]


def test_credentials_tls_and_reachability_are_checked_before_anything_runs(
    tmp_path: Path,
    clusters: Clusters,
    schema_registries: Registries,
    secure_registry: Secure,
    make_topic: MakeTopic,
    unique_name: Callable[[str], str],
) -> None:
    uid = unique_name("u").split("-")[1]
    topic = make_topic(clusters.source_bootstrap, f"sec-{uid}")
    SchemaRegistryClient({"url": schema_registries.source_url}).register_schema(
        f"{topic}-value", Schema(FIXED, "AVRO")
    )
    urls = ["--schema-registry-source-url", schema_registries.source_url,
            "--schema-registry-target-url", secure_registry.url, "--schema-subjects",
            f".*{uid}.*"]  # fmt: skip
    creds = {
        "KMIRROR_SCHEMA_REGISTRY_TARGET_BASIC_AUTH_USER": "mirror",
        "KMIRROR_SCHEMA_REGISTRY_TARGET_SSL_CA_LOCATION": str(secure_registry.ca),
    }
    right = tmp_path / "right"
    right.write_text(secure_registry.password)
    wrong = tmp_path / "wrong"
    wrong.write_text("not-the-password")
    var = "KMIRROR_SCHEMA_REGISTRY_TARGET_BASIC_AUTH_PASSWORD_FILE"
    args = check_args(tmp_path, clusters, topic, *urls)

    ok = run_cli(args, env={**creds, var: str(right)})
    assert ok.returncode == 0, ok.stderr
    assert re.search(rf"subject {topic}-value -> {topic}-value +versions 1 \(target 0\) +copy",
                     ok.stdout), ok.stdout  # fmt: skip
    assert "id mode translate" in ok.stdout

    refused = run_cli(args, env={**creds, var: str(wrong)})
    assert refused.returncode == 3
    assert "refused our credentials (401)" in refused.stderr

    no_ca = {**creds, var: str(right), "KMIRROR_SCHEMA_REGISTRY_TARGET_SSL_CA_LOCATION": ""}
    untrusted = run_cli(args, env=no_ca)
    assert untrusted.returncode == 3
    assert "could not be reached" in untrusted.stderr and "TLS CA" in untrusted.stderr

    token_var = "KMIRROR_SCHEMA_REGISTRY_TARGET_BEARER_TOKEN_FILE"
    ca = {"KMIRROR_SCHEMA_REGISTRY_TARGET_SSL_CA_LOCATION": str(secure_registry.ca)}
    (tmp_path / "token").write_text(secure_registry.token)
    (tmp_path / "forged").write_text(secure_registry.forged)
    bearer = run_cli(args, env={**ca, token_var: str(tmp_path / "token")})
    assert bearer.returncode == 0, bearer.stderr
    forged = run_cli(args, env={**ca, token_var: str(tmp_path / "forged")})
    assert forged.returncode == 3
    assert "refused our credentials (401)" in forged.stderr

    gone = f"http://127.0.0.1:{free_port()}/apis/ccompat/v7"
    unreachable = run_cli(
        check_args(tmp_path, clusters, topic, "--schema-registry-source-url", gone,
                   "--schema-registry-target-url", schema_registries.target_url)
    )  # fmt: skip
    assert unreachable.returncode == 3
    assert f"the source schema registry {gone} could not be reached" in unreachable.stderr
    for result in (ok, refused, untrusted, bearer, forged, unreachable):
        shown = result.stdout + result.stderr
        assert secure_registry.password not in shown
        assert secure_registry.token not in shown and secure_registry.forged not in shown


def test_an_id_the_source_registry_does_not_know(
    tmp_path: Path,
    clusters: Clusters,
    schema_registries: Registries,
    make_topic: MakeTopic,
    unique_name: Callable[[str], str],
) -> None:
    uid = unique_name("u").split("-")[1]
    topic = make_topic(clusters.source_bootstrap, f"unk-{uid}")
    stranger = b"\x00" + (2**31 - 7).to_bytes(4, "big") + b"payload"
    produce(clusters.source_bootstrap, topic, [{"value": stranger}])
    base = [*mirror_args(tmp_path, clusters, unique_name("g"), topic),
            *schema_registries.mirror_flags(uid)]  # fmt: skip

    failed = run_cli([*base, "--metrics-port", "0"], timeout=180)
    assert failed.returncode == 1, failed.stderr
    assert f"record {topic}[0] offset 0 names schema ID {2**31 - 7}" in failed.stderr
    assert consume_all(clusters.target_bootstrap, topic) == []  # nothing from it on

    pattern = r"kmirror_schema_records_unknown_id_total\{[^}]*topic=\"" + topic + r"\"[^}]*\} 1"
    with MirrorProcess([*base, "--schema-unknown-id", "copy"], tmp_path / "copy.log") as m:
        wait_until(lambda: len(consume_all(clusters.target_bootstrap, topic)) == 1, 180)
        # Streams report their metrics once a second.
        wait_until(lambda: re.search(pattern, m.get("/metrics")[1]), 30, message="counted")
        assert m.stop() == 0, m.log
    assert consume_all(clusters.target_bootstrap, topic)[0].value == stranger
    assert "names schema ID" in m.log  # logged once


def test_a_target_subject_with_another_history_is_refused_and_left_alone(
    tmp_path: Path,
    clusters: Clusters,
    schema_registries: Registries,
    make_topic: MakeTopic,
    unique_name: Callable[[str], str],
) -> None:
    uid = unique_name("u").split("-")[1]
    topic = make_topic(clusters.source_bootstrap, f"hist-{uid}")
    src = SchemaRegistryClient({"url": schema_registries.source_url})
    dst = SchemaRegistryClient({"url": schema_registries.target_url})
    src.register_schema(f"{topic}-value", Schema(FIXED, "AVRO"))
    theirs = dst.register_schema(f"{topic}-value", Schema('"string"', "AVRO"))
    args = [*mirror_args(tmp_path, clusters, unique_name("g"), topic),
            *schema_registries.mirror_flags(uid)]  # fmt: skip
    result = run_cli([*args, "--metrics-port", "0"], timeout=180)
    assert result.returncode == 1, result.stderr
    assert f"target subject {topic}-value has a history" in result.stderr
    assert "registers nothing in it" in result.stderr
    assert dst.get_versions(f"{topic}-value") == [1]
    assert dst.get_version(f"{topic}-value", 1).schema_id == theirs
