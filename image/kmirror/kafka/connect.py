"""Start-up connection check: a cluster answers a metadata request, or a clear error (exit 3)
within a bounded time.

librdkafka retries a broker forever and reports why it failed only through `error_cb`, which
runs inside `poll()`. A plain `list_topics(timeout=30)` therefore fails after 30 s with "Broker
transport failure", whatever the cause. Asking in one-second steps and serving the callbacks in
between turns a refused password or an untrusted certificate into an immediate, named error,
and leaves only an unreachable address to wait for the timeout.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from kmirror.errors import ClusterError

# Start-up budget for both clusters of a `kmirror run` (the stream process adds ~2 s).
CONNECT_TIMEOUT_S = 20.0

_AUTH = (KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED)
# What a broker that refuses our client certificate (mTLS) makes OpenSSL report.
_TLS_ALERT = re.compile(r"alert (bad certificate|certificate required|unknown ca|access denied)")


def refusal(err: KafkaError) -> str | None:
    """Why the cluster refuses us, when err says so (no retry can help); None otherwise."""
    code = err.code()
    if code in _AUTH:
        return (
            f"authentication failed: {err.str()}. Check the SASL mechanism, user name and "
            "password (file) for this cluster"
        )
    if code == KafkaError._SSL:
        return (
            f"TLS handshake failed: {err.str()}. Check the CA file (ssl.ca.location / "
            "ssl.truststore.location) and that the bootstrap host names are in the brokers' "
            "certificates"
        )
    if code == KafkaError._TRANSPORT and _TLS_ALERT.search(err.str()):
        return (
            f"the broker refused the TLS connection: {err.str()}. Check the client "
            "certificate and key (mTLS: ssl.certificate.location / ssl.key.location, Java: "
            "ssl.keystore.*)"
        )
    return None


def await_metadata(
    client: Any,
    serve: Callable[[], object],
    errors: Sequence[KafkaError],
    deadline: float,
    side: str,
    bootstrap: str,
) -> Any:
    """client.list_topics() once the cluster answers. `serve` runs the client's callbacks
    (poll(0)), which append to `errors`. Raises ClusterError on a refusal at once, and when
    `deadline` (time.monotonic()) passes."""
    started = time.monotonic()
    last: object = None
    while True:
        try:
            return client.list_topics(timeout=max(0.2, min(1.0, deadline - time.monotonic())))
        except KafkaException as exc:
            last = exc.args[0] if exc.args else exc
        serve()
        for err in errors:
            reason = refusal(err)
            if reason is not None:
                raise ClusterError(f"the {side} cluster at {bootstrap} refused us: {reason}")
        if time.monotonic() >= deadline:
            seen = [e for e in errors if e.code() != KafkaError._ALL_BROKERS_DOWN]
            if seen:
                detail = seen[-1].str()
            else:
                detail = last.str() if isinstance(last, KafkaError) else str(last)
            raise ClusterError(
                f"cannot reach the {side} cluster at {bootstrap} within "
                f"{time.monotonic() - started:.0f}s ({detail}): check the bootstrap servers, "
                "the network and the security settings (security.protocol, TLS)"
            )
