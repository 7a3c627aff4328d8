"""Small distance types for unweighted graphs: ``--dtype uint16`` and ``--dtype uint8``.

Distances of a graph whose arcs all weigh 1 are whole numbers below n.  They are
computed in float32 as usual and converted to the small type when they reach the
sink; ``inf`` (unreachable) becomes the **sentinel**, the largest value of the
type (65,535 for uint16, 255 for uint8), so real distances must stay below it.
A run is refused up front when the graph is weighted, or when a cheap upper
bound on the distances (:func:`distance_bound`) reaches the sentinel.
"""

from __future__ import annotations

import numpy as np

from .errors import ConfigError

__all__ = ["SMALL_DTYPES", "sentinel", "distance_bound", "check_small_dtype", "SmallIntSink", "to_small"]

SMALL_DTYPES = ("uint16", "uint8")


def sentinel(dtype) -> int:
    """The value that stands for "unreachable" in ``dtype``."""
    return int(np.iinfo(np.dtype(dtype)).max)


def distance_bound(graph) -> int:
    """An upper bound on every finite distance of an unweighted graph, from at most two BFS.

    Undirected: twice the largest distance from one root per connected
    component (one BFS from a super root).  Directed and strongly connected:
    d(u, v) <= d(u, r) + d(r, v), the largest distance to r plus the largest
    from r.  Otherwise n - 1.
    """
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components, shortest_path

    n = graph.n
    if n <= 1:
        return 0
    src, dst, _ = graph.arcs()
    csr = sp.csr_matrix((np.ones(graph.m), (src, dst)), shape=(n, n))
    if not graph.directed:
        _, labels = connected_components(csr, directed=False)
        roots = np.unique(labels, return_index=True)[1]
        # A super root n with an arc to each component's root: one BFS reaches every component.
        rows = np.concatenate([src, np.full(roots.size, n)])
        cols = np.concatenate([dst, roots])
        grown = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n + 1, n + 1))
        depth = shortest_path(grown, unweighted=True, indices=n)[:n] - 1
        return int(min(n - 1, 2 * depth.max()))
    count, _ = connected_components(csr, directed=True, connection="strong")
    if count != 1:
        return n - 1
    away = shortest_path(csr, unweighted=True, indices=0)
    back = shortest_path(csr.T.tocsr(), unweighted=True, indices=0)
    return int(min(n - 1, away.max() + back.max()))


def check_small_dtype(graph, dtype: str) -> None:
    """Refuse ``dtype`` (uint16/uint8) unless the graph is unweighted and its distances fit.

    Raises
    ------
    ConfigError
        Naming ``dtype``, what was found and what is allowed.
    """
    if not graph.unit_weights:
        raise ConfigError(f"dtype: {dtype} holds distances of unweighted graphs only (every arc weight 1); "
                          f"{graph.name or 'the graph'} has other weights: use float32 or float64")
    bound = distance_bound(graph)
    if bound >= sentinel(dtype):
        raise ConfigError(f"dtype: distances of {graph.name or 'the graph'} may reach {bound}, but {dtype} holds "
                          f"0..{sentinel(dtype) - 1} ({sentinel(dtype)} means unreachable); use "
                          f"{'uint16' if dtype == 'uint8' and bound < 65535 else 'float32'}")


def to_small(block, dtype):
    """Float distances as ``dtype``, ``inf`` as the sentinel, on the block's device; refuses a value that does not fit."""
    from .backend import array_module

    xp = array_module(block)
    top = sentinel(dtype)
    finite = xp.isfinite(block)
    if bool(xp.any(xp.where(finite, block, 0) >= top)):
        raise ConfigError(f"dtype: a distance of {float(block[finite].max()):g} does not fit {dtype} "
                          f"(0..{top - 1}); use float32")
    return xp.where(finite, block, top).astype(dtype)


class SmallIntSink:
    """Converts float blocks to a small integer type on their way into ``sink`` (created with that type)."""

    def __init__(self, sink, dtype) -> None:
        self.sink, self.dtype = sink, np.dtype(dtype)
        self.needs_host = sink.needs_host
        self.on_device = sink.on_device
        self.path = sink.path

    def write(self, vertices, column_start, block) -> None:
        self.sink.write(vertices, column_start, to_small(block, self.dtype))

    def commit(self) -> None:
        self.sink.commit()

    def abort(self) -> None:
        self.sink.abort()
