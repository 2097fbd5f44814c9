"""Java client security settings that need more than a rename to reach librdkafka: key and
trust stores (JKS ones read at start-up, jks.py), `sasl.jaas.config` (PLAIN, SCRAM, OAUTHBEARER,
AWS MSK IAM), and the pluggable Java classes we cannot run.

Anything whose loss would quietly weaken security (a truststore we cannot read, a login
module we cannot run) is an error that says what to configure instead; it is never dropped.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from kmirror.config import oauth
from kmirror.config.javaclient import jks

# Java classes that change who we authenticate as or what we trust: without them the
# connection would be less secure or not authenticated the way the user intended.
FATAL_KEYS: Mapping[str, str] = {
    "interceptor.classes": "interceptors are Java classes and cannot run in kmirror; remove it "
    "(kmirror exports Prometheus metrics for monitoring)",
    "sasl.login.callback.handler.class": "custom Java login code cannot run here; for OAuth "
    "set sasl.mechanism=OAUTHBEARER, sasl.oauthbearer.method=oidc, "
    "sasl.oauthbearer.client.id, sasl.oauthbearer.client.secret and "
    "sasl.oauthbearer.token.endpoint.url",
    "sasl.client.callback.handler.class": "custom Java SASL code cannot run here; use "
    "sasl.username/sasl.password (PLAIN, SCRAM) or sasl.oauthbearer.* (OAUTHBEARER)",
    "sasl.login.class": "custom Java login classes cannot run here; use sasl.username/"
    "sasl.password (PLAIN, SCRAM), sasl.oauthbearer.* or sasl.kerberos.*",
    "security.providers": "Java security providers cannot be loaded; librdkafka uses OpenSSL "
    "(see ssl.providers and ssl.engine.location)",
    "ssl.engine.factory.class": "a Java SSLEngine factory cannot run here; give PEM files "
    "(ssl.ca.location, ssl.certificate.location, ssl.key.location)",
}

_NOT_JKS_TRUST = (
    "is not a JKS file (Java's default type when ssl.truststore.type is not set): for a PEM "
    "file set ssl.truststore.type=PEM; for PKCS12 run `openssl pkcs12 -in truststore.p12 "
    "-nokeys -out ca.pem` and give ca.pem with ssl.truststore.type=PEM"
)
_P12_TRUST = (
    "librdkafka needs the trusted CAs as PEM: run `openssl pkcs12 -in truststore.p12 -nokeys "
    "-out ca.pem`, then set ssl.truststore.type=PEM with ssl.truststore.location=ca.pem (or "
    "ssl.ca.location=ca.pem)"
)
_NOT_JKS_KEY = (
    "is not a JKS file (Java's default type when ssl.keystore.type is not set): set "
    "ssl.keystore.type to PKCS12 or PEM to match the file"
)
_MISSING = "cannot be read: mount it there or fix"


@dataclass
class SecurityResult:
    conf: dict[str, str] = field(default_factory=dict)
    consumed: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


# Java classes kmirror does the job of itself (oauth.py, librdkafka's OIDC client).
_MSK_PACKAGE = "software.amazon.msk.auth.iam."
_OIDC_HANDLERS = (
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
    "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler",
)
_HANDLERS = ("sasl.login.callback.handler.class", "sasl.client.callback.handler.class")


def _replaced_class(key: str, value: str) -> bool:
    return key in _HANDLERS and (
        value.startswith(_MSK_PACKAGE)
        or (key == "sasl.login.callback.handler.class" and value in _OIDC_HANDLERS)
    )


def translate_security(props: Mapping[str, str]) -> SecurityResult:
    """Stores, JAAS and forbidden classes. Unhandled keys are left to the caller."""
    res = SecurityResult()
    for key, why in FATAL_KEYS.items():
        if key in props:
            res.consumed.add(key)
            value = props[key].strip()
            # An empty list is Java's default: nothing to lose.
            if value and not _replaced_class(key, value):
                res.errors.append(f"'{key}' is not supported: {why}")
    _truststore(props, res)
    _keystore(props, res)
    if "sasl.jaas.config" in props:
        res.consumed.add("sasl.jaas.config")
        _jaas(props, res)
    elif _msk(props):
        _msk_iam(props, {}, res)
    return res


def _msk(props: Mapping[str, str]) -> bool:
    return any(props.get(k, "").strip().startswith(_MSK_PACKAGE) for k in _HANDLERS) or (
        props.get("sasl.mechanism", "").strip().upper() == "AWS_MSK_IAM"
    )


def _truststore(props: Mapping[str, str], res: SecurityResult) -> None:
    location = props.get("ssl.truststore.location", "").strip()
    kind = props.get("ssl.truststore.type", "").strip().upper()
    res.consumed |= {"ssl.truststore.location", "ssl.truststore.type", "ssl.truststore.password"}
    res.consumed.add("ssl.truststore.certificates")
    if "ssl.truststore.certificates" in props:
        res.conf["ssl.ca.pem"] = props["ssl.truststore.certificates"]
    if location:
        if kind == "PEM":
            res.conf["ssl.ca.location"] = location
        elif kind == "PKCS12":
            res.errors.append(f"PKCS12 truststore '{location}': {_P12_TRUST}")
        elif kind in ("", "JKS") and jks.is_jks(location):
            _jks_truststore(location, props.get("ssl.truststore.password"), res)
        elif kind in ("", "JKS") and not os.path.isfile(location):
            res.errors.append(f"JKS truststore '{location}' {_MISSING} ssl.truststore.location")
        elif kind in ("", "JKS"):
            res.errors.append(f"JKS truststore '{location}' {_NOT_JKS_TRUST}")
        else:
            res.errors.append(
                f"ssl.truststore.type={kind} is not supported: use JKS, PKCS12 (converted to "
                "PEM with `openssl pkcs12 -in truststore.p12 -nokeys -out ca.pem`) or PEM"
            )
    elif kind and "ssl.truststore.certificates" not in props:
        res.notes.append(f"ssl.truststore.type={kind} without a truststore location ignored")
    if "ssl.truststore.password" in props and kind == "PEM":
        res.notes.append("ssl.truststore.password ignored: PEM CA files have no password")


def _keystore(props: Mapping[str, str], res: SecurityResult) -> None:
    location = props.get("ssl.keystore.location", "").strip()
    kind = props.get("ssl.keystore.type", "").strip().upper()
    res.consumed |= {"ssl.keystore.location", "ssl.keystore.type", "ssl.keystore.password"}
    res.consumed |= {"ssl.keystore.certificate.chain", "ssl.keystore.key"}
    if "ssl.keystore.certificate.chain" in props:
        res.conf["ssl.certificate.pem"] = props["ssl.keystore.certificate.chain"]
    if "ssl.keystore.key" in props:
        res.conf["ssl.key.pem"] = props["ssl.keystore.key"]
    if not location:
        if kind and "ssl.keystore.key" not in props:
            res.notes.append(f"ssl.keystore.type={kind} without a keystore location ignored")
        return
    if not kind and location.lower().endswith((".p12", ".pfx")):
        kind = "PKCS12"
        res.notes.append(
            f"keystore '{location}' read as PKCS12 (from its extension; Java defaults to JKS): "
            "set ssl.keystore.type=PKCS12 to make that explicit"
        )
    if kind == "PKCS12":
        res.conf["ssl.keystore.location"] = location
        if "ssl.keystore.password" in props:
            res.conf["ssl.keystore.password"] = props["ssl.keystore.password"]
        if "ssl.key.password" in props:
            res.consumed.add("ssl.key.password")
            res.notes.append(
                "ssl.key.password ignored for a PKCS12 keystore: librdkafka opens the key "
                "with ssl.keystore.password"
            )
    elif kind == "PEM":
        # Java's PEM keystore is one file holding the key and the certificate chain.
        res.conf["ssl.certificate.location"] = location
        res.conf["ssl.key.location"] = location
        if "ssl.keystore.password" in props:
            res.notes.append(
                "ssl.keystore.password ignored for a PEM keystore (Java ignores "
                "it too); an encrypted key's password is ssl.key.password"
            )
    elif kind in ("", "JKS") and jks.is_jks(location):
        _jks_keystore(location, props, res)
    elif kind in ("", "JKS") and not os.path.isfile(location):
        res.errors.append(f"JKS keystore '{location}' {_MISSING} ssl.keystore.location")
    elif kind in ("", "JKS"):
        res.errors.append(f"JKS keystore '{location}' {_NOT_JKS_KEY}")
    else:
        res.errors.append(f"ssl.keystore.type={kind} is not supported: use JKS, PKCS12 or PEM")


def _jks_truststore(location: str, password: str | None, res: SecurityResult) -> None:
    # Converted at start-up: librdkafka takes the CAs as inline PEM, nothing is written.
    store = jks.read_jks(location, password)
    # Java trusts a key entry's own certificate too.
    certs = [der for _, der in store.certificates] + [k.chain[0] for k in store.keys if k.chain]
    if not certs:
        res.errors.append(f"JKS truststore '{location}' holds no certificate")
        return
    res.conf["ssl.ca.pem"] = jks.certificates_pem(certs)
    res.notes.append(f"JKS truststore '{location}' read as {len(certs)} PEM CA certificate(s)")


def _jks_keystore(location: str, props: Mapping[str, str], res: SecurityResult) -> None:
    res.consumed.add("ssl.key.password")
    password = props.get("ssl.keystore.password")
    if password is None:
        res.errors.append(f"JKS keystore '{location}' needs ssl.keystore.password")
        return
    store = jks.read_jks(location, password, props.get("ssl.key.password"))
    if len(store.keys) != 1:
        res.errors.append(
            f"JKS keystore '{location}' holds {len(store.keys)} private keys; kmirror needs "
            "exactly one (Java would pick one by alias): export it with keytool -importkeystore "
            "-srcalias <alias> -deststoretype PKCS12 and set ssl.keystore.type=PKCS12"
        )
        return
    entry = store.keys[0]
    res.conf["ssl.key.pem"] = jks.key_pem(entry.pkcs8)
    res.conf["ssl.certificate.pem"] = jks.certificates_pem(entry.chain)
    res.notes.append(f"JKS keystore '{location}': key {entry.alias!r} read as PEM")


_JAAS = re.compile(
    r"^\s*(?P<module>[\w.$]+)\s+(?P<flag>required|requisite|sufficient|optional)"
    r"(?P<options>(?:\s+[\w.\-]+\s*=\s*(?:\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|[^\s;\"']+))*)"
    r"\s*;\s*$",
    re.DOTALL,
)
_JAAS_OPTION = re.compile(
    r"([\w.\-]+)\s*=\s*(\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|[^\s;\"']+)", re.DOTALL
)
_MODULE_ALTERNATIVES = {
    "Krb5LoginModule": "set sasl.mechanism=GSSAPI with sasl.kerberos.service.name, "
    "sasl.kerberos.principal and sasl.kerberos.keytab",
}


def _jaas(props: Mapping[str, str], res: SecurityResult) -> None:
    # Messages name the login module only: the text itself holds the password.
    match = _JAAS.match(props["sasl.jaas.config"])
    if not match:
        res.errors.append(
            'sasl.jaas.config is not of the form `<LoginModule> required username="..." '
            'password="...";` (value not shown: it holds credentials)'
        )
        return
    module = match["module"].rsplit(".", 1)[-1]
    mechanism = props.get("sasl.mechanism", "").strip().upper()
    options = {k: _unquote(v) for k, v in _JAAS_OPTION.findall(match["options"])}
    if module == "IAMLoginModule" or (module == "OAuthBearerLoginModule" and _msk(props)):
        _msk_iam(props, options, res)
        return
    if module == "OAuthBearerLoginModule":
        _oauthbearer(props, options, res)
        return
    if module not in ("PlainLoginModule", "ScramLoginModule"):
        alternative = _MODULE_ALTERNATIVES.get(
            module,
            "librdkafka supports PLAIN and SCRAM (sasl.username/sasl.password), "
            "OAUTHBEARER (sasl.oauthbearer.*) and GSSAPI (sasl.kerberos.*)",
        )
        res.errors.append(f"sasl.jaas.config login module {module} is not supported: {alternative}")
        return
    missing = [k for k in ("username", "password") if k not in options]
    if missing:
        res.errors.append(f"sasl.jaas.config ({module}) has no {' or '.join(missing)}")
        return
    if module == "PlainLoginModule":
        if not mechanism:
            res.conf["sasl.mechanism"] = "PLAIN"
            res.notes.append(
                "sasl.mechanism set to PLAIN to match sasl.jaas.config's "
                "PlainLoginModule (Java would default to GSSAPI and fail)"
            )
        elif mechanism != "PLAIN":
            res.errors.append(
                f"sasl.jaas.config uses PlainLoginModule but sasl.mechanism is "
                f"{mechanism}: set sasl.mechanism=PLAIN"
            )
    elif not mechanism.startswith("SCRAM-SHA-"):
        res.errors.append(
            "sasl.jaas.config uses ScramLoginModule: set sasl.mechanism="
            "SCRAM-SHA-256 or SCRAM-SHA-512 to match the broker"
        )
    if {"sasl.username", "sasl.password"} & props.keys():
        res.notes.append("sasl.username/sasl.password replaced by the sasl.jaas.config credentials")
    res.conf["sasl.username"] = options["username"]
    res.conf["sasl.password"] = options["password"]
    res.consumed |= {"sasl.username", "sasl.password"}
    extra = sorted(set(options) - {"username", "password"})
    if extra:
        res.notes.append(
            f"sasl.jaas.config option(s) {', '.join(extra)} ignored: librdkafka has no equivalent"
        )


def _oauth_mechanism(props: Mapping[str, str], res: SecurityResult, accepted: set[str]) -> bool:
    mechanism = props.get("sasl.mechanism", "").strip().upper()
    res.consumed.add("sasl.mechanism")
    if mechanism and mechanism not in accepted:
        res.errors.append(
            f"sasl.jaas.config is an OAUTHBEARER login but sasl.mechanism is {mechanism}: "
            "set sasl.mechanism=OAUTHBEARER"
        )
        return False
    res.conf["sasl.mechanism"] = "OAUTHBEARER"
    return True


def _msk_iam(props: Mapping[str, str], options: Mapping[str, str], res: SecurityResult) -> None:
    """MSK's IAM login (its Java jar) becomes the same signed token from oauth.py."""
    if not _oauth_mechanism(props, res, {"AWS_MSK_IAM", "OAUTHBEARER"}):
        return
    res.notes.append(
        "AWS MSK IAM authentication: sent as SASL/OAUTHBEARER with a token signed by "
        "aws-msk-iam-sasl-signer-python (MSK's IAM listeners accept it like AWS_MSK_IAM)"
    )
    res.conf[oauth.PROVIDER] = oauth.MSK_IAM
    for option, key in (
        ("awsProfileName", oauth.AWS_PROFILE),
        ("awsRoleArn", oauth.AWS_ROLE_ARN),
        ("awsRoleSessionName", oauth.AWS_ROLE_SESSION_NAME),
    ):
        if options.get(option, "").strip():
            res.conf[key] = options[option].strip()
    extra = sorted(set(options) - {"awsProfileName", "awsRoleArn", "awsRoleSessionName"})
    if extra:
        res.notes.append(f"sasl.jaas.config option(s) {', '.join(extra)} ignored for MSK IAM")


def _oauthbearer(props: Mapping[str, str], options: Mapping[str, str], res: SecurityResult) -> None:
    """Java's OAuthBearerLoginModule: OIDC client credentials (with Kafka's login callback
    handler and a token endpoint) or, without them, its unsecured development tokens."""
    if not _oauth_mechanism(props, res, {"OAUTHBEARER"}):
        return
    handler = props.get("sasl.login.callback.handler.class", "").strip()
    endpoint = props.get("sasl.oauthbearer.token.endpoint.url", "").strip()
    if handler in _OIDC_HANDLERS or endpoint:
        missing = [o for o in ("clientId", "clientSecret") if not options.get(o)]
        if not endpoint or missing:
            need = (["sasl.oauthbearer.token.endpoint.url"] if not endpoint else []) + missing
            res.errors.append(f"OAUTHBEARER with OIDC needs {' and '.join(need)}")
            return
        res.conf["sasl.oauthbearer.method"] = "oidc"
        res.conf["sasl.oauthbearer.client.id"] = options["clientId"]
        res.conf["sasl.oauthbearer.client.secret"] = options["clientSecret"]
        if options.get("scope"):
            res.conf["sasl.oauthbearer.scope"] = options["scope"]
        extensions = [f"{k[10:]}={v}" for k, v in options.items() if k.startswith("extension_")]
        if extensions:
            res.conf["sasl.oauthbearer.extensions"] = ",".join(extensions)
        return
    claims = {k[len("unsecuredLoginStringClaim_") :]: v for k, v in options.items()
              if k.startswith("unsecuredLoginStringClaim_")}  # fmt: skip
    principal = claims.get(options.get("unsecuredLoginPrincipalClaimName", "sub"))
    if not principal:
        res.errors.append(
            "sasl.jaas.config OAuthBearerLoginModule has neither OIDC settings (sasl.login."
            "callback.handler.class=org.apache.kafka.common.security.oauthbearer."
            "OAuthBearerLoginCallbackHandler, sasl.oauthbearer.token.endpoint.url, clientId, "
            'clientSecret) nor an unsecured token subject (unsecuredLoginStringClaim_sub="...")'
        )
        return
    config = [f"principal={principal}"]
    if options.get("unsecuredLoginLifetimeSeconds"):
        config.append(f"lifeSeconds={options['unsecuredLoginLifetimeSeconds']}")
    config += [f"{k}={v}" for k, v in options.items() if k.startswith("extension_")]
    res.conf["enable.sasl.oauthbearer.unsecure.jwt"] = "true"
    res.conf["sasl.oauthbearer.config"] = " ".join(config)
    res.notes.append(
        "OAUTHBEARER with unsecured (unsigned) tokens for principal "
        f"{principal!r}: only development brokers accept them"
    )


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        escapes = {"n": "\n", "t": "\t", "r": "\r"}
        return re.sub(r"\\(.)", lambda m: escapes.get(m[1], m[1]), value[1:-1], flags=re.DOTALL)
    return value
