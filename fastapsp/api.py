"""``fastapsp.shortest_path``: the call of ``scipy.sparse.csgraph.shortest_path``, computed by fastapsp."""

from __future__ import annotations

import numpy as np
from scipy.sparse.csgraph import NegativeCycleError

__all__ = ["shortest_path", "graph_from_csgraph", "NegativeWeightError"]

_METHODS = ("auto", "FW", "D", "BF", "J")


class NegativeWeightError(ValueError, NegativeCycleError):
    """A negative (or NaN) arc weight: fastapsp computes non-negative weights only.

    A ``ValueError``, and a :class:`scipy.sparse.csgraph.NegativeCycleError`, so that
    code written for SciPy catches it where SciPy raises that error.
    """


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
        raise NegativeWeightError("csgraph: negative or NaN weights; fastapsp handles non-negative weights only "
                         "(scipy.sparse.csgraph.shortest_path with method='J' or 'BF' handles negative ones)")
    weights = np.ones(data.size) if unweighted else data
    return Graph.from_edges(coo.shape[0], coo.row, coo.col, weights, directed=directed, name="csgraph")


def shortest_path(csgraph, method: str = "auto", directed: bool = True, return_predecessors: bool = False,
                  unweighted: bool = False, overwrite: bool = False, indices=None, *, k: int | None = None,
                  partitioner: str = "auto", backend: str | None = None, dtype=None):
    """Shortest-path distances, with the arguments and results of ``scipy.sparse.csgraph.shortest_path``.

    Parameters
    ----------
    csgraph : sparse matrix or array, cupyx sparse matrix, or dense array
        N x N arc weights (non-negative).  With a ``cupyx.scipy.sparse`` matrix
        the work and the results stay on the GPU (CuPy arrays; no host copy of the result).
    method : {"auto", "FW", "D", "BF", "J"}
        Accepted for compatibility and checked as SciPy checks it (an unknown
        name, or ``"FW"`` with ``indices``, is a ``ValueError``); fastapsp always
        runs its own exact algorithm.
    directed : bool
        False: every arc may be walked both ways.
    return_predecessors : bool
        Also return the predecessor matrix (``-9999`` where there is none).
    unweighted : bool
        Every arc weighs 1.
    overwrite : bool
        Accepted for compatibility; ``csgraph`` is never changed.
    indices : int or array_like of int, optional
        Only these rows: the result has shape ``indices.shape + (N,)`` (``(N,)``
        for a single int), as SciPy's.
    k, partitioner, backend
        fastapsp's own settings (see :func:`fastapsp.solve`); ``backend`` defaults
        to ``cupy`` for cupyx input, else ``auto``.
    dtype : {None, "float32", "float64", "uint16"}
        The distances' dtype.  None (default): float64, as SciPy returns,
        computed in the narrowest type that is exact for the graph (float32
        for whole-number distances below 2**24) and widened where the rows are
        made.  ``float32`` halves the memory of the result, ``uint16``
        (unweighted graphs, 65535 = unreachable) quarters it.

    Returns
    -------
    dist_matrix : ndarray of float64 (or ``dtype``), NumPy or CuPy
        ``(N, N)``, or ``indices.shape + (N,)``.
    predecessors : ndarray of int32
        Same shape, when ``return_predecessors``.

    Raises
    ------
    NegativeWeightError
        For a negative or NaN weight (a ``ValueError`` and a SciPy ``NegativeCycleError``).
    ValueError
        For an unknown ``method``, ``method="FW"`` with ``indices``, or a matrix that is not square.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> g = sp.csr_matrix(np.array([[0, 1, 4], [0, 0, 2], [0, 0, 0]], dtype=float))
    >>> shortest_path(g, backend="numpy")[0].tolist()
    [0.0, 1.0, 3.0]
    """
    from .library import solve

    if method not in _METHODS:
        raise ValueError(f"method: {method!r} is not one of {', '.join(_METHODS)}")
    if method == "FW" and indices is not None:
        raise ValueError("Cannot specify indices with method == 'FW'.")  # SciPy's rule and words
    on_gpu = _is_cupy_sparse(csgraph)
    if backend is None:
        backend = "cupy" if on_gpu else "auto"
    graph = graph_from_csgraph(csgraph, directed=directed, unweighted=unweighted)
    n = graph.n
    xp = np
    if on_gpu:
        import cupy as xp
    wanted = "float64" if dtype is None else str(np.dtype(dtype))
    settings = dict(k=k, partitioner=partitioner, backend=backend, output="device" if on_gpu else "memory",
                    return_predecessors=return_predecessors)
    if dtype is None:  # computed in the narrowest exact type, returned as float64
        settings.update(dtype="auto", result_dtype="float64")
    else:
        settings.update(dtype=wanted)
    shape = None if indices is None else np.shape(indices.get() if hasattr(indices, "get") else indices)
    if indices is None:
        if n:
            dist = solve(graph, **settings)
        else:
            empty = xp.zeros((0, 0), dtype=wanted)
            dist = (empty, xp.zeros((0, 0), dtype=np.int32)) if return_predecessors else empty
    else:
        rows = np.asarray(indices.get() if hasattr(indices, "get") else indices).reshape(-1)
        if not np.issubdtype(rows.dtype, np.integer):
            raise ValueError(f"indices: expected integer vertex ids, found {rows.dtype}")
        rows = np.where(rows < 0, rows + n, rows)  # negative indices count from the end, as in SciPy
        dist = solve(graph, sources=rows, **settings)
    dist, pred = dist if return_predecessors else (dist, None)  # carried through the stages
    if shape is not None:  # rows in the shape of indices, as SciPy returns them
        dist = dist.reshape(shape + (n,))
        pred = None if pred is None else pred.reshape(shape + (n,))
    return (dist, pred) if return_predecessors else dist
