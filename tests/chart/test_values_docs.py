"""values.yaml is documented (every value has a `## @param`), README.md is generated from it by
Bitnami's readme-generator-for-helm (scripts/chart-docs) and up to date, values.schema.json
describes exactly the same keys, Chart.yaml is in step with the package."""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path
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
CHART_DOCS = chartlib.REPO_ROOT / "scripts" / "chart-docs"


def chart_docs(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CHART_DOCS), *args], capture_output=True, text=True, timeout=300, check=False
    )


def parameter_rows(readme: str) -> dict[str, tuple[str, str]]:
    """The generated tables: parameter name -> (description, value), both as written."""
    section = readme[readme.index("## Parameters") :]
    rows: dict[str, tuple[str, str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if line.startswith("| `") and len(cells) == 3:
            rows[cells[0].strip("`")] = (cells[1], cells[2])
    return rows


ROWS = parameter_rows((chartlib.CHART_DIR / "README.md").read_text())


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


def test_readme_is_up_to_date() -> None:
    result = chart_docs("--check")
    assert result.returncode == 0, result.stderr


def test_every_value_is_documented() -> None:
    documented = set(ROWS)
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


def test_generator_refuses_undocumented_and_unknown_values(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# c\n\n## Parameters\n")
    (tmp_path / "values.yaml").write_text(
        "## @section S\n## @param a A\n## @param c C\na: 1\nb: 2\n"
    )
    result = chart_docs("--chart", str(tmp_path))
    assert result.returncode == 2, result
    assert "Missing metadata for key: b" in result.stderr
    assert "Metadata provided for non existing key: c" in result.stderr
    assert (tmp_path / "README.md").read_text() == "# c\n\n## Parameters\n"  # nothing written


def test_generated_table_shows_the_real_defaults() -> None:
    assert ROWS["replicaCount"][1] == "`1`"
    assert ROWS["validation.mode"] == (
        "`count` (records per partition), `digest` (content hash) or `sample`",
        "`count`",
    )
    assert "`SOURCE` (external is the source) or `DESTINATION`" in ROWS["external.clusterType"][0]
    assert ROWS["whitelist"][1] == "`.*`"
    assert ROWS["resources.limits.memory"][1] == "`1Gi`"
    assert ROWS["containerSecurityContext.readOnlyRootFilesystem"][1] == "`true`"


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
