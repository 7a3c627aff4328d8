"""Stage 5: min-plus product, the distances from interior vertices to the rest of the graph."""

from __future__ import annotations

import numpy as np

from ..backend import array_module

__all__ = ["min_plus", "Packing", "U16_LIMIT", "UNPACKED_SHARE"]

# Host path: rows of the output handled together, sized so that the block being
# updated stays in the CPU cache while the inner dimension is swept.
_HOST_BLOCK_BYTES = 1 << 19
U16_LIMIT = 16383  # the largest finite operand of the packed 16-bit products (U16_LIMIT, minplus_tile_u16.cuh)
# A run whose first boundary row has more than this share of its finite distances past U16_LIMIT
# stays in float32 (Packing): on real boundary rows the packed product was 5-14% faster with up to
# 4.5% of their distances past it, 2-16% slower with 39-61% (docs/kernels.md).
UNPACKED_SHARE = 0.25


class Packing:
    """Whether a run's GPU min-plus products take packed 16-bit arithmetic: decided once, at its first product.

    The packed kernels hold whole-number operands up to :data:`U16_LIMIT`; a
    tile with a larger operand is computed again in float32 inside them.  The
    first product of a run passes its right operand, a block of boundary rows:
    its first row holds a boundary vertex's distances to every vertex it
    reaches.  Where more than :data:`UNPACKED_SHARE` of them pass the limit,
    about as large a share of the run's tiles would fall back, and every product
    stays in float32; otherwise the products are packed, each tile falling back
    where an operand does not fit.  Both give the same numbers; only the speed
    differs (measured in docs/kernels.md).

    Parameters
    ----------
    integer : bool
        The distances are whole numbers and the products run on the GPU
        (nothing else packs: the answer is then False without a look).

    Examples
    --------
    >>> import numpy as np
    >>> Packing(True)(np.array([[0.0, 7.0, 20000.0, 9.0, 3.0, np.inf]]))  # 1 of 5 past the limit
    True
    >>> Packing(True)(np.array([[0.0, 20000.0]]))
    False
    """

    def __init__(self, integer: bool) -> None:
        self.answer = None if integer else False

    @classmethod
    def for_run(cls, graph, xp) -> "Packing":
        """The decision of a run of ``graph`` on ``xp``: whole-number distances on the GPU may pack."""
        return cls(graph.integer_weights and xp is not np)

    def __call__(self, b) -> bool:
        if self.answer is None:
            # One row read on the host, a few milliseconds: CuPy reductions here added about 0.4 s to
            # the min-plus stage of some runs (benchmarks/results/family-after-dtype-bound/README.md).
            first = b[:1]
            first = first.get() if array_module(first) is not np else first
            finite = first[np.isfinite(first)]
            self.answer = int(np.count_nonzero(finite > U16_LIMIT)) <= UNPACKED_SHARE * finite.size
        return self.answer


def min_plus(a, b, *, out=None, accumulate: bool = False, integer: bool = False, out_rows=None):
    """Min-plus product ``out[i, j] = min_t a[i, t] + b[t, j]``.

    Parameters
    ----------
    a : ndarray, shape (r, t)
        Left operand (interior-to-boundary distances).
    b : ndarray, shape (t, c)
        Right operand (boundary-to-all distances).
    out : ndarray, shape (r, c), optional
        Result array, may be a view (for example rows of a row block).
    accumulate : bool
        When True, ``out`` is updated to ``min(out, a (x) b)`` instead of overwritten.
    integer : bool
        The operands hold whole numbers (graphs with integer weights).  On the
        GPU, float32 products then run in packed 16-bit arithmetic wherever the
        operands fit in it (finite values up to 16,383), and in float32 where
        they do not; the result is the same.  The host path ignores it.
    out_rows : ndarray of int, shape (r,), optional
        Row ``i`` of the product goes to row ``out_rows[i]`` of ``out`` (then of shape (any, c)):
        a component's rows of a result kept whole, written where they lie (on the GPU with no
        block in between).

    Returns
    -------
    ndarray, shape (r, c)
        ``inf`` everywhere when ``t == 0`` (and ``accumulate`` is False).

    Examples
    --------
    >>> import numpy as np
    >>> min_plus(np.array([[1.0, 5.0]]), np.array([[0.0, 9.0], [0.0, 1.0]])).tolist()
    [[1.0, 6.0]]
    """
    xp = array_module(a, b)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"min_plus: operands of shapes {a.shape} and {b.shape} do not chain")
    shape = (a.shape[0], b.shape[1])
    if out_rows is not None:
        if out is None or out.ndim != 2 or out.shape[1] != shape[1] or len(out_rows) != shape[0]:
            raise ValueError(f"out_rows: {len(out_rows)} rows of an out of shape "
                             f"{None if out is None else out.shape} for a product of shape {shape}")
        if xp is not np:
            from ._cuda import min_plus_cuda

            return min_plus_cuda(a, b, out, accumulate, integer, out_rows=out_rows)
        rows = np.asarray(out_rows)
        product = out[rows] if accumulate else np.full(shape, np.inf, dtype=out.dtype)
        _host_accumulate(product, a, b)
        out[rows] = product
        return out
    if out is None:
        if accumulate:
            raise ValueError("min_plus: accumulate=True needs out")
        out = xp.empty(shape, dtype=np.result_type(a.dtype, b.dtype))
    elif out.shape != shape:
        raise ValueError(f"out: expected shape {shape}, found {out.shape}")
    if xp is not np:
        from ._cuda import min_plus_cuda

        return min_plus_cuda(a, b, out, accumulate, integer)
    if not accumulate:
        out.fill(np.inf)
    _host_accumulate(out, a, b)
    return out


def _host_accumulate(out, a, b):
    """``out = min(out, a (x) b)`` on the CPU, sweeping the inner dimension per row chunk."""
    rows, cols = out.shape
    if rows == 0 or cols == 0 or a.shape[1] == 0:
        return
    chunk = max(1, _HOST_BLOCK_BYTES // max(1, cols * out.itemsize))
    scratch = np.empty((min(chunk, rows), cols), dtype=out.dtype)
    for r0 in range(0, rows, chunk):
        r1 = min(rows, r0 + chunk)
        target, tmp = out[r0:r1], scratch[: r1 - r0]
        for t in range(a.shape[1]):
            np.add(a[r0:r1, t, None], b[t], out=tmp)
            np.minimum(target, tmp, out=target)
