"""The mirror as a Deployment under faults (issue 26), on the local Kubernetes and the 3-broker
clusters: `replicaCount: 3` x `numStreams: 2` (six streams in one consumer group) mirrors a
12-partition topic (replication factor 3) while a producer writes to it throughout; one mirror
pod is deleted as a user does it (`kubectl delete pod`), then `helm upgrade` rolls every pod.
Both engines, both guarantees.

What passes, as in the other 3-broker scenarios (tests/faults/scenario3.py):

* the PodDisruptionBudget holds: while the deleted pod's replacement is not Ready, the
  budget allows no disruption and an eviction of another mirror pod is refused;
* the group rebalances: after the deletion and after the upgrade, everything the source held
  when the step began is committed within CATCH_UP_S, and all six streams are members again;
* the validation hook of the install and of the upgrade says OK (under exactly-once it fails
  on any duplicate: the chart's default);
* no container restarted: the kubelet never had to restart a mirror that could not recover
  by itself (a deleted or rolled pod is replaced, not restarted);
* 0 missing, 0 extra, and under exactly-once 0 duplicates and every partition in order;
  the validation job confirms the exactly-once runs.

Full tier only (make test-faults, marker `slow`): about five minutes per combination. The
figures join the 3-broker ones in bench/results/faults3-full.json (docs/reliability.md).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Collection
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from tests.faults import harness
from tests.faults.cluster3 import LINGER_MS3, RATE3, Clusters3
from tests.faults.harness import Load, Progress, Result, topic_name, write_results
from tests.faults.scenario3 import CHECK_ERRORS, ENGINES, guarantee, lag
from tests.faults.test_faults import CATCH_UP_S, judge
from tests.k8s import release as ops
from tests.k8s.conftest import PULL_SECRET, Kube, PushedImages
from tests.kafkatools import Clusters, admin, create_topic, delete_topic, wait_until

pytestmark = pytest.mark.k8s

NAMESPACE = "kmirror-faults"
RELEASE = "kmfaults"
REPLICAS, STREAMS = 3, 2
PARTITIONS = 12  # two per stream
STEM = "faults3"  # the rows join the 3-broker tables of docs/reliability.md


def _combinations() -> Any:
    params = [
        pytest.param(engine, eos, marks=pytest.mark.slow, id=f"{engine}-{'eos' if eos else 'alo'}")
        for engine in ENGINES
        for eos in (False, True)
    ]
    return pytest.mark.parametrize(("engine", "eos"), params)


def _members(client: AdminClient, group: str) -> int:
    desc = client.describe_consumer_groups([group], request_timeout=10)[group].result()
    return len(desc.members)


class Watch:
    """While a step runs (helm and kubectl block the test): when everything the source held
    at its start was committed, and the peak lag meanwhile, sampled by a thread with its own
    clients (a Consumer is not shared between threads)."""

    def __init__(self, clusters: Clusters, group: str, topic: str) -> None:
        self._progress = Progress(clusters, group, topic)
        self.goal = self._progress.source_end()
        self.t0 = time.monotonic()
        self.reached_s: float | None = None
        self.lag_max = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="k8s-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            with contextlib.suppress(*CHECK_ERRORS):
                done = self._progress.committed(len(self.goal))
                self.lag_max = max(self.lag_max, lag(self._progress.source_end(), done))
                if self.reached_s is None and self._progress.reached(self.goal):
                    self.reached_s = round(time.monotonic() - self.t0, 2)

    def stop(self, main: Progress) -> dict[str, Any]:
        """Wait (on the test's own `main` client) until the goal is committed, stop sampling;
        the step's recovery (seconds from its start) and peak lag."""
        main.wait(self.goal, CATCH_UP_S, "everything written before the step")
        self._stop.set()
        self._thread.join(10)
        self._progress.close()
        recovery = self.reached_s if self.reached_s is not None else time.monotonic() - self.t0
        return {"recovery_s": round(recovery, 2), "lag_max": self.lag_max}


class Deployment:
    """The release under test and what the scenario reads of it."""

    def __init__(self, kube: Kube, images: PushedImages, three: Clusters3, tmp_path: Path) -> None:
        self.kube = kube
        self.images = images
        self.three = three
        self.tmp_path = tmp_path
        self.restarts: dict[str, int] = {}  # every mirror pod seen -> its container restarts

    def values(self, engine: str, eos: bool, group: str, topic: str, roll: str) -> list[str]:
        direct = self.three.direct
        values: dict[str, Any] = {
            "global": {"imageRegistry": self.images.registry},
            "imagePullSecrets": [PULL_SECRET],
            "replicaCount": REPLICAS,
            "numStreams": STREAMS,
            "source": {"bootstrapServers": direct.source_bootstrap},
            "target": {"bootstrapServers": direct.target_bootstrap},
            "consumerGroup": group,
            "whitelist": topic,
            "engine": engine,
            "exactlyOnce": eos,
            "offsetCommitIntervalMs": harness.COMMIT_INTERVAL_MS,
            "image": {"tag": self.images.tag},
            # Changed by the upgrade: a new pod template, so every pod is rolled.
            "podAnnotations": {"kmirror.test/roll": roll},
            "validation": {
                "image": {"tag": self.images.tag},
                "hook": {"enabled": True, "deletePolicy": "before-hook-creation"},
                "test": {"enabled": False},
                "waitTimeoutSeconds": 240,
                "resources": {"requests": {"cpu": "100m"}},
            },
            # Six JVMs, Kubernetes and three mirror pods share two cores: ask for little.
            "resources": {"requests": {"cpu": "100m"}},
        }
        path = self.tmp_path / f"values-{roll}.json"
        path.write_text(json.dumps(values))
        return ["-f", str(path)]

    def helm(self, verb: str, values: list[str]) -> float:
        t0 = time.monotonic()
        proc = self.kube.helm(
            verb, RELEASE, str(ops.CHART), "-n", NAMESPACE, "--wait", "--wait-for-jobs",
            "--timeout", ops.HELM_TIMEOUT, *values, check=False,
        )  # fmt: skip
        took = time.monotonic() - t0
        ops.log(f"helm {verb}: exit {proc.returncode} after {took:.0f}s")
        if proc.returncode != 0:
            ops.dump(self.kube, NAMESPACE)
        assert proc.returncode == 0, f"helm {verb} failed:\n{proc.stdout}\n{proc.stderr}"
        report = ops.hook_report(self.kube, NAMESPACE, RELEASE)
        ops.log(f"validation hook after helm {verb}:\n{report[-1200:]}")
        assert "kmirror-validate: OK" in report, f"the post-{verb} hook did not report a match"
        return took

    def pods(self) -> list[dict[str, Any]]:
        pods = ops.mirror_pods(self.kube, NAMESPACE, RELEASE)
        self.restarts.update(ops.restarts(pods))
        return pods

    def all_ready(self, exclude: Collection[str] = ()) -> bool:
        pods = [p for p in self.pods() if p["metadata"]["name"] not in exclude]
        return len(pods) == REPLICAS and all(ops.ready(p) for p in pods)

    def budget(self) -> dict[str, Any]:
        pdbs = self.kube.get_json(
            "-n", NAMESPACE, "pdb", "-l", f"app.kubernetes.io/instance={RELEASE}"
        )
        items: list[dict[str, Any]] = pdbs["items"]  # type: ignore[assignment]
        assert len(items) == 1, f"expected the chart's one PodDisruptionBudget, found {len(items)}"
        return items[0]

    def evict(self, pod: str) -> tuple[int, str]:
        """POST an Eviction, as `kubectl drain` does: (exit code, stderr)."""
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": pod, "namespace": NAMESPACE},
        }
        path = self.tmp_path / f"eviction-{pod}.json"
        path.write_text(json.dumps(body))
        proc = self.kube.kubectl(
            "create", "--raw", f"/api/v1/namespaces/{NAMESPACE}/pods/{pod}/eviction",
            "-f", str(path), check=False,
        )  # fmt: skip
        return proc.returncode, proc.stderr


class Scenario:
    """One combination: the topic, the load, the release, the steps."""

    def __init__(
        self, kube: Kube, images: PushedImages, three: Clusters3, tmp_path: Path, engine: str,
        eos: bool,
    ) -> None:  # fmt: skip
        self.kube, self.three, self.engine, self.eos = kube, three, engine, eos
        self.direct = three.direct
        self.topic = topic_name(f"k8s-{engine}")
        self.group = self.topic.replace("faults-", "g-", 1)
        self.res = Result(f"k8s-pod-delete-upgrade-{engine}{'-eos' if eos else ''}", "full", 0)
        self.progress = Progress(self.direct, self.group, self.topic)
        self.load = Load(self.direct.source_bootstrap, self.topic, rate=RATE3,
                         partitions=PARTITIONS, linger_ms=LINGER_MS3)  # fmt: skip
        self.dep = Deployment(kube, images, three, tmp_path)
        self.admin = admin(self.direct.source_bootstrap)
        self.started = time.monotonic()

    def values(self, roll: str) -> list[str]:
        return self.dep.values(self.engine, self.eos, self.group, self.topic, roll)

    def caught_up(self, what: str) -> float:
        """Seconds until everything the source holds now is committed and all six streams
        are members of the group again."""
        goal = self.progress.source_end()
        t0 = time.monotonic()
        self.progress.wait(goal, CATCH_UP_S, f"after {what}")
        streams = REPLICAS * STREAMS
        wait_until(lambda: _members(self.admin, self.group) == streams, 120, 1,
                   f"{streams} streams in group {self.group} after {what}")  # fmt: skip
        return round(time.monotonic() - t0, 2)

    def cleanups(self, stack: contextlib.ExitStack) -> None:
        """What the run leaves behind is removed whatever happens (last registered, first run);
        the results file is written last."""
        stack.callback(lambda: write_results([self.res], "full", STEM, RATE3))
        stack.callback(self.progress.close)
        stack.callback(self.load.kill)
        for side in ("source", "target"):
            stack.callback(delete_topic, self.three.bootstrap(side), self.topic, 10, False)
        stack.callback(
            self.kube.kubectl, "delete", "namespace", NAMESPACE, "--timeout=180s", timeout=200,
            check=False,
        )  # fmt: skip
        stack.callback(
            self.kube.helm, "uninstall", RELEASE, "-n", NAMESPACE, "--wait", "--timeout", "3m",
            check=False,
        )  # fmt: skip

    def install(self, authfile: Path) -> None:
        ops.log(f"--- {self.res.scenario}: topic {self.topic}, namespace {NAMESPACE}")
        ops.namespace(self.kube, NAMESPACE, authfile)
        create_topic(self.three.bootstrap("source"), self.topic, PARTITIONS,
                     replication_factor=3, timeout=120)  # fmt: skip
        self.load.start()
        wait_until(lambda: sum(self.progress.source_end().values()) > 0, 60, 0.2, "load")
        ops.log(f"--- helm install: {REPLICAS} pods x {STREAMS} streams, the hook validates")
        self.res.details["install_s"] = round(self.dep.helm("install", self.values("1")), 1)
        assert self.dep.all_ready(), "mirror pods not Ready after the install"
        self.res.details["after_install_s"] = self.caught_up("the install")
        budget = self.dep.budget()
        assert budget["spec"].get("maxUnavailable") == 1, budget["spec"]

    def delete_pod(self) -> None:
        """kubectl delete pod; the budget holds while the replacement starts."""
        victim, other = sorted(p["metadata"]["name"] for p in self.dep.pods())[:2]
        ops.log(f"--- kubectl delete pod {victim}")
        watch = Watch(self.direct, self.group, self.topic)
        self.kube.kubectl("-n", NAMESPACE, "delete", "pod", victim, "--wait=false")
        self.res.faults += 1
        # The replacement is not Ready for seconds (a container start, the mirror joining):
        # meanwhile the budget allows no disruption, and an eviction is refused.
        wait_until(
            lambda: self.dep.budget().get("status", {}).get("disruptionsAllowed") == 0, 30, 0.2,
            "the PodDisruptionBudget allowing no disruption while a pod is replaced",
        )  # fmt: skip
        code, err = self.dep.evict(other)
        ops.log(f"eviction of {other} while {victim} is replaced: exit {code} {err.strip()}")
        assert code != 0 and "disruption budget" in err, (
            f"the eviction of {other} was not refused by the PodDisruptionBudget: {err}"
        )
        wait_until(lambda: self.dep.all_ready(exclude={victim}), 180, 1, "a Ready replacement pod")
        self.step("delete", watch)
        self.res.details["after_delete_s"] = self.caught_up(f"deleting {victim}")

    def upgrade(self) -> None:
        """helm upgrade with a new pod template: every pod rolled, the hook validates."""
        ops.log("--- helm upgrade: a new pod template rolls every pod")
        before = {p["metadata"]["name"] for p in self.dep.pods()}
        watch = Watch(self.direct, self.group, self.topic)
        self.res.details["upgrade_s"] = round(self.dep.helm("upgrade", self.values("2")), 1)
        self.res.faults += 1
        wait_until(
            lambda: self.dep.all_ready()
            and not ({p["metadata"]["name"] for p in self.dep.pods()} & before),
            180, 2, "every mirror pod replaced by a Ready new one",
        )  # fmt: skip
        self.step("upgrade", watch)
        self.res.details["after_upgrade_s"] = self.caught_up("the upgrade")

    def step(self, name: str, watch: Watch) -> None:
        """A step's recovery: from its start until everything written before it is committed
        (while helm still waits for the roll and the hook, the mirror may be done long before);
        its peak lag."""
        seen = watch.stop(self.progress)
        self.res.recovery_s.append(seen["recovery_s"])
        self.res.details[f"{name}_lag_max"] = seen["lag_max"]
        ops.log(f"{name}: everything written before it committed after {seen['recovery_s']}s, "
                f"peak lag {seen['lag_max']}")  # fmt: skip

    def finish(self) -> None:
        """The load stops, everything is committed, the release stops cleanly; the verdict."""
        ops.log("--- the load stops; everything committed; helm uninstall")
        res = self.res
        sent = self.load.stop()
        res.details["load"] = sent
        goal = self.progress.source_end()
        res.catch_up_s = round(self.progress.wait(goal, CATCH_UP_S, "final catch-up"), 2)
        self.dep.pods()
        self.kube.helm("uninstall", RELEASE, "-n", NAMESPACE, "--wait", "--timeout", "3m")
        res.details["container_restarts"] = self.dep.restarts
        res.apply(harness.compare(self.direct, self.topic))
        res.duration_s = round(time.monotonic() - self.started, 1)
        ops.log(f"verdict: {res}")
        assert not any(self.dep.restarts.values()), f"containers restarted: {self.dep.restarts}"
        judge(res, sent, self.direct, self.topic)


@_combinations()
def test_pod_deleted_then_rolling_upgrade(
    k8s_cluster: Kube,
    pushed_images: PushedImages,
    clusters3: Clusters3,
    tmp_path: Path,
    engine: str,
    eos: bool,
) -> None:
    if not harness.full_mode():
        pytest.skip("full fault scenario: set KMIRROR_FAULTS=full (make test-faults)")
    run = Scenario(k8s_cluster, pushed_images, clusters3, tmp_path, engine, eos)
    with guarantee(eos), contextlib.ExitStack() as stack:
        run.cleanups(stack)
        run.install(pushed_images.authfile)
        run.delete_pod()
        run.upgrade()
        run.finish()
