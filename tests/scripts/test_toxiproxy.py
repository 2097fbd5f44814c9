"""scripts/toxiproxy.py and kafka-local's Toxiproxy server against the real toxiproxy-server
(built by `make setup`), in front of a local echo server: each toxic does to a connection what
the fault tests rely on. No broker, about 2 s; marked `faults` with the tests that use it (the
binary comes from `make setup`, which `make test-unit` does not run)."""

from __future__ import annotations

import contextlib
import socket
import socketserver
import threading
import time
from collections.abc import Iterator
from typing import ClassVar

import pytest

from scripts.kafkalocal import proxy
from scripts.toxiproxy import STREAMS, Toxiproxy, ToxiproxyError
from tests.mirrorproc import free_port

pytestmark = pytest.mark.faults


class _Echo(socketserver.BaseRequestHandler):
    received: ClassVar[list[bytes]] = []  # every chunk the server got, across connections

    def handle(self) -> None:
        while data := self.request.recv(4096):
            self.received.append(data)
            self.request.sendall(data)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Toxiproxy, int]]:
    """A Toxiproxy server (started like kafka-local starts one) with proxy "echo" in front of
    an echo server: the client and the proxy's port."""
    built = proxy.binary()  # the shared cache's; the server's files go to a temporary cache
    cache = tmp_path_factory.mktemp("cache")
    (cache / "bin").mkdir()
    (cache / "bin" / "toxiproxy-server").symlink_to(built)
    echo = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo)
    echo.daemon_threads = True
    threading.Thread(target=echo.serve_forever, daemon=True).start()
    api = free_port(2)
    listen = api + 1
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KMIRROR_CACHE", str(cache))
        try:
            proxy.start("t", api, [("echo", listen, echo.server_address[1])])
            yield Toxiproxy(proxy.api_url(api)), listen
        finally:
            proxy.stop("t")
            echo.shutdown()
            echo.server_close()


@pytest.fixture
def echo_proxy(server: tuple[Toxiproxy, int]) -> Iterator[tuple[Toxiproxy, int]]:
    yield server
    server[0].reset()


def _round_trip(port: int, timeout: float = 5.0) -> float:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        t0 = time.monotonic()
        s.sendall(b"ping")
        assert s.recv(4) == b"ping"
        return time.monotonic() - t0


def test_latency_adds_to_the_round_trip(echo_proxy: tuple[Toxiproxy, int]) -> None:
    client, port = echo_proxy
    assert _round_trip(port) < 0.1
    client.latency("echo", rtt_ms=300)
    assert 0.28 < _round_trip(port) < 1.5
    client.reset()
    assert _round_trip(port) < 0.1


def test_half_open_stops_bytes_without_closing(echo_proxy: tuple[Toxiproxy, int]) -> None:
    client, port = echo_proxy
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        client.half_open("echo")
        s.settimeout(0.5)
        s.sendall(b"ping")
        with pytest.raises(TimeoutError):  # no answer, and no FIN/RST either
            s.recv(4)
        client.clear("echo")
    assert _round_trip(port) < 0.1


def test_disabled_proxy_refuses_connections(echo_proxy: tuple[Toxiproxy, int]) -> None:
    client, port = echo_proxy
    client.set_enabled("echo", False)
    with pytest.raises(ConnectionRefusedError):
        _round_trip(port)
    client.set_enabled("echo", True)
    assert _round_trip(port) < 0.1


@pytest.mark.parametrize("stream", STREAMS)
def test_reset_peer_resets_the_connection(echo_proxy: tuple[Toxiproxy, int], stream: str) -> None:
    """upstream: the request is lost before the server saw it; downstream: the server got it
    and answered, and the answer is lost."""
    client, port = echo_proxy
    client.reset_peer("echo", stream=stream)
    _Echo.received.clear()
    with pytest.raises(ConnectionResetError):
        _round_trip(port)
    time.sleep(0.1)  # the server's thread has read what reached it
    assert _Echo.received == ([b"ping"] if stream == "downstream" else [])


def test_errors_name_the_call(echo_proxy: tuple[Toxiproxy, int]) -> None:
    client, _ = echo_proxy
    with pytest.raises(ToxiproxyError, match=r"POST /proxies/nope/toxics: HTTP 404"):
        client.add_toxic("nope", "latency", {"latency": 1})
    with contextlib.suppress(ToxiproxyError):
        client.remove_toxic("echo", "absent")
