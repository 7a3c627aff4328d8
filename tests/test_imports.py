"""The package's import graph has no cycles (imports inside functions count too).

Every ``import fastapsp.x``, ``from fastapsp.x import ...`` and relative
``from .x import ...`` under ``fastapsp/`` is an edge, wherever it stands in
the file (module level, inside a function, under ``TYPE_CHECKING``);
``from .pkg import name`` is an edge to ``pkg.name`` when that is a module,
else to ``pkg``.  The packages a module lives in are not counted as its
imports.  A module that imports another inside a function to dodge a circle
still has the circle: the two belong together, or what both need belongs in a
third module below them.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "fastapsp"



def _modules() -> dict[str, Path]:
    """Dotted names below ``fastapsp`` (``""`` for the package itself, ``"partition"`` for its ``__init__``)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _is_package(name: str, modules: dict[str, Path]) -> bool:
    return modules[name].name == "__init__.py"


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules of the package it imports (anywhere in its file)."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        here = name.split(".") if name else []
        if not _is_package(name, modules):
            here = here[:-1]  # the package a relative import starts from
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
                targets = [".".join(t.split(".")[1:]) for t in targets if t.split(".")[0] == "fastapsp"]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here[:len(here) - (node.level - 1)] if node.level > 1 else here
                    base = base + (node.module.split(".") if node.module else [])
                elif node.module and node.module.split(".")[0] == "fastapsp":
                    base = node.module.split(".")[1:]
                else:
                    continue
                base_name = ".".join(base)
                for alias in node.names:
                    sub = ".".join([*base, alias.name])
                    targets.append(sub if sub in modules else base_name)
            for target in targets:
                while target not in modules and target:  # an attribute path: the module holding it
                    target = target.rpartition(".")[0]
                if target != name:
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """The strongly connected components of more than one module (Tarjan), each as a sorted tuple."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(tuple(sorted(component)))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def test_the_graph_sees_function_level_imports():
    graph = import_graph()
    assert "partition.metis" in graph["partition.refine"]  # imported inside functions only
    assert "partition.refine" in graph["partition"] and "errors" in graph["comm"]


def test_no_import_cycles():
    assert cycles(import_graph()) == []
