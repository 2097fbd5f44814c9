"""End to end: the chart on a real (local) Kubernetes cluster, as users meet kmirror.

The locally built images are pushed to a private registry (TLS from a test CA, htpasswd auth;
`make push`), and the kubelet pulls them from there with a pull secret, as users' clusters pull
from ECR: `helm install --wait` with `global.imageRegistry` and `imagePullSecrets` into a
namespace that enforces the "restricted" Pod Security Standard; the mirror pods become Ready
running the pushed digest; the post-install validation
hook Job completes and reports a match; records produced afterwards reach the target;
`helm test` passes; `helm upgrade` with a changed whitelist rolls the pods (checksum annotation)
and mirrors the new topic; the release moved to mm2Config mode (a file with two flows, one each
way, both run by the Deployment) with `reloadOnChange` applies an
edited ConfigMap (a new topic) without a pod restart and without copying anything again; `helm
uninstall` leaves nothing behind.

The steps depend on each other, so they are one test with named steps (a failure names its
step). Needs root, podman images (`make image`), helm and the registry (`make go-tools`); the
cluster comes from scripts/k8s-local (tests/k8s/conftest.py). Run with `make test-k8s` (or
`make test`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.k8s import release as release_ops
from tests.k8s.conftest import PULL_SECRET, Kube, PushedImages
from tests.k8s.release import CHART, HELM_TIMEOUT, apply, ready
from tests.k8s.release import log as _log
from tests.kafkatools import (
    Clusters,
    create_topic,
    delete_topic,
    end_offsets,
    produce,
    unique,
    wait_until,
)

pytestmark = pytest.mark.k8s

NAMESPACE = "kmirror-e2e"


def _records(prefix: str, n: int) -> list[dict[str, Any]]:
    return [
        {"key": f"{prefix}-{i}".encode(), "value": f"value {prefix} {i}".encode()} for i in range(n)
    ]


def _total(bootstrap: str, topic: str) -> int:
    return sum(end_offsets(bootstrap, topic).values())


def _hook_report(kube: Kube, release: str) -> str:
    return release_ops.hook_report(kube, NAMESPACE, release)


def _mirror_pods(kube: Kube, release: str) -> list[dict[str, Any]]:
    return release_ops.mirror_pods(kube, NAMESPACE, release)


def _dump(kube: Kube) -> None:
    release_ops.dump(kube, NAMESPACE)


def _step(name: str) -> Callable[[str], None]:
    _log(f"--- {name}")
    return _log


def _mm2_properties(src: str, tgt: str, group: str, topics: str, back: str) -> str:
    """A user's mm2.properties with two flows, run by one Deployment (MM2's multi-cluster
    mode): `src->tgt` copies `topics`, `tgt->src` copies the target's topic `back` to the
    source; each its own consumer group, the target's names the source's (identity), no
    disaster-recovery topics (this step is about flows and the reload, not DR)."""
    return "\n".join(
        [
            "clusters=src,tgt",
            f"src.bootstrap.servers={src}",
            f"tgt.bootstrap.servers={tgt}",
            "src->tgt.enabled=true",
            f"src->tgt.topics={topics}",
            f"src->tgt.consumer.group.id={group}",
            "tgt->src.enabled=true",
            f"tgt->src.topics={back}",
            f"tgt->src.consumer.group.id={group}-back",
            "replication.policy.class=org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
            "emit.checkpoints.enabled=false",
            "emit.heartbeats.enabled=false",
            "sync.group.offsets.enabled=false",
            "",
        ]
    )


def _mm2_reload(
    kube: Kube,
    base_values: dict[str, Any],
    release: str,
    run: str,
    src: str,
    tgt: str,
    tmp_path: Path,
) -> None:
    """The release moves to mm2Config mode (its mm2.properties in a ConfigMap of the user's,
    `reloadOnChange: true`): one roll; the file runs two flows, one each way, and both copy.
    Then the user edits the ConfigMap to add a topic: the kubelet swaps the mounted file, the
    running pods reload it, copy the new topic and do not copy the first one again; no pod is
    replaced or restarted."""
    topic_c, topic_d, topic_e = f"{run}-refunds", f"{run}-returns", f"{run}-back"
    n_c, n_d, n_e = 400, 300, 200
    for topic, n, prefix in ((topic_c, n_c, "c"), (topic_d, n_d, "d")):
        create_topic(src, topic, partitions=2)
        produce(src, topic, _records(prefix, n))
    create_topic(tgt, topic_e, partitions=2)
    produce(tgt, topic_e, _records("e", n_e))
    configmap = f"{run}-mm2"

    def apply_configmap(topics: str) -> None:
        manifest = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": configmap, "namespace": NAMESPACE},
            "data": {
                "mm2.properties": _mm2_properties(src, tgt, f"{run}-mm2-group", topics, topic_e)
            },
        }
        apply(kube, json.dumps(manifest))

    apply_configmap(topic_c)
    values = {key: base_values[key] for key in ("global", "imagePullSecrets", "image", "resources")}
    values["mm2Config"] = {
        "enabled": True,
        "existingConfigMap": configmap,
        "reloadOnChange": True,
    }
    values["validation"] = {"test": {"enabled": False}, "hook": {"enabled": False}}
    path = tmp_path / "values-mm2.json"
    path.write_text(json.dumps(values))
    t0 = time.monotonic()
    proc = kube.helm(
        "upgrade", release, str(CHART), "-n", NAMESPACE, "--wait", "--timeout", HELM_TIMEOUT,
        "-f", str(path), check=False,
    )  # fmt: skip
    _log(f"helm upgrade to mm2Config: exit {proc.returncode} after {time.monotonic() - t0:.0f}s")
    if proc.returncode != 0:
        _dump(kube)
    assert proc.returncode == 0, f"helm upgrade failed:\n{proc.stdout}\n{proc.stderr}"
    try:
        wait_until(
            lambda: _total(tgt, topic_c) == n_c, 180, 2, f"{n_c} records in target {topic_c}"
        )
        wait_until(
            lambda: _total(src, topic_e) == n_e, 180, 2,
            f"{n_e} records of the target's {topic_e} in the source (flow tgt->src)",
        )  # fmt: skip
        pods = _mirror_pods(kube, release)
        assert pods and all(ready(p) for p in pods), "mirror pods not Ready in mm2Config mode"

        before = release_ops.restarts(pods)
        _log(f"ConfigMap {configmap}: topics {topic_c} -> {topic_c}|{topic_d}")
        t0 = time.monotonic()
        apply_configmap(f"{topic_c}|{topic_d}")
        wait_until(
            lambda: _total(tgt, topic_d) == n_d, 180, 2, f"{n_d} records in target {topic_d}"
        )
        _log(f"{topic_d} copied {time.monotonic() - t0:.0f}s after the ConfigMap changed")
        assert release_ops.restarts(_mirror_pods(kube, release)) == before, (
            "a mirror pod was replaced or restarted by the ConfigMap change"
        )
        assert _total(tgt, topic_c) == n_c, f"{topic_c} was copied again by the reload"
        logs = "".join(kube.kubectl("-n", NAMESPACE, "logs", name).stdout for name in before)
        assert "reload (" in logs and ") applied" in logs, (
            f"no pod logged the reload:\n{logs[-3000:]}"
        )
    finally:
        kube.kubectl("-n", NAMESPACE, "delete", "configmap", configmap, check=False)


def test_helm_lifecycle(
    k8s_cluster: Kube, pushed_images: PushedImages, clusters: Clusters, tmp_path: Path
) -> None:
    kube = k8s_cluster
    images = pushed_images
    src, tgt = clusters.source_bootstrap, clusters.target_bootstrap
    run = unique("k8s")
    topic_a, topic_b = f"{run}-orders", f"{run}-payments"
    release = "kme2e"
    n_first, n_after, n_b = 3000, 1000, 500
    topics = [topic_a, topic_b]

    # As users do: the chart's default repositories under their registry, a pull secret.
    base_values: dict[str, Any] = {
        "global": {"imageRegistry": images.registry},
        "imagePullSecrets": [PULL_SECRET],
        "source": {"bootstrapServers": src},
        "target": {"bootstrapServers": tgt},
        "consumerGroup": f"{run}-group",
        "image": {"tag": images.tag},
        "validation": {
            "image": {"tag": images.tag},
            # Keep the hook Job after success so its report is read after helm returns
            # (_hook_report); the chart's default also deletes it on success.
            "hook": {"enabled": True, "deletePolicy": "before-hook-creation"},
            "waitTimeoutSeconds": 240,
            # A 2-core machine shared with other work: ask for less than the defaults.
            "resources": {"requests": {"cpu": "100m"}},
        },
        "resources": {"requests": {"cpu": "100m"}},
    }

    def values_file(whitelist: str) -> list[str]:
        path = tmp_path / f"values-{len(list(tmp_path.iterdir()))}.json"
        path.write_text(json.dumps({**base_values, "whitelist": whitelist}))
        return ["-f", str(path)]

    try:
        log = _step(
            "namespace with Pod Security Standard 'restricted' enforced, pull secret "
            f"{PULL_SECRET} for {images.registry}"
        )
        release_ops.namespace(kube, NAMESPACE, images.authfile)

        log = _step(f"topic {topic_a} with {n_first} records on the source")
        create_topic(src, topic_a, partitions=3)
        produce(src, topic_a, _records("a", n_first))

        log = _step("helm install --wait (mirror Ready, validation hook Job)")
        t0 = time.monotonic()
        proc = kube.helm(
            "install", release, str(CHART), "-n", NAMESPACE, "--wait", "--wait-for-jobs",
            "--timeout", HELM_TIMEOUT, *values_file(topic_a), check=False,
        )  # fmt: skip
        log(f"helm install: exit {proc.returncode} after {time.monotonic() - t0:.0f}s")
        if proc.returncode != 0:
            _dump(kube)
        assert proc.returncode == 0, f"helm install failed:\n{proc.stdout}\n{proc.stderr}"
        pods = _mirror_pods(kube, release)
        assert pods and all(ready(p) for p in pods), "mirror pods not Ready after install"
        # The kubelet pulled the pushed image from the registry, with the pull secret.
        mirror_ref = f"{images.registry}/kmirror/mirror:{images.tag}"
        pulled = {s["imageID"] for p in pods for s in p["status"]["containerStatuses"]}
        log(f"mirror pods run {pulled}")
        assert pulled == {f"{mirror_ref.rpartition(':')[0]}@{images.digests[mirror_ref]}"}
        hook_logs = _hook_report(kube, release)
        log(f"validation hook output:\n{hook_logs[-1500:]}")
        assert "kmirror-validate: OK" in hook_logs, "the post-install hook did not report a match"

        log = _step(f"{n_after} records produced after the install reach the target")
        produce(src, topic_a, _records("a2", n_after))
        want = n_first + n_after
        wait_until(
            lambda: _total(tgt, topic_a) == want, 180, 2, f"{want} records in target {topic_a}"
        )

        log = _step("helm test")
        t0 = time.monotonic()
        proc = kube.helm(
            "test", release, "-n", NAMESPACE, "--logs", "--timeout", HELM_TIMEOUT, check=False
        )
        took = time.monotonic() - t0
        log(f"helm test: exit {proc.returncode} after {took:.0f}s\n{proc.stdout[-2000:]}")
        if proc.returncode != 0:
            _dump(kube)
        assert proc.returncode == 0, f"helm test failed:\n{proc.stdout}\n{proc.stderr}"
        assert "kmirror-validate: OK" in proc.stdout

        log = _step(f"helm upgrade: whitelist += {topic_b} rolls the pods and mirrors it")
        create_topic(src, topic_b, partitions=2)
        produce(src, topic_b, _records("b", n_b))
        before = _mirror_pods(kube, release)
        checksum_before = {p["metadata"]["annotations"].get("checksum/config") for p in before}
        names_before = {p["metadata"]["name"] for p in before}
        t0 = time.monotonic()
        proc = kube.helm(
            "upgrade", release, str(CHART), "-n", NAMESPACE, "--wait", "--wait-for-jobs",
            "--timeout", HELM_TIMEOUT, *values_file(f"{topic_a},{topic_b}"), check=False,
        )  # fmt: skip
        log(f"helm upgrade: exit {proc.returncode} after {time.monotonic() - t0:.0f}s")
        if proc.returncode != 0:
            _dump(kube)
        assert proc.returncode == 0, f"helm upgrade failed:\n{proc.stdout}\n{proc.stderr}"
        wait_until(
            lambda: (
                (ps := _mirror_pods(kube, release))
                and all(ready(p) for p in ps)
                and not ({p["metadata"]["name"] for p in ps} & names_before)
            ),
            180,
            2,
            "old mirror pods replaced by Ready new ones",
        )
        after = _mirror_pods(kube, release)
        checksum_after = {p["metadata"]["annotations"].get("checksum/config") for p in after}
        log(f"checksum/config {checksum_before} -> {checksum_after}")
        assert checksum_after.isdisjoint(checksum_before), "checksum annotation did not change"
        wait_until(
            lambda: _total(tgt, topic_b) == n_b, 180, 2, f"{n_b} records in target {topic_b}"
        )
        upgrade_logs = _hook_report(kube, release)
        assert "kmirror-validate: OK" in upgrade_logs, (
            "the post-upgrade hook did not report a match"
        )

        log = _step("mm2Config + reloadOnChange: a ConfigMap update applies without a restart")
        _mm2_reload(kube, base_values, release, run, src, tgt, tmp_path)

        log = _step("helm uninstall leaves nothing behind")
        kube.helm("uninstall", release, "-n", NAMESPACE, "--wait", "--timeout", "5m")
        selector = f"app.kubernetes.io/instance={release}"
        kinds = (
            "all,configmaps,secrets,serviceaccounts,roles,rolebindings,poddisruptionbudgets,"
            "networkpolicies,jobs,pods"
        )

        def leftovers() -> str:
            out = kube.kubectl("-n", NAMESPACE, "get", kinds, "-l", selector, "-o", "name").stdout
            helm_secrets = kube.kubectl(
                "-n", NAMESPACE, "get", "secrets", "-l", f"owner=helm,name={release}", "-o", "name"
            ).stdout
            return (out + helm_secrets).strip()

        # Helm never deletes hook resources on uninstall. The test's values keep the hook Job
        # (to read its report): check it is the hook and delete it, with its pods.
        data = kube.get_json(
            "-n", NAMESPACE, "jobs", "-l", f"{selector},app.kubernetes.io/component=validation"
        )
        hook_jobs: list[dict[str, Any]] = data["items"]  # type: ignore[assignment]
        for job in hook_jobs:
            name, hook = job["metadata"]["name"], job["metadata"]["annotations"]["helm.sh/hook"]
            assert hook == "post-install,post-upgrade", f"job {name} is not the hook ({hook!r})"
            kube.kubectl("-n", NAMESPACE, "delete", "job", name, "--cascade=foreground")
        # The chart keeps the `helm test` pod
        # (validation.test.deletePolicy: before-hook-creation) so that `helm test --logs` can
        # read it, so that one pod outlives the release by design; anything else is a leak.
        # Tighten this (drop KEPT_TEST_POD) if the chart ever deletes it.
        kept_test_pod = f"pod/{release}-kmirror-test"

        def leaked() -> list[str]:
            return [r for r in leftovers().split() if r != kept_test_pod]

        try:
            wait_until(lambda: not leaked(), 120, 2, "no resources of the release left")
        except TimeoutError:
            raise AssertionError(f"left behind after helm uninstall:\n{leaked()}") from None
        if kept_test_pod in leftovers().split():
            hook = kube.kubectl(
                "-n", NAMESPACE, "get", kept_test_pod,
                "-o", "jsonpath={.metadata.annotations.helm\\.sh/hook}",
            ).stdout  # fmt: skip
            assert hook == "test", f"{kept_test_pod} is not the helm test hook pod ({hook!r})"
            log(f"{kept_test_pod} kept by the chart's validation.test.deletePolicy; deleting it")
            kube.kubectl("-n", NAMESPACE, "delete", kept_test_pod, "--wait=false")
    finally:
        kube.helm("uninstall", release, "-n", NAMESPACE, "--wait", "--timeout", "3m", check=False)
        kube.kubectl("delete", "namespace", NAMESPACE, "--timeout=180s", timeout=200, check=False)
        for t in topics:
            for b in (src, tgt):
                try:
                    delete_topic(b, t, wait=False)
                except Exception as exc:  # cleanup only
                    _log(f"cleanup: delete {t} at {b}: {exc}")
