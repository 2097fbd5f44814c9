"""A client for Toxiproxy's HTTP API (Shopify's TCP fault-injection proxy, v2.5.0, built by
scripts/build-go-tools): proxies and the toxics that break them. Standard library only.

One place for the API: kafka-local creates a multi-broker cluster's proxies with it
(scripts/kafkalocal/proxy.py), the fault tests add and remove toxics with it.

Toxics act on one direction of a proxied connection: ``downstream`` is what the server sends
to the client, ``upstream`` what the client sends to the server. The helpers below say which
they use. API reference: the README of github.com/Shopify/toxiproxy (v2.5.0).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

STREAMS = ("upstream", "downstream")


class ToxiproxyError(RuntimeError):
    """The Toxiproxy server refused a call or did not answer."""


@dataclass(frozen=True)
class Proxy:
    name: str
    listen: str
    upstream: str
    enabled: bool
    toxics: tuple[str, ...]


class Toxiproxy:
    """One Toxiproxy server, addressed by its API URL (``http://127.0.0.1:8474``)."""

    def __init__(self, url: str, timeout: float = 10.0) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.url + path,
            data=data,
            method=method,
            headers={"Content-Type": "application/json"} if data is not None else {},
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace").strip()
            raise ToxiproxyError(f"{method} {path}: HTTP {exc.code} {detail}") from exc
        except OSError as exc:
            raise ToxiproxyError(f"{method} {self.url}{path}: {exc}") from exc
        return json.loads(raw) if raw.strip() else None

    # -- the server and its proxies -------------------------------------------------------------

    def version(self) -> str:
        """The server's version; raises ToxiproxyError while it is not answering."""
        request = urllib.request.Request(self.url + "/version")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return str(response.read().decode().strip())
        except OSError as exc:
            raise ToxiproxyError(f"GET {self.url}/version: {exc}") from exc

    def proxies(self) -> dict[str, Proxy]:
        raw: dict[str, Any] = self._call("GET", "/proxies")
        return {
            name: Proxy(
                name,
                p["listen"],
                p["upstream"],
                bool(p["enabled"]),
                tuple(t["name"] for t in p.get("toxics") or ()),
            )
            for name, p in raw.items()
        }

    def create(self, name: str, listen: str, upstream: str) -> None:
        self._call("POST", "/proxies", {"name": name, "listen": listen, "upstream": upstream})

    def reset(self) -> None:
        """Every proxy enabled again and every toxic removed."""
        self._call("POST", "/reset")

    def set_enabled(self, proxy: str, enabled: bool) -> None:
        """Disabled: the proxy closes its connections and stops listening (a full partition:
        new connections are refused)."""
        self._call("POST", f"/proxies/{proxy}", {"enabled": enabled})

    # -- toxics ---------------------------------------------------------------------------------

    def add_toxic(
        self,
        proxy: str,
        kind: str,
        attributes: dict[str, int],
        *,
        stream: str = "downstream",
        name: str | None = None,
        toxicity: float = 1.0,
    ) -> str:
        """Add a toxic (``latency``, ``bandwidth``, ``timeout``, ``limit_data``,
        ``reset_peer``, ...); returns its name."""
        if stream not in STREAMS:
            raise ValueError(f"stream must be one of {STREAMS}, not {stream!r}")
        toxic = name or f"{kind}_{stream}"
        body = {
            "name": toxic,
            "type": kind,
            "stream": stream,
            "toxicity": toxicity,
            "attributes": attributes,
        }
        self._call("POST", f"/proxies/{proxy}/toxics", body)
        return toxic

    def remove_toxic(self, proxy: str, toxic: str) -> None:
        self._call("DELETE", f"/proxies/{proxy}/toxics/{toxic}")

    def clear(self, proxy: str) -> None:
        """Remove every toxic of one proxy."""
        for toxic in self.proxies()[proxy].toxics:
            self.remove_toxic(proxy, toxic)

    def latency(self, proxy: str, rtt_ms: int, jitter_ms: int = 0) -> None:
        """Round trip + rtt_ms (± jitter_ms): half of each on either direction."""
        for stream in STREAMS:
            attrs = {"latency": rtt_ms // 2, "jitter": jitter_ms // 2}
            self.add_toxic(proxy, "latency", attrs, stream=stream)

    def bandwidth(self, proxy: str, kb_per_s: int) -> None:
        """Both directions capped at kb_per_s kilobytes per second."""
        for stream in STREAMS:
            self.add_toxic(proxy, "bandwidth", {"rate": kb_per_s}, stream=stream)

    def half_open(self, proxy: str) -> None:
        """Bytes stop in both directions, the connections stay open (no FIN, no RST) until
        the toxic is removed: a silently dead peer."""
        for stream in STREAMS:
            self.add_toxic(proxy, "timeout", {"timeout": 0}, stream=stream)

    def cut_after(self, proxy: str, nbytes: int) -> None:
        """Each connection closes once nbytes went from the server to the client."""
        self.add_toxic(proxy, "limit_data", {"bytes": nbytes})

    def reset_peer(self, proxy: str, after_ms: int = 0, stream: str = "upstream") -> None:
        """Each connection is reset (TCP RST) after_ms after data arrives in `stream` (the
        data that triggers it is dropped): upstream, a request lost before the broker saw it;
        downstream, a response lost after the broker acted on the request."""
        self.add_toxic(proxy, "reset_peer", {"timeout": after_ms}, stream=stream)
