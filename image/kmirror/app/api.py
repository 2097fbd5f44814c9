"""The control API on the metrics port (docs/control.md; the OpenAPI document openapi.json is
served at /openapi.json and is the contract `tests/unit/app/test_api.py` holds the routes to).

Every call but /openapi.json needs the configured credential (kmirror.config.control): a
bearer token, a client certificate, or both; without it the answer is 401 and nothing is
read or changed. Every call is logged (the changing ones at INFO, with the caller's address
and certificate subject, never the token) and counted in `kmirror_control_requests_total`.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import re
from collections.abc import Callable, Mapping
from importlib import resources
from typing import Any

from prometheus_client import CollectorRegistry, Counter

from kmirror.app.control import FlowControl
from kmirror.config.control import ControlSettings, token_from
from kmirror.config.throttle import parse_throttle, throttle_from_json
from kmirror.errors import ClusterError, ConfigError, KmirrorError
from kmirror.metrics.http import Request, Response

log = logging.getLogger(__name__)

_TOPIC = re.compile(r"/topics/([a-zA-Z0-9._-]{1,249})/(pause|resume)")
Handler = Callable[[list[FlowControl], Request, str], Any]


def openapi() -> bytes:
    return resources.files("kmirror.app").joinpath("openapi.json").read_bytes()


class Auth:
    """The configured credential. The token file is read again when it changes (a rotated
    Secret), so a stale token stops working without a restart."""

    def __init__(self, settings: ControlSettings) -> None:
        self._settings = settings
        self._token: str | None = None
        self._stamp: tuple[float, int] | None = None

    def _current(self) -> str | None:
        path = self._settings.token_file
        if path is None:
            return None
        try:
            st = os.stat(path)
            stamp = (st.st_mtime, st.st_ino)
            if stamp != self._stamp:
                self._token, self._stamp = token_from(path), stamp
        except (OSError, ConfigError) as exc:
            # Refuse everything rather than fall back to an older token.
            log.error("control API: the token file cannot be read (%s); refusing calls", exc)
            self._token, self._stamp = None, None
            raise ConfigError("the control API's token file cannot be read") from exc
        return self._token

    def refused(self, request: Request) -> str | None:
        """Why the request may not pass, or None."""
        if self._settings.tls_client_ca is not None and request.cert is None:
            return "no client certificate"
        if self._settings.token_file is not None:
            try:
                token = self._current()
            except ConfigError:
                return "token file unreadable"
            given = request.headers.get("authorization", "")
            scheme, _, value = given.partition(" ")
            if scheme.lower() != "bearer" or not value:
                return "no bearer token"
            if token is None or not hmac.compare_digest(value.strip().encode(), token.encode()):
                return "wrong bearer token"
        return None


class ControlApi:
    def __init__(
        self, flows: list[FlowControl], settings: ControlSettings, registry: CollectorRegistry
    ) -> None:
        self._flows = flows
        self._auth = Auth(settings)
        self._calls = Counter(
            "kmirror_control_requests",
            "Control API calls, by action and outcome (ok, unauthorized, bad_request, "
            "not_found, unavailable, error)",
            ["action", "outcome"],
            registry=registry,
        )

    def __call__(self, request: Request) -> Response | None:
        if request.method == "GET" and request.path == "/openapi.json":
            return Response(200, openapi())
        route = self._route(request)
        if route is None:
            return None
        action, handler, arg = route
        who = _caller(request)
        why = self._auth.refused(request)
        if why is not None:
            log.warning("control API: refused %s %s from %s: %s", request.method,
                        request.path, who, why)  # fmt: skip
            self._calls.labels(action, "unauthorized").inc()
            return _json(401, {"error": f"unauthorized: {why}"},
                         {"WWW-Authenticate": 'Bearer realm="kmirror"'})  # fmt: skip
        return self._handle(action, handler, arg, request, who)

    def _handle(
        self, action: str, handler: Handler, arg: str, request: Request, who: str
    ) -> Response:
        failures: tuple[tuple[type[KmirrorError], str, int], ...] = (
            (_NotFoundError, "not_found", 404),
            (ConfigError, "bad_request", 400),
            (ClusterError, "unavailable", 503),
            (KmirrorError, "error", 500),
        )
        try:
            flows = self._select(request)
            body = handler(flows, request, arg)
        except KmirrorError as exc:
            outcome, code = next((o, c) for kind, o, c in failures if isinstance(exc, kind))
            return self._fail(action, outcome, code, str(exc), request, who)
        level = logging.DEBUG if request.method == "GET" else logging.INFO
        log.log(level, "control API: %s %s by %s flows=%s", action, arg or "-", who,
                ",".join(f.config.flow for f in flows))  # fmt: skip
        self._calls.labels(action, "ok").inc()
        return _json(200, body)

    def _fail(
        self, action: str, outcome: str, code: int, why: str, request: Request, who: str
    ) -> Response:
        log.warning("control API: %s %s from %s failed: %s", request.method, request.path,
                    who, why)  # fmt: skip
        self._calls.labels(action, outcome).inc()
        return _json(code, {"error": why})

    def _route(self, request: Request) -> tuple[str, Handler, str] | None:
        m = _TOPIC.fullmatch(request.path)
        if m is not None and request.method == "POST":
            return m[2], _pause if m[2] == "pause" else _resume, m[1]
        return _ROUTES.get((request.method, request.path))

    def _select(self, request: Request) -> list[FlowControl]:
        wanted = request.query.get("flow")
        if wanted is None:
            return self._flows
        chosen = [f for f in self._flows if f.config.flow == wanted]
        if not chosen:
            names = ", ".join(f.config.flow for f in self._flows)
            raise _NotFoundError(f"no flow {wanted!r} in this mirror (flows: {names})")
        return chosen


class _NotFoundError(KmirrorError):
    pass


def _json(code: int, doc: object, headers: Mapping[str, str] | None = None) -> Response:
    return Response(code, json.dumps(doc, indent=2).encode() + b"\n", headers=dict(headers or {}))


def _caller(request: Request) -> str:
    if request.cert is None:
        return request.peer
    subject = dict(x[0] for x in request.cert.get("subject", ()) if x)
    return f"{request.peer} ({subject.get('commonName', '?')})"


def _body(request: Request) -> Any:
    try:
        return json.loads(request.body or b"{}")
    except ValueError as exc:
        raise ConfigError(f"the request body is not JSON: {exc}") from exc


# -- handlers: (flows, request, path argument) -> the JSON answer --------------------------------


def _status(flows: list[FlowControl], request: Request, arg: str) -> Any:
    return {"flows": [f.status() for f in flows]}


def _pause(flows: list[FlowControl], request: Request, topic: str) -> Any:
    by = _caller(request)
    return {"flows": [_paused(f, f.pause(topic, by).paused, topic) for f in flows]}


def _resume(flows: list[FlowControl], request: Request, topic: str) -> Any:
    return {"flows": [_paused(f, f.resume(topic).paused, topic) for f in flows]}


def _paused(flow: FlowControl, paused: frozenset[str], topic: str) -> dict[str, Any]:
    return {
        "flow": flow.config.flow,
        "topic": topic,
        "paused": topic in paused,
        "selected": bool(flow.config.topics.select({topic})),
    }


def _drain(flows: list[FlowControl], request: Request, arg: str) -> Any:
    out = []
    for flow in flows:
        drain = flow.drain()
        out.append({"flow": flow.config.flow, **drain.to_json()})
    return {"flows": out}


def _drain_status(flows: list[FlowControl], request: Request, arg: str) -> Any:
    out = []
    for flow in flows:
        report = flow.drain_report()
        out.append(
            {"flow": flow.config.flow, "drain": None if report is None else report.to_json()}
        )
    return {"flows": out}


def _drain_cancel(flows: list[FlowControl], request: Request, arg: str) -> Any:
    for flow in flows:
        flow.cancel_drain()
    return {"flows": [{"flow": f.config.flow, "drain": None} for f in flows]}


def _throttle(flows: list[FlowControl], request: Request, arg: str) -> Any:
    return {"flows": [_throttle_doc(f) for f in flows]}


def _throttle_doc(flow: FlowControl) -> dict[str, Any]:
    state = flow.state
    return {
        "flow": flow.config.flow,
        "throttle": state.throttle_for(flow.config.throttle).to_json(),
        "spec": state.throttle_for(flow.config.throttle).spec(),
        "set_at_run_time": state.throttle is not None,
    }


def _throttle_set(flows: list[FlowControl], request: Request, arg: str) -> Any:
    doc = _body(request)
    if isinstance(doc, dict) and set(doc) == {"spec"}:
        settings = parse_throttle(str(doc["spec"]), "spec")
    else:
        settings = throttle_from_json(doc, "the request body")
    for flow in flows:
        flow.set_throttle(settings)
    return {"flows": [_throttle_doc(f) for f in flows]}


def _throttle_clear(flows: list[FlowControl], request: Request, arg: str) -> Any:
    for flow in flows:
        flow.set_throttle(None)
    return {"flows": [_throttle_doc(f) for f in flows]}


_ROUTES: dict[tuple[str, str], tuple[str, Handler, str]] = {
    ("GET", "/status"): ("status", _status, ""),
    ("POST", "/drain"): ("drain", _drain, ""),
    ("GET", "/drain"): ("drain_status", _drain_status, ""),
    ("DELETE", "/drain"): ("drain_cancel", _drain_cancel, ""),
    ("GET", "/throttle"): ("throttle_get", _throttle, ""),
    ("PUT", "/throttle"): ("throttle_set", _throttle_set, ""),
    ("DELETE", "/throttle"): ("throttle_clear", _throttle_clear, ""),
}
ROUTES = (*sorted(_ROUTES), ("POST", "/topics/{topic}/pause"), ("POST", "/topics/{topic}/resume"))
