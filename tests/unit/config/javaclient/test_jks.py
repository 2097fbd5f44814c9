"""Java key stores made by keytool (the JDK's, as MirrorMaker users make them) become the
same PEM certificates and keys openssl made them from; a wrong password, a PKCS12
truststore and a store with two keys are errors that say what to do."""

from __future__ import annotations

import base64
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from kmirror.config.javaclient.translate import translate
from kmirror.config.secret import Secret, reveal
from kmirror.errors import ConfigError

pytestmark = pytest.mark.unit

PASSWORD = "store-Pw-1"


@dataclass(frozen=True)
class Stores:
    dir: Path
    ca_pem: Path
    client_pem: Path
    client_key_der: bytes  # PKCS#8
    truststore: Path  # JKS with the CA
    keystore: Path  # JKS with the client key and certificate
    two_keys: Path  # JKS with two private keys
    p12_truststore: Path


def _run(*args: str, cwd: Path) -> None:
    subprocess.run(args, cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Stores:
    d = tmp_path_factory.mktemp("jks")
    _run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key",
         "-out", "ca.pem", "-days", "2", "-subj", "/CN=jks test ca", cwd=d)  # fmt: skip
    _run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "client.key",
         "-out", "client.pem", "-days", "2", "-subj", "/CN=jks client", cwd=d)  # fmt: skip
    _run("openssl", "pkcs12", "-export", "-in", "client.pem", "-inkey", "client.key", "-name",
         "client", "-out", "client.p12", "-passout", f"pass:{PASSWORD}", cwd=d)  # fmt: skip
    keytool = ("keytool", "-noprompt", "-storepass", PASSWORD)
    _run(*keytool, "-importcert", "-alias", "ca", "-file", "ca.pem", "-keystore", "trust.jks",
         "-storetype", "JKS", cwd=d)  # fmt: skip
    _run(*keytool, "-importcert", "-alias", "ca", "-file", "ca.pem", "-keystore", "trust.p12",
         "-storetype", "PKCS12", cwd=d)  # fmt: skip
    _run(*keytool, "-importkeystore", "-srckeystore", "client.p12", "-srcstoretype", "PKCS12",
         "-srcstorepass", PASSWORD, "-destkeystore", "client.jks", "-deststoretype", "JKS",
         cwd=d)  # fmt: skip
    _run("cp", "client.jks", "two.jks", cwd=d)
    _run(*keytool, "-genkeypair", "-alias", "second", "-keyalg", "RSA", "-keysize", "2048",
         "-dname", "CN=second", "-keystore", "two.jks", "-storetype", "JKS", cwd=d)  # fmt: skip
    key_der = subprocess.run(
        ["openssl", "pkcs8", "-topk8", "-nocrypt", "-in", "client.key", "-outform", "DER"],
        cwd=d, check=True, capture_output=True,
    ).stdout  # fmt: skip
    return Stores(d, d / "ca.pem", d / "client.pem", key_der, d / "trust.jks", d / "client.jks",
                  d / "two.jks", d / "trust.p12")  # fmt: skip


def der_of(pem: str) -> list[bytes]:
    blocks = re.findall(r"-----BEGIN [A-Z ]+-----(.*?)-----END", pem, re.DOTALL)
    return [base64.b64decode("".join(b.split())) for b in blocks]


def test_jks_truststore_becomes_the_ca_as_pem(stores: Stores) -> None:
    """Java's default store type: no ssl.truststore.type needed, as in MM1 configs."""
    t = translate(
        {"ssl.truststore.location": str(stores.truststore), "ssl.truststore.password": PASSWORD},
        "common",
        "c",
    )
    assert der_of(str(t.common["ssl.ca.pem"])) == der_of(stores.ca_pem.read_text())
    assert "read as 1 PEM CA certificate" in "\n".join(t.notes)


def test_jks_keystore_becomes_key_and_certificate(stores: Stores) -> None:
    t = translate(
        {
            "ssl.keystore.type": "JKS",
            "ssl.keystore.location": str(stores.keystore),
            "ssl.keystore.password": PASSWORD,
            "ssl.key.password": PASSWORD,
        },
        "common",
        "c",
    )
    key = t.common["ssl.key.pem"]
    assert isinstance(key, Secret)  # never shown
    assert der_of(reveal(key)) == [stores.client_key_der]
    assert der_of(str(t.common["ssl.certificate.pem"])) == der_of(stores.client_pem.read_text())


def test_wrong_store_password_is_an_error_without_the_password(stores: Stores) -> None:
    with pytest.raises(ConfigError, match="keystore password is wrong") as err:
        translate(
            {"ssl.truststore.location": str(stores.truststore), "ssl.truststore.password": "no"},
            "common",
            "c",
        )
    assert PASSWORD not in str(err.value)


def test_keystore_without_password_or_with_two_keys(stores: Stores) -> None:
    with pytest.raises(ConfigError, match=r"needs ssl\.keystore\.password"):
        translate({"ssl.keystore.location": str(stores.keystore)}, "common", "c")
    with pytest.raises(ConfigError, match="holds 2 private keys"):
        translate(
            {"ssl.keystore.location": str(stores.two_keys), "ssl.keystore.password": PASSWORD},
            "common",
            "c",
        )


def test_pkcs12_truststore_is_refused_with_the_command_that_converts_it(
    stores: Stores, tmp_path: Path
) -> None:
    """The one command the error names works on keytool's PKCS12 truststore."""
    props = {"ssl.truststore.type": "PKCS12", "ssl.truststore.location": str(stores.p12_truststore)}
    with pytest.raises(
        ConfigError, match=r"openssl pkcs12 -in truststore\.p12 -nokeys -out ca\.pem"
    ):
        translate(props, "common", "c")
    subprocess.run(
        ["openssl", "pkcs12", "-in", str(stores.p12_truststore), "-nokeys", "-out", "ca.pem",
         "-passin", f"pass:{PASSWORD}"],
        cwd=tmp_path, check=True, capture_output=True,
    )  # fmt: skip
    t = translate(
        {"ssl.truststore.type": "PEM", "ssl.truststore.location": str(tmp_path / "ca.pem")},
        "common",
        "c",
    )
    assert der_of((tmp_path / "ca.pem").read_text()) == der_of(stores.ca_pem.read_text())
    assert t.common["ssl.ca.location"] == str(tmp_path / "ca.pem")
