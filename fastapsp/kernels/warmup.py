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

__all__ = ["warm_up"]


def warm_up() -> None:
    """Solve small graphs of every kind once, so that CuPy's own kernels (copies, fills, gathers; compiled by
    CuPy per dtype and memory layout at first use) are in the disk cache too.

    Three generated graphs (a unit-weight grid, the grid with whole-number
    weights, a directed graph with real weights), each through the paths a
    run can take: results in GPU and host memory, statistics, 64-bit
    distances, the boundary-graph method and predecessors; then larger grids
    partitioned by Jet on the GPU.
    """
    side = 48
    ids = np.arange(side * side).reshape(side, side)
    src = np.concatenate([ids[:, :-1].ravel(), ids[:-1, :].ravel()])
    dst = np.concatenate([ids[:, 1:].ravel(), ids[1:, :].ravel()])
    rng = np.random.default_rng(0)
    n = side * side
    tails, heads = rng.integers(0, n, 4 * n), rng.integers(0, n, 4 * n)
    graphs = [Graph.from_edges(n, src, dst, directed=False, name="warm-up grid"),
              Graph.from_edges(n, src, dst, rng.integers(1, 10, src.size).astype(float), directed=False,
                               name="warm-up weighted grid"),
              Graph.from_edges(n, tails, heads, rng.uniform(0.5, 4.0, tails.size), directed=True,
                               name="warm-up directed")]
    for graph in graphs:
        common = {"backend": "cupy", "k": 12}
        solve(graph, output="device", **common)
        solve(graph, output="memory", **common)
        solve(graph, output="device", dtype="float64", **common)
        solve(graph, output="device", sssp_method="boundary-graph", **common)
        solve(graph, output="device", sssp_method="frontier", **common)
        solve(graph, output="device", return_predecessors=True, **common)
        stats(graph, **common)
    # The GPU partitioner (the default from AUTO_JET_FROM vertices on) coarsens only graphs large enough,
    # and takes other paths as they grow: a solve at the size where it becomes the default, and a
    # partition of a million vertices.
    for side, k, solve_it in ((320, 200, True), (1024, 1024, False)):
        ids = np.arange(side * side).reshape(side, side)
        src = np.concatenate([ids[:, :-1].ravel(), ids[:-1, :].ravel()])
        dst = np.concatenate([ids[:, 1:].ravel(), ids[1:, :].ravel()])
        grid = Graph.from_edges(side * side, src, dst, directed=False, name="warm-up large grid")
        if solve_it:
            stats(grid, backend="cupy", k=k, partitioner="jet")
        else:
            partition_graph(grid, k, "jet", backend="cupy")


if __name__ == "__main__":
    import cupy

    from .catalog import mark_built, prebuilt, save_compiler_checks, variants

    mark_built()  # the parent build holds the lock and has compiled the catalog
    cupy.cuda.Device(int(sys.argv[1])).use()
    covered = prebuilt(int(sys.argv[1]))["covered"]
    for variant in variants():  # the build compiled none of these: one that fails to load is compiled here
        if variant.key() in covered:
            variant.compile()
    warm_up()
    save_compiler_checks(int(sys.argv[1]))  # the compiler banners of every option set the solves met
