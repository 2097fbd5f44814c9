"""Pod Security Standard "restricted" for the Deployment, the hook Job and the test pod, and
credentials only ever in Secrets (secretKeyRef or mounted files), never in a ConfigMap."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from tests.chart import chartlib
from tests.chart.chartlib import MINIMAL, container, pod_spec

pytestmark = pytest.mark.chart

T = chartlib.helm_template

CASES: list[tuple[str, Any]] = [
    *((f.name, f) for f in chartlib.ci_values_files()),
    ("kitchen-sink", chartlib.KITCHEN_SINK),
]

# https://kubernetes.io/docs/concepts/security/pod-security-standards/ (restricted, latest)
RESTRICTED_VOLUME_TYPES = {
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
}
SAFE_SYSCTLS = {
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
}


def restricted_violations(spec: Mapping[str, Any]) -> list[str]:
    """Every rule of the baseline and restricted Pod Security Standards a pod spec breaks."""
    out: list[str] = []
    psc = spec.get("securityContext", {})
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(field):
            out.append(f"{field} is set")
    for v in spec.get("volumes", []):
        kinds = set(v) - {"name"}
        if not kinds <= RESTRICTED_VOLUME_TYPES:
            out.append(f"volume {v['name']} of type {kinds}")
    for s in psc.get("sysctls", []):
        if s["name"] not in SAFE_SYSCTLS:
            out.append(f"unsafe sysctl {s['name']}")
    if psc.get("runAsUser") == 0:
        out.append("pod runAsUser 0")
    pod_seccomp = psc.get("seccompProfile", {}).get("type")
    containers = [
        *spec.get("initContainers", []),
        *spec["containers"],
        *spec.get("ephemeralContainers", []),
    ]
    for c in containers:
        out += _container_violations(c, psc, pod_seccomp)
    return out


def _container_violations(
    c: Mapping[str, Any], psc: Mapping[str, Any], pod_seccomp: str | None
) -> list[str]:
    """The container-level rules; the pod's securityContext supplies the defaults."""
    out: list[str] = []
    name = c["name"]
    csc = c.get("securityContext", {})
    if csc.get("privileged"):
        out.append(f"{name}: privileged")
    if csc.get("allowPrivilegeEscalation") is not False:
        out.append(f"{name}: allowPrivilegeEscalation is not false")
    caps = csc.get("capabilities", {})
    if "ALL" not in caps.get("drop", []):
        out.append(f"{name}: capabilities do not drop ALL")
    if set(caps.get("add", [])) - {"NET_BIND_SERVICE"}:
        out.append(f"{name}: adds capabilities {caps['add']}")
    if csc.get("runAsNonRoot", psc.get("runAsNonRoot")) is not True:
        out.append(f"{name}: runAsNonRoot is not true")
    if csc.get("runAsUser") == 0:
        out.append(f"{name}: runAsUser 0")
    seccomp = csc.get("seccompProfile", {}).get("type", pod_seccomp)
    if seccomp not in ("RuntimeDefault", "Localhost"):
        out.append(f"{name}: seccompProfile {seccomp}")
    if csc.get("procMount", "Default") != "Default":
        out.append(f"{name}: procMount")
    out += [f"{name}: hostPort {p['hostPort']}" for p in c.get("ports", []) if p.get("hostPort")]
    selinux = {**psc.get("seLinuxOptions", {}), **csc.get("seLinuxOptions", {})}
    if selinux.get("user") or selinux.get("role"):
        out.append(f"{name}: SELinux user/role set")
    if csc.get("appArmorProfile", {}).get("type") == "Unconfined":
        out.append(f"{name}: AppArmor unconfined")
    return out


def test_checker_catches_the_usual_mistakes() -> None:
    spec = {
        "hostNetwork": True,
        "volumes": [{"name": "h", "hostPath": {"path": "/"}}],
        "containers": [
            {
                "name": "c",
                "securityContext": {"privileged": True, "capabilities": {"add": ["SYS_ADMIN"]}},
                "ports": [{"containerPort": 1, "hostPort": 1}],
            }
        ],
    }
    found = "\n".join(restricted_violations(spec))
    for words in [
        "hostNetwork",
        "hostPath",
        "privileged",
        "allowPrivilegeEscalation",
        "drop ALL",
        "SYS_ADMIN",
        "runAsNonRoot",
        "seccompProfile None",
        "hostPort",
    ]:
        assert words in found, words


@pytest.mark.parametrize(("name", "values"), CASES, ids=[c[0] for c in CASES])
def test_every_pod_meets_restricted(name: str, values: Any) -> None:
    docs = T(values)
    for doc, spec in docs.pods():
        assert not restricted_violations(spec), (doc["kind"], restricted_violations(spec))


@pytest.mark.parametrize("kind", ["Deployment", "Job", "Pod"])
def test_restricted_settings_by_name(kind: str) -> None:
    # The list, spelled out, on each workload with default security values.
    docs = T([MINIMAL, {"validation": {"hook": {"enabled": True}}}])
    doc = docs.one(kind)
    spec = pod_spec(doc)
    psc = spec["securityContext"]
    assert psc["runAsNonRoot"] is True
    assert psc["runAsUser"] == 65532
    assert psc["seccompProfile"] == {"type": "RuntimeDefault"}
    assert psc["fsGroup"] == 65532  # secret files are 0440: readable through the group
    c = container(doc)
    csc = c["securityContext"]
    assert csc["runAsNonRoot"] is True
    assert csc["runAsUser"] == 65532
    assert csc["allowPrivilegeEscalation"] is False
    assert csc["capabilities"] == {"drop": ["ALL"]}
    assert csc["seccompProfile"] == {"type": "RuntimeDefault"}
    assert csc["readOnlyRootFilesystem"] is True
    assert csc["privileged"] is False
    # Read-only root: the only writable place is the /tmp emptyDir.
    tmp = next(m for m in c["volumeMounts"] if m["mountPath"] == "/tmp")
    volume = next(v for v in spec["volumes"] if v["name"] == tmp["name"])
    assert "emptyDir" in volume
    writable = [m for m in c["volumeMounts"] if not m.get("readOnly")]
    assert writable == [tmp]
    assert spec["automountServiceAccountToken"] is False


def test_security_contexts_are_overridable() -> None:
    docs = T(
        [
            MINIMAL,
            {
                "podSecurityContext": {"runAsUser": 1001, "fsGroup": None},
                "containerSecurityContext": {"runAsUser": 1001},
            },
        ]
    )
    for doc, spec in docs.pods():
        assert spec["securityContext"]["runAsUser"] == 1001
        assert "fsGroup" not in spec["securityContext"]
        assert container(doc)["securityContext"]["runAsUser"] == 1001
        assert container(doc)["securityContext"]["readOnlyRootFilesystem"] is True


# --------------------------------------------------------------------------------- secrets


SECRET_WORDS = ("PASSWORD", "SECRET", "TOKEN", "JAAS", "CREDENTIAL")


@pytest.mark.parametrize(("name", "values"), CASES, ids=[c[0] for c in CASES])
def test_no_credentials_in_configmaps_or_plain_env(name: str, values: Any) -> None:
    docs = T(values)
    assert not docs.has("Secret"), "the chart never creates Secrets; it uses existing ones"
    for cm in docs.of_kind("ConfigMap"):
        for key, value in cm.get("data", {}).items():
            upper = key.upper()
            if upper.endswith("_OAUTHBEARER_TOKEN_ENDPOINT_URL"):  # an address, not a token
                pass
            elif any(w in upper for w in SECRET_WORDS):
                # Only the *_PASSWORD_FILE / *_SECRET_FILE pointers, at mounted secret keys.
                assert upper.endswith(("_PASSWORD_FILE", "_CLIENT_SECRET_FILE")), key
                assert value.startswith("/etc/kmirror/secrets/"), (key, value)
            assert "USERNAME" not in upper, key
            for line in str(value).splitlines():
                assert not any(w.lower() in line.lower() for w in ("password=", "jaas")), line
    for doc, spec in docs.pods():
        for c in spec["containers"]:
            env = chartlib.resolve_env(c, docs)
            files = chartlib.mounted_secret_files(doc, c)
            for key, value in env.items():
                if key.endswith(("_SASL_USERNAME",)):
                    assert isinstance(value, chartlib.SecretRef), key
                if key.endswith(("_PASSWORD_FILE", "_SECRET_FILE", "_SSL_KEY_LOCATION")):
                    assert value in files, (key, value)
            _no_plain_secret_env(c, files)


def _no_plain_secret_env(c: Any, files: Any) -> None:
    for e in c.get("env", []):
        if any(w in e["name"] for w in SECRET_WORDS):
            if e["name"].endswith("_TOKEN_FILE"):  # a pointer at a mounted secret key
                assert e.get("value") in files, e
            else:
                assert "value" not in e, e


def test_password_files_point_at_mounted_secret_keys() -> None:
    docs = T(chartlib.KITCHEN_SINK)
    for doc, spec in docs.pods():
        c = spec["containers"][0]
        env = chartlib.resolve_env(c, docs)
        files = chartlib.mounted_secret_files(doc, c)
        pointers = {k: v for k, v in env.items() if k.endswith(("_PASSWORD_FILE", "_LOCATION"))}
        assert len(pointers) == 6, pointers
        for key, path in pointers.items():
            assert path in files, (doc["kind"], key, path)
        for v in spec["volumes"]:
            if "secret" in v:
                assert v["secret"]["defaultMode"] == 0o440
                assert v["secret"]["items"], v  # only the keys named in values are mounted
