"""The local Kubernetes cluster (scripts/k8s-local) for the ``k8s`` tests.

``k8s_cluster`` starts it once per session (after the two Kafka clusters, whose ports it makes
reachable from pods) and always stops it; set ``KMIRROR_K8S_KEEP=1`` to leave it running for a
post-mortem (``scripts/k8s-local down`` removes it later). ``KMIRROR_K8S_REUSE=1`` uses a cluster
that is already up instead of starting one (and leaves it running).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kmirror import __version__
from tests import prebuild
from tests.faults import cluster3
from tests.kafkatools import Clusters
from tests.registry import PrivateRegistry, untag_pushed

REPO_ROOT = Path(__file__).resolve().parents[2]
K8S_LOCAL = REPO_ROOT / "scripts" / "k8s-local"
PODMAN = REPO_ROOT / "scripts" / "podman"
CACHE = Path(os.environ.get("KMIRROR_CACHE") or Path.home() / ".cache" / "kmirror")
PULL_SECRET = "kmirror-pull"


def _log(msg: str) -> None:
    print(f"[k8s {time.strftime('%H:%M:%S')}] {msg}", flush=True)


@dataclass
class Kube:
    """kubectl and helm against the local cluster."""

    kubeconfig: str
    kubectl_bin: str
    helm_bin: str
    env: dict[str, str] = field(default_factory=dict)

    def run(
        self, argv: Sequence[str], timeout: float = 120, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=timeout, env=self.env, check=False
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"{' '.join(argv)} -> exit {proc.returncode}\n"
                f"stdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-4000:]}"
            )
        return proc

    def kubectl(
        self, *args: str, timeout: float = 120, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        return self.run([self.kubectl_bin, *args], timeout=timeout, check=check)

    def helm(
        self, *args: str, timeout: float = 900, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        return self.run([self.helm_bin, *args], timeout=timeout, check=check)

    def get_json(self, *args: str) -> dict[str, object]:
        out = self.kubectl("get", *args, "-o", "json").stdout
        data: dict[str, object] = json.loads(out)
        return data


def _host_ports(clusters: Clusters) -> str:
    """Ports of the Kafka clusters that listen on this machine's loopback (made reachable from
    pods at 127.0.0.1:<port> by scripts/k8s/cni-host-loopback): the two single-broker clusters
    and the nodes of the 3-broker pair (tests/faults/cluster3.py, tests/k8s/test_k8s_faults.py),
    whether or not that pair runs; the plugin's rules are per pod, fixed when it starts."""
    ports = []
    three = [q.direct_bootstrap for q in cluster3.layout().values()]
    for bootstrap in (clusters.source_bootstrap, clusters.target_bootstrap, *three):
        for hostport in bootstrap.split(","):
            host, _, port = hostport.strip().rpartition(":")
            if host in ("127.0.0.1", "localhost"):
                ports.append(port)
    return " ".join(dict.fromkeys(ports))


def _k8s_local(*args: str, env: dict[str, str], timeout: float) -> str:
    proc = subprocess.run(
        [str(K8S_LOCAL), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"scripts/k8s-local {' '.join(args)} failed (exit {proc.returncode}):\n"
            f"{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
        )
    return proc.stdout


@dataclass(frozen=True)
class PushedImages:
    """The images as users get them: in a private registry (TLS from the test's CA, htpasswd),
    pushed by scripts/push-image (`make push`); the pods pull them with a pull secret."""

    registry: str  # the chart's global.imageRegistry
    tag: str
    digests: dict[str, str]  # pushed reference -> manifest digest
    authfile: Path  # podman login's auth file: a dockerconfigjson, the pull secret's content
    ca: Path  # the registry's CA, for containerd (scripts/k8s-local trust-registry)


@pytest.fixture(scope="session")
def pushed_images(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PushedImages]:
    for name in ("kmirror", "kmirror-validate"):
        image = f"localhost/{name}:{__version__}"
        if subprocess.run([str(PODMAN), "image", "exists", image], check=False).returncode != 0:
            pytest.fail(f"image {image} missing in podman storage: run `make image`", pytrace=False)
    d = tmp_path_factory.mktemp("k8s-registry")
    registry = PrivateRegistry.start(d / "registry")
    digests: dict[str, str] = {}
    try:
        authfile = d / "auth.json"
        registry.login(authfile)
        target = f"{registry.host}/e2e"
        t0 = time.monotonic()
        digests = registry.push_both(target, authfile)
        _log(f"pushed to {target} in {time.monotonic() - t0:.0f}s: {digests}")
        yield PushedImages(target, __version__, digests, authfile, registry.ca)
    finally:
        untag_pushed(digests)
        registry.stop()


@pytest.fixture(scope="session")
def k8s_cluster(clusters: Clusters, pushed_images: PushedImages) -> Iterator[Kube]:
    if os.geteuid() != 0:
        pytest.skip("the local Kubernetes cluster needs root (containerd, kubelet, iptables)")
    helm = CACHE / "bin" / "helm"
    if not helm.exists():
        pytest.fail(f"{helm} missing: run `make go-tools`", pytrace=False)

    env = dict(os.environ)
    env["KMIRROR_K8S_HOST_PORTS"] = _host_ports(clusters)
    # Nothing imported into containerd: the kubelet pulls the images from the registry.
    env["KMIRROR_K8S_IMAGES"] = ""
    reuse = os.environ.get("KMIRROR_K8S_REUSE") == "1"
    keep = reuse or os.environ.get("KMIRROR_K8S_KEEP") == "1"
    t0 = time.monotonic()
    try:
        if not reuse:
            _log(prebuild.KUBERNETES.wait())
            _log(f"scripts/k8s-local up (Kafka ports for pods: {env['KMIRROR_K8S_HOST_PORTS']})")
            # Cold: builds Kubernetes from source first (see docs/kubernetes.md).
            _k8s_local("up", env=env, timeout=7200)
        host = pushed_images.registry.partition("/")[0]
        _k8s_local("trust-registry", host, str(pushed_images.ca), env=env, timeout=30)
        _log(f"cluster ready after {time.monotonic() - t0:.0f}s")
        exports = dict(
            line.removeprefix("export ").split("=", 1)
            for line in _k8s_local("env", env=env, timeout=30).splitlines()
            if line.startswith("export ")
        )
        kube_env = dict(os.environ)
        kube_env["KUBECONFIG"] = exports["KUBECONFIG"]
        kube_env["HELM_CACHE_HOME"] = str(CACHE / "k8s" / "helm-home" / "cache")
        kube_env["HELM_CONFIG_HOME"] = str(CACHE / "k8s" / "helm-home" / "config")
        kube_env["HELM_DATA_HOME"] = str(CACHE / "k8s" / "helm-home" / "data")
        kubectl = str(Path(exports["KMIRROR_K8S_BIN"]) / "kubectl")
        assert shutil.which(kubectl), f"{kubectl} not executable"
        yield Kube(exports["KUBECONFIG"], kubectl, str(helm), kube_env)
    finally:
        if not keep:
            t1 = time.monotonic()
            try:
                _k8s_local("down", env=env, timeout=600)
            finally:
                _log(f"scripts/k8s-local down took {time.monotonic() - t1:.0f}s")


@pytest.fixture(scope="package")
def clusters3() -> Iterator[cluster3.Clusters3]:
    """The 3-broker pair for tests/k8s/test_k8s_faults.py (tests/faults has its own instance;
    the k8s tests run last, after that package stopped it)."""
    yield from cluster3.running_pair()
