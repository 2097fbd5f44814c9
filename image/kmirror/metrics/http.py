"""/metrics, /healthz and /readyz on one port, served from a daemon thread."""

from __future__ import annotations

import errno
import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from kmirror.errors import ConfigError

log = logging.getLogger(__name__)

Probe = Callable[[], tuple[bool, str]]


class HealthServer:
    def __init__(
        self,
        port: int,
        registry: CollectorRegistry,
        healthy: Probe,
        ready: Probe,
        host: str = "0.0.0.0",
    ) -> None:
        self._port, self._host = port, host
        self._registry, self._healthy, self._ready = registry, healthy, ready
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
                    self._send(404, b"not found: try /metrics, /healthz or /readyz\n", "text/plain")

            def _send(self, code: int, body: bytes, ctype: str) -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                log.debug("http %s", format % args)

        try:
            self._server = ThreadingHTTPServer((self._host, self._port), Handler)
        except OSError as exc:
            why = {
                errno.EADDRINUSE: "is already in use (another kmirror on this host?)",
                errno.EACCES: "may not be opened by this user",
            }.get(exc.errno or 0, f"cannot be opened ({exc.strerror})")
            raise ConfigError(
                f"metrics port {self._port} {why}: choose another with --metrics-port "
                "(KMIRROR_METRICS_PORT; 0 turns /metrics, /healthz and /readyz off)"
            ) from exc
        self._server.daemon_threads = True
        threading.Thread(
            target=self._server.serve_forever, name="kmirror-http", daemon=True
        ).start()
        log.info("serving /metrics /healthz /readyz port=%d", self.port)

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()
