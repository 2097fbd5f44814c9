"""The module picture in docs/architecture.md is the code's: drawn from the imports, in step."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts import modulegraph

pytestmark = pytest.mark.unit


def test_the_picture_in_the_docs_is_in_step_with_the_code() -> None:
    assert modulegraph.main(["--check"]) == 0, "run `python -m scripts.modulegraph`"


def test_lazy_and_relative_imports_count_and_circles_are_named(tmp_path: Path) -> None:
    for name, text in {
        "app/__init__.py": "",
        "app/a/__init__.py": "",
        "app/a/one.py": "from app.b import two\n",
        "app/b/__init__.py": "",
        "app/b/two.py": "def f():\n    from ..a import one\n",
        "app/b/sub/__init__.py": "from app.b import two\n",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    names = modulegraph.modules([tmp_path])
    graph = modulegraph.package_graph(names)
    assert graph["app.a"] == {"app.b"} and graph["app.b"] == {"app.a"}
    assert graph["app.b.sub"] == {"app.b"}
    # A subpackage importing its parent's __init__, which imports nothing of it: no circle.
    assert modulegraph.circles(graph) == [["app.a", "app.b"]]
