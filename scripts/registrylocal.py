"""Named local schema registries for tests and the demo: Apicurio Registry 3.3.3 (in-memory
storage) with its Confluent-compatible API at ``http://127.0.0.1:<port>/apis/ccompat/v7``.

``scripts/registry-local fetch`` brings the artifact ``io.apicurio:apicurio-registry-app:3.3.3:
tar.gz:all`` from Maven Central (mvn, into the local Maven repository) and unpacks it into
``${KMIRROR_CACHE:-~/.cache/kmirror}/apicurio-registry-3.3.3/`` (a ready Quarkus app,
``quarkus-run.jar``). ``up NAME=PORT ...`` starts registries and waits until each answers,
``down`` stops them, ``status`` lists them. Each lives in ``<cache>/registries/<name>/``
(``registry.json``, ``registry.pid``, ``registry.log``).

Apicurio 3 needs Java 21+; the machines carry a Temurin 25 JDK beside the default Java 17, so
the java is looked up at run time (``KMIRROR_REGISTRY_JAVA``, ``JAVA_HOME``, ``/usr/lib/jvm/*``,
``java`` on the PATH: the first of version 21 or later), and its absence is an error that says
so. A shared class archive (``-XX:+AutoCreateSharedArchive``) written by the first clean stop
cuts later starts. Optional: HTTPS with a given certificate and key, HTTP basic users (Quarkus'
own embedded users) and bearer tokens signed by a given key (Apicurio's OIDC authentication
with a public key, so no identity provider is needed).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

VERSION = "3.3.3"
ARTIFACT = f"io.apicurio:apicurio-registry-app:{VERSION}:tar.gz:all"
HOST = "127.0.0.1"
API = "/apis/ccompat/v7"
BEARER_ISSUER = "kmirror-test"
DEFAULT_REGISTRIES: dict[str, int] = {"registry-source": 18081, "registry-target": 28081}
# Each registry takes PORT (API) and PORT + 1 (Quarkus management: health, metrics).
START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 20.0
MIN_JAVA = 21
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class RegistryError(RuntimeError):
    """A registry could not be fetched, started or stopped."""


def cache_dir() -> Path:
    return Path(os.environ.get("KMIRROR_CACHE", Path.home() / ".cache" / "kmirror"))


def app_dir() -> Path:
    return cache_dir() / f"apicurio-registry-{VERSION}"


def registry_dir(name: str) -> Path:
    return cache_dir() / "registries" / name


@dataclass(frozen=True)
class RegistrySpec:
    """One registry: name, port, and optionally TLS (PEM files) and basic-auth users."""

    name: str
    port: int
    tls_cert: str | None = None
    tls_key: str | None = None
    users: dict[str, str] = field(default_factory=dict, hash=False)
    # A PEM public key: bearer tokens (JWT, RS256) it verifies, with issuer BEARER_ISSUER, are
    # accepted (Apicurio's own OIDC authentication, without an identity provider).
    bearer_key: str | None = None

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise RegistryError(f"invalid registry name {self.name!r}")
        if (self.tls_cert is None) != (self.tls_key is None):
            raise RegistryError(f"{self.name}: TLS needs both a certificate and a key")

    @property
    def url(self) -> str:
        """The Confluent-compatible API's base URL (what kmirror's url settings take)."""
        scheme = "https" if self.tls_cert else "http"
        return f"{scheme}://{HOST}:{self.port}{API}"

    def jvm_args(self) -> list[str]:
        args = [
            f"-Dquarkus.http.host={HOST}",
            # Health and metrics listen on a second port (default 9000 on every interface).
            f"-Dquarkus.management.host={HOST}",
            f"-Dquarkus.management.port={self.port + 1}",
        ]
        if self.tls_cert:
            args += [
                f"-Dquarkus.http.ssl-port={self.port}",
                "-Dquarkus.http.insecure-requests=disabled",
                f"-Dquarkus.http.ssl.certificate.files={self.tls_cert}",
                f"-Dquarkus.http.ssl.certificate.key-files={self.tls_key}",
            ]
        else:
            args.append(f"-Dquarkus.http.port={self.port}")
        if self.bearer_key:
            key = "".join(
                line
                for line in Path(self.bearer_key).read_text().splitlines()
                if "-----" not in line
            )
            args += [
                "-Dapicurio.authn.enabled=true",
                "-Dquarkus.oidc.tenant-enabled=true",
                "-Dquarkus.oidc.application-type=service",
                f"-Dquarkus.oidc.public-key={key}",
                f"-Dquarkus.oidc.token.issuer={BEARER_ISSUER}",
            ]
        if self.users or self.bearer_key:
            args += [
                "-Dquarkus.http.auth.permission.api.paths=/apis/*",
                "-Dquarkus.http.auth.permission.api.policy=authenticated",
            ]
        if self.users:
            args += [
                "-Dquarkus.http.auth.basic=true",
                "-Dquarkus.security.users.embedded.enabled=true",
                "-Dquarkus.security.users.embedded.plain-text=true",
            ]
            args += [
                f"-Dquarkus.security.users.embedded.users.{u}={p}" for u, p in self.users.items()
            ]
        return args


def fetch() -> Path:
    """The unpacked app (fetched from Maven Central the first time; milliseconds when warm)."""
    target = app_dir()
    if (target / "quarkus-run.jar").exists():
        return target
    proc = subprocess.run(
        ["mvn", "-B", "-q", "dependency:get", f"-Dartifact={ARTIFACT}", "-Dtransitive=false"],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RegistryError(f"mvn could not fetch {ARTIFACT}:\n{proc.stdout[-2000:]}")
    repo = Path(os.environ.get("MAVEN_REPO", Path.home() / ".m2" / "repository"))
    tarball = repo / "io/apicurio/apicurio-registry-app" / VERSION
    tarball /= f"apicurio-registry-app-{VERSION}-all.tar.gz"
    tmp = target.with_name(f"{target.name}.tmp.{os.getpid()}")
    with tarfile.open(tarball) as tar:
        tar.extractall(tmp, filter="data")
    os.replace(tmp, target)
    return target


def _java_version(java: Path) -> int:
    release = java.resolve().parent.parent / "release"
    text = release.read_text() if release.exists() else ""
    match = re.search(r'JAVA_VERSION="(\d+)', text)
    if match:
        return int(match.group(1))
    out = subprocess.run([str(java), "-version"], capture_output=True, text=True, check=False)
    match = re.search(r'version "(\d+)', out.stderr)
    return int(match.group(1)) if match else 0


def java_bin() -> Path:
    """A java of version 21 or later, or RegistryError naming what to do."""
    candidates: list[Path] = []
    for var in ("KMIRROR_REGISTRY_JAVA", "JAVA_HOME"):
        value = os.environ.get(var)
        if value:
            path = Path(value)
            candidates.append(path if path.name == "java" else path / "bin" / "java")
    candidates += sorted(Path("/usr/lib/jvm").glob("*/bin/java"), reverse=True)
    which = shutil.which("java")
    if which:
        candidates.append(Path(which))
    seen = []
    for java in candidates:
        if java.exists():
            version = _java_version(java)
            seen.append(f"{java} ({version})")
            if version >= MIN_JAVA:
                return java
    raise RegistryError(
        f"Apicurio Registry {VERSION} needs Java {MIN_JAVA} or later; found "
        f"{', '.join(seen) or 'no java'}. Install a JDK 21+ (e.g. Temurin 25 under "
        "/usr/lib/jvm) or point KMIRROR_REGISTRY_JAVA at its bin/java"
    )


def _files(name: str) -> dict[str, Path]:
    d = registry_dir(name)
    return {"spec": d / "registry.json", "pid": d / "registry.pid", "log": d / "registry.log"}


def read_pid(name: str) -> int | None:
    with contextlib.suppress(OSError, ValueError):
        return int(_files(name)["pid"].read_text().strip())
    return None


def alive(pid: int) -> bool:
    with contextlib.suppress(OSError):
        return b"quarkus-run.jar" in Path(f"/proc/{pid}/cmdline").read_bytes()
    return False


def answers(spec: RegistrySpec) -> bool:
    """The API answers (401 counts: a registry with users is up and refusing anonymous calls)."""
    context = ssl._create_unverified_context() if spec.tls_cert else None  # a liveness probe
    try:
        with urllib.request.urlopen(f"{spec.url}/subjects", timeout=2, context=context):
            return True
    except urllib.error.HTTPError as exc:
        return exc.code == 401
    except OSError:
        return False


def start(spec: RegistrySpec, timeout: float = START_TIMEOUT_S) -> float:
    """Start one registry (reusing a running one of the same name) and wait until it answers.
    Returns the seconds it took."""
    t0 = time.monotonic()
    f = _files(spec.name)
    pid = read_pid(spec.name)
    if pid is not None and alive(pid) and answers(spec):
        return 0.0
    java = java_bin()
    app = fetch()
    registry_dir(spec.name).mkdir(parents=True, exist_ok=True)
    f["spec"].write_text(json.dumps(asdict(spec)))
    archive = cache_dir() / "cds" / f"apicurio-{VERSION}-{_java_version(java)}.jsa"
    archive.parent.mkdir(parents=True, exist_ok=True)
    cmd = [
        str(java),
        "-Xms128m",
        "-Xmx512m",
        "-XX:TieredStopAtLevel=1",  # a test registry: start fast rather than peak throughput
        "-XX:+AutoCreateSharedArchive",
        f"-XX:SharedArchiveFile={archive}",
        "-Xlog:cds*=off",  # one line per class the archive cannot hold
        *spec.jvm_args(),
        "-jar",
        str(app / "quarkus-run.jar"),
    ]
    with open(f["log"], "wb") as log:
        proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, cwd=registry_dir(spec.name),
            start_new_session=True,
        )  # fmt: skip
    f["pid"].write_text(f"{proc.pid}\n")
    deadline = t0 + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RegistryError(f"{spec.name} exited ({proc.returncode}):\n{_tail(spec.name)}")
        if answers(spec):
            return time.monotonic() - t0
        time.sleep(0.3)
    stop(spec.name)
    raise RegistryError(f"{spec.name} did not answer within {timeout:.0f}s:\n{_tail(spec.name)}")


def _tail(name: str, lines: int = 30) -> str:
    with contextlib.suppress(OSError):
        return "\n".join(_files(name)["log"].read_text(errors="replace").splitlines()[-lines:])
    return ""


def stop(name: str, timeout: float = STOP_TIMEOUT_S) -> str:
    """SIGTERM (Quarkus stops cleanly and the JVM writes the class archive), SIGKILL after
    `timeout`."""
    pid = read_pid(name)
    _files(name)["pid"].unlink(missing_ok=True)
    if pid is None or not alive(pid):
        return f"{name}: not running"
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while alive(pid) and time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        time.sleep(0.2)
    if alive(pid):
        os.kill(pid, signal.SIGKILL)
        return f"{name}: killed pid {pid}"
    return f"{name}: stopped pid {pid}"


def known() -> list[str]:
    root = cache_dir() / "registries"
    return sorted(p.name for p in root.iterdir() if p.is_dir()) if root.exists() else []


def rss_mb(pid: int) -> float:
    """Resident memory of a registry process (for the docs' figures)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="registry-local", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("fetch", help=f"fetch and unpack Apicurio Registry {VERSION} into the cache")
    up = sub.add_parser(
        "up", help="start registries (default: registry-source=18081, -target=28081)"
    )
    up.add_argument("registries", nargs="*", metavar="NAME=PORT")
    down = sub.add_parser("down", help="stop registries (default: every known one)")
    down.add_argument("names", nargs="*", metavar="NAME")
    sub.add_parser("status", help="name, URL, pid, resident memory")
    args = p.parse_args(argv)
    try:
        if args.cmd == "fetch":
            print(fetch())
        elif args.cmd == "up":
            pairs = [r.partition("=") for r in args.registries]
            wanted = {n: int(port) for n, _, port in pairs} or DEFAULT_REGISTRIES
            for name, port in wanted.items():
                spec = RegistrySpec(name, port)
                took = start(spec)
                print(f"{name}: {spec.url} (pid {read_pid(name)}, {took:.1f}s)")
        elif args.cmd == "down":
            for name in args.names or known():
                print(stop(name))
        else:
            for name in known():
                pid = read_pid(name)
                spec = RegistrySpec(**json.loads(_files(name)["spec"].read_text()))
                up_ = pid is not None and alive(pid)
                state = f"pid {pid}, {rss_mb(pid):.0f} MB" if up_ and pid else "stopped"
                print(f"{name:<20} {spec.url:<45} {state}")
    except (RegistryError, ValueError) as exc:
        print(f"registry-local: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
