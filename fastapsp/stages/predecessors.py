"""The stages with predecessors carried beside the distances (``--predecessors``).

Every entry of every matrix the stages handle becomes a *path summary*
``(d, h, p)``: the length of a path, its number of arcs and the vertex before its
head (a global vertex id; ``-9999`` for none, as SciPy).  Paths are compared by
``(d, h)``: the shorter first, of two equally short ones that with fewer arcs.
Since every arc adds ``h = 1``, following predecessors from any head strictly
lowers ``(d, h)`` until the source is reached, so zero-weight arcs (ties, zero
cycles) cannot make a cycle of predecessors, whichever winner a tie picks.

The stages, with the same shapes as their distance-only twins:

- :func:`boundary_predecessors` (after stage 1): ``h`` and ``p`` of the boundary
  rows, by a breadth-first search from each source over the arcs that are tight
  in the exact distance rows (``d[u] + w(u, v) == d[v]``).
- :func:`component_predecessors` (stage 2): ``h`` and ``p`` of the component
  matrix: the boundary rows' own, and for an arc ``u -> v`` inside the component
  ``(w, 1, u)``; the diagonal is ``(0, 0, none)``.
- :func:`floyd_warshall_predecessors` (stage 3): when ``(i, k) + (k, j)`` beats
  ``(i, j)``, ``p[i, j] = p[k, j]``.
- :func:`min_plus_predecessors` (stage 5): the winner ``t`` of
  ``min_t a[i, t] + b[t, j]`` gives ``p[i, j] = pb[t, j]`` (``pa[i, t]`` when ``j == t``).
- :func:`assemble_predecessors` (stage 6): the boundary rows' predecessors and,
  for the component's own columns of interior rows, the Floyd-Warshall ones.

Distances come out exactly as from the distance-only stages.  The boundary-graph
method carries no predecessors: a run with predecessors takes its boundary rows
from the frontier SSSP.
"""

from __future__ import annotations

import numpy as np

from ..backend import array_module
from ..graph import arc_runs
from ..paths import NO_PREDECESSOR, tight_tree

__all__ = ["boundary_predecessors", "component_predecessors", "floyd_warshall_predecessors",
           "min_plus_predecessors", "assemble_predecessors", "NO_PREDECESSOR"]

_HOST_BLOCK_BYTES = 1 << 20  # rows of the host min-plus handled together


def _real_tolerance(weights, dist) -> float:
    """Relative slack of the host tight-arc test: none for whole-number weights (exact), else float rounding."""
    w = np.asarray(weights)
    if w.size == 0 or np.all(w == np.floor(w)):
        return 0.0
    return 1e-6 if dist.dtype.itemsize <= 4 else 1e-12


def boundary_predecessors(indptr, indices, weights, sources, dist):
    """Arcs and predecessors of shortest paths behind the exact distance rows ``dist``.

    Parameters
    ----------
    indptr, indices, weights : ndarray
        The graph in CSR form.
    sources : ndarray of int, shape (S,)
        The source of every row.
    dist : ndarray, shape (S, n)
        ``dist[s, v] = d(sources[s], v)`` (:func:`fastapsp.stages.boundary_sssp`).

    Returns
    -------
    hops, pred : ndarray of int32, shape (S, n)
        The fewest arcs of a shortest path (``-1`` when unreachable) and the
        vertex before ``v`` on one (``-9999`` for the source and unreachable ones).

    Examples
    --------
    >>> from fastapsp.graph import Graph
    >>> g = Graph.from_edges(3, [0, 1, 0], [1, 2, 2], [1.0, 1.0, 2.0], directed=True)
    >>> h, p = boundary_predecessors(g.indptr, g.indices, g.weights, np.array([0]), np.array([[0.0, 1.0, 2.0]]))
    >>> h.tolist(), p.tolist()
    ([[0, 1, 1]], [[-9999, 0, 0]])
    """
    xp = array_module(indptr, indices, weights, dist)
    n = indptr.shape[0] - 1
    sources = xp.asarray(sources)
    if dist.ndim != 2 or dist.shape != (sources.size, n):
        raise ValueError(f"dist: expected shape {(sources.size, n)}, found {dist.shape}")
    if xp is not np:
        from ._cuda_pred import boundary_predecessors_cuda

        return boundary_predecessors_cuda(indptr, indices, weights, sources, dist)
    hops = np.full(dist.shape, -1, dtype=np.int32)
    pred = np.full(dist.shape, NO_PREDECESSOR, dtype=np.int32)
    src = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    arcs = (src, np.asarray(indices, dtype=np.int64), np.asarray(weights, dtype=np.float64))
    rtol = _real_tolerance(weights, dist)
    for i, s in enumerate(np.asarray(sources).tolist()):
        hops[i], pred[i] = tight_tree(arcs, dist[i].astype(np.float64), s, n, rtol)
    return hops, pred


def component_predecessors(indptr, indices, weights, vertices, n_boundary, boundary_hops, boundary_pred):
    """Arcs and predecessors of the component matrix (:func:`fastapsp.stages.build_component_matrix`).

    Parameters
    ----------
    indptr, indices, weights : ndarray
        The graph in CSR form.
    vertices : ndarray of int, shape (c,)
        The component's vertices, boundary first.
    n_boundary : int
        How many of them are boundary vertices.
    boundary_hops, boundary_pred : ndarray of int32, shape (n_boundary, n)
        Those of the boundary rows (:func:`boundary_predecessors`).

    Returns
    -------
    hops, pred : ndarray of int32, shape (c, c)
        Boundary rows: the boundary rows' own at the component's columns.
        Interior rows: 1 and the row's vertex at its arcs inside the component.
        Diagonal ``(0, -9999)``; no arc ``(0, -9999)``.

    Examples
    --------
    >>> from fastapsp.graph import Graph
    >>> g = Graph.from_edges(2, [0], [1], [3.0], directed=True)
    >>> none = np.empty((0, 2), dtype=np.int32)
    >>> [a.tolist() for a in component_predecessors(g.indptr, g.indices, g.weights, np.array([0, 1]), 0, none, none)]
    [[[0, 1], [0, 0]], [[-9999, 0], [-9999, -9999]]]
    """
    xp = array_module(indptr, boundary_hops, boundary_pred)
    n = indptr.shape[0] - 1
    vertices = xp.asarray(vertices)
    c = int(vertices.size)
    if boundary_hops.shape != (n_boundary, n) or boundary_pred.shape != (n_boundary, n):
        raise ValueError(f"boundary_hops/boundary_pred: expected shape {(n_boundary, n)}, found "
                         f"{boundary_hops.shape} and {boundary_pred.shape}")
    hops = xp.zeros((c, c), dtype=np.int32)
    pred = xp.full((c, c), NO_PREDECESSOR, dtype=np.int32)
    hops[:n_boundary] = boundary_hops[:, vertices]
    pred[:n_boundary] = boundary_pred[:, vertices]
    interior = vertices[n_boundary:]
    if interior.size:
        positions, row_of_arc, _ = arc_runs(xp, indptr, interior)
        local = xp.full(n, -1, dtype=np.int64)
        local[vertices] = xp.arange(c, dtype=np.int64)
        cols = local[indices[positions]]
        # Operations with a scalar as functions on the GPU path (DEVELOPERS.md says why).
        inside = xp.greater_equal(cols, 0)  # an interior vertex has no arc leaving its component
        rows = xp.add(row_of_arc[inside], n_boundary)
        hops[rows, cols[inside]] = 1
        pred[rows, cols[inside]] = vertices[rows].astype(np.int32)
    diagonal = xp.arange(c)
    hops[diagonal, diagonal] = 0
    pred[diagonal, diagonal] = NO_PREDECESSOR
    return hops, pred


def floyd_warshall_predecessors(matrix, hops, pred):
    """Close ``matrix`` in place (as :func:`fastapsp.stages.blocked_floyd_warshall`), carrying ``hops`` and ``pred``.

    Parameters
    ----------
    matrix : ndarray, shape (c, c)
        Distances, zero diagonal; overwritten.
    hops, pred : ndarray of int32, shape (c, c)
        Arcs and predecessors of ``matrix``'s entries (:func:`component_predecessors`); overwritten.

    Returns
    -------
    tuple
        ``(matrix, hops, pred)``.

    Examples
    --------
    >>> d = np.array([[0.0, 1.0, np.inf], [np.inf, 0.0, 0.0], [np.inf, np.inf, 0.0]])
    >>> h = np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]], dtype=np.int32)
    >>> p = np.array([[-9999, 0, -9999], [-9999, -9999, 1], [-9999, -9999, -9999]], dtype=np.int32)
    >>> d, h, p = floyd_warshall_predecessors(d, h, p)
    >>> d[0].tolist(), h[0].tolist(), p[0].tolist()
    ([0.0, 1.0, 1.0], [0, 1, 2], [-9999, 0, 1])
    """
    xp = array_module(matrix, hops, pred)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1] or hops.shape != matrix.shape \
            or pred.shape != matrix.shape:
        raise ValueError(f"matrix, hops, pred: expected three square matrices of one shape, found "
                         f"{matrix.shape}, {hops.shape}, {pred.shape}")
    if xp is not np:
        from ._cuda_pred import floyd_warshall_predecessors_cuda

        return floyd_warshall_predecessors_cuda(matrix, hops, pred)
    for k in range(matrix.shape[0]):
        cd = matrix[:, k, None] + matrix[k]
        ch = hops[:, k, None] + hops[k]
        better = _better(cd, ch, matrix, hops)
        if not better.any():
            continue
        via = np.where(pred[k] != NO_PREDECESSOR, pred[k][None, :], pred[:, k, None])
        matrix[better], hops[better], pred[better] = cd[better], ch[better], via[better]
    return matrix, hops, pred


def _better(cd, ch, d, h):
    """Where the candidate (cd, ch) is a finite path before (d, h)."""
    return (cd < d) | ((cd == d) & (ch < h) & np.isfinite(cd))


def min_plus_predecessors(a, a_hops, a_pred, b, b_hops, b_pred, *, out, out_pred, out_hops=None):
    """``out[i, j] = min_t a[i, t] + b[t, j]`` by ``(d, h)``, with the winner's predecessor.

    Parameters
    ----------
    a, a_hops, a_pred : ndarray, shape (r, t)
        Left operand (interior-to-boundary paths).
    b, b_hops, b_pred : ndarray, shape (t, w)
        Right operand (boundary rows).
    out, out_pred : ndarray, shape (r, w)
        Distances and predecessors, written (views allowed).
    out_hops : ndarray of int32, shape (r, w), optional
        Arcs of the winners, when wanted.

    Returns
    -------
    tuple
        ``(out, out_pred)``; ``(inf, -9999)`` where no path is finite.

    Examples
    --------
    >>> a, ah, ap = np.array([[1.0, 1.0]]), np.array([[1, 2]], np.int32), np.array([[5, 6]], np.int32)
    >>> b, bh, bp = np.array([[0.0], [0.0]]), np.array([[0], [0]], np.int32), np.array([[-9999], [-9999]], np.int32)
    >>> d, p = min_plus_predecessors(a, ah, ap, b, bh, bp, out=np.empty((1, 1)), out_pred=np.empty((1, 1), np.int32))
    >>> d.tolist(), p.tolist()
    ([[1.0]], [[5]])
    """
    xp = array_module(a, b, out)
    r, t = a.shape
    w = b.shape[1]
    if b.shape[0] != t or a_hops.shape != a.shape or a_pred.shape != a.shape or b_hops.shape != b.shape \
            or b_pred.shape != b.shape:
        raise ValueError(f"min_plus_predecessors: operands {a.shape} and {b.shape} (with their hops and "
                         "predecessors) do not chain")
    if out.shape != (r, w) or out_pred.shape != (r, w) or (out_hops is not None and out_hops.shape != (r, w)):
        raise ValueError(f"out, out_pred, out_hops: expected shape {(r, w)}")
    if xp is not np:
        from ._cuda_pred import min_plus_predecessors_cuda

        return min_plus_predecessors_cuda(a, a_hops, a_pred, b, b_hops, b_pred, out, out_pred, out_hops)
    chunk = max(1, _HOST_BLOCK_BYTES // max(1, w * 16))
    for r0 in range(0, r, chunk):
        r1 = min(r, r0 + chunk)
        d = np.full((r1 - r0, w), np.inf, dtype=out.dtype)
        h = np.zeros((r1 - r0, w), dtype=np.int64)
        win = np.full((r1 - r0, w), -1, dtype=np.int64)
        for k in range(t):
            cd = (a[r0:r1, k, None] + b[k]).astype(out.dtype)
            ch = a_hops[r0:r1, k, None].astype(np.int64) + b_hops[k]
            better = _better(cd, ch, d, h)
            d[better], h[better], win[better] = cd[better], ch[better], k
        found = win >= 0
        rows, cols = np.nonzero(found)
        p = np.full((r1 - r0, w), NO_PREDECESSOR, dtype=np.int32)
        via = b_pred[win[found], cols]
        p[found] = np.where(via != NO_PREDECESSOR, via, a_pred[r0 + rows, win[found]])
        out[r0:r1], out_pred[r0:r1] = d, p
        if out_hops is not None:
            out_hops[r0:r1] = h
    return out, out_pred


def assemble_predecessors(block_pred, boundary_pred, matrix_pred, vertices, n_boundary, *, column_start=0):
    """Complete the predecessors of a row block (as :func:`fastapsp.stages.assemble_row_block`, frontier method).

    ``block_pred[n_boundary:]`` holds the interior rows' predecessors through the
    boundary (:func:`min_plus_predecessors`); this copies in the boundary rows'
    and, at the component's own columns, the Floyd-Warshall ones of the interior rows.

    Returns
    -------
    ndarray
        ``block_pred``.

    Examples
    --------
    >>> bp = np.full((1, 3), -9999, np.int32)
    >>> assemble_predecessors(bp, np.empty((0, 3), np.int32), np.array([[-9999]], np.int32), np.array([2]), 0).tolist()
    [[-9999, -9999, -9999]]
    """
    xp = array_module(block_pred, boundary_pred, matrix_pred)
    c, width = block_pred.shape
    vertices = xp.asarray(vertices)
    if matrix_pred.shape != (c, c) or boundary_pred.shape[0] != n_boundary:
        raise ValueError(f"block_pred {block_pred.shape}, boundary_pred {boundary_pred.shape} and matrix_pred "
                         f"{matrix_pred.shape} do not fit one component with {n_boundary} boundary vertices")
    block_pred[:n_boundary] = boundary_pred[:, column_start : column_start + width]
    inside = xp.nonzero(xp.greater_equal(vertices, column_start) & xp.less(vertices, column_start + width))[0]
    if inside.size:
        block_pred[n_boundary:, xp.subtract(vertices[inside], column_start)] = matrix_pred[n_boundary:][:, inside]
    return block_pred
