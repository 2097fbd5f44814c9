"""/metrics, /healthz and /readyz on one port, served from a daemon thread; optionally over TLS
(asking for, not requiring, a client certificate: mutual TLS is judged per request by the
control API) and with more routes handed to a `Routes` callable (the control API, kmirror.app).
"""

from __future__ import annotations

import errno
import logging
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from kmirror.errors import ConfigError

log = logging.getLogger(__name__)

Probe = Callable[[], tuple[bool, str]]
MAX_BODY = 1024 * 1024


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # lower-case names
    body: bytes
    peer: str
    # The client certificate, verified against the server's client CA (None: none was sent).
    cert: dict[str, Any] | None = None


@dataclass(frozen=True)
class Response:
    code: int
    body: bytes
    ctype: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


# A route table beyond the probes: a Response, or None for "not mine" (404).
Routes = Callable[[Request], Response | None]


class HealthServer:
    def __init__(
        self,
        port: int,
        registry: CollectorRegistry,
        healthy: Probe,
        ready: Probe,
        host: str = "0.0.0.0",
        routes: Routes | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self._port, self._host = port, host
        self._registry, self._healthy, self._ready = registry, healthy, ready
        self._routes, self._tls = routes, tls
        self._server: ThreadingHTTPServer | None = None

    @property
    def port(self) -> int:
        return self._server.server_address[1] if self._server else self._port

    def start(self) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    self._send(200, generate_latest(outer._registry), CONTENT_TYPE_LATEST)
                elif path in ("/healthz", "/readyz"):
                    ok, why = (outer._healthy if path == "/healthz" else outer._ready)()
                    self._send(200 if ok else 503, (why + "\n").encode(), "text/plain")
                else:
                    self._route()

            def do_POST(self) -> None:
                self._route()

            def do_PUT(self) -> None:
                self._route()

            def do_DELETE(self) -> None:
                self._route()

            def _route(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length > MAX_BODY:
                    self._send(413, b"request body too large\n", "text/plain")
                    return
                body = self.rfile.read(length) if length else b""
                url = urlsplit(self.path)
                request = Request(
                    method=self.command,
                    path=url.path,
                    query={k: v[-1] for k, v in parse_qs(url.query).items()},
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                    peer=self.client_address[0],
                    cert=_peer_cert(self.connection),
                )
                response = outer._routes(request) if outer._routes else None
                if response is None:
                    self._send(404, b"not found: try /metrics, /healthz or /readyz\n", "text/plain")
                else:
                    self._send(response.code, response.body, response.ctype, response.headers)

            def _send(
                self, code: int, body: bytes, ctype: str, headers: dict[str, str] | None = None
            ) -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                log.debug("http %s", format % args)

        try:
            self._server = _Server((self._host, self._port), Handler)
        except OSError as exc:
            why = {
                errno.EADDRINUSE: "is already in use (another kmirror on this host?)",
                errno.EACCES: "may not be opened by this user",
            }.get(exc.errno or 0, f"cannot be opened ({exc.strerror})")
            raise ConfigError(
                f"metrics port {self._port} {why}: choose another with --metrics-port "
                "(KMIRROR_METRICS_PORT; 0 turns /metrics, /healthz and /readyz off)"
            ) from exc
        if self._tls is not None:
            # The handshake happens on the connection's first read, in its own thread: a slow
            # or broken client never holds up the accept loop.
            self._server.socket = self._tls.wrap_socket(
                self._server.socket, server_side=True, do_handshake_on_connect=False
            )
        self._server.daemon_threads = True
        threading.Thread(
            target=self._server.serve_forever, name="kmirror-http", daemon=True
        ).start()
        scheme = "https" if self._tls is not None else "http"
        log.info("serving /metrics /healthz /readyz port=%d scheme=%s", self.port, scheme)

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A refused TLS handshake (no or a wrong client certificate), a client gone: the
        # server goes on; socketserver would print a traceback on stderr.
        log.debug("http connection from %s failed", client_address[0], exc_info=True)


def _peer_cert(connection: Any) -> dict[str, Any] | None:
    getpeercert = getattr(connection, "getpeercert", None)
    if getpeercert is None:
        return None
    cert: dict[str, Any] | None = getpeercert() or None
    return cert


def server_tls(cert: str, key: str, client_ca: str | None) -> ssl.SSLContext:
    """The metrics port's TLS context. With a client CA, a client certificate is asked for and,
    when sent, verified (a wrong one fails the handshake); whether a request needs one is the
    route's business, so Prometheus scrapes /metrics without one."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(cert, key)
        if client_ca is not None:
            context.load_verify_locations(client_ca)
            context.verify_mode = ssl.CERT_OPTIONAL
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(
            f"the metrics port's TLS files cannot be used ({exc}): check --control-tls-cert, "
            "--control-tls-key and --control-tls-client-ca (PEM files)"
        ) from exc
    return context
