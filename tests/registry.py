"""A private image registry on this machine, as users have one (ECR, Harbor, a distribution
registry): the CNCF distribution registry (built by scripts/build-go-tools into the cache),
HTTPS with a certificate from a CA made by the test run, and htpasswd (bcrypt) authentication.

`PrivateRegistry.start(dir)` makes the CA, the server certificate for 127.0.0.1, the password
file and a filesystem store under dir, starts `registry serve` on a free port and returns once
the registry answers `/v2/` with 401 (authentication required) over TLS; `login` and `push` are
what a user does (`podman login`, `make push`); `stop()` ends it. Used by
tests/image/test_registry.py and the Kubernetes end-to-end test (the kubelet pulls from it).
"""

from __future__ import annotations

import base64
import os
import re
import secrets
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from tests.mirrorproc import free_port

REPO = Path(__file__).resolve().parents[1]
PODMAN = REPO / "scripts" / "podman"
PUSH = REPO / "scripts" / "push-image"
CACHE = Path(os.environ.get("KMIRROR_CACHE") or Path.home() / ".cache" / "kmirror")
REGISTRY_BIN = CACHE / "bin" / "registry"
USER = "kmirror-ci"
# What scripts/push-image prints per image: REF@DIGEST (SECONDS)
PUSHED_LINE = re.compile(r"(\S+)@(sha256:[0-9a-f]{64}) \(\d+s\)")


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

    def login(self, authfile: Path) -> None:
        """`podman login` into authfile: a dockerconfigjson, also good for a pull secret."""
        proc = subprocess.run(
            [str(PODMAN), "login", "--authfile", str(authfile), "--cert-dir", str(self.cert_dir),
             "--username", self.user, "--password-stdin", self.host],
            input=self.password, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert proc.returncode == 0 and "Login Succeeded" in proc.stdout, proc.stderr

    def push(self, target: str, authfile: Path) -> subprocess.CompletedProcess[str]:
        """scripts/push-image target (what `make push REGISTRY=target` runs), with the login's
        auth file and the test CA."""
        env = {
            **os.environ,
            "REGISTRY_AUTH_FILE": str(authfile),
            "KMIRROR_REGISTRY_CERT_DIR": str(self.cert_dir),
        }
        return subprocess.run(
            [str(PUSH), target], capture_output=True, text=True, timeout=1800, env=env, check=False
        )

    def push_both(self, target: str, authfile: Path) -> dict[str, str]:
        """push, which must succeed: {pushed reference: manifest digest}."""
        proc = self.push(target, authfile)
        assert proc.returncode == 0, f"push-image failed:\n{proc.stdout}\n{proc.stderr}"
        assert self.password not in proc.stdout + proc.stderr
        return {
            m.group(1): m.group(2)
            for line in proc.stdout.splitlines()
            if (m := PUSHED_LINE.fullmatch(line))
        }

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=20)


def untag_pushed(refs: list[str] | dict[str, str]) -> None:
    """Remove the registry names push-image gave the local images (the images stay)."""
    for ref in refs:
        local = "localhost/kmirror" if "/kmirror/mirror:" in ref else "localhost/kmirror-validate"
        tag = ref.rpartition(":")[2]
        subprocess.run(
            [str(PODMAN), "untag", f"{local}:{tag}", ref], capture_output=True, timeout=60,
            check=False,
        )  # fmt: skip
