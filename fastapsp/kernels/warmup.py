"""Small solves of every kind, so that CuPy's own kernels are in its disk cache before a first real run.

CuPy compiles its elementwise kernels (copies, fills, gathers, arithmetic) at
first use, one per dtype and memory layout; fastapsp's own kernels are built by
:mod:`fastapsp.kernels.catalog`, which runs this module as
``python -m fastapsp.kernels.warmup DEVICE`` after them.  It first loads the
variants that prebuilt binaries cover, so that one the driver refuses is
compiled by NVRTC here (with a warning) rather than inside a first run.
"""

from __future__ import annotations

import sys

import numpy as np

from ..graph import Graph
from ..library import solve, stats
from ..partition import partition_graph

__all__ = ["warm_up", "share", "PARTS"]


def _grid(side: int):
    ids = np.arange(side * side).reshape(side, side)
    return (np.concatenate([ids[:, :-1].ravel(), ids[:-1, :].ravel()]),
            np.concatenate([ids[:, 1:].ravel(), ids[1:, :].ravel()]))


def _small(kind: str) -> Graph:
    """A 48 x 48 grid of unit or whole-number weights, or a directed graph of real weights on as many vertices."""
    side = 48
    n = side * side
    rng = np.random.default_rng(0)
    if kind == "directed":
        tails, heads = rng.integers(0, n, 4 * n), rng.integers(0, n, 4 * n)
        return Graph.from_edges(n, tails, heads, rng.uniform(0.5, 4.0, tails.size), directed=True,
                                name="warm-up directed")
    src, dst = _grid(side)
    weights = None if kind == "unit" else rng.integers(1, 10, src.size).astype(float)
    return Graph.from_edges(n, src, dst, weights, directed=False, name=f"warm-up {kind} grid")


def _paths(graph: Graph) -> None:
    """The paths a run can take: results in GPU and host memory, statistics, 64-bit distances, both
    boundary-row methods and predecessors."""
    common = {"backend": "cupy", "k": 12}
    solve(graph, output="device", **common)
    solve(graph, output="memory", **common)
    solve(graph, output="device", dtype="float64", **common)
    solve(graph, output="device", sssp_method="boundary-graph", **common)
    solve(graph, output="device", sssp_method="frontier", **common)
    solve(graph, output="device", return_predecessors=True, **common)
    stats(graph, **common)


def _jet_solve() -> None:
    # The GPU partitioner (the default from AUTO_JET_FROM vertices on) coarsens only graphs large enough, and
    # takes other paths as they grow: a solve at the size where it becomes the default ...
    src, dst = _grid(320)
    stats(Graph.from_edges(320 * 320, src, dst, directed=False, name="warm-up large grid"), backend="cupy", k=200,
          partitioner="jet")


def _jet_partition() -> None:
    # ... and a partition of a million vertices.
    src, dst = _grid(1024)
    partition_graph(Graph.from_edges(1024 * 1024, src, dst, directed=False, name="warm-up large grid"), 1024, "jet",
                    backend="cupy")


# Independent parts, each run in a process of its own side by side by the build (CuPy compiles a kernel in
# the process that first meets it; each writes its cache files whole, so processes that meet the same
# kernel each compile it and the cache keeps one).
PARTS = {"unit": lambda: _paths(_small("unit")), "weighted": lambda: _paths(_small("weighted")),
         "directed": lambda: _paths(_small("directed")), "jet-solve": _jet_solve, "jet-partition": _jet_partition}


def share(j: int, jobs: int) -> list:
    """The names of :data:`PARTS` that process ``j`` of ``jobs`` runs (every part in exactly one share).

    Examples
    --------
    >>> sorted(share(0, 2) + share(1, 2)) == sorted(PARTS), share(9, 16)
    (True, [])
    """
    return list(PARTS)[j::jobs]


def warm_up(parts=None) -> None:
    """Solve small graphs of every kind once, so that CuPy's own kernels (copies, fills, gathers; compiled by
    CuPy per dtype and memory layout at first use) are in the disk cache too.

    ``parts``: names of :data:`PARTS` (default: all, one after another).
    Three generated graphs (a unit-weight grid, the grid with whole-number
    weights, a directed graph with real weights), each through the paths a
    run can take; then larger grids partitioned by Jet on the GPU.
    """
    for name in PARTS if parts is None else parts:
        PARTS[name]()


if __name__ == "__main__":
    # python -m fastapsp.kernels.warmup DEVICE [J JOBS]: the parts J, J + JOBS, ... of PARTS (default: all)
    j, jobs = (int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) > 3 else (0, 1)
    parts = share(j, jobs)
    if not parts:
        sys.exit(0)
    import cupy

    from .catalog import mark_built, prebuilt, save_compiler_checks, variants

    mark_built()  # the parent build holds the lock and has compiled the catalog
    device = int(sys.argv[1])
    cupy.cuda.Device(device).use()
    if j == 0:  # one process checks the prebuilt binaries
        covered = prebuilt(device)["covered"]
        for variant in variants():  # the build compiled none of these: one that fails to load is compiled here
            if variant.key() in covered:
                variant.compile()
    warm_up(parts)
    save_compiler_checks(device)  # the compiler banners of every option set the solves met
