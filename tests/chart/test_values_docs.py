"""values.yaml is documented (every value has a `## @param`), README.md is generated from it and
up to date, values.schema.json describes exactly the same keys, Chart.yaml is in step with the
package."""

from __future__ import annotations

import importlib.util
import json
import sys
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import jsonschema
import pytest
import yaml

from tests.chart import chartlib

pytestmark = pytest.mark.chart

SCHEMA: dict[str, Any] = json.loads((chartlib.CHART_DIR / "values.schema.json").read_text())
VALUES: dict[str, Any] = yaml.safe_load((chartlib.CHART_DIR / "values.yaml").read_text())
# Keys the schema allows that values.yaml leaves out on purpose (documented with their parent).
OPTIONAL_IN_VALUES = {"updateStrategy.rollingUpdate"}


def _chartdocs() -> ModuleType:
    path = chartlib.REPO_ROOT / "scripts" / "chartdocs.py"
    if "chartdocs" in sys.modules:
        return sys.modules["chartdocs"]
    spec = importlib.util.spec_from_file_location("chartdocs", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["chartdocs"] = module
    spec.loader.exec_module(module)
    return module


def _resolve(node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        name = node["$ref"].removeprefix("#/definitions/")
        node = SCHEMA["definitions"][name]
    return node


def _key_mismatches(values: Any, schema: dict[str, Any], path: str = "") -> list[str]:
    """Where values.yaml and the schema disagree on the keys of a closed object."""
    schema = _resolve(schema)
    if not isinstance(values, dict) or "properties" not in schema:
        return []
    out = []
    props = schema["properties"]
    closed = schema.get("additionalProperties") is False
    for key in values:
        if key not in props:
            if closed:
                out.append(f"{path}{key}: in values.yaml, not in values.schema.json")
            continue
        out += _key_mismatches(values[key], props[key], f"{path}{key}.")
    out += [
        f"{path}{key}: in values.schema.json, not in values.yaml"
        for key in props
        if key not in values and f"{path}{key}" not in OPTIONAL_IN_VALUES
    ]
    return out


def test_readme_is_up_to_date(capsys: pytest.CaptureFixture[str]) -> None:
    code = _chartdocs().main(["--check", "--chart", str(chartlib.CHART_DIR)])
    assert code == 0, capsys.readouterr().err


def test_every_value_is_documented() -> None:
    sections = _chartdocs().collect((chartlib.CHART_DIR / "values.yaml").read_text())
    documented = {p.path for s in sections for p in s.params}
    # The values, all documented.
    for path in [
        "replicaCount",
        "numStreams",
        "image.registry",
        "image.repository",
        "image.tag",
        "image.digest",
        "image.pullPolicy",
        "imagePullSecrets",
        "thisCluster.bootstrapServers",
        "external.bootstrapServers",
        "external.clusterType",
        "source.securityProtocol",
        "source.sasl.mechanism",
        "source.sasl.existingSecret",
        "source.sasl.usernameKey",
        "source.sasl.passwordKey",
        "source.tls.caSecret",
        "source.tls.clientCertSecret",
        "target.bootstrapServers",
        "whitelist",
        "blacklist",
        "offsetCommitIntervalMs",
        "abortOnSendFailure",
        "rename.policy",
        "extraConsumerProperties",
        "extraProducerProperties",
        "logLevel",
        "extraEnv",
        "resources",
        "nodeAffinity",
        "affinity",
        "nodeSelector",
        "tolerations",
        "topologySpreadConstraints",
        "priorityClassName",
        "podAnnotations",
        "podLabels",
        "podSecurityContext",
        "containerSecurityContext",
        "serviceAccount.create",
        "serviceAccount.name",
        "serviceAccount.annotations",
        "service.enabled",
        "serviceMonitor.enabled",
        "podMonitor.enabled",
        "pdb.create",
        "networkPolicy.enabled",
        "livenessProbe.enabled",
        "readinessProbe.enabled",
        "validation.hook.enabled",
        "validation.image.repository",
        "validation.topics",
        "validation.mode",
        "validation.waitTimeoutSeconds",
        "validation.resources",
        "validation.hook.weight",
        "validation.hook.deletePolicy",
        "validation.hook.backoffLimit",
        "validation.hook.activeDeadlineSeconds",
        "validation.test.enabled",
    ]:
        assert path in documented, path


def test_generator_refuses_undocumented_and_unknown_values() -> None:
    docs = _chartdocs()
    with pytest.raises(docs.DocsError, match="b has no '## @param b"):
        docs.collect("## @section S\n## @param a A\na: 1\nb: 2\n")
    with pytest.raises(docs.DocsError, match="@param c names no value"):
        docs.collect("## @section S\n## @param a A\n## @param c C\na: 1\n")
    sections = docs.collect("## @section S\n## Some words.\n## @param m M\nm:\n  x: [1]\n")
    assert sections[0].description == ["Some words."]
    assert docs.format_default(sections[0].params[0].default) == '`{"x":[1]}`'


def test_generated_table_shows_the_real_defaults() -> None:
    readme = (chartlib.CHART_DIR / "README.md").read_text()
    assert "| `replicaCount` |" in readme
    assert "| `validation.mode` | `count` (records per partition)" in readme
    assert "`SOURCE` (external is the source) or `DESTINATION`" in readme
    row = next(line for line in readme.splitlines() if line.startswith("| `whitelist` |"))
    assert row.endswith("| `.*` |"), row


def test_schema_and_values_have_the_same_keys() -> None:
    assert not _key_mismatches(VALUES, SCHEMA)


def test_schema_accepts_the_defaults_and_every_ci_file() -> None:
    validator = jsonschema.Draft7Validator(SCHEMA)
    validator.validate(VALUES)
    for f in chartlib.ci_values_files():
        # helm validates the merged values; ci files are partial, so check them merged.
        merged = _merge(VALUES, yaml.safe_load(f.read_text()))
        errors = [e.message for e in validator.iter_errors(merged)]
        assert not errors, (f.name, errors)


def _merge(base: Any, over: Any) -> Any:
    if isinstance(base, dict) and isinstance(over, dict):
        return {k: _merge(base.get(k), over[k]) if k in over else base[k] for k in {**base, **over}}
    return over


def test_chart_metadata_is_in_step_with_the_package() -> None:
    chart = yaml.safe_load((chartlib.CHART_DIR / "Chart.yaml").read_text())
    project = tomllib.loads(Path(chartlib.REPO_ROOT, "pyproject.toml").read_text())["project"]
    assert chart["apiVersion"] == "v2"
    assert chart["appVersion"] == project["version"]
    # The schema test covers the floor of kubeVersion.
    assert chart["kubeVersion"] == f">={chartlib.KUBE_VERSIONS[0]}-0"
