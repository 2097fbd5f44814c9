"""kmirror's layers hold: every package imports only packages of lower layers (the order is
declared once, in scripts/modulegraph.py LAYERS), and no package or module imports in a circle.
Every import counts: lazy ones inside functions and type-only ones under `if TYPE_CHECKING:`
too. A circle hides an import-order bug until someone moves an import; an upward import is a
circle waiting to happen."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts import modulegraph

pytestmark = pytest.mark.unit

NAMES = modulegraph.modules()


def _tree(tmp_path: Path, files: dict[str, str]) -> dict[str, Path]:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return modulegraph.modules([tmp_path])


def test_every_package_has_a_layer_and_every_layer_a_package() -> None:
    packages = set(modulegraph.package_graph(NAMES))
    declared = set(modulegraph.ranks())
    assert packages - declared == set(), "add the new package to LAYERS in scripts/modulegraph.py"
    assert declared - packages == set(), "LAYERS names a package that does not exist"


def test_every_package_is_a_regular_one() -> None:
    """A directory of modules without __init__.py imports from a checkout but is left out of
    the wheel (setuptools' find_packages), and so out of the image."""
    dirs = {path.parent for path in NAMES.values()}
    assert sorted(str(d) for d in dirs if not (d / "__init__.py").exists()) == []


def test_every_import_goes_down_the_layers() -> None:
    graph = modulegraph.package_graph(NAMES)
    assert list(modulegraph.against_layers(graph, modulegraph.ranks())) == []


def test_no_package_imports_in_a_circle() -> None:
    assert modulegraph.circles(modulegraph.package_graph(NAMES)) == []


def test_no_module_imports_in_a_circle() -> None:
    assert modulegraph.circles(modulegraph.module_graph(NAMES)) == []


def test_the_finder_sees_lazy_and_type_only_imports(tmp_path: Path) -> None:
    names = _tree(
        tmp_path,
        {
            "app/__init__.py": "",
            "app/low/__init__.py": "",
            "app/low/one.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from app.high.two import Two\n"
            ),
            "app/high/__init__.py": "",
            "app/high/two.py": "def f():\n    from app.low import one\n",
        },
    )
    assert modulegraph.module_graph(names)["app.low.one"] == {"app.high.two"}
    assert modulegraph.module_graph(names)["app.high.two"] == {"app.low.one"}
    graph = modulegraph.package_graph(names)
    assert modulegraph.circles(graph) == [["app.high", "app.low"]]
    layers = (("low", ("app", "app.low")), ("high", ("app.high",)))
    assert list(modulegraph.against_layers(graph, modulegraph.ranks(layers))) == [
        ("app.low", "app.high")
    ]


def test_sideways_imports_and_undeclared_packages_are_named() -> None:
    graph = {"a": {"b"}, "b": set(), "c": {"a"}, "new": set()}
    rank = {"a": 1, "b": 1, "c": 2}
    assert list(modulegraph.against_layers(graph, rank)) == [("a", "b"), ("new", "new")]


def test_the_finder_sees_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert modulegraph.circles(graph) == [["a", "b", "c"]]


def test_the_entrypoint_library_does_not_import_the_command_line() -> None:
    graph = modulegraph.module_graph(NAMES)
    library = [m for m in graph if m.startswith("kmirror.entrypoint")]
    assert library
    for module in library:
        assert not {m for m in graph[module] if m.startswith("kmirror.cli")}, module
