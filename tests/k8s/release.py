"""What the k8s tests do to a namespace and a release, and what they read back: the namespace
as users get it (the "restricted" Pod Security Standard, a pull secret), the mirror pods, the
validation hook's report, and what a person looks at when a step fails.

Shared by tests/k8s/test_helm_e2e.py (the chart's lifecycle) and tests/k8s/test_k8s_faults.py
(the mirror as a Deployment under faults).
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

from tests.k8s.conftest import PULL_SECRET, Kube
from tests.kafkatools import wait_until

CHART = Path(__file__).resolve().parents[2] / "chart" / "kmirror"
HELM_TIMEOUT = "15m"
MIRROR = "app.kubernetes.io/component=mirror"


def log(msg: str) -> None:
    print(f"[k8s-e2e {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def apply(kube: Kube, manifest: str) -> None:
    """kubectl apply of one JSON manifest, as a user pipes it in."""
    proc = subprocess.run(
        [kube.kubectl_bin, "apply", "-f", "-"],
        input=manifest,
        capture_output=True,
        text=True,
        env=kube.env,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr


def namespace(kube: Kube, name: str, authfile: Path) -> None:
    """A namespace that enforces the "restricted" Pod Security Standard, with the pull secret
    for the test registry (podman login's auth file)."""
    manifest = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": name,
            "labels": {
                "pod-security.kubernetes.io/enforce": "restricted",
                "pod-security.kubernetes.io/enforce-version": "latest",
            },
        },
    }
    apply(kube, json.dumps(manifest))
    # The default ServiceAccount appears asynchronously.
    wait_until(
        lambda: kube.kubectl("-n", name, "get", "sa", "default", check=False).returncode == 0,
        60,
        1,
        "default ServiceAccount in the namespace",
    )
    kube.kubectl(
        "-n", name, "create", "secret", "generic", PULL_SECRET,
        "--type=kubernetes.io/dockerconfigjson", f"--from-file=.dockerconfigjson={authfile}",
    )  # fmt: skip


def mirror_pods(kube: Kube, ns: str, release: str) -> list[dict[str, Any]]:
    """The release's mirror pods, those being deleted left out."""
    data = kube.get_json("-n", ns, "pods", "-l", f"app.kubernetes.io/instance={release},{MIRROR}")
    items: list[dict[str, Any]] = data["items"]  # type: ignore[assignment]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def ready(pod: dict[str, Any]) -> bool:
    conds = pod.get("status", {}).get("conditions", [])
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conds)


def restarts(pods: list[dict[str, Any]]) -> dict[str, int]:
    """Container restarts per pod (the kubelet restarting a container that exited)."""
    return {
        p["metadata"]["name"]: sum(
            s.get("restartCount", 0) for s in p.get("status", {}).get("containerStatuses", [])
        )
        for p in pods
    }


def hook_report(kube: Kube, ns: str, release: str) -> str:
    """The log of the validation hook Job's succeeded pod, read after helm returned. The tests'
    values keep the Job (deletePolicy before-hook-creation), so nothing depends on catching a
    pod before Helm deletes it; each install/upgrade replaces the previous run's Job."""
    selector = f"app.kubernetes.io/instance={release},app.kubernetes.io/component=validation"
    data = kube.get_json("-n", ns, "jobs", "-l", selector)
    jobs: list[dict[str, Any]] = data["items"]  # type: ignore[assignment]
    assert len(jobs) == 1, f"expected one validation hook Job, found {len(jobs)}"
    job = jobs[0]
    name = job["metadata"]["name"]
    assert job.get("status", {}).get("succeeded", 0) >= 1, f"hook Job {name}: {job.get('status')}"
    pods = kube.get_json("-n", ns, "pods", "-l", f"batch.kubernetes.io/job-name={name}")
    items: list[dict[str, Any]] = pods["items"]  # type: ignore[assignment]
    done = [p["metadata"]["name"] for p in items if p["status"].get("phase") == "Succeeded"]
    assert done, f"hook Job {name} has no succeeded pod"
    return kube.kubectl("-n", ns, "logs", done[0]).stdout


def dump(kube: Kube, ns: str) -> None:
    """What a person would look at when a step fails."""
    for args in (
        ("get", "pods,jobs,deploy,rs,pdb", "-o", "wide"),
        ("get", "events", "--sort-by=.lastTimestamp"),
        ("describe", "pods"),
    ):
        proc = kube.kubectl("-n", ns, *args, check=False)
        log(f"kubectl {' '.join(args)}:\n{proc.stdout[-6000:]}{proc.stderr[-1000:]}")
