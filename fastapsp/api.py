"""``fastapsp.shortest_path``: the call of ``scipy.sparse.csgraph.shortest_path``, computed by fastapsp."""

from __future__ import annotations

import numpy as np

__all__ = ["shortest_path", "graph_from_csgraph"]

_METHODS = ("auto", "FW", "D", "BF", "J")


def _is_cupy_sparse(matrix) -> bool:
    return type(matrix).__module__.startswith("cupyx")


def graph_from_csgraph(csgraph, *, directed: bool = True, unweighted: bool = False):
    """A :class:`fastapsp.Graph` from what ``scipy.sparse.csgraph`` accepts.

    Sparse matrices and arrays (SciPy or ``cupyx.scipy.sparse``): every stored
    entry is an arc, explicit zeros included.  Dense arrays: zeros, ``inf`` and
    ``nan`` mean "no arc", as in SciPy.
    """
    import scipy.sparse as sp

    from .graph import Graph

    if _is_cupy_sparse(csgraph):
        csgraph = csgraph.get()
    if sp.issparse(csgraph):
        coo = sp.coo_matrix(csgraph)
    else:
        from scipy.sparse.csgraph import csgraph_from_dense

        dense = np.asarray(csgraph)
        if dense.ndim != 2:
            raise ValueError(f"csgraph: expected a 2-D matrix, found {dense.ndim} dimensions")
        coo = sp.coo_matrix(csgraph_from_dense(dense.astype(np.float64), null_value=0, nan_null=True,
                                               infinity_null=True))
    if coo.shape[0] != coo.shape[1]:
        raise ValueError(f"csgraph: compressed-sparse graph must be shape (N, N), found {coo.shape}")
    data = np.asarray(coo.data, dtype=np.float64)
    if not unweighted and data.size and (np.isnan(data).any() or data.min() < 0):
        raise ValueError("csgraph: negative or NaN weights; fastapsp handles non-negative weights only "
                         "(scipy.sparse.csgraph.shortest_path with method='J' or 'BF' handles negative ones)")
    weights = np.ones(data.size) if unweighted else data
    return Graph.from_edges(coo.shape[0], coo.row, coo.col, weights, directed=directed, name="csgraph")


def shortest_path(csgraph, method: str = "auto", directed: bool = True, return_predecessors: bool = False,
                  unweighted: bool = False, overwrite: bool = False, indices=None, *, k: int | None = None,
                  partitioner: str = "auto", backend: str | None = None):
    """Shortest-path distances, with the arguments and results of ``scipy.sparse.csgraph.shortest_path``.

    Parameters
    ----------
    csgraph : sparse matrix or array, cupyx sparse matrix, or dense array
        N x N arc weights (non-negative).  With a ``cupyx.scipy.sparse`` matrix
        the work and the results are on the GPU.
    method : {"auto", "FW", "D", "BF", "J"}
        Accepted for compatibility; fastapsp always runs its own exact algorithm.
    directed : bool
        False: every arc may be walked both ways.
    return_predecessors : bool
        Also return the predecessor matrix (``-9999`` where there is none).
    unweighted : bool
        Every arc weighs 1.
    overwrite : bool
        Accepted for compatibility; ``csgraph`` is never changed.
    indices : int or array_like of int, optional
        Only these rows (shape ``(N,)`` for a single int).
    k, partitioner, backend
        fastapsp's own settings (see :func:`fastapsp.solve`); ``backend`` defaults
        to ``cupy`` for cupyx input, else ``auto``.

    Returns
    -------
    dist_matrix : ndarray of float64
        ``(N, N)``, ``(len(indices), N)`` or ``(N,)``.
    predecessors : ndarray of int32
        Same shape, when ``return_predecessors``.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> g = sp.csr_matrix(np.array([[0, 1, 4], [0, 0, 2], [0, 0, 0]], dtype=float))
    >>> shortest_path(g, backend="numpy")[0].tolist()
    [0.0, 1.0, 3.0]
    """
    from . import solve

    if method not in _METHODS:
        raise ValueError(f"method: {method!r} is not one of {', '.join(_METHODS)}")
    on_gpu = _is_cupy_sparse(csgraph)
    if backend is None:
        backend = "cupy" if on_gpu else "auto"
    graph = graph_from_csgraph(csgraph, directed=directed, unweighted=unweighted)
    n = graph.n
    single = indices is not None and np.ndim(indices) == 0
    if indices is None:
        if n:
            dist = solve(graph, k=k, partitioner=partitioner, backend=backend, dtype="float64",
                         return_predecessors=return_predecessors)
        else:
            dist = (np.zeros((0, 0)), np.zeros((0, 0), dtype=np.int32)) if return_predecessors else np.zeros((0, 0))
    else:
        rows = np.atleast_1d(np.asarray(indices))
        if not np.issubdtype(rows.dtype, np.integer):
            raise ValueError(f"indices: expected integer vertex ids, found {rows.dtype}")
        rows = np.where(rows < 0, rows + n, rows)  # negative indices count from the end, as in SciPy
        dist = solve(graph, k=k, partitioner=partitioner, backend=backend, dtype="float64", sources=rows,
                     return_predecessors=return_predecessors)
    dist, pred = dist if return_predecessors else (dist, None)  # carried through the stages
    if single:
        dist = dist[0]
        pred = None if pred is None else pred[0]
    if on_gpu:
        import cupy

        dist = cupy.asarray(dist)
        pred = None if pred is None else cupy.asarray(pred)
    return (dist, pred) if return_predecessors else dist
