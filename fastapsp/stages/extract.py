"""Stage 4: the interior-to-boundary block of a closed component matrix."""

from __future__ import annotations

__all__ = ["extract_inner_to_boundary"]


def extract_inner_to_boundary(matrix, n_boundary: int):
    """Contiguous copy of ``matrix[n_boundary:, :n_boundary]``.

    Parameters
    ----------
    matrix : ndarray, shape (c, c)
        A component matrix after :func:`blocked_floyd_warshall`.
    n_boundary : int
        Number of boundary vertices (they come first).

    Returns
    -------
    ndarray, shape (c - n_boundary, n_boundary)
        Exact distance from every interior vertex to every boundary vertex.

    Examples
    --------
    >>> import numpy as np
    >>> extract_inner_to_boundary(np.arange(9.0).reshape(3, 3), 1).tolist()
    [[3.0], [6.0]]
    """
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"matrix: expected a square matrix, found shape {matrix.shape}")
    if not 0 <= n_boundary <= matrix.shape[0]:
        raise ValueError(f"n_boundary: {n_boundary} is outside 0..{matrix.shape[0]}")
    return matrix[n_boundary:, :n_boundary].copy()  # a copy even when the slice is contiguous
