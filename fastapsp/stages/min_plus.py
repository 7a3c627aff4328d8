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
    """Whether a run's min-plus products take packed 16-bit arithmetic: decided once, at its first product.

    The packed kernels hold whole-number operands up to :data:`U16_LIMIT`; a
    tile with a larger operand is computed again in float32 inside them (on the
    host, a product with one is done in floats).  The
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
        The distances are whole numbers (else nothing packs: the answer is then
        False without a look).

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
        """The decision of a run of ``graph`` (on either backend): whole-number distances may pack."""
        return cls(graph.integer_weights)

    @staticmethod
    def possible(graph, dtype, gpu: bool) -> bool:
        """Whether a run's products may pack (before the decision): on the GPU, in float32, of
        whole-number distances.  Memory for the packed grouped products' encoded blocks is set aside
        where they may (:func:`fastapsp.stages.boundary_graph.levels_bytes`)."""
        return bool(gpu) and np.dtype(dtype) == np.float32 and bool(graph.integer_weights)

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
        they do not; on the host the product runs in 16-bit integers where
        both operands fit.  The result is the same.
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
        product = out[rows] if accumulate else np.empty(shape, dtype=out.dtype)
        _host_accumulate(product, a, b, integer=integer, fresh=not accumulate)
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
    _host_accumulate(out, a, b, integer=integer, fresh=not accumulate)
    return out


def _host_accumulate(out, a, b, *, integer: bool = False, fresh: bool = False):
    """``out = min(out, a (x) b)`` on the CPU, sweeping the inner dimension per row chunk.

    ``integer`` (whole-number operands): in 16-bit integers where the operands fit (:func:`_host_u16`).
    ``fresh``: ``out`` holds nothing yet (``out = a (x) b``; it need not be filled with ``inf``)."""
    rows, cols = out.shape
    if integer and rows and cols and a.shape[1] >= HOST_U16_MIN_K and _host_u16(out, a, b, fresh):
        return
    if fresh:
        out.fill(np.inf)
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


# The packed encoding of minplus_tile_u16.cuh: a finite distance up to U16_LIMIT as itself, inf as U16_INF;
# the sum of two encoded values stays below 2**16, and one at U16_INF or above is inf.
U16_INF = 0x7FFF
# The shortest inner dimension the host takes 16 bits for: a step of K costs about 0.12 ns an entry against
# 0.25 in float32, and converting the result back about 0.8 ns.  On the 2-core development machine
# (benchmarks/results/host-min-plus/): K = 1 1.02 ns an entry in float32 against 1.41, K = 2 1.36 against
# 1.31, K = 3 1.64 against 1.42, K = 8 2.93 against 2.00, K = 40 11.11 against 5.67.
HOST_U16_MIN_K = 3


def _encode_u16(x):
    """``x`` in 16 bits, or None where an entry is not ``inf`` or a whole number from 0 to U16_LIMIT
    (the caller's ``integer`` promises whole numbers; what does not fit is still seen here)."""
    if x.size and float(np.max(x, where=x != np.inf, initial=0)) > U16_LIMIT:
        return None
    clipped = np.minimum(x, U16_INF)
    packed = clipped.astype(np.uint16)
    if not np.array_equal(packed, clipped):  # fractions, negatives, NaN
        return None
    return packed


def _host_u16(out, a, b, fresh: bool) -> bool:
    """``out = min(out, a (x) b)`` (``out = a (x) b`` when ``fresh``) in 16-bit integers, NumPy's 16-bit loops
    taking about half the time of its float32 ones; the result converted back, ``inf`` from U16_INF on.
    Row chunks of ``out`` holding a distance past U16_LIMIT are done in floats.  False (nothing done) where
    an operand does not fit.  It pays where the inner dimension is long enough to outweigh the encoding
    (:data:`HOST_U16_MIN_K`)."""
    a16 = _encode_u16(a)
    b16 = None if a16 is None else _encode_u16(b)
    if b16 is None:
        return False
    rows, cols = out.shape
    chunk = max(1, _HOST_BLOCK_BYTES // max(1, cols * 2))
    scratch = np.empty((2, min(chunk, rows), cols), dtype=np.uint16)
    for r0 in range(0, rows, chunk):
        r1 = min(rows, r0 + chunk)
        target = out[r0:r1]
        acc, tmp = scratch[0, : r1 - r0], scratch[1, : r1 - r0]
        if fresh:
            acc.fill(0xFFFF)
        else:
            packed = _encode_u16(target)
            if packed is None:  # this chunk holds larger distances already
                _host_accumulate(target, a[r0:r1], b)
                continue
            acc[...] = packed
        for t in range(a16.shape[1]):
            np.add(a16[r0:r1, t, None], b16[t], out=tmp)
            np.minimum(acc, tmp, out=acc)
        np.copyto(target, acc, casting="unsafe")  # exact: every 16-bit value is a float32
        np.putmask(target, target >= U16_INF, np.inf)
    return True
