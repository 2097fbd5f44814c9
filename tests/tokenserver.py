"""OAUTHBEARER test material for the OAUTH listener of tests/securecluster.py: unsigned JWTs
(what Kafka's unsecured JWS validator accepts) and a local OIDC token endpoint that hands
them out for the client-credentials grant, checking the client's id and secret the way an
identity provider would.
"""

from __future__ import annotations

import base64
import json
import threading
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def _b64(data: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def unsecured_jwt(subject: str, lifetime_s: int = 3600) -> str:
    """An unsigned JWS (alg "none", empty signature) for `subject`."""
    now = int(time.time())
    claims = {"sub": subject, "iat": now, "exp": now + lifetime_s, "scope": "kafka"}
    return f"{_b64({'alg': 'none'})}.{_b64(claims)}."


@dataclass
class TokenEndpoint:
    url: str
    client_id: str
    client_secret: str
    grants: list[dict[str, str]] = field(default_factory=list)  # accepted requests' forms
    refused: int = 0


@contextmanager
def token_endpoint(client_id: str, client_secret: str, subject: str) -> Iterator[TokenEndpoint]:
    """An OIDC token endpoint on a free local port for the lifetime of the block."""
    state = TokenEndpoint("", client_id, client_secret)
    expected = "Basic " + base64.b64encode(f"{client_id}:{client_secret}".encode()).decode()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
            ok = (
                self.headers.get("Authorization") == expected
                and form.get("grant_type") == "client_credentials"
            )
            if ok:
                state.grants.append(form)
                body = {"access_token": unsecured_jwt(subject), "token_type": "bearer",
                        "expires_in": 3600}  # fmt: skip
            else:
                state.refused += 1
                body = {"error": "invalid_client"}
            data = json.dumps(body).encode()
            self.send_response(200 if ok else 401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}/oauth2/token"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
