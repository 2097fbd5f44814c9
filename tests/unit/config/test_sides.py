"""The per-side table and KUDO's role rule: both sides carry the same variables, and the role
function is the one the KUDO flags, the entrypoint and kmirror-validate's direct flags share."""

from __future__ import annotations

import pytest

from kmirror.config import env, sides
from kmirror.entrypoint.render import kudo_bootstrap
from kmirror.errors import ConfigError
from tests.unit.config.conftest import load

pytestmark = pytest.mark.unit


def test_every_side_variable_is_documented_for_both_sides() -> None:
    for side in sides.SIDES.values():
        for var in sides.SIDE_VARS:
            documented = env.BY_NAME[f"{side}_{var.suffix}"]
            assert documented.secret_file == var.secret_file
            assert documented.default == var.default


@pytest.mark.parametrize(
    ("kind", "roles"),
    [("SOURCE", ("ext:1", "this:1")), (" destination ", ("this:1", "ext:1"))],
)
def test_roles_agree_for_flags_and_entrypoint(kind: str, roles: tuple[str, str]) -> None:
    assert sides.kudo_roles("this:1", "ext:1", kind) == roles
    flags = ["--this-bootstrap-servers", "this:1", "--external-bootstrap-servers", "ext:1"]
    c = load([*flags, "--external-cluster-type", kind])
    assert (c.source.bootstrap_servers, c.target.bootstrap_servers) == roles
    variables = {
        "MIRROR_MAKER_THIS_BOOTSTRAP_SERVERS": "this:1",
        "MIRROR_MAKER_EXTERNAL_BOOTSTRAP_SERVERS": "ext:1",
        "MIRROR_MAKER_EXTERNAL_CLUSTER_TYPE": kind,
    }
    derived = kudo_bootstrap(variables, [])
    assert (
        derived["SOURCE_CLUSTER_BOOTSTRAP_SERVERS"],
        derived["SINK_CLUSTER_BOOTSTRAP_SERVERS"],
    ) == roles


def test_a_bad_role_names_what_was_set_and_both_values() -> None:
    with pytest.raises(ConfigError, match=r"^--flag must be SOURCE or DESTINATION, not 'SINK'"):
        sides.kudo_roles("a:1", "b:1", "SINK", "--flag")
