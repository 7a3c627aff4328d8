"""fastapsp: exact all-pairs shortest paths of large sparse graphs (FastAPSP).

The graph is split into k components; for each component the distances from
its boundary vertices (single-source shortest paths over the whole graph), a
blocked Floyd-Warshall inside it and a min-plus product through its boundary
give the exact rows of all its vertices.  NumPy/SciPy is the reference path;
CuPy runs every stage on a GPU; MPI spreads the components over ranks.

>>> import fastapsp
>>> g = fastapsp.Graph.from_edges(3, [0, 1], [1, 2], [1.0, 2.0], directed=False)
>>> fastapsp.solve(g, k=2, backend="numpy").tolist()
[[0.0, 1.0, 3.0], [1.0, 0.0, 2.0], [3.0, 2.0, 0.0]]
"""

from __future__ import annotations

from ._version import __version__  # noqa: E402

from .errors import FastAPSPError, GraphFormatError, PartitionError  # noqa: E402
from .graph import Graph  # noqa: E402
from .library import load_plan, plan, solve, stats  # noqa: E402

__all__ = ["Graph", "read_graph", "plan", "load_plan", "solve", "stats", "shortest_path", "reconstruct_path",
           "partition_graph", "FastAPSPError", "GraphFormatError", "PartitionError", "__version__"]


def read_graph(path, *, format=None, undirected: bool = False, cache: str = "none") -> Graph:
    """Read a graph file (Matrix Market, the FastAPSP research format, METIS, SNAP, .cedge, DIMACS).

    ``cache="auto"`` keeps a binary copy of a large parsed graph beside the file (or in the folder
    ``cache``), which the next read maps instead of parsing; see :func:`fastapsp.io.read_graph`.
    """
    from .io import read_graph as _read

    return _read(path, format=format, undirected=undirected, cache=cache)


def partition_graph(graph: Graph, k: int, partitioner: str = "metis", **kwargs):
    """Split ``graph`` into ``k`` components; see :func:`fastapsp.partition.partition_graph`."""
    from .partition import partition_graph as _partition

    return _partition(graph, k, partitioner, **kwargs)


def shortest_path(csgraph, method="auto", directed=True, return_predecessors=False, unweighted=False,
                  overwrite=False, indices=None, **kwargs):
    """``scipy.sparse.csgraph.shortest_path``'s call, computed by fastapsp; see :func:`fastapsp.api.shortest_path`."""
    from .api import shortest_path as _shortest_path

    return _shortest_path(csgraph, method=method, directed=directed, return_predecessors=return_predecessors,
                          unweighted=unweighted, overwrite=overwrite, indices=indices, **kwargs)


def reconstruct_path(predecessors, source: int, target: int, *, sources=None) -> list:
    """Vertices of a shortest path from a predecessor matrix; see :func:`fastapsp.paths.reconstruct_path`."""
    from .paths import reconstruct_path as _reconstruct

    return _reconstruct(predecessors, source, target, sources=sources)
