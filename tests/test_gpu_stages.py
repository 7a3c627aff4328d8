"""The CUDA kernels against the NumPy stages, on seeded random inputs.

Weights and matrix entries are small integers (and +inf), so every sum is exact
in float32 and float64 and the GPU must reproduce the host results bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest

from fastapsp.graph import Graph
from fastapsp.stages import blocked_floyd_warshall, boundary_sssp, build_component_matrix, min_plus

cp = pytest.importorskip("cupy")
try:
    _DEVICES = cp.cuda.runtime.getDeviceCount()
except Exception:  # no driver
    _DEVICES = 0
if _DEVICES == 0:
    pytest.skip("no CUDA device visible", allow_module_level=True)

pytestmark = pytest.mark.gpu

SIZES = [1, 31, 32, 33, 127, 129, 1000]
DTYPES = [np.float32, np.float64]


def _graph(rng, n, *, weighted, zero_weights=False, directed=True):
    """Random graph of two blobs (the second never reaches the first) with integer weights."""
    m = 3 * n
    src = rng.integers(0, n, m)
    dst = rng.integers(0, n, m)
    half = n // 2
    if n > 2:  # no arc from the second half back into the first: unreachable pairs
        back = (src >= half) & (dst < half)
        dst[back] = rng.integers(half, n, int(back.sum()))
    if weighted:
        w = rng.integers(0 if zero_weights else 1, 10, m).astype(np.float64)
    else:
        w = np.ones(m)
    return Graph.from_edges(n, src, dst, w, directed=directed)


def _device_csr(g, index_dtype=None):
    itype = g.indptr.dtype if index_dtype is None else index_dtype
    return cp.asarray(g.indptr.astype(itype)), cp.asarray(g.indices.astype(itype)), cp.asarray(g.weights)


def _matrix(rng, c, dtype, density=0.05):
    """Square matrix of integer arc weights, +inf elsewhere, zero diagonal."""
    d = np.where(rng.random((c, c)) < density, rng.integers(0, 20, (c, c)), np.inf).astype(dtype)
    np.fill_diagonal(d, 0)
    return d


def _operand(rng, shape, dtype):
    x = rng.integers(0, 50, shape).astype(dtype)
    x[rng.random(shape) < 0.2] = np.inf
    return x


@pytest.fixture(params=["pull-persistent", "pull-levels", "push-persistent", "push-levels"])
def sssp_mode(request, monkeypatch):
    """Boundary SSSP pulling over in-arcs or pushing a queue; all levels in one cooperative
    launch or one launch per level."""
    from fastapsp.stages import _cuda

    direction, launches = request.param.split("-")
    monkeypatch.setattr(_cuda, "_SSSP_DIRECTION", direction)
    monkeypatch.setattr(_cuda, "_PERSISTENT", launches == "persistent")
    return request.param


# ------------------------------------------------------------------ SSSP
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["unit", "weighted", "zero_weights"])
def test_boundary_sssp_matches_host(n, dtype, kind, sssp_mode):
    rng = np.random.default_rng(1000 * n + (kind == "unit") + 7 * (dtype == np.float64))
    g = _graph(rng, n, weighted=kind != "unit", zero_weights=kind == "zero_weights")
    sources = np.sort(rng.choice(n, size=min(n, 70), replace=False))
    unit = kind == "unit"
    ref = boundary_sssp(g.indptr, g.indices, g.weights, sources, dtype=dtype, unit_weights=unit)
    got = boundary_sssp(*_device_csr(g), cp.asarray(sources), dtype=dtype, unit_weights=unit)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got.get(), ref)
    if n > 2:
        assert np.isinf(ref).any()


@pytest.mark.parametrize("unit", [True, False])
def test_boundary_sssp_weighted_kernel_on_unit_graph(unit, sssp_mode):
    """The Bellman-Ford kernel and the BFS kernel agree on a graph of unit weights."""
    rng = np.random.default_rng(5)
    g = _graph(rng, 300, weighted=False, directed=False)
    sources = rng.choice(300, size=45, replace=False)
    ref = boundary_sssp(g.indptr, g.indices, g.weights, sources, unit_weights=True)
    got = boundary_sssp(*_device_csr(g), cp.asarray(sources), unit_weights=unit)
    np.testing.assert_array_equal(got.get(), ref)


@pytest.mark.parametrize("unit", [True, False])
def test_boundary_sssp_many_sources_and_views(unit, sssp_mode):
    """More than 1024 sources (two batches), int64 ids, and ``out`` as rows of a larger array."""
    rng = np.random.default_rng(11)
    n = 1500
    g = _graph(rng, n, weighted=not unit, zero_weights=True, directed=False)
    sources = rng.permutation(n)[:1100]
    ref = boundary_sssp(g.indptr, g.indices, g.weights, sources, dtype=np.float64, unit_weights=unit)
    big = cp.full((1104, n), -1.0)
    out = big[2:1102]
    boundary_sssp(*_device_csr(g, np.int64), cp.asarray(sources), out=out, unit_weights=unit)
    np.testing.assert_array_equal(out.get(), ref)
    assert (big[:2] == -1).all() and (big[1102:] == -1).all()
    # A column-major out takes the copy path.
    fout = cp.asfortranarray(cp.zeros((1100, n), dtype=np.float32))
    boundary_sssp(*_device_csr(g), cp.asarray(sources), out=fout, unit_weights=unit)
    np.testing.assert_array_equal(fout.get(), ref.astype(np.float32))


@pytest.mark.parametrize("block_queue", [None, 4])
def test_boundary_sssp_grid_road_like(sssp_mode, block_queue, monkeypatch):
    """A long grid (many levels) with clustered sources, as boundary vertices of a component are;
    with a tiny per-block push queue too, so that it overflows into the global queue."""
    if block_queue is not None:
        from fastapsp.stages import _cuda

        monkeypatch.setattr(_cuda, "_SSSP_OPTIONS", (f"-DSQ_CAP={block_queue}",))
    rng = np.random.default_rng(3)
    rows, cols = 12, 400
    ids = np.arange(rows * cols).reshape(rows, cols)
    src = np.concatenate([ids[:, :-1].ravel(), ids[:-1, :].ravel()])
    dst = np.concatenate([ids[:, 1:].ravel(), ids[1:, :].ravel()])
    w = rng.integers(1, 5, src.size).astype(np.float64)
    g = Graph.from_edges(rows * cols, src, dst, w, directed=False)
    sources = ids[:, 200]
    for unit in (True, False):
        weights = np.ones_like(g.weights) if unit else g.weights
        ref = boundary_sssp(g.indptr, g.indices, weights, sources, unit_weights=unit)
        got = boundary_sssp(cp.asarray(g.indptr), cp.asarray(g.indices), cp.asarray(weights), cp.asarray(sources),
                            unit_weights=unit)
        np.testing.assert_array_equal(got.get(), ref)


# ----------------------------------------------------------------- build
@pytest.mark.parametrize("c", SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_build_component_matrix_matches_host(c, dtype):
    rng = np.random.default_rng(c)
    n = c + 50
    g = _graph(rng, n, weighted=True, zero_weights=True)
    vertices = rng.permutation(n)[:c]
    for nb in sorted({0, c // 3, c}):
        rows = _operand(rng, (nb, n), dtype)
        ref = build_component_matrix(g.indptr, g.indices, g.weights, vertices, nb, rows)
        got = build_component_matrix(*_device_csr(g), cp.asarray(vertices), nb, cp.asarray(rows))
        assert got.dtype == dtype
        np.testing.assert_array_equal(got.get(), ref)


def test_build_component_matrix_other_dtype_and_int64():
    rng = np.random.default_rng(2)
    n, c, nb = 400, 129, 40
    g = _graph(rng, n, weighted=True)
    vertices = rng.permutation(n)[:c]
    rows = _operand(rng, (nb, n), np.float64)
    ref = build_component_matrix(g.indptr, g.indices, g.weights, vertices, nb, rows, dtype=np.float32)
    got = build_component_matrix(*_device_csr(g, np.int64), cp.asarray(vertices), nb, cp.asarray(rows),
                                 dtype=np.float32)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got.get(), ref)


# -------------------------------------------------------- Floyd-Warshall
@pytest.mark.parametrize("c", sorted(SIZES + [63, 64, 65]))
@pytest.mark.parametrize("dtype", DTYPES)
def test_floyd_warshall_matches_host(c, dtype):
    rng = np.random.default_rng(c + 1)
    d = _matrix(rng, c, dtype, density=min(1.0, 4.0 / max(c, 1)))
    ref = blocked_floyd_warshall(d.copy())
    got = cp.asarray(d)
    assert blocked_floyd_warshall(got) is got
    np.testing.assert_array_equal(got.get(), ref)


def test_floyd_warshall_on_a_view():
    rng = np.random.default_rng(9)
    c = 200
    d = _matrix(rng, c, np.float32, density=0.02)
    ref = blocked_floyd_warshall(d.copy())
    big = cp.full((c + 3, c + 5), -1, dtype=np.float32)
    view = big[1 : c + 1, 2 : c + 2]
    view[...] = cp.asarray(d)
    blocked_floyd_warshall(view)
    np.testing.assert_array_equal(view.get(), ref)
    assert (big[0] == -1).all() and (big[:, :2] == -1).all() and (big[:, c + 2 :] == -1).all()


# -------------------------------------------------------------- min-plus
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (31, 33, 32), (33, 31, 127), (64, 64, 64), (129, 65, 1000), (70, 20, 300), (65, 22, 130),
                                   (1000, 100, 129), (127, 16, 33), (5, 0, 7)])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("accumulate", [False, True])
def test_min_plus_matches_host(m, k, n, dtype, accumulate):
    rng = np.random.default_rng(m * 7 + k * 3 + n)
    a, b = _operand(rng, (m, k), dtype), _operand(rng, (k, n), dtype)
    init = _operand(rng, (m, n), dtype)
    ref = min_plus(a, b, out=init.copy(), accumulate=accumulate)
    out = cp.asarray(init)
    min_plus(cp.asarray(a), cp.asarray(b), out=out, accumulate=accumulate)
    np.testing.assert_array_equal(out.get(), ref)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("accumulate", [False, True])
def test_min_plus_strided_views(dtype, accumulate):
    """``out`` as rows and a column slice of a row block; ``a`` a column slice; ``b`` transposed."""
    rng = np.random.default_rng(4)
    m, k, n = 70, 45, 150
    a_big = _operand(rng, (m, k + 7), dtype)
    bt = _operand(rng, (n, k), dtype)  # b = bt.T has non-unit row stride: copied
    block = _operand(rng, (m + 10, n + 21), dtype)
    a, b = a_big[:, 3 : 3 + k], bt.T
    ref_block = block.copy()
    min_plus(a, b, out=ref_block[10:, 5 : 5 + n], accumulate=accumulate)
    got_block = cp.asarray(block)
    out = got_block[10:, 5 : 5 + n]
    min_plus(cp.asarray(a_big)[:, 3 : 3 + k], cp.asarray(bt).T, out=out, accumulate=accumulate)
    np.testing.assert_array_equal(got_block.get(), ref_block)


def _real_operand(rng, shape, dtype):
    """Non-negative reals over twelve orders of magnitude, zeros (both signs) and +inf."""
    x = (rng.random(shape) * 10.0 ** rng.integers(-6, 6, shape)).astype(dtype)
    x[rng.random(shape) < 0.05] = 0.0
    x[rng.random(shape) < 0.02] = -0.0
    x[rng.random(shape) < 0.2] = np.inf
    return x


@pytest.mark.parametrize("m,k,n", [(70, 20, 300), (129, 65, 1000), (1000, 100, 129), (131, 31, 1300), (64, 2, 64)])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("smallk", [True, False])
@pytest.mark.parametrize("options", [(), ("-DMP_CW=1",)])
@pytest.mark.parametrize("accumulate", [False, True])
def test_min_plus_real_weights(m, k, n, dtype, smallk, options, accumulate):
    """Real (not whole) distances: each a + b is rounded once on either side, so the minima agree bit
    for bit -- the float kernels compare non-negative values as their bit patterns.  ``min_plus.cu``
    with the tiles min_plus_cuda picks (float32: two column groups) and with one group."""
    from fastapsp.stages._cuda import min_plus_cuda

    rng = np.random.default_rng(m + 3 * k + n)
    a, b = _real_operand(rng, (m, k), dtype), _real_operand(rng, (k, n), dtype)
    init = _real_operand(rng, (m, n), dtype)
    ref = min_plus(a, b, out=init.copy(), accumulate=accumulate)
    out = cp.asarray(init)
    min_plus_cuda(cp.asarray(a), cp.asarray(b), out, accumulate, options=options, smallk=smallk)
    got = out.get()
    np.testing.assert_array_equal(got, ref)  # -0.0 == 0.0: a zero of either sign is the same distance
    assert (got >= 0).all()


def test_min_plus_zero_inner_dimension():
    out = cp.zeros((3, 4))
    min_plus(cp.zeros((3, 0)), cp.zeros((0, 4)), out=out)
    assert bool(cp.isinf(out).all())
    out[...] = 2
    min_plus(cp.zeros((3, 0)), cp.zeros((0, 4)), out=out, accumulate=True)
    assert bool((out == 2).all())


@pytest.mark.parametrize("k", [1, 3, 4, 5, 16, 19, 20, 31, 32])
@pytest.mark.parametrize("accumulate", [False, True])
def test_min_plus_small_k_kernel_equals_host(k, accumulate):
    """min_plus_smallk.cu (K <= 32, 8 column tiles a block) against NumPy and min_plus.cu, with N not a
    multiple of its 512 columns, M not a multiple of 64, and the output a column slice of a wider block."""
    from fastapsp.stages._cuda import min_plus_cuda

    rng = np.random.default_rng(100 + k)
    m, n = 131, 1300
    a, b = _operand(rng, (m, k), np.float32), _operand(rng, (k, n), np.float32)
    block = _operand(rng, (m, n + 40), np.float32)
    ref = block.copy()
    min_plus(a, b, out=ref[:, 17 : 17 + n], accumulate=accumulate)
    got = cp.asarray(block)
    min_plus_cuda(cp.asarray(a), cp.asarray(b), got[:, 17 : 17 + n], accumulate)
    np.testing.assert_array_equal(got.get(), ref)
    tiled = cp.asarray(block)  # the general kernel gives the same
    min_plus_cuda(cp.asarray(a), cp.asarray(b), tiled[:, 17 : 17 + n], accumulate, smallk=False)
    np.testing.assert_array_equal(tiled.get(), ref)


@pytest.mark.parametrize("unit", [True, False])
@pytest.mark.parametrize("batch", [1, 7, 32, 64])
def test_boundary_sssp_in_small_batches(unit, batch):
    """The ``batch`` cap (spread sources, ``--sources``) gives the rows of one big batch and of SciPy."""
    rng = np.random.default_rng(batch)
    g = _graph(rng, 300, weighted=not unit)
    sources = rng.choice(g.n, 150, replace=False)
    ref = boundary_sssp(g.indptr, g.indices, g.weights, sources, unit_weights=unit)
    got = boundary_sssp(*_device_csr(g), cp.asarray(sources), unit_weights=unit, batch=batch)
    np.testing.assert_array_equal(got.get(), ref)


@pytest.mark.parametrize("k", [5, 20, 40, 70])
@pytest.mark.parametrize("kernel", ["auto", "float32", "general", "packed"])
@pytest.mark.parametrize("width", [1001, 1002, 1004])
@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("fits", [False, True])
def test_min_plus_into_scattered_rows(k, kernel, width, accumulate, fits):
    """out_rows: every kernel (small K float32 and 16-bit, the general and packed ones) writes row i of the
    product to row out_rows[i] of a wider array, whose rows are 16-byte aligned (1004 columns) or start 1 to 3
    columns off a 16-byte boundary (1001, 1002: rows of every shift), and leaves every other row alone; an
    operand past the 16-bit range (``fits`` False) makes the packed tiles that read it fall back."""
    from fastapsp.stages._cuda import min_plus_cuda

    rng = np.random.default_rng(k * 11 + width)
    m = 150
    a, b = _operand(rng, (m, k), np.float32), _operand(rng, (k, width), np.float32)
    if not fits:
        b[0, 3] = 40000.0  # past U16_LIMIT: the tiles that read it compute in float32
    rows = rng.permutation(3 * m)[:m]
    result = _operand(rng, (3 * m, width), np.float32)
    ref = result.copy()
    ref[rows] = min_plus(a, b, out=ref[rows].copy(), accumulate=accumulate)
    got = cp.asarray(result)
    options = {"auto": {"integer": True}, "float32": {}, "general": {"smallk": False},
               "packed": {"integer": True, "packed": "always"}}[kernel]
    min_plus_cuda(cp.asarray(a), cp.asarray(b), got, accumulate, out_rows=cp.asarray(rows), **options)
    np.testing.assert_array_equal(got.get(), ref)


def test_min_plus_into_scattered_rows_host_and_checks():
    """The NumPy path of out_rows is the reference: the product scattered; shapes are checked."""
    rng = np.random.default_rng(3)
    a, b = _operand(rng, (4, 3), np.float64), _operand(rng, (3, 6), np.float64)
    out = np.full((9, 6), 7.0)
    min_plus(a, b, out=out, out_rows=np.array([8, 0, 5, 2]))
    np.testing.assert_array_equal(out[[8, 0, 5, 2]], min_plus(a, b))
    assert np.all(out[[1, 3, 4, 6, 7]] == 7.0)
    with pytest.raises(ValueError, match="out_rows"):
        min_plus(a, b, out=out, out_rows=np.array([0, 1]))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rows", [0, 1, 7, 31, 32, 33, 100])
def test_gather_by_columns_matches_take(dtype, rows):
    """gather_transposed.cu: rows stored by columns (a view with a leading dimension of its own and
    an offset) put in the column order given, as NumPy's take does -- random permutations, repeated
    and missing columns, +inf -- into a new array or into a view of a wider row-major block."""
    from fastapsp.stages._cuda import gather_by_columns_cuda, stored_by_columns

    rng = np.random.default_rng(rows)
    n, ld = 1000, rows + 13
    stored = rng.random((n, ld)).astype(dtype)
    stored[::11] = np.inf
    x = cp.asarray(stored)[:, 5 : 5 + rows].T  # (rows, n), element (r, c) at c * ld + 5 + r
    assert rows < 2 or stored_by_columns(x) == ld
    want_x = stored[:, 5 : 5 + rows].T
    for cols in (rng.permutation(n), rng.integers(0, n, 257), np.arange(n)[::-1][:300]):
        cols_dev = cp.asarray(cols, dtype=cp.int64)
        got = gather_by_columns_cuda(x, cols_dev)
        assert got.dtype == dtype and got.shape == (rows, cols.size)
        np.testing.assert_array_equal(cp.asnumpy(got), np.take(want_x, cols, axis=1))
        block = cp.full((rows + 2, cols.size + 3), -1.0, dtype=dtype)
        gather_by_columns_cuda(x, cols_dev, out=block[1 : 1 + rows, 2 : 2 + cols.size])
        host = cp.asnumpy(block)
        np.testing.assert_array_equal(host[1 : 1 + rows, 2 : 2 + cols.size], np.take(want_x, cols, axis=1))
        assert np.all(host[0] == -1) and np.all(host[1 + rows :] == -1) and np.all(host[:, :2] == -1)
        assert np.all(host[:, 2 + cols.size :] == -1)
    with pytest.raises(ValueError, match="stored by columns"):
        gather_by_columns_cuda(cp.zeros((3, 4), dtype=dtype), cp.arange(4, dtype=cp.int64))


@pytest.mark.parametrize("rows", [1, 63, 64, 65, 200])
@pytest.mark.parametrize("large", [False, True])
@pytest.mark.parametrize("by_columns", [False, True])
def test_grouped_min_plus_packed_matches_float32(rows, large, by_columns):
    """grouped_min_plus_u16.cu against grouped_min_plus.cu on a level of a real partition: groups of
    several 128-column tiles and several chunks of K, +inf operands, and (large) operands past 16,383
    that send their row tiles and column tiles to the float32 fallback; row-major and stored by columns."""
    from conftest import random_graph
    from fastapsp.partition import partition_graph
    from fastapsp.stages._cuda import grouped_min_plus_cuda, stored_by_columns
    from fastapsp.stages.boundary_graph import BoundaryGraph, close_components, pack_boundary_rows

    rng = np.random.default_rng(rows + 7 * large)
    graph = random_graph(rng, 900, 2200, directed=True, weighted=True)
    part = partition_graph(graph, 5)
    arrays = tuple(cp.asarray(x) for x in (graph.indptr, graph.indices, graph.weights))
    closed = close_components(*arrays, part, list(range(part.k)), dtype=np.float32)
    lev = BoundaryGraph(graph, part, pack_boundary_rows(closed, part), cp, np.float32).levels[0]
    total_b, n = int(lev.bstart[-1]), lev.n
    assert max(np.diff(lev.starts)) > 128 and max(np.diff(lev.bstart)) > 16
    a = rng.integers(0, 300, (rows, total_b)).astype(np.float32)
    a[rng.random(a.shape) < 0.1] = np.inf
    if large:  # one row and one level block with a distance the packed form cannot hold
        a[rows // 2, rng.integers(0, total_b)] = 20000.0
        lev.lb[int(lev.lb_offset[1])] = 30000.0

    def product(integer):
        if by_columns:
            ld = -(-rows // 8) * 8
            out = cp.empty((n, ld), dtype=cp.float32)[:, :rows].T
            assert rows < 2 or stored_by_columns(out) == ld
        else:
            out = cp.empty((rows, n), dtype=cp.float32)
        return cp.asnumpy(grouped_min_plus_cuda(cp.asarray(a), lev, out, integer=integer))

    np.testing.assert_array_equal(product(True), product(False))
