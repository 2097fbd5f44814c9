"""Calling a running mirror's control API from tests (the way an operator's script would)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.kafkatools import wait_until
from tests.mirrorproc import MirrorProcess

TOKEN = "s3cret-token-for-tests"


def token_file(tmp_path: Path, token: str = TOKEN) -> Path:
    path = tmp_path / "control-token"
    path.write_text(token + "\n")
    return path


def call(
    mirror: MirrorProcess,
    method: str,
    path: str,
    body: Any = None,
    token: str | None = TOKEN,
    timeout: float = 30.0,
) -> tuple[int, Any]:
    """(HTTP status, the JSON answer)."""
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    data = None if body is None else json.dumps(body).encode()
    url = f"http://127.0.0.1:{mirror.metrics_port}{path}"
    request = urllib.request.Request(url, data, headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as r:
            return int(r.status), json.loads(r.read())
    except urllib.error.HTTPError as e:
        return int(e.code), json.loads(e.read() or b"null")


def ok(mirror: MirrorProcess, method: str, path: str, body: Any = None) -> Any:
    code, doc = call(mirror, method, path, body)
    assert code == 200, (code, doc)
    return doc


def status(mirror: MirrorProcess) -> dict[str, Any]:
    doc: dict[str, Any] = ok(mirror, "GET", "/status")["flows"][0]
    return doc


def wait_applied(mirror: MirrorProcess, what: str, timeout: float = 30.0) -> None:
    """Every stream of the mirror acts on the newest control state."""
    wait_until(lambda: status(mirror)["control"]["applied"], timeout, 0.5, what)
