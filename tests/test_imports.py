"""The package's import graph has no cycles (imports inside functions count too), and its
runs leave ``numpy.ma`` unimported (the last section).

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
import subprocess
import sys
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


# ------------------------------------------------------------ numpy.ma stays out of a run
# NumPy 2.4's np.unique, called without return_index, return_inverse or return_counts, imports numpy.ma at
# its first call (about 50 ms of a GPU run, which imports no SciPy); the package calls
# fastapsp.graph.distinct there instead.
_INDICES = {"return_index", "return_inverse", "return_counts"}


def plain_unique_calls(source: str) -> list[int]:
    """Lines of ``np.unique(...)`` / ``numpy.unique(...)`` calls in ``source`` without indices or counts."""
    return [node.lineno for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "unique"
            and isinstance(node.func.value, ast.Name) and node.func.value.id in ("np", "numpy")
            and not _INDICES & {keyword.arg for keyword in node.keywords}]


def test_no_plain_np_unique_in_the_package():
    assert plain_unique_calls("x = np.unique(a[b])\ny = numpy.unique(np.asarray(c))\n") == [1, 2]
    assert plain_unique_calls("u, i = np.unique(np.asarray(a), return_inverse=True)\nv = xp.unique(a)\n") == []
    found = [f"{path.relative_to(PACKAGE.parent)}:{line}" for path in sorted(PACKAGE.rglob("*.py"))
             for line in plain_unique_calls(path.read_text(encoding="utf-8"))]
    assert not found, f"np.unique without indices or counts (use fastapsp.graph.distinct): {found}"


def test_distinct_and_the_sources_leave_numpy_ma_unimported():
    code = ("import sys, numpy as np\n"
            "from fastapsp.graph import distinct\n"
            "from fastapsp.sources import parse_sources\n"
            "import fastapsp.stages.boundary_graph\n"
            "assert distinct(np.array([5, 1, 5, 3])).tolist() == [1, 3, 5]\n"
            "assert parse_sources(np.array([3, 1, 3]), 5).tolist() == [1, 3]\n"
            "print('numpy.ma' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=PACKAGE.parent)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"
