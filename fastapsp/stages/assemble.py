"""Stage 6: fill a component's row block (or a column slice of it) of the distance matrix."""

from __future__ import annotations

import numpy as np

from ..backend import array_module

__all__ = ["assemble_row_block", "assemble_in_result"]


def assemble_row_block(block, boundary_rows, matrix, vertices, n_boundary: int, *, column_start: int = 0,
                       minimum: bool = False):
    """Complete the rows of one component for the columns ``column_start .. column_start + w``.

    On entry ``block[n_boundary:]`` holds the interior rows computed through the
    boundary (:func:`min_plus`).  This copies in the boundary rows (boundary
    SSSP) and, for the component's own vertices among these columns, the exact
    Floyd-Warshall distances of the interior rows: paths that never leave the
    component are only there.

    Parameters
    ----------
    block : ndarray, shape (c, w)
        Row ``a`` belongs to ``vertices[a]``, column ``j`` to vertex ``column_start + j``.
        Changed in place.
    boundary_rows : ndarray, shape (n_boundary, n)
        Distances from the boundary vertices to all vertices.
    matrix : ndarray, shape (c, c)
        The closed component matrix.
    vertices : ndarray of int, shape (c,)
        The component's vertices, boundary first.
    n_boundary : int
        Number of boundary vertices.
    column_start : int
        First vertex covered by ``block``'s columns.
    minimum : bool
        False: ``matrix`` is closed with global boundary rows (frontier
        method), its interior rows replace those columns.  True: ``matrix``
        holds distances over the component's own arcs only (boundary-graph
        method), and the interior rows take the smaller of the two.

    Returns
    -------
    ndarray
        ``block``, holding exact distances from each component vertex.

    Examples
    --------
    >>> import numpy as np
    >>> block = np.full((1, 3), np.inf)
    >>> assemble_row_block(block, np.empty((0, 3)), np.zeros((1, 1)), np.array([2]), 0).tolist()
    [[inf, inf, 0.0]]
    """
    xp = array_module(block, boundary_rows, matrix)
    c, width = block.shape
    if matrix.shape != (c, c):
        raise ValueError(f"block {block.shape} and matrix {matrix.shape} do not fit one component")
    if boundary_rows.shape[0] != n_boundary or column_start + width > boundary_rows.shape[1]:
        raise ValueError(f"boundary_rows {boundary_rows.shape} does not fit {n_boundary} boundary rows "
                         f"and columns {column_start}..{column_start + width - 1}")
    vertices = xp.asarray(vertices)
    if vertices.shape != (c,):
        raise ValueError(f"vertices: expected {c} ids, found shape {vertices.shape}")
    head, rows = block[:n_boundary], boundary_rows[:, column_start : column_start + width]
    if _same_elements(head, rows):  # the boundary rows were made in the block's first rows: nothing to copy
        pass
    elif xp is not np:
        from ._cuda import copy_rows_cuda

        if not copy_rows_cuda(head, rows):
            head[...] = rows
    else:
        head[...] = rows
    if xp is not np:
        from ._cuda import assemble_interior_cuda

        if assemble_interior_cuda(block, matrix, vertices, n_boundary, column_start, width, minimum):
            return block
    # Operations with a scalar as functions on the GPU path (DEVELOPERS.md says why).
    inside = xp.greater_equal(vertices, column_start) & xp.less(vertices, column_start + width)
    cols = xp.subtract(vertices[inside], column_start)
    values = matrix[n_boundary:][:, inside]
    if minimum:
        values = xp.minimum(block[n_boundary:, cols], values)
    block[n_boundary:, cols] = values
    return block


def _same_elements(a, b) -> bool:
    """Whether arrays ``a`` and ``b`` are the same elements of the same memory (one view twice)."""
    if a.shape != b.shape or a.strides != b.strides or a.dtype != b.dtype:
        return False
    address = (lambda x: x.data.ptr) if hasattr(a.data, "ptr") else (lambda x: x.__array_interface__["data"][0])
    return type(a) is type(b) and address(a) == address(b)


def assemble_in_result(result, boundary_rows, matrix, vertices, n_boundary: int, *, minimum: bool = False):
    """:func:`assemble_row_block` for a component whose rows lie where they belong in a whole result.

    ``result`` has shape (n, n); the component's rows are ``result[vertices]``,
    their interior rows already holding the product through the boundary
    (:func:`~fastapsp.stages.min_plus.min_plus` with ``out_rows``).  The
    boundary rows are copied in, and the interior rows' own columns take the
    component's distances (the smaller of the two with ``minimum``), as
    :func:`assemble_row_block` does for a row block.

    Examples
    --------
    >>> import numpy as np
    >>> result = np.full((3, 3), np.inf)
    >>> assemble_in_result(result, np.array([[0.0, 1.0, 2.0]]), np.array([[0.0, 1.0], [1.0, 0.0]]),
    ...                    np.array([1, 2]), 1, minimum=True)[1:].tolist()
    [[0.0, 1.0, 2.0], [inf, 1.0, 0.0]]
    """
    xp = array_module(result, boundary_rows, matrix)
    c = matrix.shape[0]
    if result.ndim != 2 or result.shape[0] != result.shape[1]:
        raise ValueError(f"result: expected a square array, found shape {result.shape}")
    if boundary_rows.shape != (n_boundary, result.shape[1]):
        raise ValueError(f"boundary_rows {boundary_rows.shape} does not fit {n_boundary} rows of {result.shape[1]}")
    vertices = xp.asarray(vertices)
    if vertices.shape != (c,):
        raise ValueError(f"vertices: expected {c} ids, found shape {vertices.shape}")
    if n_boundary:
        result[vertices[:n_boundary]] = boundary_rows
    if xp is not np:
        from ._cuda import assemble_interior_cuda

        if assemble_interior_cuda(result, matrix, vertices, n_boundary, 0, result.shape[1], minimum, rows=vertices):
            return result
    rows, cols = vertices[n_boundary:, None], vertices[None, :]
    values = matrix[n_boundary:]
    result[rows, cols] = xp.minimum(result[rows, cols], values) if minimum else values
    return result
