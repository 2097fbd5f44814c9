"""The chart against the image's one table of per-side variables (kmirror/config/sides.py): the
chart names each side SOURCE_CLUSTER_* / SINK_CLUSTER_* exactly as the table does, can set every
per-side variable on either side, and resolves KUDO's thisCluster/external pair with the same
roles as kmirror.config.sides.kudo_roles."""

from __future__ import annotations

import re

import pytest

from kmirror.config import sides
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
