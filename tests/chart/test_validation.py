"""The validation hook Job and the `helm test` pod: hooks done right, the same cluster and secret
settings as the mirror, one invocation of kmirror-validate."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.chart import chartlib
from tests.chart.chartlib import MINIMAL, container, pod_metadata, pod_spec

pytestmark = pytest.mark.chart

T = chartlib.helm_template
HOOK_ON = {"validation": {"hook": {"enabled": True}}}
JOB_NAME = f"{chartlib.FULLNAME}-validate"
SA_NAME = f"{chartlib.FULLNAME}-validate"


def _args(doc: dict[str, Any]) -> dict[str, str]:
    out = {}
    for a in container(doc, "validate")["args"]:
        key, _, value = a.partition("=")
        out[key] = value
    return out


def test_defaults_render_the_test_pod_and_a_bounded_hook() -> None:
    docs = T(MINIMAL)
    # The hook compares the last 1000 records the mirror has copied: a backlog cannot hold
    # up the install, and an at-least-once mirror's duplicates pass.
    hook = _args(docs.one("Job", JOB_NAME))
    assert (hook["--to"], hook["--last"], hook["--wait-timeout"]) == ("copied", "1000", "120")
    assert (hook["--duplicates"], hook["--from"]) == ("allow", "auto")
    assert "--to" not in _args(docs.one("Pod"))
    pod = docs.one("Pod")
    assert pod["metadata"]["name"] == f"{chartlib.FULLNAME}-test"
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    # Kept after success so `helm test --logs` can read it; replaced by the next run.
    assert pod["metadata"]["annotations"]["helm.sh/hook-delete-policy"] == "before-hook-creation"
    spec = pod_spec(pod)
    assert spec["restartPolicy"] == "Never"
    assert spec["activeDeadlineSeconds"] == 600
    assert spec["serviceAccountName"] == SA_NAME
    assert container(pod)["image"] == "ghcr.io/kmirror/validate:0.1.0"


def test_hook_job_is_done_right() -> None:
    docs = T([MINIMAL, HOOK_ON])
    job = docs.one("Job", JOB_NAME)
    ann = job["metadata"]["annotations"]
    assert ann["helm.sh/hook"] == "post-install,post-upgrade"
    assert ann["helm.sh/hook-weight"] == "5"
    assert ann["helm.sh/hook-delete-policy"] == "before-hook-creation,hook-succeeded"
    spec = job["spec"]
    assert spec["backoffLimit"] == 2
    assert spec["activeDeadlineSeconds"] == 600
    # A verdict (1 = mismatch, 2 = config error) is final; disruptions are not failures.
    rules = spec["podFailurePolicy"]["rules"]
    assert rules[0] == {
        "action": "FailJob",
        "onExitCodes": {"containerName": "validate", "operator": "In", "values": [1, 2]},
    }
    assert rules[1] == {
        "action": "Ignore",
        "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
    }
    pod = pod_spec(job)
    assert pod["restartPolicy"] == "Never"  # podFailurePolicy requires it
    assert pod["serviceAccountName"] == SA_NAME
    assert pod["automountServiceAccountToken"] is False
    assert pod_metadata(job)["labels"]["app.kubernetes.io/component"] == "validation"


def test_validation_service_account_outlives_the_hook() -> None:
    # A hook-succeeded ServiceAccount would be gone when `helm test` runs later: it must be a
    # plain release resource, which helm creates before post-install hooks.
    docs = T([MINIMAL, HOOK_ON])
    sa = docs.one("ServiceAccount", SA_NAME)
    assert "helm.sh/hook" not in sa["metadata"].get("annotations", {})
    assert sa["automountServiceAccountToken"] is False
    docs = T([MINIMAL, {"validation": {"serviceAccount": {"create": False, "name": "shared"}}}])
    assert [d["metadata"]["name"] for d in docs.of_kind("ServiceAccount")] == [chartlib.FULLNAME]
    assert pod_spec(docs.one("Pod"))["serviceAccountName"] == "shared"
    docs = T([MINIMAL, {"validation": {"serviceAccount": {"annotations": {"iam": "role"}}}}])
    assert docs.one("ServiceAccount", SA_NAME)["metadata"]["annotations"] == {"iam": "role"}


def test_hook_settings() -> None:
    docs = T(
        [
            MINIMAL,
            {
                "validation": {
                    "hook": {
                        "waitTimeoutSeconds": 100,
                        "lastRecords": 50,
                        "enabled": True,
                        "weight": -3,
                        "deletePolicy": "before-hook-creation",
                        "backoffLimit": 0,
                        "activeDeadlineSeconds": 400,
                    },
                }
            },
        ]
    )
    job = docs.one("Job")
    assert job["metadata"]["annotations"]["helm.sh/hook-weight"] == "-3"
    assert job["metadata"]["annotations"]["helm.sh/hook-delete-policy"] == "before-hook-creation"
    assert job["spec"]["backoffLimit"] == 0
    assert job["spec"]["activeDeadlineSeconds"] == 400
    assert (_args(job)["--wait-timeout"], _args(job)["--last"]) == ("100", "50")


@pytest.mark.parametrize(
    "values",
    [
        {"replicaCount": 0, **HOOK_ON},
        {"validation": {"hook": {"enabled": False}, "test": {"enabled": False}}},
    ],
    ids=["mirror-disabled", "both-off"],
)
def test_nothing_to_validate(values: dict[str, Any]) -> None:
    docs = T([MINIMAL, values])
    assert not docs.has("Job") and not docs.has("Pod")
    assert [d["metadata"]["name"] for d in docs.of_kind("ServiceAccount")] == [chartlib.FULLNAME]


def test_hook_without_test_pod() -> None:
    docs = T([MINIMAL, {"validation": {"hook": {"enabled": True}, "test": {"enabled": False}}}])
    assert docs.has("Job") and not docs.has("Pod")


def test_one_invocation_for_job_and_test_pod() -> None:
    docs = T(
        [
            MINIMAL,
            HOOK_ON,
            {
                "validation": {
                    "mode": "digest",
                    "waitTimeoutSeconds": 42,
                    "extraArgs": ["--json-out=/tmp/r.json"],
                }
            },
        ]
    )
    job, pod = docs.one("Job"), docs.one("Pod")
    common = [
        "--source-bootstrap-servers=src-kafka:9092",
        "--target-bootstrap-servers=tgt-kafka:9092",
        "--topics=.*",
        "--mode=digest",
    ]
    # The same invocation; the hook is bounded to what the mirror has copied.
    assert container(job)["args"] == [*common, "--wait-timeout=120", "--duplicates=allow",
                                      "--from=auto", "--to=copied", "--last=1000",
                                      "--json-out=/tmp/r.json"]  # fmt: skip
    assert container(pod)["args"] == [*common, "--wait-timeout=42", "--duplicates=allow",
                                      "--from=auto", "--json-out=/tmp/r.json"]  # fmt: skip
    # The validate image's ENTRYPOINT is kmirror-validate.
    assert "command" not in container(job)


def test_kudo_direction_reaches_the_validation() -> None:
    docs = T(
        {
            "thisCluster": {"bootstrapServers": "this:9092"},
            "external": {"bootstrapServers": "ext:9092", "clusterType": "SOURCE"},
        }
    )
    args = _args(docs.one("Pod"))
    assert args["--source-bootstrap-servers"] == "ext:9092"
    assert args["--target-bootstrap-servers"] == "this:9092"


@pytest.mark.parametrize(
    ("whitelist", "blacklist", "topics", "match", "no_match"),
    [
        (".*", "", ".*", ["a", "orders"], []),
        ("orders.*", "", "orders.*", ["orders", "orders-eu"], ["payments"]),
        ("topic5, topic6", "", "topic5|topic6", ["topic5", "topic6"], ["topic7", "topic56"]),
        (
            "app\\..*,orders",
            "app\\.tmp.*,x",
            "^(?!(?:app\\.tmp.*|x)$)(?:app\\..*|orders)$",
            ["app.a", "orders"],
            ["app.tmp1", "x", "app", "ordersx"],
        ),
    ],
)
def test_validation_topics_derive_from_whitelist_and_blacklist(
    whitelist: str, blacklist: str, topics: str, match: list[str], no_match: list[str]
) -> None:
    docs = T([MINIMAL, {"whitelist": whitelist, "blacklist": blacklist}])
    derived = _args(docs.one("Pod"))["--topics"]
    assert derived == topics
    # Whole-name matching, as the mirror does (Python's re; Java's regex agrees on this subset).
    for t in match:
        assert re.fullmatch(derived, t), t
    for t in no_match:
        assert not re.fullmatch(derived, t), t


def test_explicit_validation_topics_win() -> None:
    docs = T([MINIMAL, {"blacklist": "x", "validation": {"topics": "orders"}}])
    assert _args(docs.one("Pod"))["--topics"] == "orders"


def test_same_environment_and_secrets_as_the_mirror() -> None:
    docs = T([chartlib.KITCHEN_SINK, {"validation": {"extraEnv": []}}])
    mirror = container(docs.deployment)
    mirror_env = chartlib.resolve_env(mirror, docs)
    mirror_files = chartlib.mounted_secret_files(docs.deployment, mirror)
    assert any(isinstance(v, chartlib.SecretRef) for v in mirror_env.values())
    # SASL password, 2 CAs, client cert, key, key password; and the control API's token, which
    # only the mirror serves.
    control = "/etc/kmirror/secrets/control/token"
    assert len(mirror_files) == 7 and control in mirror_files
    del mirror_files[control]
    for doc in (docs.one("Job"), docs.one("Pod")):
        c = container(doc, "validate")
        env = chartlib.resolve_env(c, docs)
        mirror_only = {k for k in mirror_env if k not in env}
        # The mirror's extraEnv, and the control API's token file.
        assert mirror_only == {"POD_NAME", "KMIRROR_CONTROL_TOKEN_FILE"}, doc["kind"]
        assert {k: v for k, v in mirror_env.items() if k not in mirror_only} == env
        assert chartlib.mounted_secret_files(doc, c) == mirror_files


def test_validation_pod_settings() -> None:
    docs = T([chartlib.KITCHEN_SINK])
    for doc in (docs.one("Job"), docs.one("Pod")):
        c = container(doc, "validate")
        spec = pod_spec(doc)
        assert c["image"] == "registry.example.com:5000/kmirror/validate:0.1.0"
        assert {"name": "SPARK_LOCAL_IP", "value": "127.0.0.1"} in c["env"]
        assert c["resources"] == {
            "requests": {"cpu": "500m", "memory": "1Gi"},
            "limits": {"cpu": "2", "memory": "2Gi"},
        }
        assert {"name": "tmp", "emptyDir": {"sizeLimit": "2Gi"}} in spec["volumes"]
        meta = pod_metadata(doc)
        assert meta["labels"]["purpose"] == "check"
        assert meta["annotations"]["sidecar.istio.io/inject"] == "false"
        # Shared scheduling: where the mirror may run, the check may run.
        assert spec["nodeSelector"] == {"kubernetes.io/os": "linux"}
        assert spec["tolerations"] == chartlib.KITCHEN_SINK["tolerations"]
        assert spec["priorityClassName"] == "mirror-critical"
        assert spec["affinity"] == {"nodeAffinity": chartlib.KITCHEN_SINK["nodeAffinity"]}
        assert spec["imagePullSecrets"] == [{"name": "pull-a"}, {"name": "pull-b"}]
    # Hook bookkeeping stays on the test pod's annotations next to the user's.
    pod_ann = docs.one("Pod")["metadata"]["annotations"]
    assert pod_ann["helm.sh/hook"] == "test"


@pytest.mark.parametrize(
    ("image", "global_", "expected"),
    [
        ({}, {}, "ghcr.io/kmirror/validate:0.1.0"),
        ({"tag": "9"}, {}, "ghcr.io/kmirror/validate:9"),
        ({"registry": "r.example.com"}, {}, "r.example.com/kmirror/validate:0.1.0"),
        ({"digest": "sha256:" + "b" * 64}, {}, "ghcr.io/kmirror/validate@sha256:" + "b" * 64),
        (
            {"registry": "r.example.com"},
            {"imageRegistry": "ecr.example.com"},
            "ecr.example.com/kmirror/validate:0.1.0",
        ),
    ],
)
def test_validation_image(image: dict[str, Any], global_: dict[str, Any], expected: str) -> None:
    docs = T([MINIMAL, {"validation": {"image": image}, "global": global_}])
    assert container(docs.one("Pod"))["image"] == expected


def test_validation_image_follows_the_mirror_registry() -> None:
    docs = T(
        [
            MINIMAL,
            {
                "image": {"registry": "123.dkr.ecr.us-east-1.amazonaws.com"},
                "validation": {"image": {"pullPolicy": "Always"}},
            },
        ]
    )
    c = container(docs.one("Pod"))
    assert c["image"] == "123.dkr.ecr.us-east-1.amazonaws.com/kmirror/validate:0.1.0"
    assert c["imagePullPolicy"] == "Always"


def test_test_pod_settings() -> None:
    docs = T(
        [
            MINIMAL,
            {
                "validation": {
                    "waitTimeoutSeconds": 60,
                    "test": {
                        "deletePolicy": "before-hook-creation,hook-succeeded",
                        "activeDeadlineSeconds": 120,
                    },
                }
            },
        ]
    )
    pod = docs.one("Pod")
    assert pod["metadata"]["annotations"]["helm.sh/hook-delete-policy"] == (
        "before-hook-creation,hook-succeeded"
    )
    assert pod_spec(pod)["activeDeadlineSeconds"] == 120
    assert _args(pod)["--wait-timeout"] == "60"


@pytest.mark.parametrize(
    ("values", "duplicates"),
    [
        ({}, "allow"),  # an at-least-once mirror (the default mode)
        ({"validation": {"duplicates": "fail"}}, "fail"),  # an exactly-once mirror
    ],
)
def test_duplicate_policy(values: dict[str, Any], duplicates: str) -> None:
    docs = T([MINIMAL, values])
    assert _args(docs.one("Job"))["--duplicates"] == duplicates
    assert _args(docs.one("Pod"))["--duplicates"] == duplicates


def test_test_pod_range_values() -> None:
    args = _args(T([MINIMAL, {"validation": {"range": {"from": "mirror", "since": "2h",
                                                       "last": 500}}}]).one("Pod"))  # fmt: skip
    assert (args["--from"], args["--since"], args["--last"]) == ("mirror", "2h", "500")
