"""librdkafka-style cluster settings (the config model's keys) as kafka-python connection
arguments, for the batch path's own connections.

The model keeps one dialect, librdkafka's; this is the one place that translates it for
kafka-python. TLS is built here as an ``ssl.SSLContext`` (kafka-python takes one as is), so PEM
given inline (``ssl.ca.pem``, ``ssl.certificate.pem``) works like files do. What kafka-python
cannot do (Kerberos without its extra packages, OAUTHBEARER without a token provider, PKCS#12
keystores) is a ConfigError naming the setting, so a mirror never starts half-secured.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Mapping
from typing import Any

from kmirror.errors import ConfigError

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


def connection_args(conf: Mapping[str, str], side: str, max_response_bytes: int) -> dict[str, Any]:
    """kafka-python KafkaConnectionManager arguments for one cluster.

    ``conf`` is an unsealed librdkafka config (``MirrorConfig.consumer_conf()`` for the source,
    ``producer_conf()`` for the target); ``max_response_bytes`` bounds the largest response
    accepted (a fetch of fetch_max_bytes plus framing)."""
    protocol = conf.get("security.protocol", "plaintext").upper()
    if protocol not in PROTOCOLS:
        raise ConfigError(
            f"{side}: security.protocol={protocol!r} is not one of {', '.join(PROTOCOLS)}"
        )
    args: dict[str, Any] = {
        "bootstrap_servers": [s.strip() for s in conf["bootstrap.servers"].split(",")],
        "security_protocol": protocol,
        "client_id": conf.get("client.id", "kmirror"),
        "request_timeout_ms": int(conf.get("socket.timeout.ms", "60000")),
        "receive_message_max_bytes": max_response_bytes,
        "max_in_flight_requests_per_connection": 1_000,  # the copier bounds its own in-flight
        "metadata_max_age_ms": int(conf.get("topic.metadata.refresh.interval.ms", "300000")),
        "reconnect_backoff_ms": int(conf.get("reconnect.backoff.ms", "100")),
        "reconnect_backoff_max_ms": int(conf.get("reconnect.backoff.max.ms", "10000")),
    }
    if protocol.startswith("SASL"):
        args.update(_sasl(conf, side))
    if protocol.endswith("SSL"):
        args["ssl_context"] = ssl_context(conf, side)
        args["ssl_check_hostname"] = _check_hostname(conf)
    return args


def _sasl(conf: Mapping[str, str], side: str) -> dict[str, Any]:
    mechanism = (conf.get("sasl.mechanism") or conf.get("sasl.mechanisms") or "GSSAPI").upper()
    if mechanism not in MECHANISMS:
        raise ConfigError(
            f"{side}: sasl.mechanism={mechanism} is not supported by the batch path (it supports "
            f"{', '.join(MECHANISMS)}); run with the record path for this cluster"
        )
    username, password = conf.get("sasl.username"), conf.get("sasl.password")
    if not username or password is None:
        raise ConfigError(
            f"{side}: SASL {mechanism} needs sasl.username and sasl.password (or the password file)"
        )
    return {
        "sasl_mechanism": mechanism,
        "sasl_plain_username": username,
        "sasl_plain_password": password,
    }


def _check_hostname(conf: Mapping[str, str]) -> bool:
    if conf.get("enable.ssl.certificate.verification", "true").lower() == "false":
        return False
    # librdkafka >= 2.0 verifies the broker's host name unless told "none".
    return conf.get("ssl.endpoint.identification.algorithm", "https").lower() != "none"


def ssl_context(conf: Mapping[str, str], side: str) -> ssl.SSLContext:
    """TLS as librdkafka would do it with the same keys: the CA (file, directory or inline
    PEM, else the system store), an optional client certificate and key (mTLS)."""
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    try:
        _trust(ctx, conf)
        _identity(ctx, conf, side)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(
            f"{side}: cannot load the TLS files ({exc}). Check ssl.ca.location, "
            "ssl.certificate.location, ssl.key.location and ssl.key.password"
        ) from exc
    if not _check_hostname(conf):
        ctx.check_hostname = False
    if conf.get("enable.ssl.certificate.verification", "true").lower() == "false":
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


def _trust(ctx: ssl.SSLContext, conf: Mapping[str, str]) -> None:
    location = conf.get("ssl.ca.location", "").strip()
    if location and location != "probe":
        if os.path.isdir(location):
            ctx.load_verify_locations(capath=location)
        else:
            ctx.load_verify_locations(cafile=location)
    if conf.get("ssl.ca.pem"):
        ctx.load_verify_locations(cadata=conf["ssl.ca.pem"])


def _identity(ctx: ssl.SSLContext, conf: Mapping[str, str], side: str) -> None:
    if conf.get("ssl.keystore.location"):
        raise ConfigError(
            f"{side}: the batch path cannot read a PKCS#12 keystore (ssl.keystore.location): give "
            "the client certificate and key as PEM (ssl.certificate.location and "
            "ssl.key.location, Java: ssl.keystore.type=PEM)"
        )
    password = conf.get("ssl.key.password") or None
    cert, key = conf.get("ssl.certificate.location"), conf.get("ssl.key.location")
    if cert or key:
        ctx.load_cert_chain(certfile=cert or str(key), keyfile=key or None, password=password)
    elif conf.get("ssl.certificate.pem") or conf.get("ssl.key.pem"):
        # ssl only loads a certificate chain from a file: a private (0600) temporary one,
        # removed as soon as it is loaded.
        pem = conf.get("ssl.certificate.pem", "") + "\n" + conf.get("ssl.key.pem", "")
        fd, path = tempfile.mkstemp(prefix="kmirror-", suffix=".pem")
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(pem)
            ctx.load_cert_chain(certfile=path, password=password)
        finally:
            os.unlink(path)
