"""KUDO operator dialect: the cluster the mirror runs beside ("this") and an external one,
with MIRROR_MAKER_EXTERNAL_CLUSTER_TYPE saying which of the two is the source.

Every flag falls back to the operator's environment variable (env.py), so a pod rendered by
the KUDO operator runs unchanged. sides.kudo_roles turns the pair into a source and a target;
`load_pair` builds the model from them (kmirror-validate's direct flags use it too). Security
(which KUDO's MirrorMaker never supported) comes from the SOURCE_CLUSTER_* / SINK_CLUSTER_*
variables of sides.SIDE_VARS; `security_from_env` is shared with the container entrypoint.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from kmirror.config import env as envvars
from kmirror.config import oauth
from kmirror.config.model import (
    DEFAULT_NUM_STREAMS,
    ClusterConfig,
    ConfValue,
    MirrorConfig,
    TopicSelection,
    split_patterns,
)
from kmirror.config.secret import seal
from kmirror.config.sides import (
    BY_SUFFIX,
    MECHANISMS,
    PROTOCOLS,
    SOURCE,
    TARGET,
    Side,
    kudo_roles,
    read_by,
    suffixes,
)
from kmirror.config.values import parse_bool, parse_int
from kmirror.errors import ConfigError


def security_from_env(
    side: Side, environ: Mapping[str, str] | None = None
) -> tuple[dict[str, ConfValue], list[str]]:
    """librdkafka security settings for one side from its *_SECURITY_PROTOCOL, *_SASL_*,
    *_SSL_* variables (passwords only from *_FILE). Returns (sealed conf, notes)."""
    environ = os.environ if environ is None else environ
    notes: list[str] = []

    def var(suffix: str) -> str:
        return envvars.get(f"{side}_{suffix}", environ).strip()

    def given(suffix: str) -> bool:
        return bool(environ.get(f"{side}_{suffix}", "").strip())

    protocol = var("SECURITY_PROTOCOL").upper()
    if protocol not in PROTOCOLS:
        raise ConfigError(
            f"{side}_SECURITY_PROTOCOL={protocol!r} must be one of {', '.join(PROTOCOLS)}"
        )
    conf: dict[str, str] = {"security.protocol": protocol}
    sasl = suffixes("sasl")
    if protocol.startswith("SASL_"):
        mechanism = var("SASL_MECHANISM").upper()
        if mechanism not in MECHANISMS:
            raise ConfigError(
                f"{side}_SASL_MECHANISM must be one of {', '.join(MECHANISMS)} "
                f"when {side}_SECURITY_PROTOCOL={protocol}, not {mechanism!r}"
            )
        conf |= _sasl(side, mechanism, var, environ)
        used = read_by(mechanism, var("SASL_OAUTHBEARER_METHOD").lower())
        _ignored(side, [s for s in sasl if s not in used and given(s)], mechanism, notes)
    else:
        _ignored(side, [s for s in sasl if given(s)], protocol, notes)
    ssl = suffixes("ssl")
    if protocol.endswith("SSL"):
        for suffix in ("SSL_CA_LOCATION", "SSL_CERTIFICATE_LOCATION", "SSL_KEY_LOCATION"):
            if var(suffix):
                conf[_key(suffix)] = var(suffix)
        if ("ssl.certificate.location" in conf) != ("ssl.key.location" in conf):
            raise ConfigError(
                f"mTLS needs both {side}_SSL_CERTIFICATE_LOCATION and {side}_SSL_KEY_LOCATION"
            )
        key_password = envvars.read_secret_file(f"{side}_SSL_KEY_PASSWORD_FILE", environ)
        if key_password is not None:
            conf["ssl.key.password"] = key_password
        algorithm = var("SSL_ENDPOINT_IDENTIFICATION_ALGORITHM").lower() or "https"
        if algorithm not in ("https", "none"):
            raise ConfigError(
                f"{side}_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM must be https or "
                f"none, not {algorithm!r}"
            )
        conf["ssl.endpoint.identification.algorithm"] = algorithm
    else:
        _ignored(side, [s for s in ssl if given(s)], protocol, notes)
    return seal(conf), notes


def _sasl(
    side: Side, mechanism: str, var: Callable[[str], str], environ: Mapping[str, str]
) -> dict[str, str]:
    """librdkafka SASL settings for one mechanism; what it lacks is an error naming the
    variables to set."""
    if mechanism == "AWS_MSK_IAM":  # oauth.check() validates the region with the bootstrap
        conf = {"sasl.mechanism": "OAUTHBEARER", oauth.PROVIDER: oauth.MSK_IAM}
        for suffix in ("AWS_REGION", "AWS_ROLE_ARN"):
            if var(suffix):
                conf[_key(suffix)] = var(suffix)
        return conf
    if mechanism == "OAUTHBEARER":
        method = var("SASL_OAUTHBEARER_METHOD").lower()
        if method == "unsecured":
            if not var("SASL_OAUTHBEARER_CONFIG"):
                raise ConfigError(
                    f"{side}_SASL_OAUTHBEARER_METHOD=unsecured needs "
                    f"{side}_SASL_OAUTHBEARER_CONFIG (e.g. 'principal=admin')"
                )
            return {
                "sasl.mechanism": "OAUTHBEARER",
                "enable.sasl.oauthbearer.unsecure.jwt": "true",
                _key("SASL_OAUTHBEARER_CONFIG"): var("SASL_OAUTHBEARER_CONFIG"),
            }
        if method != "oidc":
            raise ConfigError(
                f"{side}_SASL_OAUTHBEARER_METHOD must be oidc or unsecured, not {method!r}"
            )
        secret = envvars.read_secret_file(f"{side}_SASL_OAUTHBEARER_CLIENT_SECRET_FILE", environ)
        needed = ("TOKEN_ENDPOINT_URL", "CLIENT_ID")
        if secret is None or not all(var(f"SASL_OAUTHBEARER_{n}") for n in needed):
            raise ConfigError(
                f"{side}_SASL_MECHANISM=OAUTHBEARER (method oidc) needs "
                f"{side}_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL, {side}_SASL_OAUTHBEARER_CLIENT_ID "
                f"and {side}_SASL_OAUTHBEARER_CLIENT_SECRET_FILE (a file holding the secret)"
            )
        conf = {"sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.method": "oidc"}
        conf["sasl.oauthbearer.client.secret"] = secret
        for name in ("TOKEN_ENDPOINT_URL", "CLIENT_ID", "SCOPE", "EXTENSIONS"):
            if var(f"SASL_OAUTHBEARER_{name}"):
                conf[_key(f"SASL_OAUTHBEARER_{name}")] = var(f"SASL_OAUTHBEARER_{name}")
        return conf
    password = envvars.read_secret_file(f"{side}_SASL_PASSWORD_FILE", environ)
    if not var("SASL_USERNAME") or password is None:
        raise ConfigError(
            f"{side}_SASL_MECHANISM={mechanism} needs {side}_SASL_USERNAME "
            f"and {side}_SASL_PASSWORD_FILE (a file holding the password)"
        )
    return {"sasl.mechanism": mechanism, _key("SASL_USERNAME"): var("SASL_USERNAME"),
            "sasl.password": password}  # fmt: skip


def _key(suffix: str) -> str:
    key = BY_SUFFIX[suffix].key
    assert key is not None, suffix  # the table gives every variable read as it is a key
    return key


def _ignored(side: str, names: list[str], why: str, notes: list[str]) -> None:
    if names:
        what = "SASL_MECHANISM" if why in MECHANISMS else "SECURITY_PROTOCOL"
        notes.append(f"{', '.join(f'{side}_{n}' for n in names)} ignored: {side}_{what} is {why}")


def load_kudo(
    this_bootstrap: str | None,
    external_bootstrap: str | None,
    external_type: str | None,
    *,
    whitelist: str | None = None,
    blacklist: str | None = None,
    num_streams: int | None = None,
    offset_commit_interval_ms: int | None = None,
    abort_on_send_failure: bool | None = None,
    group_id: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> MirrorConfig:
    """Flags win; each missing one is read from its KUDO (MIRROR_MAKER_*) variable."""
    environ = os.environ if environ is None else environ
    this = _fallback(environ, this_bootstrap, "MIRROR_MAKER_THIS_BOOTSTRAP_SERVERS")
    external = _fallback(environ, external_bootstrap, "MIRROR_MAKER_EXTERNAL_BOOTSTRAP_SERVERS")
    kind = _fallback(environ, external_type, "MIRROR_MAKER_EXTERNAL_CLUSTER_TYPE")
    for value, flag, name in (
        (this, "--this-bootstrap-servers", "MIRROR_MAKER_THIS_BOOTSTRAP_SERVERS"),
        (external, "--external-bootstrap-servers", "MIRROR_MAKER_EXTERNAL_BOOTSTRAP_SERVERS"),
        (kind, "--external-cluster-type", "MIRROR_MAKER_EXTERNAL_CLUSTER_TYPE"),
    ):
        if not value:
            raise ConfigError(
                f"KUDO mode needs {flag} (or the environment variable {name}): "
                f"{envvars.BY_NAME[name].description}"
            )
    assert this and external and kind  # narrowed by the loop above
    src, dst = kudo_roles(
        this, external, kind, "--external-cluster-type / MIRROR_MAKER_EXTERNAL_CLUSTER_TYPE"
    )
    return load_pair(
        src,
        dst,
        whitelist=whitelist,
        blacklist=blacklist,
        num_streams=num_streams,
        offset_commit_interval_ms=offset_commit_interval_ms,
        abort_on_send_failure=abort_on_send_failure,
        group_id=group_id,
        environ=environ,
    )


def load_pair(
    source: str,
    target: str,
    *,
    whitelist: str | None = None,
    blacklist: str | None = None,
    num_streams: int | None = None,
    offset_commit_interval_ms: int | None = None,
    abort_on_send_failure: bool | None = None,
    group_id: str | None = None,
    environ: Mapping[str, str] | None = None,
    dialect: str = "kudo",
) -> MirrorConfig:
    """The model for two clusters given by their bootstrap servers (KUDO's pair once its roles
    are resolved, or kmirror-validate's --source/--target-bootstrap-servers): security from
    the SOURCE_CLUSTER_* / SINK_CLUSTER_* variables, the rest from flags or KUDO variables."""
    environ = os.environ if environ is None else environ
    src_security, notes = security_from_env(SOURCE, environ)
    dst_security, dst_notes = security_from_env(TARGET, environ)
    commit = offset_commit_interval_ms
    if commit is None:
        name = "MIRROR_MAKER_OFFSET_COMMIT_INTERVAL"
        commit = parse_int(envvars.get(name, environ), name, minimum=1)
    streams = num_streams
    if streams is None:
        raw = _fallback(environ, None, "MIRROR_MAKER_NUM_STREAMS", "NUM_STREAMS")
        raw = raw or str(DEFAULT_NUM_STREAMS)
        streams = parse_int(raw, "MIRROR_MAKER_NUM_STREAMS / NUM_STREAMS", minimum=1)
    abort = abort_on_send_failure
    if abort is None:
        name = "MIRROR_MAKER_ABORT_ON_SEND_FAILURE"
        abort = parse_bool(envvars.get(name, environ), name)
    include = (
        _fallback(environ, whitelist, "MIRROR_MAKER_TOPIC_WHITELIST", "WHITELISTED_TOPICS") or ".*"
    )
    exclude = _fallback(environ, blacklist, "BLACKLISTED_TOPICS") or ""
    return MirrorConfig(
        source=ClusterConfig("source", source, common=src_security),
        target=ClusterConfig("target", target, common=dst_security),
        group_id=group_id or envvars.get("SOURCE_CLUSTER_CONSUMER_GROUP", environ),
        topics=TopicSelection(include=split_patterns(include), exclude=split_patterns(exclude)),
        num_streams=streams,
        offset_commit_interval_ms=commit,
        abort_on_send_failure=abort,
        dialect=dialect,
        notes=tuple(notes + dst_notes),
    )


def _fallback(environ: Mapping[str, str], flag_value: str | None, *names: str) -> str | None:
    """The flag's value, else the first variable that is set or has a documented default."""
    if flag_value is not None and flag_value.strip():
        return flag_value.strip()
    for name in names:
        if environ.get(name, "").strip() or envvars.BY_NAME[name].default is not None:
            return envvars.get(name, environ).strip()
    return None
