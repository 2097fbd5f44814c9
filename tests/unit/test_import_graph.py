"""The mirror package's modules import each other without a circle, lazy imports inside
functions included: a circle hides an import-order bug until someone moves an import."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2] / "image"
PACKAGE = "kmirror"


def module_names() -> dict[str, Path]:
    out = {}
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node, except what is under `if TYPE_CHECKING:` (never imported at run time)."""
    for node in ast.iter_child_nodes(tree):
        test = node.test if isinstance(node, ast.If) else None
        if isinstance(test, ast.Name | ast.Attribute) and ast.unparse(test).endswith(
            "TYPE_CHECKING"
        ):
            yield from (n for child in node.orelse for n in [child, *runtime_nodes(child)])
            continue
        yield node
        yield from runtime_nodes(node)


def imported(tree: ast.AST, modules: Mapping[str, Path]) -> Iterator[str]:
    """Every kmirror module an import statement anywhere in the tree names, lazy imports inside
    functions included."""
    for node in runtime_nodes(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module not in modules:
                continue
            # `from kmirror.cli import run` imports the module kmirror.cli.run.
            subs = [f"{node.module}.{a.name}" for a in node.names]
            found = [s for s in subs if s in modules]
            yield from found or [node.module]


def import_graph() -> dict[str, set[str]]:
    modules = module_names()
    return {
        name: set(imported(ast.parse(path.read_text(encoding="utf-8")), modules)) - {name}
        for name, path in modules.items()
    }


def circles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_finder_sees_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]


def test_lazy_imports_are_in_the_graph_type_checking_ones_are_not() -> None:
    graph = import_graph()
    # build_parser imports the entrypoint commands inside the function.
    assert "kmirror.cli.entrypoint" in graph["kmirror.cli.main"]
    # txn.py names MirrorConfig in annotations only; model.py imports txn lazily.
    assert "kmirror.config.txn" in graph["kmirror.config.model"]
    assert "kmirror.config.model" not in graph["kmirror.config.txn"]


def test_no_import_circle() -> None:
    assert circles(import_graph()) == []


def test_the_entrypoint_library_does_not_import_the_command_line() -> None:
    graph = import_graph()
    library = [m for m in graph if m.startswith("kmirror.entrypoint")]
    assert library
    for module in library:
        assert not {m for m in graph[module] if m.startswith("kmirror.cli")}, module
