"""A private image registry on this machine, as users have one (ECR, Harbor, a distribution
registry): the CNCF distribution registry (built by scripts/build-go-tools into the cache),
HTTPS with a certificate from a CA made by the test run, and htpasswd (bcrypt) authentication.

`PrivateRegistry.start(dir)` makes the CA, the server certificate for 127.0.0.1, the password
file and a filesystem store under dir, starts `registry serve` on a free port and returns once
the registry answers `/v2/` with 401 (authentication required) over TLS. `stop()` ends it.
"""

from __future__ import annotations

import base64
import os
import secrets
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from tests.mirrorproc import free_port

CACHE = Path(os.environ.get("KMIRROR_CACHE") or Path.home() / ".cache" / "kmirror")
REGISTRY_BIN = CACHE / "bin" / "registry"
USER = "kmirror-ci"


def _openssl(d: Path, *args: str) -> None:
    subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True, timeout=60)


@dataclass
class PrivateRegistry:
    host: str  # 127.0.0.1:<port>
    user: str
    password: str
    cert_dir: Path  # ca.crt: what podman --cert-dir and containerd's hosts.toml want
    ca: Path
    proc: subprocess.Popen[bytes]
    log: Path

    @classmethod
    def start(cls, d: Path) -> PrivateRegistry:
        if not os.access(REGISTRY_BIN, os.X_OK):
            raise FileNotFoundError(f"{REGISTRY_BIN} missing: run `make go-tools`")
        d.mkdir(parents=True, exist_ok=True)
        _openssl(d, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key",
                 "-out", "ca.pem", "-days", "2", "-subj", "/CN=kmirror test CA")  # fmt: skip
        _openssl(d, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out",
                 "server.csr", "-subj", "/CN=127.0.0.1")  # fmt: skip
        (d / "server.ext").write_text("subjectAltName=IP:127.0.0.1\n")
        _openssl(d, "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                 "-CAcreateserial", "-out", "server.pem", "-days", "2",
                 "-extfile", "server.ext")  # fmt: skip
        cert_dir = d / "certs.d"
        cert_dir.mkdir()
        (cert_dir / "ca.crt").write_bytes((d / "ca.pem").read_bytes())

        password = secrets.token_urlsafe(18)
        # -B bcrypt (the only scheme the registry accepts), -i password from stdin (not argv).
        htpasswd = subprocess.run(
            ["htpasswd", "-Bin", USER], input=password, capture_output=True, text=True,
            timeout=60, check=True,
        ).stdout  # fmt: skip
        (d / "htpasswd").write_text(htpasswd)

        port = free_port()
        (d / "store").mkdir()
        (d / "config.yml").write_text(
            f"""version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: {d / "store"}
http:
  addr: 127.0.0.1:{port}
  secret: {secrets.token_hex(16)}
  tls:
    certificate: {d / "server.pem"}
    key: {d / "server.key"}
auth:
  htpasswd:
    realm: kmirror-test
    path: {d / "htpasswd"}
"""
        )
        log = d / "registry.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [str(REGISTRY_BIN), "serve", str(d / "config.yml")],
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        reg = cls(f"127.0.0.1:{port}", USER, password, cert_dir, d / "ca.pem", proc, log)
        reg._wait_ready()
        return reg

    def _wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"registry exited {self.proc.returncode}:\n{self.log.read_text()[-3000:]}"
                )
            if self.status("/v2/", auth=False) == 401:
                return
            time.sleep(0.2)
        raise TimeoutError(f"registry not answering on {self.host}:\n{self.log.read_text()}")

    def _request(self, method: str, path: str, auth: bool) -> tuple[int, dict[str, str]]:
        """(HTTP status, headers) of method path, over TLS verified with the test CA; status 0
        when nothing answers."""
        req = urllib.request.Request(f"https://{self.host}{path}", method=method)
        if auth:
            token = base64.b64encode(f"{self.user}:{self.password}".encode()).decode()
            req.add_header("Authorization", f"Basic {token}")
        # The manifest types podman pushes; without them the registry answers 404 for OCI ones.
        req.add_header(
            "Accept",
            "application/vnd.oci.image.manifest.v1+json,"
            "application/vnd.docker.distribution.manifest.v2+json",
        )
        ctx = ssl.create_default_context(cafile=str(self.ca))
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
                return int(resp.status), dict(resp.headers)
        except urllib.error.HTTPError as exc:
            return int(exc.code), dict(exc.headers)
        except (urllib.error.URLError, OSError):
            return 0, {}

    def status(self, path: str, auth: bool = True) -> int:
        return self._request("GET", path, auth)[0]

    def manifest_digest(self, reference: str) -> str | None:
        """The digest the registry serves for host/repository:tag, None if it has none."""
        name, _, tag = reference.removeprefix(f"{self.host}/").rpartition(":")
        code, headers = self._request("HEAD", f"/v2/{name}/manifests/{tag}", auth=True)
        return headers.get("Docker-Content-Digest") if code == 200 else None

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=20)
