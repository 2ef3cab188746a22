"""The lowering's modules import one another without a circle.

Every `import` and `from ... import` of each `phobos/lower` module counts, those
inside functions too (an import moved into a function hides a circle from Python's
import machinery, not from the design).
"""

from __future__ import annotations

import ast
from pathlib import Path

LOWER = Path(__file__).resolve().parents[2] / "phobos" / "lower"
PACKAGE = "phobos.lower"


def import_graph() -> dict[str, set[str]]:
    """Module name -> the `phobos.lower` modules it imports (anywhere in its file)."""
    modules = {p.stem for p in LOWER.glob("*.py") if p.stem != "__init__"}
    graph: dict[str, set[str]] = {}
    for path in sorted(LOWER.glob("*.py")):
        if path.stem == "__init__":
            continue
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found.update(_module(alias.name, modules) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(node)
                if base == PACKAGE:  # `from phobos.lower import lir, scalars`
                    found.update(a.name for a in node.names if a.name in modules)
                else:
                    found.add(_module(base, modules))
        graph[path.stem] = found - {None, path.stem}
    return graph


def _absolute(node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    parent = PACKAGE.split(".")[: len(PACKAGE.split(".")) - node.level + 1]
    return ".".join(parent + ([node.module] if node.module else []))


def _module(name: str, modules: set[str]):
    parts = name.split(".")
    if parts[:2] == PACKAGE.split(".") and len(parts) > 2 and parts[2] in modules:
        return parts[2]
    return None


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected parts of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_sees_imports_inside_functions():
    graph = import_graph()
    assert "loopsplit" in graph["memory"]  # only ever imported inside a function of memory
    assert {"lir", "placement", "verify"} <= graph["passes"]
    assert graph["lir"] == set() and graph["types"] == set()


def test_circles_are_found():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_the_lowering_has_no_import_circle():
    assert circles(import_graph()) == []


def test_the_statement_dispatch_sits_above_the_statement_lowerings():
    """`statements` picks the lowering of each tile statement; none of those it picks
    from may reach back to it (or to the planner, which runs before any of them)."""
    graph = import_graph()

    def reach(m, seen):
        for n in graph.get(m, ()):
            if n not in seen:
                seen.add(n)
                reach(n, seen)
        return seen

    for m in ("contract", "dynamic", "reduce", "rowfold", "shape", "staging", "sweep"):
        assert "statements" not in reach(m, set()), m
    for m in ("contract", "reduce", "rowfold", "staging", "sweep", "widths"):
        assert "placement" not in reach(m, set()), m
