"""CUDA paths of :mod:`fastapsp.stages.predecessors` (``fw_pred.cu``, ``min_plus_pred.cu``, ``tight_bfs.cu``).

As in :mod:`fastapsp.stages._cuda`, the public stages validate their inputs and
nothing here re-checks shapes; an operand is copied only when its rows are not
unit-strided, when its distances, arcs and predecessors do not share one leading
dimension, or when its dtype differs from the kernel's.
"""

from __future__ import annotations

import numpy as np

from ..kernels import get_kernel
from ._cuda import MAX_GRID_Y, _csr, _real

__all__ = ["boundary_predecessors_cuda", "floyd_warshall_predecessors_cuda", "min_plus_predecessors_cuda"]

_TILE = 32  # PT_TILE of path_tile.cuh
_BLOCK = (32, 8, 1)
_CHECK_EVERY = 8  # BFS levels between reads of the "claimed" flag


def kernel_variants() -> list[tuple]:
    """The kernel modules this file can launch (:func:`fastapsp.stages._cuda.kernel_variants`' form)."""
    out = []
    for real in ("float32", "float64"):
        out += [("fw_pred.cu", "fwp_phase1", real), ("min_plus_pred.cu", "min_plus_pred", real)]
        out += [("tight_bfs.cu", "tight_bfs_init", real, index) for index in ("int32", "int64")]
    return out


def _leading(arrays, dtypes):
    """The arrays with unit-strided rows of the given dtypes and one leading dimension, and that dimension."""
    import cupy as cp

    rows, cols = arrays[0].shape

    def ld_of(x, dtype):
        item = np.dtype(dtype).itemsize
        if x.dtype != dtype or not (cols <= 1 or x.strides[1] == item) or x.strides[0] < 0 or x.strides[0] % item:
            return None
        return x.strides[0] // item if rows > 1 else max(cols, 1)

    lds = [ld_of(x, t) for x, t in zip(arrays, dtypes)]
    if None not in lds and len(set(lds)) == 1 and lds[0] >= cols:
        return list(arrays), lds[0]
    return [cp.ascontiguousarray(x, dtype=t) for x, t in zip(arrays, dtypes)], max(cols, 1)


def floyd_warshall_predecessors_cuda(matrix, hops, pred):
    """Close (matrix, hops, pred) in place: three launches per 32-wide diagonal tile."""
    c = matrix.shape[0]
    if c == 0:
        return matrix, hops, pred
    dtype = _real(matrix.dtype)
    (d, h, p), ld = _leading((matrix, hops, pred), (dtype, np.int32, np.int32))
    p1 = get_kernel("fw_pred.cu", "fwp_phase1", dtype)
    p2 = get_kernel("fw_pred.cu", "fwp_phase2", dtype)
    p3 = get_kernel("fw_pred.cu", "fwp_phase3", dtype)
    nt = -(-c // _TILE)
    for kb in range(nt):
        args = (d, h, p, np.int64(ld), np.int32(c), np.int32(kb))
        p1((1,), _BLOCK, args)
        if nt > 1:
            p2((nt - 1, 2), _BLOCK, args)
            p3((nt - 1, nt - 1), _BLOCK, args)
    for source, target in ((d, matrix), (h, hops), (p, pred)):
        if source is not target:
            target[...] = source
    return matrix, hops, pred


def min_plus_predecessors_cuda(a, a_hops, a_pred, b, b_hops, b_pred, out, out_pred, out_hops):
    """``out = a (x) b`` by (d, h) with the winners' predecessors (``min_plus_pred.cu``)."""
    m, k = a.shape
    n = b.shape[1]
    if m == 0 or n == 0:
        return out, out_pred
    dtype = _real(out.dtype)
    if k == 0:
        out.fill(np.inf)
        out_pred.fill(-9999)
        if out_hops is not None:
            out_hops.fill(0)
        return out, out_pred
    (ad, ah, ap), lda = _leading((a, a_hops, a_pred), (dtype, np.int32, np.int32))
    (bd, bh, bp), ldb = _leading((b, b_hops, b_pred), (dtype, np.int32, np.int32))
    outs = (out, out_pred) if out_hops is None else (out, out_pred, out_hops)
    targets, ldc = _leading(outs, (dtype, np.int32, np.int32)[: len(outs)])
    cd, cp_ = targets[0], targets[1]
    ch = targets[2] if out_hops is not None else None
    kernel = get_kernel("min_plus_pred.cu", "min_plus_pred", dtype)
    rows_per_launch = MAX_GRID_Y * _TILE
    for r0 in range(0, m, rows_per_launch):
        r1 = min(m, r0 + rows_per_launch)
        grid = (-(-n // _TILE), -(-(r1 - r0) // _TILE))
        hc = ch[r0:r1] if ch is not None else np.uint64(0)  # a null pointer: arcs not wanted
        kernel(grid, _BLOCK, (ad[r0:r1], ah[r0:r1], ap[r0:r1], np.int64(lda), bd, bh, bp, np.int64(ldb),
                              cd[r0:r1], hc, cp_[r0:r1], np.int64(ldc), np.int32(r1 - r0), np.int32(n),
                              np.int32(k)))
    for source, target in zip(targets, outs):
        if source is not target:
            target[...] = source
    return out, out_pred


def boundary_predecessors_cuda(indptr, indices, weights, sources, dist):
    """Breadth-first search over tight arcs from every row's source, one launch per level (``tight_bfs.cu``)."""
    import cupy as cp

    S, n = dist.shape
    hops = cp.full((S, n), -1, dtype=cp.int32)
    pred = cp.full((S, n), -9999, dtype=cp.int32)
    if S == 0 or n == 0:
        return hops, pred
    dtype = _real(dist.dtype)
    (d,), ld = _leading((dist,), (dtype,))
    indptr, indices, weights = _csr(indptr, indices, weights)
    itype = indptr.dtype
    sources = cp.ascontiguousarray(sources, dtype=itype)
    words = -(-n // 32)
    frontier = cp.zeros((2, S, words), dtype=cp.uint32)
    claimed = cp.zeros(1, dtype=cp.int32)
    init = get_kernel("tight_bfs.cu", "tight_bfs_init", dtype, index_dtype=itype)
    init((-(-S // 256),), (256,), (sources, np.int32(S), np.int32(n), hops, frontier[0], np.int32(words)))
    level_kernel = get_kernel("tight_bfs.cu", "tight_bfs_level", dtype, index_dtype=itype)
    grid = (-(-(S * words) // 256),)
    level = 0
    while True:
        claimed.fill(0)  # any level of the next few that claims a vertex sets it
        for _ in range(_CHECK_EVERY):
            cur, nxt = frontier[level % 2], frontier[(level + 1) % 2]
            nxt.fill(0)
            level_kernel(grid, (256,), (indptr, indices, weights, d, np.int64(ld), np.int32(n), np.int32(S),
                                        np.int32(words), np.int32(level), hops, pred, cur, nxt, claimed))
            level += 1
        if int(claimed.get()[0]) == 0:
            return hops, pred
