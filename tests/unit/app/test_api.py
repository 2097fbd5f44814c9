"""The control API's gate and routes without a broker: who gets in, what the OpenAPI document
promises."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from kmirror.app.api import ROUTES, ControlApi, openapi
from kmirror.config.control import ControlSettings
from kmirror.errors import ConfigError
from kmirror.metrics.http import Request

pytestmark = pytest.mark.unit


def request(method: str, path: str, token: str | None = None, cert: dict | None = None) -> Request:
    headers = {} if token is None else {"authorization": f"Bearer {token}"}
    return Request(method, path, {}, headers, b"", "127.0.0.1", cert)


def api(tmp_path: Path, **settings: str) -> tuple[ControlApi, CollectorRegistry]:
    registry = CollectorRegistry()
    return ControlApi([], ControlSettings(**settings), registry), registry


def test_wrong_or_missing_token_is_401_and_counted(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("right\n")
    control, registry = api(tmp_path, token_file=str(token))
    for given in (None, "wrong", "righ", "Right"):
        answer = control(request("POST", "/topics/t/pause", given))
        assert answer is not None and answer.code == 401, given
        assert answer.headers["WWW-Authenticate"].startswith("Bearer")
        assert b"right" not in answer.body
    count = registry.get_sample_value(
        "kmirror_control_requests_total", {"action": "pause", "outcome": "unauthorized"}
    )
    assert count == 4
    # The right token passes the gate (the flow list is empty: nothing to pause).
    answer = control(request("POST", "/topics/t/pause", "right"))
    assert answer is not None and answer.code == 200 and json.loads(answer.body) == {"flows": []}


def test_a_rotated_token_file_takes_effect_and_an_unreadable_one_refuses(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("old")
    control, _ = api(tmp_path, token_file=str(token))
    assert control(request("GET", "/status", "old")).code == 200  # type: ignore[union-attr]
    new = tmp_path / "token.new"
    new.write_text("new")
    new.replace(token)  # a Secret update swaps the file
    assert control(request("GET", "/status", "old")).code == 401  # type: ignore[union-attr]
    assert control(request("GET", "/status", "new")).code == 200  # type: ignore[union-attr]
    token.unlink()
    assert control(request("GET", "/status", "new")).code == 401  # type: ignore[union-attr]


def test_mutual_tls_needs_a_client_certificate(tmp_path: Path) -> None:
    for name in ("cert", "key", "ca"):
        (tmp_path / name).write_text("x")
    control, _ = api(
        tmp_path,
        tls_cert=str(tmp_path / "cert"),
        tls_key=str(tmp_path / "key"),
        tls_client_ca=str(tmp_path / "ca"),
    )
    assert control(request("GET", "/status")).code == 401  # type: ignore[union-attr]
    cert = {"subject": ((("commonName", "ops"),),)}
    assert control(request("GET", "/status", cert=cert)).code == 200  # type: ignore[union-attr]


def test_unknown_paths_are_not_ours_and_the_document_needs_no_token(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("t")
    control, _ = api(tmp_path, token_file=str(token))
    assert control(request("GET", "/nothing")) is None
    assert control(request("GET", "/topics/t/pause")) is None  # POST only
    answer = control(request("GET", "/openapi.json"))
    assert answer is not None and answer.code == 200 and json.loads(answer.body)["openapi"]


def test_the_openapi_document_describes_exactly_the_routes() -> None:
    doc = json.loads(openapi())
    documented = {
        (method.upper(), path)
        for path, ops in doc["paths"].items()
        for method in ops
        if path != "/openapi.json"
    }
    assert documented == set(ROUTES)
    committed = Path(__file__).parents[3] / "docs" / "control-api.json"
    assert json.loads(committed.read_text()) == doc


def test_settings_refuse_half_a_tls_setup_and_an_empty_token(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="go together"):
        ControlSettings(tls_cert="c")
    with pytest.raises(ConfigError, match="needs --control-tls-cert"):
        ControlSettings(tls_client_ca="ca")
    empty = tmp_path / "empty"
    empty.write_text("\n")
    with pytest.raises(ConfigError, match="is empty"):
        ControlSettings(token_file=str(empty)).check()
    assert not ControlSettings().enabled and ControlSettings(token_file="x").enabled
