"""librdkafka-style cluster settings as kafka-python connection arguments."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from kmirror.errors import ConfigError
from kmirror.kafka.wireconf import connection_args
from tests.securecluster import Pki

pytestmark = pytest.mark.unit


def test_plaintext_maps_servers_and_timeouts() -> None:
    args = connection_args(
        {"bootstrap.servers": "a:1, b:2", "client.id": "me", "socket.timeout.ms": "5000"},
        "source",
        1 << 20,
    )
    assert args["bootstrap_servers"] == ["a:1", "b:2"]
    assert args["security_protocol"] == "PLAINTEXT"
    assert (args["client_id"], args["request_timeout_ms"]) == ("me", 5000)
    assert args["receive_message_max_bytes"] == 1 << 20
    assert "ssl_context" not in args and "sasl_mechanism" not in args


def test_sasl_ssl_scram_maps_user_password_and_ca(tmp_path: Path) -> None:
    pki = Pki.create(tmp_path)
    args = connection_args(
        {
            "bootstrap.servers": "h:9093",
            "security.protocol": "sasl_ssl",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "alice",
            "sasl.password": "pw",
            "ssl.ca.location": str(pki.ca),
        },
        "target",
        1 << 20,
    )
    assert args["security_protocol"] == "SASL_SSL"
    assert (args["sasl_mechanism"], args["sasl_plain_username"]) == ("SCRAM-SHA-512", "alice")
    assert args["sasl_plain_password"] == "pw"
    ctx = args["ssl_context"]
    assert isinstance(ctx, ssl.SSLContext)
    assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
    assert args["ssl_check_hostname"] is True
    assert ctx.get_ca_certs()  # the CA file was loaded


def test_mtls_loads_the_client_certificate_and_hostname_check_can_be_off(tmp_path: Path) -> None:
    pki = Pki.create(tmp_path)
    args = connection_args(
        {
            "bootstrap.servers": "h:9094",
            "security.protocol": "SSL",
            "ssl.ca.pem": pki.ca.read_text(),
            "ssl.certificate.location": str(pki.client_cert),
            "ssl.key.location": str(pki.client_key),
            "ssl.endpoint.identification.algorithm": "none",
        },
        "source",
        1 << 20,
    )
    assert args["ssl_check_hostname"] is False
    assert not args["ssl_context"].check_hostname


@pytest.mark.parametrize(
    ("conf", "named"),
    [
        ({"security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI"}, "GSSAPI"),
        ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}, "sasl.username"),
        ({"security.protocol": "SSL", "ssl.keystore.location": "/x.p12"}, "PKCS#12"),
        ({"security.protocol": "SSL", "ssl.ca.location": "/nonexistent/ca.pem"}, "ssl.ca"),
        ({"security.protocol": "TLS"}, "security.protocol"),
    ],
)
def test_what_the_batch_path_cannot_do_is_a_config_error(conf: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError, match=named.replace(".", r"\.")):
        connection_args({"bootstrap.servers": "h:1", **conf}, "source", 1 << 20)
