"""The chart against the image's one table of per-side variables (kmirror/config/sides.py): the
chart names each side SOURCE_CLUSTER_* / SINK_CLUSTER_* exactly as the table does, can set every
per-side variable on either side, sets for each SASL mechanism only variables the image reads for
it, and resolves KUDO's thisCluster/external pair with the same roles as sides.kudo_roles."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from kmirror.config import env as image_env
from kmirror.config import sides
from kmirror.config.dialects.kudo import security_from_env
from tests.chart import chartlib
from tests.chart.test_contract import RENDERS

pytestmark = pytest.mark.chart

_SIDE_NAME = re.compile(r"^([A-Z]+_CLUSTER)_([A-Z_]+)$")
# Per-side names listed with the seed names rather than in the security table.
_SEED = {sides.SOURCE: {sides.BOOTSTRAP, "CONSUMER_GROUP"}, sides.TARGET: {sides.BOOTSTRAP}}


def _side_names(docs: chartlib.Rendered) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for _doc, spec in docs.pods():
        for c in spec["containers"]:
            for name in chartlib.resolve_env(c, docs):
                match = _SIDE_NAME.match(name)
                if match:
                    found.setdefault(match[1], set()).add(match[2])
    return found


def test_chart_sets_exactly_the_tables_variables_on_both_sides() -> None:
    seen: dict[str, set[str]] = {}
    for _name, values in RENDERS:
        for side, names in _side_names(chartlib.helm_template(values)).items():
            seen.setdefault(side, set()).update(names)
    assert set(seen) == set(sides.SIDES.values())
    for side, names in seen.items():
        assert names == set(sides.SIDE_SUFFIXES) | _SEED[side], side


@pytest.mark.parametrize(("name", "values"), RENDERS, ids=[r[0] for r in RENDERS])
def test_image_reads_every_side_variable_the_chart_sets(
    name: str, values: Any, tmp_path: Path
) -> None:
    """The chart's per-mechanism choice of variables is the table's: the image reads the
    mirror container's security variables without one 'ignored' note."""
    secret = tmp_path / "secret"
    secret.write_text("s3cret\n")
    docs = chartlib.helm_template(values)
    env: dict[str, str] = {}
    for variable, value in chartlib.resolve_env(chartlib.container(docs.deployment), docs).items():
        var = image_env.BY_NAME.get(variable)
        if var is not None and var.secret_file:
            env[variable] = str(secret)  # a mounted key, here a local file
        else:
            env[variable] = value if isinstance(value, str) else "from-a-secret"
    for side in sides.SIDES.values():
        _, notes = security_from_env(side, env)
        assert notes == [], (name, side)


@pytest.mark.parametrize("kind", sides.KUDO_TYPES)
def test_chart_resolves_kudo_roles_like_the_image(kind: str) -> None:
    values = {
        "thisCluster": {"bootstrapServers": "this:9092"},
        "external": {"bootstrapServers": "ext:9092", "clusterType": kind},
    }
    env = chartlib.run_spec(chartlib.helm_template(values)).env
    source, target = sides.kudo_roles("this:9092", "ext:9092", kind)
    assert env[f"{sides.SOURCE}_{sides.BOOTSTRAP}"] == source
    assert env[f"{sides.TARGET}_{sides.BOOTSTRAP}"] == target
