"""A third local cluster that speaks SASL_SSL (SCRAM-SHA-512) and mutual TLS, with a PKI made
by openssl during the test run: a CA, a broker certificate for 127.0.0.1/localhost (SAN), a
client certificate for mTLS, and a second, unrelated CA for the "wrong CA" cases.

One single-node KRaft broker (scripts/kafka-local) with four listeners:

    PLAINTEXT://127.0.0.1:P      test setup and kafka-local's health probe only
    CONTROLLER://127.0.0.1:P+1
    SASL_SSL://127.0.0.1:P+2     SCRAM-SHA-512 over TLS
    SSL://127.0.0.1:P+3          TLS with client certificates required (mTLS)
    OAUTH://127.0.0.1:P+4        SASL_PLAINTEXT, OAUTHBEARER with Kafka's unsecured JWS
                                 validator: any unsigned token (alg "none") with a `sub` and a
                                 future `exp` is accepted, so an OIDC endpoint, librdkafka's
                                 unsecured tokens and a stand-in for MSK's signer all work

The broker reads PEM files (ssl.keystore.type=PEM, ssl.truststore.type=PEM). SCRAM users are
created through the Admin API on the PLAINTEXT listener once the broker runs (KRaft keeps them
in its metadata log, as `kafka-storage format --add-scram` would).

P is KMIRROR_SECURE_PORT (default 16092), the cluster name KMIRROR_SECURE_NAME (default
kmirror-secure), so that concurrent sessions can use their own. Fixed ports stay below Linux's
ephemeral range (32768-60999): there a client's outgoing connection may hold the port when the
broker binds it ("Address already in use"; the ACL pair's earlier 37192 failed so in a
clean-clone run).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

USER = "alice"


@dataclass(frozen=True)
class Pki:
    dir: Path
    ca: Path  # CA certificate (PEM): what clients trust
    broker_keystore: Path  # broker key + certificate chain (PEM)
    client_cert: Path
    client_key: Path
    other_ca: Path  # an unrelated CA

    @classmethod
    def create(cls, d: Path) -> Pki:
        d.mkdir(parents=True, exist_ok=True)

        def ssl(*args: str) -> None:
            subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)

        for ca in ("ca", "other-ca"):
            ssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{ca}.key",
                "-out", f"{ca}.pem", "-days", "2", "-subj", f"/CN=kmirror test {ca}")  # fmt: skip
        for name, cn, ext in (
            ("broker", "localhost", "subjectAltName=IP:127.0.0.1,DNS:localhost"),
            ("client", "kmirror-client", "extendedKeyUsage=clientAuth"),
        ):
            ssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out",
                f"{name}.csr", "-subj", f"/CN={cn}")  # fmt: skip
            (d / f"{name}.ext").write_text(ext + "\n")
            ssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", "-extfile",
                f"{name}.ext")  # fmt: skip
        # Kafka's PEM keystore: a PKCS#8 private key followed by the certificate chain.
        keystore = d / "broker-keystore.pem"
        keystore.write_text(
            "".join((d / f).read_text() for f in ("broker.key", "broker.pem", "ca.pem"))
        )
        for p in d.iterdir():
            p.chmod(0o600)
        return cls(
            dir=d,
            ca=d / "ca.pem",
            broker_keystore=keystore,
            client_cert=d / "client.pem",
            client_key=d / "client.key",
            other_ca=d / "other-ca.pem",
        )


@dataclass
class SecureCluster:
    name: str
    port: int
    pki: Pki
    password: str
    password_file: Path
    started_here: bool = False
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def plaintext(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def sasl_ssl(self) -> str:
        return f"127.0.0.1:{self.port + 2}"

    @property
    def mtls(self) -> str:
        return f"127.0.0.1:{self.port + 3}"

    @property
    def oauth(self) -> str:
        return f"127.0.0.1:{self.port + 4}"

    def java_sasl(self, password: str | None = None, ca: Path | None = None) -> dict[str, str]:
        """Java client properties (what an MM1 file holds) for the SASL_SSL listener."""
        pw = self.password if password is None else password
        return {
            "bootstrap.servers": self.sasl_ssl,
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule "
            f'required username="{USER}" password="{pw}";',
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(ca or self.pki.ca),
        }

    def java_mtls(self) -> dict[str, str]:
        """Java client properties for the mTLS listener (PEM key and certificate files)."""
        return {
            "bootstrap.servers": self.mtls,
            "security.protocol": "SSL",
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self.pki.ca),
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(self.pki.dir / "client-keystore.pem"),
        }


def server_overrides(port: int, pki: Pki) -> dict[str, str]:
    jaas = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
    # The broker's own login on this listener (unused: brokers talk over PLAINTEXT).
    oauth_jaas = (
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
        'unsecuredLoginStringClaim_sub="broker";'
    )
    return {
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{port + 1},"
        f"SASL_SSL://127.0.0.1:{port + 2},SSL://127.0.0.1:{port + 3},"
        f"OAUTH://127.0.0.1:{port + 4}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port},"
        f"SASL_SSL://127.0.0.1:{port + 2},SSL://127.0.0.1:{port + 3},"
        f"OAUTH://127.0.0.1:{port + 4}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,"
        "SASL_SSL:SASL_SSL,SSL:SSL,OAUTH:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": jaas,
        "listener.name.oauth.sasl.enabled.mechanisms": "OAUTHBEARER",
        # No server callback handler: Kafka's default is the unsecured JWS validator.
        "listener.name.oauth.oauthbearer.sasl.jaas.config": oauth_jaas,
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki.broker_keystore),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki.ca),
        "listener.name.ssl.ssl.client.auth": "required",
        # One partition: created in a second on first use, even on a busy machine.
        "offsets.topic.num.partitions": "1",
    }


def create_user(bootstrap: str, user: str, password: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192)
    up = UserScramCredentialUpsertion(user, info, password.encode(), secrets.token_bytes(16))
    for fut in admin.alter_user_scram_credentials([up], request_timeout=30).values():
        fut.result()


def warm_up(bootstrap: str) -> None:
    """Create __consumer_offsets now (the first group request would wait for it)."""
    from tests.kafkatools import wait_until

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "kmirror-warm-up"})
    try:
        wait_until(
            lambda: consumer.committed([TopicPartition("__warm_up", 0)], timeout=5) is not None,
            90,
            1.0,
            "__consumer_offsets ready",
        )
    finally:
        consumer.close()


@pytest.fixture(scope="session")
def secure_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureCluster]:
    """The SASL_SSL/mTLS cluster (started on first use, stopped and wiped at session end)."""
    from scripts import kafkalocal as kl

    port = int(os.environ.get("KMIRROR_SECURE_PORT", "16092"))
    name = os.environ.get("KMIRROR_SECURE_NAME", "kmirror-secure")
    pki = Pki.create(tmp_path_factory.mktemp("pki"))
    # mTLS client "keystore" in Java's PEM form: key and certificate in one file.
    (pki.dir / "client-keystore.pem").write_text(
        pki.client_key.read_text() + pki.client_cert.read_text()
    )
    # Unique per run, so a leak search cannot match anything else; some punctuation too.
    password = f"Pw-{secrets.token_hex(10)}-%+/="
    password_file = pki.dir / "alice.password"
    password_file.write_text(password + "\n")
    password_file.chmod(0o600)
    # A leftover of this name carries another run's certificates: start from scratch.
    kl.down([name], keep=False)
    try:
        # Generous: a busy 2-core machine has taken over 90 s to start a broker.
        kl.up([kl.ClusterSpec(name, port, server_overrides(port, pki))], fresh=True, timeout=240)
    except kl.ClusterError as exc:
        kl.down([name], keep=False)
        pytest.fail(f"could not start the SASL_SSL cluster:\n{exc}", pytrace=False)
    cluster = SecureCluster(name, port, pki, password, password_file, started_here=True)
    try:
        create_user(cluster.plaintext, USER, password)
        warm_up(cluster.plaintext)
        yield cluster
    finally:
        with contextlib.suppress(Exception):
            kl.down([name], keep=False)
