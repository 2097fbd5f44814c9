"""Render the chart with the pinned helm and pick the rendered manifests apart.

`helm_template()` is the one way the chart tests render; `run_spec()` turns the rendered mirror
Deployment into what a container runtime needs, for the render-and-run test (podman) and for
checking the env contract with the image.
"""

from __future__ import annotations

import atexit
import copy
import functools
import json
import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
CHART_DIR = REPO_ROOT / "chart" / "kmirror"
CI_DIR = CHART_DIR / "ci"
CT_CONFIG = REPO_ROOT / "chart" / "ct.yaml"
BIN_DIR = Path(os.environ.get("KMIRROR_CACHE") or Path.home() / ".cache" / "kmirror") / "bin"
HELM = BIN_DIR / "helm"
CT = BIN_DIR / "ct"
CT_ETC = BIN_DIR / "ct-etc"

# helm is a short-lived Go process: without the garbage collector it needs a third less CPU
# (and a few MB more memory), and the suite runs a few hundred of them.
HELM_ENV = {**os.environ, "GOGC": "off"}

RELEASE = "rel"
NAMESPACE = "mirror-ns"
FULLNAME = f"{RELEASE}-kmirror"

# The floor of Chart.yaml's kubeVersion, a middle one and the newest that helm and the
# kubernetes-validate wheel know.
KUBE_VERSIONS = ("1.30.0", "1.34.0", "1.37.0")

# The least a release needs: both clusters.
MINIMAL: dict[str, Any] = {
    "source": {"bootstrapServers": "src-kafka:9092"},
    "target": {"bootstrapServers": "tgt-kafka:9092"},
}

# Every optional feature on at once: renders the rarely used template branches.
KITCHEN_SINK: dict[str, Any] = {
    "global": {"imageRegistry": "registry.example.com:5000"},
    "commonLabels": {"team": "data"},
    "progressTopic": "kmirror-progress.mirror.internal",
    "exactlyOnce": True,
    "commonAnnotations": {"owner": "data-platform"},
    "imagePullSecrets": ["pull-a", {"name": "pull-b"}],
    "source": {
        "bootstrapServers": "s1.example.com:9096,s2.example.com:9096",
        "securityProtocol": "SASL_SSL",
        "sasl": {"mechanism": "SCRAM-SHA-256", "existingSecret": "src-sasl"},
        "tls": {"caSecret": "src-ca", "caKey": "ca.pem"},
    },
    "target": {
        "bootstrapServers": "t1.example.com:9093",
        "securityProtocol": "SSL",
        "tls": {
            "caSecret": "tgt-tls",
            "clientCertSecret": "tgt-tls",
            "keyPasswordKey": "key.password",
            "endpointIdentificationAlgorithm": "none",
        },
    },
    "consumerGroup": "dr-mirror",
    "whitelist": "orders.*,payments",
    "blacklist": "orders-internal",
    "rename": {
        "policy": "prefix",
        "sourceAlias": "primary",
        "map": "orders:shop.orders.v2",
        "rules": "^team-a\\.(.*)$ -> a.$1",
    },
    "acls": {"principalMap": "User:alice@A -> User:alice", "mirrorPrincipal": "User:kmirror"},
    "partitioning": "hash",
    "replicationFactor": 3,
    "extraConsumerProperties": {"fetch.max.bytes": 52428800},
    "extraProducerProperties": {"compression.type": "zstd", "linger.ms": "20"},
    "logFormat": "json",
    "control": {"enabled": True, "existingSecret": "kmirror-control"},
    "throttle": "backlog.bytes=10485760,orders:tail.records=5000",
    "extraEnv": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
    "extraVolumes": [{"name": "templates", "configMap": {"name": "my-templates"}}],
    "extraVolumeMounts": [
        {"name": "templates", "mountPath": "/etc/kmirror/templates", "readOnly": True}
    ],
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["kafka"]}]}
            ]
        }
    },
    "affinity": {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "podAffinityTerm": {
                        "topologyKey": "kubernetes.io/hostname",
                        "labelSelector": {"matchLabels": {"app.kubernetes.io/component": "mirror"}},
                    },
                }
            ]
        }
    },
    "nodeSelector": {"kubernetes.io/os": "linux"},
    "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
    "topologySpreadConstraints": [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"team": "data"}},
        }
    ],
    "priorityClassName": "mirror-critical",
    "podAnnotations": {"example.com/scrape": "false"},
    "podLabels": {"cost-center": "42"},
    "updateStrategy": {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1},
    },
    "readinessProbe": {"periodSeconds": 20},
    "serviceAccount": {"annotations": {"eks.amazonaws.com/role-arn": "arn:aws:iam::1:role/m"}},
    "service": {"annotations": {"a": "b"}, "labels": {"c": "d"}},
    "podMonitor": {"enabled": True, "relabelings": [{"action": "labeldrop", "regex": "pod"}]},
    "metrics": {"mm2Names": True, "mm2ClusterName": "dc1-to-dc2"},
    "grafanaDashboard": {"enabled": True, "annotations": {"grafana_folder": "Kafka"}},
    "prometheusRule": {
        "enabled": True,
        "labels": {"release": "prometheus"},
        "additionalLabels": {"team": "data"},
        "alerts": {"heartbeatAge": {"enabled": True}},
    },
    "topicRefreshIntervalSeconds": 30,
    "createTopics": False,
    "args": ["--strict"],
    "pdb": {"minAvailable": "50%", "maxUnavailable": ""},
    "networkPolicy": {
        "enabled": True,
        "allowExternalEgress": False,
        "metricsFrom": [{"namespaceSelector": {"matchLabels": {"name": "monitoring"}}}],
        "extraIngress": [{"from": [{"podSelector": {}}], "ports": [{"port": 8080}]}],
        "extraEgress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}], "ports": [{"port": 9094}]}],
    },
    "validation": {
        "mode": "digest",
        "extraArgs": ["--json-out=/tmp/result.json"],
        "extraEnv": [{"name": "SPARK_LOCAL_IP", "value": "127.0.0.1"}],
        "podAnnotations": {"sidecar.istio.io/inject": "false"},
        "podLabels": {"purpose": "check"},
        "serviceAccount": {"annotations": {"x": "y"}},
        "hook": {"enabled": True},
    },
}

ValuesArg = Mapping[str, Any] | Path | str | Sequence[Mapping[str, Any] | Path | str] | None


def ci_values_files() -> list[Path]:
    """ct picks exactly these: ci/*-values.yaml."""
    return sorted(CI_DIR.glob("*-values.yaml"))


def require_tool(path: Path) -> Path:
    if not os.access(path, os.X_OK):
        raise FileNotFoundError(
            f"{path} is missing: run `make go-tools` (scripts/build-go-tools builds helm, ct and "
            "kubeconform into ${KMIRROR_CACHE:-~/.cache/kmirror}/bin)"
        )
    return path


class HelmError(Exception):
    """helm exited non-zero; the message is its stderr."""


class Rendered(list[dict[str, Any]]):
    """The manifests of one render, in helm's order."""

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [d for d in self if d.get("kind") == kind]

    def one(self, kind: str, name: str | None = None) -> dict[str, Any]:
        found = [d for d in self.of_kind(kind) if name is None or d["metadata"]["name"] == name]
        if len(found) != 1:
            names = [d["metadata"]["name"] for d in self.of_kind(kind)]
            raise AssertionError(f"expected one {kind} {name or ''}, rendered: {names}")
        return found[0]

    def kinds(self) -> list[str]:
        return sorted(d["kind"] for d in self)

    def has(self, kind: str) -> bool:
        return bool(self.of_kind(kind))

    def pods(self) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """(manifest, pod spec) for every workload: Deployment, Job, Pod."""
        return [(d, pod_spec(d)) for d in self if d["kind"] in ("Deployment", "Job", "Pod")]

    @property
    def deployment(self) -> dict[str, Any]:
        return self.one("Deployment")

    @property
    def configmap(self) -> dict[str, str]:
        data: dict[str, str] = self.one("ConfigMap")["data"]
        return data


def _values_args(values: ValuesArg, tmp_inputs: list[str]) -> list[str]:
    if values is None:
        return []
    items: Iterable[Any] = [values] if isinstance(values, Mapping | Path | str) else values
    args: list[str] = []
    for item in items:
        if isinstance(item, Mapping):
            # JSON is YAML; several dicts go through numbered inputs joined below.
            tmp_inputs.append(json.dumps(item))
            args += ["-f", f"<dict:{len(tmp_inputs) - 1}>"]
        else:
            args += ["-f", str(item)]
    return args


@functools.lru_cache(maxsize=512)
def _run_helm(key: str) -> tuple[int, str, str]:
    spec = json.loads(key)
    args: list[str] = spec["args"]
    inputs: list[str] = spec["inputs"]
    files: list[Any] = []
    try:
        real: list[str] = []
        for a in args:
            if a.startswith("<dict:"):
                idx = int(a[6:-1])
                r, w = os.pipe()
                os.write(w, inputs[idx].encode())  # values files are small: fits a pipe buffer
                os.close(w)
                files.append(r)
                real.append(f"/dev/fd/{r}")
            else:
                real.append(a)
        proc = subprocess.run(
            [str(require_tool(HELM)), *real],
            capture_output=True,
            text=True,
            timeout=60,
            pass_fds=tuple(files),
            check=False,
            env=HELM_ENV,
        )
    finally:
        for fd in files:
            os.close(fd)
    return proc.returncode, proc.stdout, proc.stderr


@functools.lru_cache(maxsize=512)
def _parse(out: str) -> list[dict[str, Any]]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return [d for d in yaml.load_all(out, Loader=loader) if d]


def helm_template(
    values: ValuesArg = None,
    expect_fail: bool = False,
    *,
    release: str = RELEASE,
    namespace: str = NAMESPACE,
    kube_version: str | None = None,
    extra_args: Sequence[str] = (),
) -> Any:
    """`helm template` the chart with values (a dict, a values file, or a list of both, later
    ones winning) and return the parsed manifests as a Rendered list. With expect_fail=True the
    render must fail and helm's error message (stderr) is returned instead."""
    inputs: list[str] = []
    args = ["template", release, str(CHART_DIR), "--namespace", namespace]
    args += _values_args(values, inputs)
    if kube_version:
        args += ["--kube-version", kube_version]
    args += list(extra_args)
    code, out, err = _run_helm(json.dumps({"args": args, "inputs": inputs}))
    if expect_fail:
        if code == 0:
            raise AssertionError(f"helm template succeeded but should have failed: {values}")
        return err
    if code != 0:
        raise HelmError(f"helm template failed for {values}:\n{err}")
    return Rendered(copy.deepcopy(_parse(out)))


def render_notes(values: ValuesArg = None) -> str:
    """NOTES.txt as `helm install` would print it. helm template skips NOTES and
    `helm install --dry-run` wants a cluster, so a copy of the chart renders the notes through
    `tpl` into a ConfigMap."""
    notes_chart = _notes_chart()
    inputs: list[str] = []
    args = ["template", RELEASE, str(notes_chart), "--namespace", NAMESPACE]
    args += _values_args(values, inputs)
    args += ["--show-only", "templates/zz-notes.yaml"]
    code, out, err = _run_helm(json.dumps({"args": args, "inputs": inputs}))
    if code != 0:
        raise HelmError(err)
    doc = yaml.safe_load(out)
    notes: str = doc["data"]["notes"]
    return notes


@functools.cache
def _notes_chart() -> Path:
    root = Path(tempfile.mkdtemp(prefix="kmirror-notes-"))
    dst = root / "kmirror"
    shutil.copytree(CHART_DIR, dst)
    (dst / "files").mkdir(exist_ok=True)
    (dst / "templates" / "NOTES.txt").rename(dst / "files" / "NOTES.txt")
    (dst / "templates" / "zz-notes.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\n"
        'data:\n  notes: {{ tpl (.Files.Get "files/NOTES.txt") . | toJson }}\n'
    )
    atexit.register(shutil.rmtree, root, True)
    return dst


# ------------------------------------------------------------------------------ pod helpers


def pod_spec(doc: Mapping[str, Any]) -> dict[str, Any]:
    if doc["kind"] == "Pod":
        spec: dict[str, Any] = doc["spec"]
        return spec
    spec = doc["spec"]["template"]["spec"]
    return spec


def pod_metadata(doc: Mapping[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = (
        doc["metadata"] if doc["kind"] == "Pod" else doc["spec"]["template"]["metadata"]
    )
    return meta


def container(doc: Mapping[str, Any], name: str | None = None) -> dict[str, Any]:
    containers = pod_spec(doc)["containers"]
    if name is None:
        assert len(containers) == 1, [c["name"] for c in containers]
        c: dict[str, Any] = containers[0]
        return c
    return next(c for c in containers if c["name"] == name)


@dataclass(frozen=True)
class SecretRef:
    secret: str
    key: str


@dataclass(frozen=True)
class FieldRef:
    field_path: str


EnvValue = str | SecretRef | FieldRef


def resolve_env(c: Mapping[str, Any], docs: Rendered) -> dict[str, EnvValue]:
    """The container's environment as Kubernetes builds it: envFrom first (in order), then env
    (later entries win). ConfigMaps come from the same render; Secret references stay
    references."""
    env: dict[str, EnvValue] = {}
    for src in c.get("envFrom", []):
        if "configMapRef" in src:
            cm = docs.one("ConfigMap", src["configMapRef"]["name"])
            env.update({k: str(v) for k, v in cm.get("data", {}).items()})
        else:
            raise AssertionError(f"unexpected envFrom source {src}")
    for e in c.get("env", []):
        if "value" in e:
            env[e["name"]] = str(e["value"])
        elif "secretKeyRef" in e.get("valueFrom", {}):
            ref = e["valueFrom"]["secretKeyRef"]
            env[e["name"]] = SecretRef(ref["name"], ref["key"])
        elif "configMapKeyRef" in e.get("valueFrom", {}):
            ref = e["valueFrom"]["configMapKeyRef"]
            env[e["name"]] = str(docs.one("ConfigMap", ref["name"])["data"][ref["key"]])
        elif "fieldRef" in e.get("valueFrom", {}):
            env[e["name"]] = FieldRef(e["valueFrom"]["fieldRef"]["fieldPath"])
        else:
            raise AssertionError(f"unsupported env entry {e}")
    return env


def mounted_secret_files(doc: Mapping[str, Any], c: Mapping[str, Any]) -> dict[str, SecretRef]:
    """Path in the container -> the Secret key mounted there (secret volumes with items)."""
    volumes = {v["name"]: v for v in pod_spec(doc).get("volumes", [])}
    files: dict[str, SecretRef] = {}
    for m in c.get("volumeMounts", []):
        secret = volumes[m["name"]].get("secret")
        if secret is None:
            continue
        assert "items" in secret, f"secret volume {m['name']} mounts every key; pin them"
        for item in secret["items"]:
            path = f"{m['mountPath'].rstrip('/')}/{item['path']}"
            files[path] = SecretRef(secret["secretName"], item["key"])
    return files


# ------------------------------------------------------------------------- render-and-run


@dataclass(frozen=True)
class RunSpec:
    """What a rendered container asks of a container runtime."""

    image: str
    command: list[str]  # replaces the image ENTRYPOINT when non-empty
    args: list[str]
    env: dict[str, str]
    secret_env: dict[str, SecretRef]
    field_env: dict[str, FieldRef]
    secret_files: dict[str, SecretRef]
    user: str
    read_only: bool
    tmpfs: list[str]
    cap_drop_all: bool
    no_new_privileges: bool
    ports: list[int] = field(default_factory=list)

    def podman_args(
        self,
        name: str,
        image: str | None = None,
        secrets: Mapping[SecretRef, str] | None = None,
        secret_dir: Path | None = None,
        detach: bool = False,
    ) -> list[str]:
        """`podman run` arguments that reproduce the pod's container: same entrypoint/args,
        environment, user, read-only root, /tmp, capabilities. Secret values are looked up in
        `secrets` (SecretRef -> content) and written as files under secret_dir. Detached
        containers are kept after exit (for their exit code): the caller removes them."""
        secrets = secrets or {}
        missing = sorted(
            {
                f"{r.secret}/{r.key}"
                for r in [*self.secret_env.values(), *self.secret_files.values()]
                if r not in secrets
            }
        )
        if missing:
            raise ValueError(f"the container needs Secret keys not given: {missing}")
        out = ["run", "--detach" if detach else "--rm", "--name", name]
        out += ["--network", "host", "--user", self.user]
        if self.read_only:
            out.append("--read-only")
        out += [f"--tmpfs={t}:rw,mode=1777" for t in self.tmpfs]
        if self.cap_drop_all:
            out.append("--cap-drop=ALL")
        if self.no_new_privileges:
            out.append("--security-opt=no-new-privileges")
        for k, v in sorted(self.env.items()):
            out += ["--env", f"{k}={v}"]
        for k, ref in sorted(self.secret_env.items()):
            out += ["--env", f"{k}={secrets[ref]}"]
        for k, fref in sorted(self.field_env.items()):
            if fref.field_path != "metadata.name":
                raise ValueError(f"{k}: cannot reproduce fieldRef {fref.field_path} in podman")
            out += ["--env", f"{k}={name}"]
        if self.secret_files:
            if secret_dir is None:
                raise ValueError("secret files need a secret_dir to be written to")
            for i, (path, ref) in enumerate(sorted(self.secret_files.items())):
                host = secret_dir / f"secret-{i}"
                host.write_text(secrets[ref])
                out += ["--volume", f"{host}:{path}:ro,Z"]
        if self.command:
            out += ["--entrypoint", json.dumps(self.command)]
        out.append(image or self.image)
        out += self.args
        return out

    def shell(self, name: str, **kwargs: Any) -> str:
        return shlex.join(["podman", *self.podman_args(name, **kwargs)])


def run_spec(docs: Rendered, doc: Mapping[str, Any] | None = None, name: str = "mirror") -> RunSpec:
    """Container `name` of a rendered workload (default: the mirror of the Deployment) as a
    RunSpec."""
    dep = docs.deployment if doc is None else doc
    spec = pod_spec(dep)
    c = container(dep, name)
    psc, csc = spec.get("securityContext", {}), c.get("securityContext", {})
    uid = csc.get("runAsUser", psc.get("runAsUser"))
    gid = csc.get("runAsGroup", psc.get("runAsGroup"))
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    tmpfs = [m["mountPath"] for m in c.get("volumeMounts", []) if "emptyDir" in volumes[m["name"]]]
    env = resolve_env(c, docs)
    return RunSpec(
        image=c["image"],
        command=list(c.get("command", [])),
        args=[str(a) for a in c.get("args", [])],
        env={k: v for k, v in env.items() if isinstance(v, str)},
        secret_env={k: v for k, v in env.items() if isinstance(v, SecretRef)},
        field_env={k: v for k, v in env.items() if isinstance(v, FieldRef)},
        secret_files=mounted_secret_files(dep, c),
        user=f"{uid}:{gid}" if gid is not None else str(uid),
        read_only=bool(csc.get("readOnlyRootFilesystem")),
        tmpfs=tmpfs,
        cap_drop_all="ALL" in csc.get("capabilities", {}).get("drop", []),
        no_new_privileges=csc.get("allowPrivilegeEscalation") is False,
        ports=[p["containerPort"] for p in c.get("ports", [])],
    )
