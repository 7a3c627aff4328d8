"""Stage 2: the |C|x|C| distance matrix of one component, ready for Floyd-Warshall."""

from __future__ import annotations

import numpy as np

from ..backend import array_module

__all__ = ["build_component_matrix"]


def build_component_matrix(indptr, indices, weights, vertices, n_boundary, boundary_rows, *, dtype=None):
    """Matrix whose Floyd-Warshall closure gives exact global distances inside a component.

    Local index ``a`` stands for ``vertices[a]``; the first ``n_boundary`` of
    them are the boundary vertices.

    Parameters
    ----------
    indptr, indices, weights : ndarray
        The whole graph in CSR form.
    vertices : ndarray of int, shape (c,)
        The component's vertices, boundary vertices first.
    n_boundary : int
        How many of ``vertices`` are boundary vertices.
    boundary_rows : ndarray, shape (n_boundary, n)
        Global distances from each boundary vertex (:func:`boundary_sssp`).
    dtype : dtype, optional
        Matrix dtype; that of ``boundary_rows`` when omitted.

    Returns
    -------
    ndarray, shape (c, c)
        Rows ``< n_boundary``: global distances from that boundary vertex.
        Other rows: arc weights from that interior vertex inside the component,
        ``inf`` where there is no arc.  Zero diagonal.

    Examples
    --------
    >>> from fastapsp.graph import Graph
    >>> g = Graph.from_edges(3, [0, 1], [1, 2], [2.0, 3.0], directed=False)
    >>> rows = np.array([[2.0, 0.0, 3.0]])          # from boundary vertex 1
    >>> build_component_matrix(g.indptr, g.indices, g.weights, np.array([1, 0]), 1, rows).tolist()
    [[0.0, 2.0], [2.0, 0.0]]
    """
    xp = array_module(indptr, indices, weights, boundary_rows)
    n = indptr.shape[0] - 1
    vertices = xp.asarray(vertices)
    c = int(vertices.size)
    if not 0 <= n_boundary <= c:
        raise ValueError(f"n_boundary: {n_boundary} is outside 0..{c}")
    if boundary_rows.shape != (n_boundary, n):
        raise ValueError(f"boundary_rows: expected shape {(n_boundary, n)}, found {boundary_rows.shape}")
    dtype = boundary_rows.dtype if dtype is None else np.dtype(dtype)
    if xp is not np:
        from ._cuda import build_component_matrix_cuda

        return build_component_matrix_cuda(indptr, indices, weights, vertices, n_boundary, boundary_rows, dtype)

    matrix = np.full((c, c), np.inf, dtype=dtype)
    matrix[:n_boundary] = boundary_rows[:, vertices]
    rows, heads, arc_weights = _interior_arcs(indptr, indices, weights, vertices, n_boundary)
    local = np.full(n, -1, dtype=np.int64)
    local[vertices] = np.arange(c)
    cols = local[heads]
    inside = cols >= 0  # an interior vertex has no arc leaving its component
    matrix[rows[inside], cols[inside]] = arc_weights[inside]  # CSR holds no parallel arcs
    matrix[np.arange(c), np.arange(c)] = 0
    return matrix


def _interior_arcs(indptr, indices, weights, vertices, n_boundary):
    """Local row, global head and weight of every arc leaving an interior vertex."""
    interior = vertices[n_boundary:]
    starts = indptr[interior].astype(np.int64)
    counts = indptr[interior + 1].astype(np.int64) - starts
    total = int(counts.sum())
    # Position of every arc: its row's start plus its rank within the row.
    row_of_arc = np.repeat(np.arange(interior.size), counts)
    first_of_row = np.cumsum(counts) - counts
    positions = starts[row_of_arc] + (np.arange(total) - first_of_row[row_of_arc])
    return row_of_arc + n_boundary, indices[positions], weights[positions]
