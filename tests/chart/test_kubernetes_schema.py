"""Every manifest rendered from every ci values file (and from the kitchen-sink values) is valid
against the strict (no unknown fields) Kubernetes JSON schemas of three Kubernetes versions,
offline (schemas from the kubernetes-validate wheel)."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
from kubernetes_validate.utils import schema_contents
from referencing import Registry, Resource

from tests.chart import chartlib

pytestmark = pytest.mark.chart

# Prometheus Operator CRDs are not in the Kubernetes schemas; test_resources.py checks them.
CRD_KINDS = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"),
    ("monitoring.coreos.com/v1", "PodMonitor"),
    ("monitoring.coreos.com/v1", "PrometheusRule"),
}

CASES: list[tuple[str, Any]] = [
    *((f.name, f) for f in chartlib.ci_values_files()),
    ("kitchen-sink", chartlib.KITCHEN_SINK),
]


@functools.cache
def _definitions(version: str) -> Resource[Any]:
    return Resource.from_contents(
        schema_contents(
            f"kubernetes-json-schema/v{version}-local-strict/_definitions.json", version
        )
    )


@functools.cache
def _validator(version: str, api_version: str, kind: str) -> jsonschema.Draft202012Validator | None:
    """What kubernetes_validate.validate(doc, version, strict=True) builds, built once per
    kind: it re-reads the multi-megabyte definitions file on every call."""
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    name = f"kubernetes-json-schema/v{version}-local-strict/{kind.lower()}-{group_version}.json"
    try:
        schema = schema_contents(name, version)
    except FileNotFoundError:
        return None
    registry: Registry[Any] = Resource.from_contents(schema) @ Registry()
    registry = _definitions(version) @ registry
    return jsonschema.Draft202012Validator(schema, registry=registry)


def _validate_all(docs: chartlib.Rendered, version: str) -> list[str]:
    errors = []
    for doc in docs:
        if (doc["apiVersion"], doc["kind"]) in CRD_KINDS:
            continue
        validator = _validator(version, doc["apiVersion"], doc["kind"])
        where = f"{doc['kind']}/{doc['metadata']['name']}"
        if validator is None:
            errors.append(f"{where}: no schema for {doc['apiVersion']} in Kubernetes {version}")
            continue
        errors += [
            f"{where} at {list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(doc)
        ]
    return errors


def test_cached_validator_agrees_with_kubernetes_validate() -> None:
    bad = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "dat": {}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, chartlib.KUBE_VERSIONS[0], strict=True)
    assert _validate_all(chartlib.Rendered([bad]), chartlib.KUBE_VERSIONS[0])
    good = chartlib.helm_template(chartlib.MINIMAL)
    for doc in good:
        kubernetes_validate.validate(doc, chartlib.KUBE_VERSIONS[0], strict=True)
    assert not _validate_all(good, chartlib.KUBE_VERSIONS[0])


def test_kubernetes_versions_are_shipped_by_the_wheel() -> None:
    newest = kubernetes_validate.latest_version()
    for v in chartlib.KUBE_VERSIONS:
        assert tuple(map(int, v.split(".")[:2])) <= tuple(map(int, newest.split("."))), newest


@pytest.mark.parametrize("version", chartlib.KUBE_VERSIONS)
@pytest.mark.parametrize(("name", "values"), CASES, ids=[c[0] for c in CASES])
def test_manifests_match_kubernetes_schemas(
    name: str, values: Path | dict[str, Any], version: str
) -> None:
    docs = chartlib.helm_template(values, kube_version=version)
    assert docs, name
    errors = _validate_all(docs, version)
    assert not errors, "\n".join(errors)


@pytest.mark.parametrize(("name", "values"), CASES, ids=[c[0] for c in CASES])
def test_manifest_metadata(name: str, values: Path | dict[str, Any]) -> None:
    docs = chartlib.helm_template(values)
    for doc in docs:
        meta = doc["metadata"]
        where = f"{name}: {doc['kind']}/{meta['name']}"
        assert len(meta["name"]) <= 63, where
        assert meta["namespace"] == chartlib.NAMESPACE, where
        labels = meta["labels"]
        assert labels["app.kubernetes.io/name"] == "kmirror", where
        assert labels["app.kubernetes.io/instance"] == chartlib.RELEASE, where
        assert labels["app.kubernetes.io/managed-by"] == "Helm", where
        assert labels["helm.sh/chart"].startswith("kmirror-"), where
        assert labels["app.kubernetes.io/component"] in ("mirror", "validation"), where
    # No two manifests of one kind share a name.
    keys = [(d["kind"], d["metadata"]["name"]) for d in docs]
    assert len(keys) == len(set(keys)), keys
