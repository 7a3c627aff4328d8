"""CUDA paths of the stages: the kernels of :mod:`fastapsp.kernels` on CuPy arrays.

The public stages validate their inputs and call these functions for CuPy
arrays; nothing here re-checks shapes.  Each function handles views through
leading dimensions and copies an operand only when its rows are not unit-strided
or its dtype differs from the result's.
"""

from __future__ import annotations

import functools
import sys
import warnings

import numpy as np

from ..graph import arc_positions, arc_rows, arc_runs, count_values
from ..kernels import get_kernel

__all__ = [
    "boundary_sssp_cuda",
    "build_component_matrix_cuda",
    "blocked_floyd_warshall_cuda",
    "blocked_floyd_warshall_batch_cuda",
    "min_plus_cuda",
    "assemble_interior_cuda",
    "copy_rows_cuda",
    "gather_by_columns_cuda",
    "row_major",
    "stored_by_columns",
    "MAX_GRID_Y",
]

_TILE = 64  # output tile edge of min_plus.cu and floyd_warshall.cu (MP_TILE)
_THREADS = 256
_COPY_ILP = 4  # values a thread of assemble.cu's copy_rows moves per step (COPY_ILP)
_U16_COLS = 128  # output tile width of min_plus_u16.cu (U16_COLS)
_U16_KC = 16  # the 16-bit kernels' encoded operands hold K rounded up to this (MP_KC, encoded_k)
_SMALLK_MAX_K = {np.dtype(np.float32): 32, np.dtype(np.float64): 16}  # of min_plus_smallk.cu (SK_MAXK)
_SMALLK_COLS = 8 * 64  # columns a block of min_plus_smallk.cu sweeps (SK_CT tiles of 64; smallk_u16: 4 of 128)
_SMALLK_U16_K = (9, 56)  # inner dimensions given to min_plus_smallk_u16.cu (SKU_MAXK = 56)
_U16_MIN_K = _SMALLK_U16_K[1] + 1  # shortest inner dimension given to the wide packed product, min_plus_u16.cu
_MAX_BATCH = 1024  # sources per SSSP pass: a warp lane holds one flag word of a vertex
_SSSP_BLOCKS_PER_SM = 8  # at most this many resident blocks per SM in the SSSP grid
_CHECK_EVERY = 8  # levels between host checks of the queue when levels are separate launches
MAX_GRID_Y = 65535  # CUDA's limit on a grid's y and z dimensions

# Run all SSSP levels in one cooperative launch; cleared (with a warning) the
# first time that cannot be built or launched, then one launch per level.
_PERSISTENT = True
# "push" expands a queue of the vertices changed last level, with atomics: work
# follows the frontier (measured faster on road graphs: benchmarks/kernels_bench.py).
# "pull" sweeps every (vertex, source word) pair over the in-arcs each level,
# without atomics: work ~ n * words * degree per level.  See sssp.cu.
_SSSP_DIRECTION = "push"
_SSSP_OPTIONS: tuple = ()  # extra -D options for sssp.cu (tests shrink its block queue)
_SMALLK_U16_WIDE = (f"-DSKU_MAXK={_SMALLK_U16_K[1]}",)  # min_plus_smallk_u16.cu for K from 33 to its largest
# min_plus.cu in float32 with tiles of 64 x 128 (two column groups a thread): 7-26% faster than 64 x 64
# at every shape measured on one H100 (M = 100 to 1,730, K = 36 to 150, N = 2^20; docs/kernels.md).
# Not with a row map, whose build of it spills registers.
_TWO_GROUPS = ("-DMP_CW=2",)
_ROW_MAP = ("-DMP_ROW_MAP",)  # the min-plus kernels that write rows scattered over a device result
# Up to this K, min_plus_smallk_u16.cu writing a device result's rows is built for 3 resident blocks per
# SM (85 registers, no spills) rather than 4: 1,450 rows x 114,599 columns on one H100, rows off 16 bytes,
# 0.39-0.44 against 0.47-0.49 ms at K = 10 to 24, aligned 0.29-0.30 against 0.33-0.35 at K = 10 and 16
# (K = 24 within 2%); at K = 32 it was slower (0.67 against 0.49 ms), from K = 40 the same
# (benchmarks/shifted_rows_bench.py; docs/kernels.md).
_ROW_MAP_FEW_BLOCKS_K = 24
_THREE_BLOCKS = ("-DSKU_MIN_BLOCKS=3",)
_COOPERATIVE = ("-DFASTAPSP_COOPERATIVE",)  # sssp.cu's persistent kernels (all levels in one launch)


def kernel_variants() -> list[tuple]:
    """The kernel modules this file can launch, as ``(file, kernel, dtype, index dtype, options, cooperative)``
    (:mod:`fastapsp.kernels.catalog` builds them ahead of the first solve)."""
    # min_plus.cu and grouped_min_plus.cu: in float32 with two column groups, except into a device
    # result's rows (below).
    out = [("min_plus.cu", "min_plus", "float32", "int32", _TWO_GROUPS), ("min_plus.cu", "min_plus", "float64"),
           ("grouped_min_plus.cu", "grouped_min_plus", "float32", "int32", _TWO_GROUPS),
           ("grouped_min_plus.cu", "grouped_min_plus", "float64")]
    for real in ("float32", "float64"):
        out += [("min_plus_smallk.cu", "min_plus_smallk", real), ("floyd_warshall.cu", "fw_phase1", real),
                ("assemble.cu", "assemble_interior", real), ("gather_transposed.cu", "gather_transposed", real)]
        for index in ("int32", "int64"):
            out += [("build.cu", "build_local_batch", real, index), ("sssp.cu", "sssp_init", real, index),
                    ("sssp.cu", "bfs_push_persistent", real, index, _COOPERATIVE, True)]
    # The 16-bit products take float32 operands only.
    packed = [("min_plus_u16.cu", "min_plus_u16", "float32"),
              ("grouped_min_plus_u16.cu", "grouped_min_plus_u16", "float32"),
              ("min_plus_smallk_u16.cu", "min_plus_smallk_u16", "float32"),
              ("min_plus_smallk_u16.cu", "min_plus_smallk_u16", "float32", "int32", _SMALLK_U16_WIDE)]
    out += packed
    # The float32 products into the rows of a result kept on the device (min_plus_cuda's out_rows).
    into_rows = [v for v in packed if not v[0].startswith("grouped")]
    into_rows += [("min_plus.cu", "min_plus", "float32"), ("min_plus_smallk.cu", "min_plus_smallk", "float32")]
    out += [(v[0], v[1], "float32", "int32", (v[4] if len(v) > 4 else ()) + _ROW_MAP) for v in into_rows]
    out += [("min_plus_smallk_u16.cu", "min_plus_smallk_u16", "float32", "int32", _ROW_MAP + _THREE_BLOCKS)]
    return out


def _real(dtype):
    dtype = np.dtype(dtype)
    return dtype if dtype in (np.float32, np.float64) else np.dtype(np.float64)


def _leading_dimension(x):
    """The distance in elements between the rows of 2-D ``x`` when they are unit-strided, in order and
    do not overlap (``max(cols, 1)`` for one row), else None: the layout the kernels read and write."""
    rows, cols = x.shape
    item = x.itemsize
    if (cols > 1 and x.strides[1] != item) or x.strides[0] < 0 or x.strides[0] % item:
        return None
    ld = x.strides[0] // item if rows > 1 else max(cols, 1)
    return ld if ld >= cols else None


def stored_by_columns(x):
    """The distance in elements between the columns of 2-D ``x`` when it is stored by columns (element
    ``(r, c)`` at ``r + c * ld``, ``ld >= rows``, more than one column), else None: the layout of the
    grouped min-plus's rows for :func:`gather_by_columns_cuda`."""
    rows, cols = x.shape
    item = x.itemsize
    if cols < 2 or x.strides[0] != item or x.strides[1] % item:  # one row-major row is not (ld 1 stores)
        return None
    ld = x.strides[1] // item
    return ld if ld >= rows else None


def row_major(x, dtype):
    """``(array, leading dimension)`` with unit-strided rows of ``dtype``, copying only when needed."""
    import cupy as cp

    ld = _leading_dimension(x) if x.dtype == dtype else None
    if ld is not None:
        return x, ld
    return cp.ascontiguousarray(x, dtype=dtype), max(x.shape[1], 1)


# ---------------------------------------------------------------- min-plus
def min_plus_cuda(a, b, out, accumulate, integer=False, options=(), *, packed="auto", smallk=True,
                  count_fallbacks=False, out_rows=None):
    """``out = [min(out,)] a (x) b`` with the tiled kernel of ``min_plus.cu``.

    ``integer``: the operands hold whole numbers (integer weights), so float32
    products run in packed 16-bit arithmetic (``min_plus_u16.cu`` from K = 57,
    ``min_plus_smallk_u16.cu`` for K = 9..56), block by block falling back to
    float32 where an operand does not fit in it.  The keywords pick other
    kernels, for comparing them (benchmarks, tests); every choice gives the
    same result.  ``packed``: ``"auto"`` as above, ``"never"`` keeps float32,
    ``"always"`` takes ``min_plus_u16.cu`` at every K.  ``smallk=False`` keeps
    ``min_plus.cu`` where a small-K kernel would run.  ``count_fallbacks``
    prints how many tiles of a 16-bit kernel fell back to float32 (one sync a
    call).  ``options``: extra compiler options of the kernel
    (``-DMP_CW=1``, ``-DU16_SPLIT``).  ``out_rows`` (int64 on the device): row i of
    the product goes to row ``out_rows[i]`` of ``out`` (a component's rows of a result kept on
    the device), each written where it lies, with no block in between.
    """
    if packed not in ("auto", "never", "always"):
        raise ValueError(f"packed: {packed!r} is not 'auto', 'never' or 'always'")
    m, k = a.shape
    n = b.shape[1]
    if m == 0 or n == 0:
        return out
    if k == 0:
        if not accumulate:
            if out_rows is None:
                out.fill(np.inf)
            else:
                out[out_rows] = np.inf
        return out
    dtype = _real(out.dtype)
    a_, lda = row_major(a, dtype)
    b_, ldb = row_major(b, dtype)
    c_, ldc = row_major(out, dtype)
    crow = np.uint64(0)  # a null row map: the rows of out in order
    options = tuple(options)
    if out_rows is not None:
        import cupy as cp

        if c_ is not out:
            raise ValueError("min_plus: out_rows needs an out whose rows are contiguous in memory")
        crow = cp.ascontiguousarray(out_rows, dtype=cp.int64) * ldc  # element offsets of the rows
    # The wide packed product from where the small-K one ends: from K = 49 it is faster than float32
    # (the measurements behind every threshold here are in docs/kernels.md).
    can_pack = bool(integer) and dtype == np.float32 and packed != "never"
    wide_u16 = can_pack and (k >= _U16_MIN_K or packed == "always")
    # Short K (road networks' components): a block keeps A's slice in shared memory over several
    # column tiles: min_plus_smallk.cu for K <= 32 in float32 (16 in float64), and for whole
    # numbers its packed 16-bit form min_plus_smallk_u16.cu from K = 9 to 56 (slower at K = 8; at K = 49-56
    # 8-9% faster than the wide one, which sweeps K rounded up to 16).
    smallk_u16 = not wide_u16 and can_pack and smallk and _SMALLK_U16_K[0] <= k <= _SMALLK_U16_K[1]
    smallk_f = not wide_u16 and not smallk_u16 and smallk and k <= _SMALLK_MAX_K[dtype]
    tiled = not (wide_u16 or smallk_f or smallk_u16)  # min_plus.cu
    if tiled and dtype == np.float32 and out_rows is None and not any(o.startswith("-DMP_CW") for o in options):
        options += _TWO_GROUPS
    if smallk_u16 and k > 32:  # shared memory and registers for K up to 56 (that build is slower at K <= 32)
        options += _SMALLK_U16_WIDE
    if out_rows is not None:  # the kernels built to follow the row map (the others ignore it)
        options += _ROW_MAP
        if smallk_u16 and k <= _ROW_MAP_FEW_BLOCKS_K and not any(o.startswith("-DSKU_MIN_BLOCKS") for o in options):
            options += _THREE_BLOCKS
    if smallk_u16:
        kernel = get_kernel("min_plus_smallk_u16.cu", "min_plus_smallk_u16", dtype, options=options)
        width = _SMALLK_COLS
    elif wide_u16:
        kernel, width = get_kernel("min_plus_u16.cu", "min_plus_u16", dtype, options=options), _U16_COLS
    elif smallk_f:
        kernel, width = get_kernel("min_plus_smallk.cu", "min_plus_smallk", dtype, options=options), _SMALLK_COLS
    else:
        kernel = get_kernel("min_plus.cu", "min_plus", dtype, options=options)
        width = _TILE * (2 if _TWO_GROUPS[0] in options else 1)
    cols_per_launch = MAX_GRID_Y * width
    sixteen = wide_u16 or smallk_u16  # the 16-bit kernels take a fallback counter
    counter = None  # count_fallbacks: the tiles that fell back to float32
    if sixteen and count_fallbacks:
        import cupy as cp

        counter = cp.zeros(1, dtype=cp.uint32)
    extra = (counter if counter is not None else np.uint64(0),) if sixteen else ()
    # The 16-bit kernels read their operands encoded once (and their tiles' flags), and the launch's
    # first column tile of 128.
    encoded = _encode_u16(a_, lda, b_, ldb) if sixteen else None
    for c0 in range(0, n, cols_per_launch):
        c1 = min(n, c0 + cols_per_launch)
        grid = (-(-m // _TILE), -(-(c1 - c0) // width))
        first = () if encoded is None else encoded + (np.int64(c0 // _U16_COLS),)
        kernel(grid, (_THREADS,), first + (a_, np.int64(lda), b_[:, c0:c1], np.int64(ldb), c_[:, c0:c1],
                                           np.int64(ldc), np.int32(m), np.int32(c1 - c0), np.int32(k),
                                           np.int32(bool(accumulate))) + extra + (crow,))
    if counter is not None:
        tiles = -(-m // _TILE) * -(-n // width)  # blocks of 64 rows and `width` columns
        fell = int(counter.get()[0])
        detail = ""
        if fell:  # what did not fit: the largest finite operand, fractions, negatives
            for name, x in (("A", a_), ("B", b_)):
                fin = x[cp.isfinite(x)]
                detail += (f" {name}: max {float(fin.max()) if fin.size else 0:g}"
                           f" fractional {int(cp.count_nonzero(fin != cp.trunc(fin)))}"
                           f" negative {int(cp.count_nonzero(fin < 0))} nan {int(cp.count_nonzero(cp.isnan(x)))}")
        print(f"min_plus_u16: {fell} of {tiles} tiles fell back to float32 (M={m} K={k} N={n}){detail}",
              file=sys.stderr)
    if c_ is not out:
        out[...] = c_
    return out


def _encode_u16(a, lda, b, ldb):
    """The operands of the 16-bit products encoded once, and the tiles that cannot be: ``(Ae, Be, ldbe,
    flags of A's tiles of 64 rows, flags of B's tiles of 128 columns)`` (``min_plus_u16.cu`` has the
    layouts; ``min_plus_smallk_u16.cu`` reads the same)."""
    import cupy as cp

    m, k = a.shape
    n = b.shape[1]
    k16 = -(-k // _U16_KC) * _U16_KC
    row_tiles, col_tiles = -(-m // _TILE), -(-n // _U16_COLS)
    ldbe = col_tiles * (_U16_COLS // 2)
    ae = cp.empty(row_tiles * k16 * _TILE, dtype=cp.uint32)
    be = cp.empty(k16 * ldbe, dtype=cp.uint32)
    bad = cp.zeros(row_tiles + col_tiles, dtype=cp.uint32)
    blocks = 8 * _multiprocessors(cp.cuda.Device().id)  # a grid-stride launch that fills the device
    encode_a = get_kernel("min_plus_u16.cu", "encode_u16_a", np.float32)
    encode_b = get_kernel("min_plus_u16.cu", "encode_u16_b", np.float32)
    encode_a((min(blocks, -(-ae.size // _THREADS)),), (_THREADS,), (a, np.int64(lda), np.int32(m), np.int32(k), ae,
                                                                     bad))
    encode_b((min(blocks, -(-be.size // _THREADS)),), (_THREADS,), (b, np.int64(ldb), np.int32(k), np.int64(n), be,
                                                                     np.int64(ldbe), bad[row_tiles:]))
    return ae, be, np.int64(ldbe), bad[:row_tiles], bad[row_tiles:]


@functools.lru_cache(maxsize=None)
def _multiprocessors(device: int) -> int:
    """The multiprocessor count of CUDA device ``device``, asked once a process."""
    import cupy as cp

    return cp.cuda.runtime.deviceGetAttribute(cp.cuda.runtime.cudaDevAttrMultiProcessorCount, device)


# ------------------------------------------------------- column gather
_GATHER_EDGE, _GATHER_STEP = 32, 8  # gather_transposed.cu's block: 32 columns, 32 x 8 threads


def gather_by_columns_cuda(x, cols, out=None):
    """``x[:, cols]`` as row-major rows, ``x`` stored by columns (:func:`stored_by_columns`), ``cols``
    int64 on the device (``gather_transposed.cu``); into ``out`` where given (row-major, its shape)."""
    import cupy as cp

    rows, ncols = x.shape[0], cols.size
    dtype = _real(x.dtype)
    if out is None:
        out = cp.empty((rows, ncols), dtype=dtype)
    if rows == 0 or ncols == 0:
        return out
    ldx = stored_by_columns(x)
    ldo = _leading_dimension(out) if out.dtype == dtype else None
    if ldx is None or x.dtype != dtype or ldo is None:
        raise ValueError(f"gather_by_columns_cuda: x of shape {x.shape} and strides {x.strides} stored by columns "
                         f"and out of strides {out.strides} row-major, both {dtype}, are needed")
    kernel = get_kernel("gather_transposed.cu", "gather_transposed", dtype)
    kernel((-(-ncols // _GATHER_EDGE),), (_GATHER_EDGE, _GATHER_STEP),
           (x, np.int64(ldx), cols, out, np.int64(ldo), np.int64(ncols), np.int32(rows)))
    return out


# ---------------------------------------------------------- Floyd-Warshall
def blocked_floyd_warshall_cuda(matrix):
    """Close ``matrix`` in place: three launches per 64-wide diagonal tile (``floyd_warshall.cu``)."""
    c = matrix.shape[0]
    if c == 0:
        return matrix
    dtype = _real(matrix.dtype)
    work, ld = row_major(matrix, dtype)
    p1 = get_kernel("floyd_warshall.cu", "fw_phase1", dtype)
    p2 = get_kernel("floyd_warshall.cu", "fw_phase2", dtype)
    p3 = get_kernel("floyd_warshall.cu", "fw_phase3", dtype)
    nt = -(-c // _TILE)
    ld, n = np.int64(ld), np.int32(c)
    for kb in range(nt):
        args = (work, ld, n, np.int32(kb))
        p1((1,), (_THREADS,), args)
        if nt > 1:
            p2((nt - 1, 2), (_THREADS,), args)
            p3((nt - 1, nt - 1), (_THREADS,), args)
    if work is not matrix:
        matrix[...] = work
    return matrix


def blocked_floyd_warshall_batch_cuda(matrices):
    """Close every square matrix of ``matrices`` in place, all in the same launches (``fw_phase*_batch``).

    The matrices share one dtype; they may differ in size (the grid fits the
    largest, so a batch of similar sizes wastes least) and stay where they are.
    """
    import cupy as cp

    matrices = [m for m in matrices if m.shape[0] > 0]
    if not matrices:
        return
    dtype = _real(matrices[0].dtype)
    works = [row_major(m, dtype) for m in matrices]
    p1 = get_kernel("floyd_warshall.cu", "fw_phase1_batch", dtype)
    p2 = get_kernel("floyd_warshall.cu", "fw_phase2_batch", dtype)
    p3 = get_kernel("floyd_warshall.cu", "fw_phase3_batch", dtype)
    for z0 in range(0, len(works), MAX_GRID_Y):
        part = works[z0 : z0 + MAX_GRID_Y]
        pointers = cp.asarray(np.array([w.data.ptr for w, _ in part], dtype=np.uint64))
        lds = cp.asarray(np.array([ld for _, ld in part], dtype=np.int64))
        sizes = np.array([w.shape[0] for w, _ in part], dtype=np.int32)
        nt = -(-int(sizes.max()) // _TILE)
        sizes = cp.asarray(sizes)
        z = len(part)
        for kb in range(nt):
            args = (pointers, lds, sizes, np.int32(kb))
            p1((1, 1, z), (_THREADS,), args)
            if nt > 1:
                p2((nt - 1, 2, z), (_THREADS,), args)
                p3((nt - 1, nt - 1, z), (_THREADS,), args)
    for matrix, (work, _) in zip(matrices, works):
        if work is not matrix:
            matrix[...] = work


# ------------------------------------------------------------------- build
def build_component_matrix_cuda(indptr, indices, weights, vertices, n_boundary, boundary_rows, dtype):
    """The component matrix, one block per row (``build.cu``)."""
    import cupy as cp

    n = indptr.shape[0] - 1
    c = int(vertices.size)
    kdtype = _real(dtype)
    matrix = cp.empty((c, c), dtype=kdtype)
    if c:
        indptr, indices, weights = _csr(indptr, indices, weights)
        itype = indptr.dtype
        vertices = cp.ascontiguousarray(vertices, dtype=itype)
        local = cp.full(n, -1, dtype=cp.int32)
        local[vertices] = cp.arange(c, dtype=cp.int32)
        gather = n_boundary > 0 and boundary_rows.dtype == kdtype
        if gather:
            rows, ld = row_major(boundary_rows, kdtype)
        else:
            # Other dtype: gather and convert only the c columns needed.
            matrix[:n_boundary] = boundary_rows[:, vertices]
            rows, ld = matrix, c
        kernel = get_kernel("build.cu", "build_component_matrix", kdtype, index_dtype=itype)
        kernel((c,), (_THREADS,), (indptr, indices, weights, vertices, local, rows, np.int64(ld),
                                   np.int32(n_boundary), np.int32(gather), np.int32(c), matrix))
    return matrix if kdtype == np.dtype(dtype) else matrix.astype(dtype)


# Shared memory of closure_bfs_batch: three 4-byte words (frontier, visited, next) a vertex of the largest
# component of a launch.
BFS_BYTES_PER_VERTEX = 12
_DEFAULT_SHARED = 48 * 1024  # what a block gets without opting in


@functools.lru_cache(maxsize=None)
def _shared_per_block(device: int) -> int:
    """Dynamic shared memory a block of ``device`` may opt in to (48 KB where the device says nothing)."""
    import cupy as cp

    return max(_DEFAULT_SHARED, int(cp.cuda.runtime.getDeviceProperties(device).get("sharedMemPerBlockOptin", 0)))


def bfs_closure_max() -> int:
    """Largest component the current device closes by breadth-first searches (``closure_bfs_batch``): as
    many vertices as a block's shared memory holds with opt-in (4,096 within the 48 KB every device gives
    a block; docs/kernels.md gives the figure of Hopper GPUs)."""
    import cupy as cp

    return _shared_per_block(cp.cuda.Device().id) // BFS_BYTES_PER_VERTEX


def build_local_batch_cuda(indptr, indices, weights, partition, components, dtype, *, searches=False,
                          host_csr=None, local_on_device=False):
    """``{p: matrix}``: every component of ``components`` over its own arcs (+inf elsewhere, zero
    diagonal), all built by one launch of ``build_local_batch`` into one buffer (the matrices are views
    of it, in the component's vertex order, boundary first).  ``searches`` (every arc weighs 1, every
    component at most :func:`bfs_closure_max` vertices): the matrices are the closures instead, made by
    breadth-first searches from every vertex (``closure_bfs_batch``, 32 a block, each filling its rows),
    over the arcs of ``host_csr`` (the graph's ``(indptr, indices)`` in host memory), their CSR of local ids
    made on the device with ``local_on_device``, else on the host (:func:`_local_csr`)."""
    import cupy as cp

    kdtype = _real(dtype)
    comps = [int(p) for p in components if partition.sizes[p] > 0]
    if not comps:
        return {}
    indptr, indices, weights = _csr(indptr, indices, weights)
    itype = indptr.dtype
    n = indptr.shape[0] - 1
    starts, order = partition.starts, partition.order
    sizes = np.array([partition.sizes[p] for p in comps], dtype=np.int64)
    offsets = np.zeros(len(comps) + 1, dtype=np.int64)
    np.cumsum(sizes * sizes, out=offsets[1:])
    # Per row of the batch: its vertex and its place in its component (its diagonal); for the build, where
    # its row starts and its length.
    first = np.repeat(np.array([starts[p] for p in comps], dtype=np.int64), sizes)
    rank = np.arange(int(sizes.sum()), dtype=np.int64) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    local_of = np.empty(n, dtype=np.int32)
    local_of[order] = (np.arange(n, dtype=np.int64) - starts[partition.labels[order]]).astype(np.int32)
    buffer = cp.empty(int(offsets[-1]), dtype=kdtype)
    row_vertex = order[first + rank]
    if searches:
        most = bfs_closure_max()
        if int(sizes.max()) > most or host_csr is None:
            raise ValueError(f"searches: a component of {int(sizes.max())} vertices (at most {most}) "
                             f"and the host CSR ({'given' if host_csr is not None else 'missing'}) needed")
        lptr, lidx = _local_csr(host_csr, (indptr, indices), partition.labels, local_of, row_vertex,
                                on_device=local_on_device)
        per = -(-sizes // 32)  # blocks of each component: 32 sources each
        block_comp = np.repeat(np.arange(len(comps), dtype=np.int32), per)
        block_source = (32 * (np.arange(int(per.sum())) - np.repeat(np.cumsum(per) - per, per))).astype(np.int32)
        pointers = (buffer.data.ptr + offsets[:-1] * buffer.itemsize).astype(np.uint64)
        search = get_kernel("build.cu", "closure_bfs_batch", kdtype, index_dtype=itype)
        shared = BFS_BYTES_PER_VERTEX * int(sizes.max())
        if shared > _DEFAULT_SHARED and search.max_dynamic_shared_size_bytes < shared:
            search.max_dynamic_shared_size_bytes = shared  # opt in (checked against the device above)
        search((block_comp.size,), (_THREADS,),
               (lptr, lidx, cp.asarray(np.cumsum(sizes) - sizes), cp.asarray(sizes, dtype=cp.int32),
                cp.asarray(pointers), cp.asarray(block_comp), cp.asarray(block_source)),
               shared_mem=shared)
    else:
        row_c = np.repeat(sizes, sizes)
        row_start = np.repeat(offsets[:-1], sizes) + rank * row_c
        kernel = get_kernel("build.cu", "build_local_batch", kdtype, index_dtype=itype)
        kernel((int(sizes.sum()),), (_THREADS,),
               (indptr, indices, weights, cp.asarray(partition.labels, dtype=cp.int32), cp.asarray(local_of),
                cp.asarray(row_vertex, dtype=itype), cp.asarray(row_start), cp.asarray(row_c, dtype=cp.int32),
                cp.asarray(rank, dtype=cp.int32), buffer))
    closed = {}
    for j, p in enumerate(comps):
        c = int(sizes[j])
        matrix = buffer[offsets[j] : offsets[j + 1]].reshape(c, c)
        closed[p] = matrix if kdtype == np.dtype(dtype) else matrix.astype(dtype)
    return closed


def _local_csr(host_csr, device_csr, labels, local_of, vertices, *, on_device: bool):
    """``(lptr, lidx)`` on the device: the arcs that stay inside a component, per row of a batch (row r
    is vertex ``vertices[r]``), as offsets over all the rows (int64) and local heads (int32), made with
    CuPy on the device (``on_device``) or on the host and uploaded (see
    :func:`fastapsp.stages.boundary_graph.close_components` for which)."""
    import cupy as cp

    # Every arc of the batch's rows and its row (on the host by repeat, two to three times faster there).
    if on_device:
        xp, (indptr, indices) = cp, device_csr
        at, row, _ = arc_runs(cp, indptr, vertices)
    else:
        xp, (indptr, indices) = np, host_csr
        at, counts = arc_positions(indptr, vertices)
        row = np.repeat(np.arange(len(vertices)), counts)
    heads = indices[at]
    labels = xp.asarray(labels, dtype=xp.int32)
    inside = labels[heads] == labels[xp.asarray(vertices)][row]
    lptr = xp.zeros(len(vertices) + 1, dtype=xp.int64)
    xp.cumsum(count_values(xp, row[inside], len(vertices)), out=lptr[1:])
    return cp.asarray(lptr), cp.asarray(xp.asarray(local_of, dtype=xp.int32)[heads[inside]])


def assemble_interior_cuda(out, matrix, vertices, n_boundary, column_start, width, minimum=False, rows=None) -> bool:
    """The interior rows' own columns of a component by ``assemble.cu`` (replaced, or with ``minimum`` the
    smaller of the two kept): into a row block ``out``, or, with ``rows``, into the rows ``rows[a]`` of a
    whole result ``out`` (through their offsets).  False, with nothing done, where the kernel does not apply
    (rows not unit-strided, a matrix not contiguous or of another dtype, more interior rows than a grid holds):
    :func:`fastapsp.stages.assemble.assemble_row_block` then does it with array operations."""
    import cupy as cp

    c = matrix.shape[0]
    interior = c - n_boundary
    if interior == 0:
        return True
    unit_rows = out.shape[1] <= 1 or out.strides[1] == out.itemsize
    if not (unit_rows and matrix.flags.c_contiguous and matrix.dtype == out.dtype and interior <= MAX_GRID_Y):
        return False
    ld = out.strides[0] // out.itemsize if out.shape[0] > 1 else width
    vertices = cp.ascontiguousarray(vertices, dtype=cp.int64)
    rowoff = np.uint64(0) if rows is None else cp.ascontiguousarray(rows, dtype=cp.int64) * ld
    kernel = get_kernel("assemble.cu", "assemble_interior", out.dtype)
    kernel(((c + _THREADS - 1) // _THREADS, interior), (_THREADS,),
           (matrix, np.int32(c), np.int32(n_boundary), vertices, np.int64(column_start), np.int64(width), out,
            np.int64(ld), np.int32(bool(minimum)), rowoff))
    return True


def copy_rows_cuda(dst, src) -> bool:
    """``dst[...] = src`` for 2-D float32 or float64 arrays of one dtype with unit-strided rows, by
    ``copy_rows`` of ``assemble.cu`` (built with the other kernels).

    CuPy's elementwise copy of a strided view is a kernel compiled per dtype
    pair and per index width: a view spanning more than 2**31 elements of
    device memory (the boundary rows of a million-vertex graph) takes a 64-bit
    variant that small graphs never make, compiled inside a run.  False, with
    nothing done, where this does not apply (other dtypes or shapes, rows not
    unit-strided, negative strides).
    """
    if dst.shape != src.shape or dst.ndim != 2 or dst.dtype != src.dtype or dst.dtype not in (np.float32, np.float64):
        return False
    rows, cols = dst.shape
    if rows == 0 or cols == 0:
        return True
    lds, ldd = _leading_dimension(src), _leading_dimension(dst)
    if lds is None or ldd is None:
        return False
    grid = (min(-(-cols // (_THREADS * _COPY_ILP)), 1024), min(rows, MAX_GRID_Y))
    get_kernel("assemble.cu", "copy_rows", dst.dtype)(grid, (_THREADS,), (src, np.int64(lds), dst, np.int64(ldd),
                                                                          np.int64(rows), np.int64(cols)))
    return True


# ------------------------------------------------------------ boundary SSSP
def boundary_sssp_cuda(indptr, indices, weights, sources, out, unit_weights, batch=None):
    """Distances from ``sources`` to all vertices, in batches of up to ``batch`` (1024) sources (``sssp.cu``)."""
    import cupy as cp

    n = indptr.shape[0] - 1
    indptr, indices, weights = _csr(indptr, indices, weights)
    itype = indptr.dtype
    sources = cp.ascontiguousarray(sources, dtype=itype)
    dtype = _real(out.dtype)
    total = int(sources.size)
    batch = _batch_size(n, total, dtype.itemsize, _MAX_BATCH if batch is None else int(batch))
    direction = _SSSP_DIRECTION  # push | pull: the same distances (tests and benchmarks set the module's value)
    if direction not in ("push", "pull"):
        raise ValueError(f"_SSSP_DIRECTION: {direction!r} is not push or pull")
    csr = _transpose(indptr, indices, weights) if direction == "pull" else (indptr, indices, weights)
    for s0 in range(0, total, batch):
        s1 = min(total, s0 + batch)
        _sssp_batch(*csr, sources[s0:s1], out[s0:s1], bool(unit_weights), dtype, direction)
    return out


def _transpose(indptr, indices, weights):
    """The in-arcs of every vertex as a CSR (tails and weights grouped by head)."""
    import cupy as cp

    n, m = indptr.size - 1, indices.size
    itype = indptr.dtype
    order = cp.argsort(indices)  # any order within a vertex's in-arcs will do
    tails = arc_rows(cp, indptr, m, dtype=itype)
    tptr = cp.zeros(n + 1, dtype=itype)
    cp.cumsum(count_values(cp, indices, n), out=tptr[1:])
    return tptr, cp.ascontiguousarray(tails[order]), cp.ascontiguousarray(weights[order])


def _csr(indptr, indices, weights):
    """The CSR arrays contiguous, indices in one integer type (int32 when both are), weights float64."""
    import cupy as cp

    itype = np.dtype(np.int32) if indptr.dtype == indices.dtype == np.int32 else np.dtype(np.int64)
    return (cp.ascontiguousarray(indptr, dtype=itype), cp.ascontiguousarray(indices, dtype=itype),
            cp.ascontiguousarray(weights, dtype=cp.float64))


def sssp_pass_size(cap: int = _MAX_BATCH) -> int:
    """Sources per SSSP pass asked for: ``cap``, at most 1024 (``boundary_sssp(batch=)`` sets ``cap``)."""
    return min(int(cap), _MAX_BATCH)


def _batch_size(n, total, itemsize, cap=_MAX_BATCH):
    """Sources per pass: at most ``sssp_pass_size(cap)``, fewer when the per-batch buffers would crowd the device."""
    import cupy as cp

    batch = min(sssp_pass_size(cap), total)
    try:
        free = cp.cuda.runtime.memGetInfo()[0] + cp.get_default_memory_pool().free_bytes()
    except Exception:
        return batch
    per_source = n * (itemsize + 1)  # dist column + 3 bits of flags, rounded up
    fit = max(32, (free // 2) // max(per_source, 1) // 32 * 32)
    return max(1, min(batch, fit))


def _sssp_batch(indptr, indices, weights, sources, out_rows, unit, dtype, direction):
    import cupy as cp

    n = indptr.shape[0] - 1
    count = int(sources.size)
    words = -(-count // 32)
    stride = 32 * words
    itype = indptr.dtype
    dist = cp.full((n, stride), np.inf, dtype=dtype)
    # unit: visited + two frontier buffers; weighted: two "changed" buffers.
    flags = cp.zeros((3 if unit else 2, n, words), dtype=cp.uint32)
    visited, frontier = (flags[0], flags[1:]) if unit else (flags[0], flags)
    stamp = cp.full(n, -1, dtype=cp.int32)
    queues = cp.empty((2, n), dtype=cp.int32)
    counts = cp.zeros(3, dtype=cp.int32)

    init = get_kernel("sssp.cu", "sssp_init", dtype, index_dtype=itype, options=_SSSP_OPTIONS)
    init((-(-count // _THREADS),), (_THREADS,), (sources, np.int32(count), np.int32(words), np.int64(stride), dist,
                                                 visited, np.int32(unit), frontier, stamp, queues, counts))
    args = (indptr, indices, weights, np.int32(n), np.int32(words), np.int64(stride), dist, visited, frontier,
            stamp, queues, counts)
    name = ("bfs_" if unit else "bellman_ford_") + direction
    if not _run_persistent(name, dtype, itype, args, n):
        _run_levels(name, dtype, itype, args, counts)

    target, ldo = row_major(out_rows, dtype)
    transpose = get_kernel("sssp.cu", "transpose_batch", dtype, index_dtype=itype, options=_SSSP_OPTIONS)
    transpose((-(-n // 32), words), (32, 8), (dist, np.int64(stride), np.int32(n), np.int32(count), target,
                                              np.int64(ldo)))
    if target is not out_rows:
        out_rows[...] = target


def _grid_blocks(kernel):
    import cupy as cp

    sms = _multiprocessors(cp.cuda.Device().id)
    try:
        per_sm = int(cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(kernel.ptr, _THREADS, 0))
    except Exception:
        per_sm = 1
    return sms * max(1, min(per_sm, _SSSP_BLOCKS_PER_SM))


def _run_persistent(name, dtype, itype, args, n):
    """All levels in one cooperative launch; False when that path is unavailable."""
    global _PERSISTENT
    if not _PERSISTENT:
        return False
    try:
        kernel = get_kernel("sssp.cu", name + "_persistent", dtype, index_dtype=itype,
                            options=_COOPERATIVE + _SSSP_OPTIONS, cooperative=True)
        # A module built for cooperative groups launches its kernels cooperatively.
        kernel((_grid_blocks(kernel),), (_THREADS,), args + (np.int32(n + 1),))
    except Exception as exc:  # compiler, linker or launch refused: levels as separate launches
        _PERSISTENT = False
        warnings.warn(f"fastapsp: cooperative SSSP kernel unavailable ({type(exc).__name__}: {exc}); "
                      "running one launch per level", RuntimeWarning, stacklevel=3)
        return False
    return True


def _run_levels(name, dtype, itype, args, counts):
    """One launch per level; the queue is read back every few levels (empty levels cost one launch)."""
    kernel = get_kernel("sssp.cu", name + "_level", dtype, index_dtype=itype, options=_SSSP_OPTIONS)
    grid = (_grid_blocks(kernel),)
    level = 0
    while True:
        for _ in range(_CHECK_EVERY):
            kernel(grid, (_THREADS,), args + (np.int32(level),))
            level += 1
        if int(counts[level % 3].get()) == 0:
            return


# ------------------------------------------------- boundary-graph method
def grouped_min_plus_cuda(a, level, out, integer=False):
    """``out = a (x) blockdiag(L_q[:nb_q])`` by column groups (``grouped_min_plus.cu``).

    ``out`` row-major, or stored by columns (:func:`stored_by_columns`) for
    :func:`gather_by_columns_cuda` to put its columns in another order.
    ``integer``: the operands hold whole numbers, so float32 products run in packed 16-bit
    arithmetic (``grouped_min_plus_u16.cu``), tile by tile falling back to float32 where an
    operand does not fit in it (the same result)."""
    import cupy as cp

    rows = a.shape[0]
    if rows == 0 or out.shape[1] == 0:
        return out
    dtype = _real(out.dtype)
    # float32: tiles of 64 x 128, as min_plus.cu's (two column groups a thread)
    options, width = (_TWO_GROUPS, 2 * _TILE) if dtype == np.float32 else ((), _TILE)
    meta = level._device.get(("grouped", width))
    if meta is None:
        sizes = np.diff(level.starts)
        tiles_per_group = -(-sizes // width)
        tile_group = np.repeat(np.arange(sizes.size, dtype=np.int32), tiles_per_group)
        first_tile = np.repeat(np.cumsum(tiles_per_group) - tiles_per_group, tiles_per_group)
        tile_col = level.starts[:-1][tile_group] + width * (np.arange(tile_group.size) - first_tile)
        meta = (cp.asarray(level.lb_offset, dtype=cp.int64), cp.asarray(level.starts, dtype=cp.int64),
                cp.asarray(level.bstart, dtype=cp.int64), cp.asarray(tile_group), cp.asarray(tile_col, dtype=cp.int64))
        level._device[("grouped", width)] = meta
    lb_offset, starts, bstart, tile_group, tile_col = meta
    a_, lda = row_major(a, dtype)
    ldc = stored_by_columns(out) if out.dtype == dtype else None
    by_columns = ldc is not None
    if not by_columns:
        c_, ldc = row_major(out, dtype)
    else:
        c_ = out
    lb = level.lb if level.lb.dtype == dtype else level.lb.astype(dtype)
    packed = _grouped_u16_operands(level, lb, width) if integer and dtype == np.float32 else None
    if packed is not None:
        kgroup, koff, sumk16, be, be_off, bad_b = packed
        row_tiles = -(-rows // _TILE)
        ae = cp.empty(row_tiles * sumk16 * _TILE, dtype=cp.uint32)
        bad_a = cp.zeros(row_tiles, dtype=cp.uint32)
        encode = get_kernel("grouped_min_plus_u16.cu", "encode_u16_a_grouped", dtype)
        kernel = get_kernel("grouped_min_plus_u16.cu", "grouped_min_plus_u16", dtype)
        for t0 in range(0, row_tiles, MAX_GRID_Y):
            t1 = min(row_tiles, t0 + MAX_GRID_Y)
            encode((-(-sumk16 // 32), t1 - t0), (_THREADS,), (a_, np.int64(lda), np.int32(rows), kgroup, koff, bstart,
                                                             np.int64(sumk16), np.int32(t0), ae, bad_a))
        for t0 in range(0, row_tiles, MAX_GRID_Y):
            t1 = min(row_tiles, t0 + MAX_GRID_Y)
            kernel((int(tile_group.size), t1 - t0), (_THREADS,),
                   (ae, np.int64(sumk16), koff, be, be_off, bad_a, bad_b, a_, np.int64(lda), lb, lb_offset, starts,
                    bstart, tile_group, tile_col, c_, np.int64(ldc), np.int32(rows), np.int32(t0),
                    np.int32(by_columns)))
    else:
        kernel = get_kernel("grouped_min_plus.cu", "grouped_min_plus", dtype, options=options)
        rows_per_launch = MAX_GRID_Y * _TILE
        for r0 in range(0, rows, rows_per_launch):
            r1 = min(rows, r0 + rows_per_launch)
            grid = (int(tile_group.size), -(-(r1 - r0) // _TILE))
            kernel(grid, (_THREADS,), (a_[r0:r1], np.int64(lda), lb, lb_offset, starts, bstart, tile_group, tile_col,
                                       c_[r0:r1], np.int64(ldc), np.int32(r1 - r0), np.int32(by_columns)))
    if c_ is not out:
        out[...] = c_
    return out


def _grouped_u16_words(nb, sizes):
    """``(K16, column tiles, words)`` of each group's encoded block (``grouped_min_plus_u16.cu``'s Be):
    its ``nb`` boundary rows rounded up to whole chunks, its ``sizes`` columns to whole 128-column tiles."""
    nb, sizes = np.asarray(nb, dtype=np.int64), np.asarray(sizes, dtype=np.int64)
    k16 = -(-nb // _U16_KC) * _U16_KC
    tiles = -(-sizes // _U16_COLS)
    return k16, tiles, k16 * tiles * (_U16_COLS // 2)


def grouped_u16_bytes(nb, sizes) -> int:
    """Bytes of a level's blocks encoded for the packed grouped product (held for the run beside the
    blocks): groups of ``nb`` boundary vertices and ``sizes`` vertices."""
    return 4 * int(_grouped_u16_words(nb, sizes)[2].sum())


def _grouped_u16_operands(level, lb, width: int):
    """The level's blocks encoded once for ``grouped_min_plus_u16.cu`` (its layouts), and what locates
    them: ``(kgroup, koff, sumk16, Be, be_off, flags of the column tiles)``; None where no group has
    a boundary vertex (the float32 product then gives the +inf rows)."""
    import cupy as cp

    key = ("grouped_u16", width)
    if key in level._device:
        return level._device[key]
    nb = np.diff(np.asarray(level.bstart, dtype=np.int64))
    sizes = np.diff(np.asarray(level.starts, dtype=np.int64))
    k16, tiles, words = _grouped_u16_words(nb, sizes)
    sumk16 = int(k16.sum())
    if sumk16 == 0:
        level._device[key] = None
        return None
    kgroup = cp.asarray(np.repeat(np.arange(nb.size, dtype=np.int32), k16))
    koff = cp.asarray(np.cumsum(k16) - k16)
    be_off = cp.asarray(np.cumsum(words) - words)
    tile_off = cp.asarray(np.cumsum(tiles) - tiles)
    be = cp.empty(max(int(words.sum()), 1), dtype=cp.uint32)
    bad_b = cp.zeros(max(int(tiles.sum()), 1), dtype=cp.uint32)
    lb_offset, starts, bstart = level._device[("grouped", width)][:3]
    encode = get_kernel("grouped_min_plus_u16.cu", "encode_u16_b_grouped", np.float32)
    encode((sumk16,), (_THREADS,), (lb, lb_offset, starts, bstart, kgroup, koff, be_off, tile_off, be, bad_b))
    level._device[key] = (kgroup, koff, sumk16, be, be_off, bad_b)
    return level._device[key]


