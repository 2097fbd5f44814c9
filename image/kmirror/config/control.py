"""The control API's settings (docs/control.md): who may pause, resume, drain and throttle a
running mirror over its metrics port.

The API is off unless a credential is configured: a bearer token in a file (a mounted Secret;
re-read when it changes, so a rotated Secret takes effect without a restart) and/or mutual TLS
(the metrics port then speaks TLS with `tls_cert`/`tls_key`, and a control call needs a client
certificate signed by `tls_client_ca`; /metrics and the probes stay open to any TLS client).
With both, a call needs both.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from kmirror.config.secret import read_secret_text
from kmirror.errors import ConfigError


@dataclass(frozen=True)
class ControlSettings:
    token_file: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    tls_client_ca: str | None = None

    def __post_init__(self) -> None:
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ConfigError(
                "--control-tls-cert and --control-tls-key go together: the metrics port needs "
                "both to speak TLS"
            )
        if self.tls_client_ca is not None and self.tls_cert is None:
            raise ConfigError(
                "--control-tls-client-ca (mutual TLS) needs --control-tls-cert and "
                "--control-tls-key: the port must speak TLS to ask for client certificates"
            )

    @property
    def enabled(self) -> bool:
        return self.token_file is not None or self.tls_client_ca is not None

    @property
    def tls(self) -> bool:
        return self.tls_cert is not None

    def check(self) -> None:
        """The files exist and the token is not empty (at start-up, before anything runs)."""
        if self.token_file is not None:
            token_from(self.token_file)
        for path, flag in (
            (self.tls_cert, "--control-tls-cert"),
            (self.tls_key, "--control-tls-key"),
            (self.tls_client_ca, "--control-tls-client-ca"),
        ):
            if path is not None and not os.access(path, os.R_OK):
                raise ConfigError(f"{flag} names {path!r}, which cannot be read: fix the path")


def token_from(path: str) -> str:
    token = read_secret_text(path, "--control-token-file").strip()
    if not token:
        raise ConfigError(
            f"--control-token-file {path!r} is empty: put the bearer token in it (an empty "
            "token would let anybody in)"
        )
    return token
