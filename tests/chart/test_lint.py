"""helm lint --strict and ct lint (helm lint per ci values file, yamllint, yamale on Chart.yaml)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from yamllint import config as yamllint_config
from yamllint import linter

from tests.chart import chartlib

pytestmark = pytest.mark.chart


def _run(cmd: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    env = dict(chartlib.HELM_ENV)
    # ct shells out to helm, yamllint and yamale: the pinned helm and the venv's tools first.
    venv_bin = Path(chartlib.REPO_ROOT, ".venv", "bin")
    env["PATH"] = os.pathsep.join([str(chartlib.BIN_DIR), str(venv_bin), env.get("PATH", "")])
    return subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=chartlib.REPO_ROOT,
        check=False,
        **kw,
    )  # type: ignore[call-overload]


@pytest.mark.parametrize("values_file", chartlib.ci_values_files(), ids=lambda p: p.name)
def test_helm_lint_strict(values_file: Path) -> None:
    helm = str(chartlib.require_tool(chartlib.HELM))
    proc = _run([helm, "lint", "--strict", str(chartlib.CHART_DIR), "-f", str(values_file)])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 chart(s) linted, 0 chart(s) failed" in proc.stdout


def test_helm_lint_with_defaults_reports_the_required_values() -> None:
    # helm lint runs templates in lint mode (fail() is logged, not fatal); the defaults lack the
    # clusters, and the message must say which values to set.
    helm = str(chartlib.require_tool(chartlib.HELM))
    proc = _run([helm, "lint", "--strict", str(chartlib.CHART_DIR)])
    out = proc.stdout + proc.stderr
    assert "No source cluster: set source.bootstrapServers" in out, out
    assert "No target cluster: set target.bootstrapServers" in out, out


def test_ct_lint() -> None:
    ct = str(chartlib.require_tool(chartlib.CT))
    proc = _run(
        [
            ct,
            "lint",
            "--config",
            str(chartlib.CT_CONFIG),
            "--lint-conf",
            str(chartlib.CT_ETC / "lintconf.yaml"),
            "--chart-yaml-schema",
            str(chartlib.CT_ETC / "chart_schema.yaml"),
        ]
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "All charts linted successfully" in out
    # ct lints with every ci values file; make sure it found them all.
    for f in chartlib.ci_values_files():
        assert f'Linting chart with values file "chart/kmirror/ci/{f.name}"' in out, out


def test_ci_files_and_ct_config_pass_yamllint() -> None:
    # ct runs yamllint on Chart.yaml and values.yaml only; hold the rest to the same rules.
    conf = yamllint_config.YamlLintConfig(file=str(chartlib.CT_ETC / "lintconf.yaml"))
    problems = []
    for path in [*chartlib.ci_values_files(), chartlib.CT_CONFIG]:
        for p in linter.run(path.read_text(), conf, str(path)):
            if p.level == "error":
                problems.append(f"{path.name}:{p.line}:{p.column} {p.desc}")
    assert not problems, problems


def test_every_ci_file_renders_something_different() -> None:
    rendered = {f.name: chartlib.helm_template(f) for f in chartlib.ci_values_files()}
    names = {
        "default-values.yaml",
        "kudo-destination-values.yaml",
        "kudo-source-values.yaml",
        "sasl-ssl-values.yaml",
        "replicas-0-values.yaml",
        "monitoring-values.yaml",
    }
    assert names <= set(rendered)
    assert rendered["replicas-0-values.yaml"].deployment["spec"]["replicas"] == 0
    assert rendered["monitoring-values.yaml"].has("ServiceMonitor")
    assert rendered["monitoring-values.yaml"].has("PrometheusRule")
    assert rendered["monitoring-values.yaml"].one("ConfigMap", f"{chartlib.FULLNAME}-dashboard")
    assert rendered["kudo-source-values.yaml"].has("PodMonitor")
    assert rendered["sasl-ssl-values.yaml"].has("NetworkPolicy")
    assert rendered["kudo-destination-values.yaml"].has("Job")


def test_e2e_script_is_sound_bash() -> None:
    script = chartlib.REPO_ROOT / "scripts" / "chart-e2e-kind"
    assert os.access(script, os.X_OK)
    assert "cannot run in this project's build sandbox" in script.read_text()
    proc = _run(["bash", "-n", str(script)])
    assert proc.returncode == 0, proc.stderr
    if shutil.which("shellcheck"):
        proc = _run(["shellcheck", str(script)])
        assert proc.returncode == 0, proc.stdout
    # The script leaves out ci files marked "ct install: skip": the ones needing Secrets.
    marked = {
        f.name
        for f in chartlib.ci_values_files()
        if "ct install: skip" in "".join(f.read_text().splitlines(True)[:3])
    }
    assert marked == {"sasl-ssl-values.yaml", "msk-iam-oidc-values.yaml"}
