"""Stage 1: shortest paths from every boundary vertex of a component to all vertices."""

from __future__ import annotations

import numpy as np

from ..backend import array_module

__all__ = ["boundary_sssp"]


def boundary_sssp(indptr, indices, weights, sources, *, out=None, dtype=np.float32, unit_weights=None,
                  batch: int | None = None):
    """Distances from each source to every vertex of the whole graph.

    Parameters
    ----------
    indptr, indices, weights : ndarray (NumPy or CuPy)
        The graph in CSR form (see :class:`fastapsp.graph.Graph`).
    sources : ndarray of int
        Source vertices (the boundary vertices of one component).
    out : ndarray, shape (len(sources), n), optional
        Where to write the result; allocated when omitted.
    dtype : {float32, float64}
        Distance dtype when ``out`` is omitted.
    unit_weights : bool, optional
        True when every arc weighs 1 (breadth-first search suffices);
        computed from ``weights`` when omitted.
    batch : int, optional
        GPU only: at most this many sources advance together (default 1024).
        Sources that lie close together (a component's boundary) gain from
        large batches; sources spread over the graph gain from small ones.

    Returns
    -------
    ndarray, shape (len(sources), n)
        ``out[s, v]`` is the distance from ``sources[s]`` to ``v``; ``inf`` if
        ``v`` cannot be reached.

    Examples
    --------
    >>> from fastapsp.graph import Graph
    >>> g = Graph.from_edges(3, [0, 1], [1, 2], [2.0, 3.0], directed=True)
    >>> boundary_sssp(g.indptr, g.indices, g.weights, np.array([1])).tolist()
    [[inf, 0.0, 3.0]]
    """
    xp = array_module(indptr, indices, weights)
    n = indptr.shape[0] - 1
    sources = xp.asarray(sources)
    if sources.ndim != 1:
        raise ValueError(f"sources: expected a 1-D array of vertex ids, found shape {sources.shape}")
    if sources.size and (int(sources.min()) < 0 or int(sources.max()) >= n):
        raise ValueError(f"sources: vertex ids must lie in 0..{n - 1}")
    if batch is not None and int(batch) < 1:
        raise ValueError(f"batch: must be at least 1, found {batch}")
    if out is None:
        out = xp.empty((sources.size, n), dtype=dtype)
    elif out.shape != (sources.size, n):
        raise ValueError(f"out: expected shape {(sources.size, n)}, found {out.shape}")
    if sources.size == 0:
        return out
    if unit_weights is None:
        unit_weights = bool((weights == 1).all())
    if xp is np:
        return _host(indptr, indices, weights, sources, out, unit_weights)
    from ._cuda import boundary_sssp_cuda

    return boundary_sssp_cuda(indptr, indices, weights, sources, out, unit_weights, batch=batch)


def _host(indptr, indices, weights, sources, out, unit_weights):
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import dijkstra

    n = indptr.shape[0] - 1
    csr = csr_matrix((weights, indices, indptr), shape=(n, n))
    # SciPy's unweighted mode is a breadth-first search; explicit zero weights keep
    # the arc in both modes, so unit_weights only picks the faster algorithm.
    out[...] = dijkstra(csr, directed=True, indices=sources, unweighted=unit_weights)
    return out
