"""SASL/OAUTHBEARER token providers that librdkafka does not have itself: AWS MSK IAM.

librdkafka fetches OIDC tokens (`sasl.oauthbearer.method=oidc`) and makes unsecured test
tokens on its own; MSK's IAM authentication needs a SigV4-signed token from AWS credentials,
which only the `aws-msk-iam-sasl-signer-python` package makes. The choice travels through the
configuration as the plain-string `kmirror.sasl.*` keys below (configs are pickled to the stream
processes and written to .properties files, so they cannot hold a callable); `attach` turns
them into confluent-kafka's `oauth_cb` right where a client is created.

Credentials come from botocore's default chain: IRSA / EKS Pod Identity (a web identity token
file and role from the pod's ServiceAccount), the instance profile, or AWS_* variables. kmirror
never stores or needs static keys.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Mapping
from typing import Any

from kmirror.errors import ConfigError

log = logging.getLogger(__name__)

PREFIX = "kmirror.sasl."
PROVIDER = "kmirror.sasl.oauthbearer.provider"
AWS_REGION = "kmirror.sasl.aws.region"
AWS_PROFILE = "kmirror.sasl.aws.profile"
AWS_ROLE_ARN = "kmirror.sasl.aws.role.arn"
AWS_ROLE_SESSION_NAME = "kmirror.sasl.aws.role.session.name"
MSK_IAM = "aws-msk-iam"
KEYS: Mapping[str, str] = {
    PROVIDER: f"token provider for sasl.mechanism=OAUTHBEARER: {MSK_IAM}",
    AWS_REGION: "AWS region of the MSK cluster (default: from the broker host name, then "
    "AWS_REGION / AWS_DEFAULT_REGION)",
    AWS_PROFILE: "AWS profile to take credentials from (default: botocore's default chain)",
    AWS_ROLE_ARN: "IAM role to assume for the token (default: the pod's own identity)",
    AWS_ROLE_SESSION_NAME: "session name when assuming AWS role.arn",
}
# b-1.mycluster.abc123.c2.kafka.eu-west-1.amazonaws.com, boot-xyz.c1.kafka-serverless.…
_MSK_HOST = re.compile(r"\.kafka(?:-serverless)?\.([a-z]{2}(?:-[a-z]+)+-\d)\.amazonaws\.com\.?$")


def is_provider_key(key: str) -> bool:
    return key.startswith(PREFIX)


def region_of(bootstrap_servers: str) -> str | None:
    """The AWS region an MSK broker host name carries, if it is one."""
    for server in bootstrap_servers.split(","):
        match = _MSK_HOST.search(server.strip().rpartition(":")[0].lower())
        if match:
            return match[1]
    return None


def check(conf: Mapping[str, object], bootstrap_servers: str, where: str) -> None:
    """Refuse a provider configuration that could never authenticate, before anything runs."""
    given = {k: str(v).strip() for k, v in conf.items() if is_provider_key(k)}
    if not given:
        return
    unknown = sorted(set(given) - set(KEYS))
    if unknown:
        raise ConfigError(
            f"{where}: unknown kmirror property {', '.join(unknown)}: the token provider "
            f"settings are {', '.join(KEYS)}"
        )
    provider = given.get(PROVIDER, "")
    if provider != MSK_IAM:
        raise ConfigError(f"{where}: {PROVIDER}={provider!r}: the only provider is {MSK_IAM}")
    mechanism = str(conf.get("sasl.mechanism", conf.get("sasl.mechanisms", ""))).upper()
    if mechanism != "OAUTHBEARER":
        raise ConfigError(
            f"{where}: the {MSK_IAM} token provider needs sasl.mechanism=OAUTHBEARER, "
            f"not {mechanism or 'none'}"
        )
    if str(conf.get("sasl.oauthbearer.method", "default")).lower() == "oidc":
        raise ConfigError(
            f"{where}: {MSK_IAM} signs its own tokens: remove sasl.oauthbearer.method=oidc"
        )
    if _region(given, bootstrap_servers, os.environ) is None:
        raise ConfigError(
            f"{where}: the AWS region of the MSK cluster is unknown: set {AWS_REGION} (the "
            "environment variable *_AWS_REGION, chart value auth.aws.region) or AWS_REGION"
        )
    if AWS_ROLE_SESSION_NAME in given and AWS_ROLE_ARN not in given:
        raise ConfigError(f"{where}: {AWS_ROLE_SESSION_NAME} needs {AWS_ROLE_ARN}")


def _region(given: Mapping[str, str], bootstrap: str, environ: Mapping[str, str]) -> str | None:
    return (
        given.get(AWS_REGION)
        or region_of(bootstrap)
        or environ.get("AWS_REGION", "").strip()
        or environ.get("AWS_DEFAULT_REGION", "").strip()
        or None
    )


def attach(conf: Mapping[str, str]) -> dict[str, Any]:
    """The client config librdkafka gets: `kmirror.sasl.*` keys replaced by an `oauth_cb`."""
    out: dict[str, Any] = {k: v for k, v in conf.items() if not is_provider_key(k)}
    given = {k: v.strip() for k, v in conf.items() if is_provider_key(k)}
    if given.get(PROVIDER) == MSK_IAM:
        region = _region(given, conf.get("bootstrap.servers", ""), os.environ)
        if region is None:  # check() ran when the config was loaded; the environment changed
            raise ConfigError(f"the AWS region for {MSK_IAM} is unknown: set {AWS_REGION}")
        out["oauth_cb"] = MskIamToken(
            region,
            profile=given.get(AWS_PROFILE),
            role_arn=given.get(AWS_ROLE_ARN),
            session_name=given.get(AWS_ROLE_SESSION_NAME),
        )
    return out


class MskIamToken:
    """confluent-kafka `oauth_cb`: a fresh signed token (valid 15 minutes) whenever librdkafka
    asks, which it does at 80% of the token's lifetime."""

    def __init__(
        self,
        region: str,
        *,
        profile: str | None = None,
        role_arn: str | None = None,
        session_name: str | None = None,
    ) -> None:
        self.region = region
        self.profile = profile
        self.role_arn = role_arn
        self.session_name = session_name
        self._last_failure = ""

    def _generate(self) -> Callable[[], tuple[str, int]]:
        from aws_msk_iam_sasl_signer import MSKAuthTokenProvider as Signer  # module of functions

        if self.role_arn:
            args = [self.region, self.role_arn] + ([self.session_name] if self.session_name else [])
            return lambda: Signer.generate_auth_token_from_role_arn(*args)
        if self.profile:
            return lambda: Signer.generate_auth_token_from_profile(self.region, self.profile)
        return lambda: Signer.generate_auth_token(self.region)

    def __call__(self, _oauthbearer_config: str | None) -> tuple[str, float]:
        try:
            token, expiry_ms = self._generate()()
        except Exception as exc:
            # Raising is how the binding learns the token failed (it retries and reports
            # SASL_AUTHENTICATION_FAILED); the log says why. botocore's messages name the
            # missing piece, never a credential.
            message = f"{type(exc).__name__}: {exc}"
            if message != self._last_failure:
                self._last_failure = message
                log.error(
                    "AWS MSK IAM token could not be signed (region=%s): %s. Give the pod an "
                    "IAM role (IRSA: the ServiceAccount annotation eks.amazonaws.com/role-arn) "
                    "or AWS credentials through the default chain",
                    self.region,
                    message,
                )
            raise
        self._last_failure = ""
        return token, expiry_ms / 1000.0
