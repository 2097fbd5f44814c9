"""Java key stores as MirrorMaker users have them: a JKS truststore and a JKS keystore that
keytool made from the test run's PKI, used unchanged against the mTLS listener. kmirror reads
them at start-up (image/kmirror/config/javaclient/jks.py); the store password comes from a
mounted file through the entrypoint's `${NAME}` / NAME_FILE expansion and never shows."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.cleanenv import kmirror_env, mirror_process
from tests.conftest import MakeTopic
from tests.kafkatools import Clusters, end_offsets, produce, unique, wait_until
from tests.securecluster import SecureCluster
from tests.security.test_security import assert_no_secret, contents, entry_env, records

pytestmark = pytest.mark.security


def java_stores(s: SecureCluster, d: Path, password: str) -> tuple[Path, Path]:
    """(truststore.jks with the CA, keystore.jks with the client key and certificate)."""
    pki = s.pki.dir

    def run(*args: str) -> None:
        subprocess.run(args, cwd=d, check=True, capture_output=True)

    run("openssl", "pkcs12", "-export", "-in", str(pki / "client.pem"), "-inkey",
        str(pki / "client.key"), "-name", "client", "-out", "client.p12", "-passout",
        f"pass:{password}")  # fmt: skip
    keytool = ("keytool", "-noprompt", "-storepass", password)
    run(*keytool, "-importcert", "-alias", "ca", "-file", str(s.pki.ca), "-keystore",
        "truststore.jks", "-storetype", "JKS")  # fmt: skip
    run(*keytool, "-importkeystore", "-srckeystore", "client.p12", "-srcstoretype",
        "PKCS12", "-srcstorepass", password, "-destkeystore", "keystore.jks", "-deststoretype",
        "JKS")  # fmt: skip
    return d / "truststore.jks", d / "keystore.jks"


def test_entrypoint_mirrors_over_mtls_with_jks_stores(
    tmp_path: Path, clusters: Clusters, secure_cluster: SecureCluster, make_topic: MakeTopic
) -> None:
    s = secure_cluster
    password = "Jks-" + s.password[3:15]
    truststore, keystore = java_stores(s, tmp_path, password)
    password_file = tmp_path / "store.password"
    password_file.write_text(password + "\n")
    topic = make_topic(s.plaintext, unique("jks-src"), partitions=2)
    produce(s.plaintext, topic, records(100))
    extra = "\n".join(
        [
            "security.protocol=SSL",
            f"ssl.truststore.location={truststore}",  # no type: Java's default, JKS
            "ssl.truststore.password=${STORE_PASSWORD}",
            f"ssl.keystore.location={keystore}",
            "ssl.keystore.password=${STORE_PASSWORD}",
            "ssl.key.password=${STORE_PASSWORD}",
        ]
    )
    env = kmirror_env(
        {
            **entry_env(tmp_path, s.mtls, clusters.target_bootstrap, topic, unique("g")),
            "KMIRROR_EXTRA_CONSUMER_PROPERTIES": extra,
            "STORE_PASSWORD_FILE": str(password_file),
        }
    )
    with mirror_process(["entrypoint"], tmp_path / "m.log", env=env) as m:
        wait_until(lambda: sum(end_offsets(clusters.target_bootstrap, topic).values()) >= 100, 90)
        assert m.stop() == 0, m.log[-3000:]
        log = m.log
    assert contents(s.plaintext, topic) == contents(clusters.target_bootstrap, topic)
    assert "JKS keystore" in log and "read as PEM" in log
    assert_no_secret(log, password, "PRIVATE KEY")
