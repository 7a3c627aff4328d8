"""Stage 3: blocked Floyd-Warshall, closing a component matrix in place."""

from __future__ import annotations

import numpy as np

from ..backend import array_module
from .min_plus import _host_accumulate

__all__ = ["blocked_floyd_warshall", "close_many", "close_matrix", "searches_pay", "DEFAULT_TILE"]

DEFAULT_TILE = 64
# On the host a component matrix is mostly "no arc".  SciPy's Dijkstra from every vertex took 1.1-2.5 ns
# per c (e + c) log2 c (c vertices, e finite entries off the diagonal) and the blocked Floyd-Warshall in
# NumPy 0.57-0.97 ns per c^3, the same closures (luxembourg_osm and delaunay_n17 components of 263-1,805
# vertices, the 2-core development machine: 0.29 s against 3.34 s at c = 1,805;
# benchmarks/results/cpu-closures/); the searches are taken where they cost less at 2 ns against 0.5
# (searches_pay, close_matrix).
SEARCH_NS, FLOYD_WARSHALL_NS = 2.0, 0.5
_SEARCH_ROWS = 256  # sources a Dijkstra call takes: its float64 rows stay small beside the matrix


def blocked_floyd_warshall(matrix, *, tile: int = DEFAULT_TILE):
    """All-pairs shortest paths of a dense distance matrix, in place.

    The matrix is cut into ``tile`` x ``tile`` tiles.  For each diagonal tile
    ``k``: (1) close the diagonal tile itself, (2) update the tiles of row ``k``
    and column ``k`` through it, (3) update every other tile through the
    row-``k`` and column-``k`` tiles.  This is the structure of the GPU kernel
    (Katz and Kider); the host path runs each phase as vectorised min-plus
    updates over row stripes.

    Parameters
    ----------
    matrix : ndarray, shape (c, c)
        Arc weights (``inf`` for none); its diagonal must be zero.  Overwritten.
    tile : int
        Tile edge length (> 0).

    Returns
    -------
    ndarray
        ``matrix``, now holding shortest-path distances.

    Examples
    --------
    >>> import numpy as np
    >>> d = np.array([[0, 1, np.inf], [np.inf, 0, 2], [5, np.inf, 0]])
    >>> blocked_floyd_warshall(d, tile=2).tolist()
    [[0.0, 1.0, 3.0], [7.0, 0.0, 2.0], [5.0, 6.0, 0.0]]
    """
    xp = array_module(matrix)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"matrix: expected a square matrix, found shape {matrix.shape}")
    if int(tile) <= 0:
        raise ValueError(f"tile: must be a positive integer, found {tile}")
    if xp is not np:
        from ._cuda import blocked_floyd_warshall_cuda

        return blocked_floyd_warshall_cuda(matrix)
    c = matrix.shape[0]
    for k0 in range(0, c, tile):
        k1 = min(c, k0 + tile)
        _close_tile(matrix[k0:k1, k0:k1])  # phase 1
        pivot = matrix[k0:k1, k0:k1].copy()
        # Phase 2: the tile row and tile column of k, through the closed pivot tile.
        _host_accumulate(matrix[k0:k1, :], pivot, matrix[k0:k1, :].copy())
        _host_accumulate(matrix[:, k0:k1], matrix[:, k0:k1].copy(), pivot)
        # Phase 3: all tiles through tile column k and tile row k.  Including the
        # row and column of k themselves changes nothing there, as they are closed.
        _host_accumulate(matrix, matrix[:, k0:k1].copy(), matrix[k0:k1, :].copy())
    return matrix


def close_many(matrices) -> None:
    """Close every matrix of ``matrices`` in place, as :func:`blocked_floyd_warshall` does one.

    On CuPy all of them go through the same launches (one per phase and pivot
    tile for the whole list), which matters when there are many small
    matrices: each would otherwise cost three launches per 64 rows.  On NumPy
    each is closed by :func:`close_matrix`.
    """
    matrices = list(matrices)
    for matrix in matrices:
        if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
            raise ValueError(f"matrices: expected square matrices, found shape {matrix.shape}")
    if not matrices:
        return
    if array_module(matrices[0]) is not np:
        from ._cuda import blocked_floyd_warshall_batch_cuda

        blocked_floyd_warshall_batch_cuda(matrices)
        return
    for matrix in matrices:
        close_matrix(matrix)


def searches_pay(c: int, finite: int) -> bool:
    """Whether Dijkstra from every vertex closes a host matrix of ``c`` vertices and ``finite`` finite entries
    off its diagonal in less time than Floyd-Warshall (``SEARCH_NS``, ``FLOYD_WARSHALL_NS``).

    Examples
    --------
    >>> searches_pay(1805, 4142), searches_pay(64, 64 * 63)  # a road network's component; a clique
    (True, False)
    """
    return bool(c > 1 and SEARCH_NS * c * (finite + c) * np.log2(c) < FLOYD_WARSHALL_NS * float(c) ** 3)


def close_matrix(matrix, *, tile: int = DEFAULT_TILE):
    """Close a distance matrix in place, as :func:`blocked_floyd_warshall` does.  On the host by Dijkstra from
    every vertex over its finite entries where that costs less (:func:`searches_pay`; SciPy, computed in
    float64 and stored in the matrix's dtype); elsewhere, and on the GPU, by the blocked Floyd-Warshall.

    Examples
    --------
    >>> d = np.array([[0, 1, np.inf], [np.inf, 0, 2], [5, np.inf, 0]])
    >>> close_matrix(d).tolist()
    [[0.0, 1.0, 3.0], [7.0, 0.0, 2.0], [5.0, 6.0, 0.0]]
    """
    if array_module(matrix) is not np:
        return blocked_floyd_warshall(matrix, tile=tile)
    c = matrix.shape[0]
    arcs = np.isfinite(matrix)
    np.fill_diagonal(arcs, False)
    if not searches_pay(c, int(np.count_nonzero(arcs))):  # counted first: a dense matrix's ids would be large
        return blocked_floyd_warshall(matrix, tile=tile)
    rows, cols = np.nonzero(arcs)
    del arcs
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import dijkstra

    # Explicit zeros of a sparse matrix are arcs to SciPy: zero-weight arcs stay.
    graph = csr_matrix((matrix[rows, cols].astype(np.float64), (rows, cols)), shape=(c, c))
    for first in range(0, c, _SEARCH_ROWS):
        last = min(c, first + _SEARCH_ROWS)
        matrix[first:last] = dijkstra(graph, directed=True, indices=np.arange(first, last))
    return matrix


def _close_tile(tile):
    """Plain Floyd-Warshall on one small tile (phase 1)."""
    for t in range(tile.shape[0]):
        np.minimum(tile, tile[:, t, None] + tile[t], out=tile)
