"""The two clusters as the environment names them: the per-side variables (one table) and the
one rule that turns KUDO's "this" and "external" cluster into a source and a target.

Every variable of a side is `<SIDE>_<SUFFIX>`, SIDE being SOURCE_CLUSTER or SINK_CLUSTER (the
MirrorMaker-on-Kubernetes seed's names). env.py documents each name from SIDE_VARS, the KUDO
dialect and the entrypoint read the sides' security from it, and the chart's contract test
(tests/chart/test_sides.py) checks that the chart sets exactly these names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from kmirror.config import oauth
from kmirror.errors import ConfigError

Side = Literal["SOURCE_CLUSTER", "SINK_CLUSTER"]
SOURCE: Side = "SOURCE_CLUSTER"
TARGET: Side = "SINK_CLUSTER"
SIDES: Mapping[str, Side] = {"source": SOURCE, "target": TARGET}
BOOTSTRAP = "BOOTSTRAP_SERVERS"  # <SIDE>_BOOTSTRAP_SERVERS (listed with the seed names)

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "AWS_MSK_IAM")
KUDO_TYPES = ("SOURCE", "DESTINATION")
# Who reads a SASL variable: a mechanism, or OAUTHBEARER with its method.
_PASSWORD = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_OIDC, _UNSECURED = ("OAUTHBEARER/oidc",), ("OAUTHBEARER/unsecured",)
_IAM = ("AWS_MSK_IAM",)


@dataclass(frozen=True)
class SideVar:
    suffix: str
    description: str  # after "Source: " / "Target: "
    default: str
    group: Literal["protocol", "sasl", "ssl"]  # the setting that makes the variable count
    key: str | None = None  # the librdkafka (or kmirror.sasl.*) key it sets as it is
    secret_file: bool = False  # names a file whose content is a credential
    read_by: tuple[str, ...] = ()  # SASL: the mechanisms (OAUTHBEARER/method) that read it


SIDE_VARS: tuple[SideVar, ...] = (
    SideVar("SECURITY_PROTOCOL", f"{', '.join(PROTOCOLS[:-1])} or {PROTOCOLS[-1]}",
            "PLAINTEXT", "protocol", "security.protocol"),
    SideVar("SASL_MECHANISM", f"{', '.join(MECHANISMS[:-1])} or {MECHANISMS[-1]}", "", "sasl",
            read_by=(*_PASSWORD, *_OIDC, *_UNSECURED, *_IAM)),
    SideVar("SASL_USERNAME", "SASL user name (PLAIN, SCRAM)", "", "sasl", "sasl.username",
            read_by=_PASSWORD),
    SideVar("SASL_PASSWORD_FILE", "file holding the SASL password (PLAIN, SCRAM)", "", "sasl",
            secret_file=True, read_by=_PASSWORD),
    SideVar("SASL_OAUTHBEARER_METHOD", "OAUTHBEARER tokens from an OIDC token endpoint (oidc) "
            "or unsigned development tokens (unsecured)", "oidc", "sasl",
            read_by=(*_OIDC, *_UNSECURED)),
    SideVar("SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL", "OIDC token endpoint (client credentials "
            "grant)", "", "sasl", "sasl.oauthbearer.token.endpoint.url", read_by=_OIDC),
    SideVar("SASL_OAUTHBEARER_CLIENT_ID", "OIDC client id", "", "sasl",
            "sasl.oauthbearer.client.id", read_by=_OIDC),
    SideVar("SASL_OAUTHBEARER_CLIENT_SECRET_FILE", "file holding the OIDC client secret", "",
            "sasl", secret_file=True, read_by=_OIDC),
    SideVar("SASL_OAUTHBEARER_SCOPE", "OIDC scope(s) to request", "", "sasl",
            "sasl.oauthbearer.scope", read_by=_OIDC),
    SideVar("SASL_OAUTHBEARER_EXTENSIONS", "OAUTHBEARER SASL extensions, key=value,... (e.g. "
            "logicalCluster=lkc-1)", "", "sasl", "sasl.oauthbearer.extensions", read_by=_OIDC),
    SideVar("SASL_OAUTHBEARER_CONFIG", "unsecured method: the token's claims, e.g. "
            "'principal=admin'", "", "sasl", "sasl.oauthbearer.config", read_by=_UNSECURED),
    SideVar("AWS_REGION", "AWS_MSK_IAM: region of the MSK cluster (default: from the broker "
            "host name, then AWS_REGION)", "", "sasl", oauth.AWS_REGION, read_by=_IAM),
    SideVar("AWS_ROLE_ARN", "AWS_MSK_IAM: IAM role to assume (default: the pod's own "
            "identity, e.g. IRSA or EKS Pod Identity)", "", "sasl", oauth.AWS_ROLE_ARN,
            read_by=_IAM),
    SideVar("SSL_CA_LOCATION", "PEM file of the CA that signed the brokers", "", "ssl",
            "ssl.ca.location"),
    SideVar("SSL_CERTIFICATE_LOCATION", "PEM client certificate (mTLS)", "", "ssl",
            "ssl.certificate.location"),
    SideVar("SSL_KEY_LOCATION", "PEM client private key (mTLS)", "", "ssl", "ssl.key.location"),
    SideVar("SSL_KEY_PASSWORD_FILE", "file holding the key's password", "", "ssl",
            secret_file=True),
    SideVar("SSL_ENDPOINT_IDENTIFICATION_ALGORITHM", "'https' verifies the broker host name, "
            "'none' does not", "https", "ssl", "ssl.endpoint.identification.algorithm"),
)  # fmt: skip
SIDE_SUFFIXES: tuple[str, ...] = tuple(v.suffix for v in SIDE_VARS)
BY_SUFFIX: Mapping[str, SideVar] = {v.suffix: v for v in SIDE_VARS}


def suffixes(group: str) -> tuple[str, ...]:
    return tuple(v.suffix for v in SIDE_VARS if v.group == group)


def read_by(mechanism: str, method: str = "") -> tuple[str, ...]:
    """The SASL variables a mechanism reads (OAUTHBEARER: with its method, oidc or unsecured);
    any other SASL variable given is reported as ignored."""
    who = f"{mechanism}/{method}" if mechanism == "OAUTHBEARER" else mechanism
    return tuple(v.suffix for v in SIDE_VARS if who in v.read_by)


def kudo_roles(
    this: str, external: str, external_type: str, name: str = "MIRROR_MAKER_EXTERNAL_CLUSTER_TYPE"
) -> tuple[str, str]:
    """(source, target) of KUDO's pair: SOURCE means the external cluster is copied into this
    one, DESTINATION the other way round. `name` is what the user set, for the error."""
    kind = external_type.strip().upper()
    if kind not in KUDO_TYPES:
        raise ConfigError(
            f"{name} must be SOURCE or DESTINATION, not {external_type.strip()!r} (SOURCE: the "
            "external cluster is the source; DESTINATION: it is the target)"
        )
    return (external, this) if kind == "SOURCE" else (this, external)
