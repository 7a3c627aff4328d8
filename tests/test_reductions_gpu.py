"""The fused --stats kernel (kernels/reduce_stats.cu) against the NumPy accumulator and networkx.

Each test feeds the same row blocks to a NumPy and a CuPy :class:`StatsAccumulator`
and compares what they finalise to: counts, histograms and whole-number sums
exactly, float64 sums to rounding (they are added in another order).
"""

import networkx as nx
import numpy as np
import pytest
from conftest import disconnected_graph, random_graph, reference_apsp
from test_reductions import GRAPHS, to_networkx

import fastapsp
from fastapsp.backend import gpu_count
from fastapsp.partition import partition_graph
from fastapsp.components import run_components
from fastapsp.reductions import StatsAccumulator
from fastapsp.sink import NullSink

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(gpu_count() == 0, reason="no CUDA GPU visible")]


@pytest.fixture(params=[True, False], ids=["own-stream", "compute-stream"])
def overlap(request, monkeypatch):
    """The kernels on their own stream (overlapping the next block) and on the compute stream."""
    import functools

    from fastapsp import reductions_gpu

    monkeypatch.setattr(reductions_gpu, "GpuStats", functools.partial(reductions_gpu.GpuStats, overlap=request.param))
    return request.param


def feed(acc, d, blocks, dtype, xp):
    """Give ``acc`` the matrix ``d`` as (row ids, column start, width) blocks of ``dtype``."""
    for rows, start, width in blocks:
        block = xp.asarray(d[np.asarray(rows)][:, start : start + width].astype(dtype))
        acc.update(np.asarray(rows), start, block)
    return acc.finalize()


def row_blocks(n, rng, *, row_parts, col_parts):
    """Every row once: rows shuffled into ``row_parts`` groups, each cut into ``col_parts`` column chunks."""
    order = rng.permutation(n)
    blocks = []
    for rows in np.array_split(order, row_parts):
        if rows.size == 0:
            continue
        edges = np.unique(np.linspace(0, n, col_parts + 1).astype(int))
        blocks += [(rows, int(a), int(b - a)) for a, b in zip(edges[:-1], edges[1:])]
    return blocks


def assert_same(gpu, cpu, *, exact_sums):
    assert gpu.histogram == cpu.histogram
    for key, value in cpu.scalars.items():
        if isinstance(value, float) and not exact_sums:
            assert gpu.scalars[key] == pytest.approx(value, rel=1e-12), key
        else:
            assert gpu.scalars[key] == value, key
    for key, value in cpu.vertex.items():
        if key.startswith(("harmonic", "closeness")) or (key.startswith("sum") and not exact_sums):
            np.testing.assert_allclose(gpu[key], value, rtol=1e-12, atol=0, err_msg=key)
        else:
            np.testing.assert_array_equal(gpu[key], value, err_msg=key)
            assert gpu[key].dtype == value.dtype, key


def both(n, *, integer, directed=True, bin_width=1.0, max_distance=None):
    import cupy

    make = lambda xp: StatsAccumulator(n, xp=xp, integer=integer, directed=directed, bin_width=bin_width,
                                       max_distance=max_distance)
    return make(np), make(cupy)


@pytest.mark.parametrize("name", GRAPHS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kernel_equals_numpy_on_distance_matrices(name, dtype, overlap):
    import cupy

    graph = GRAPHS[name]()
    d = reference_apsp(graph)
    rng = np.random.default_rng(3)
    integer = name != "real-weights"
    width = 1.0 if integer else 2.0 ** -4
    blocks = row_blocks(graph.n, rng, row_parts=3, col_parts=2)
    cpu_acc, gpu_acc = both(graph.n, integer=integer, directed=graph.directed, bin_width=width)
    cpu = feed(cpu_acc, d, blocks, dtype, np)
    gpu = feed(gpu_acc, d, blocks, dtype, cupy)
    assert_same(gpu, cpu, exact_sums=integer)


def test_wide_and_tall_blocks_use_every_grid_shape(overlap):
    """Blocks wider than one column tile (several gx), taller than a slab (several gy), and a column view."""
    import cupy

    rng = np.random.default_rng(11)
    n = 5000
    d = rng.integers(0, 900, (n, n)).astype(np.float64)
    d[rng.random((n, n)) < 0.1] = np.inf
    np.fill_diagonal(d, 0)
    blocks = [(np.arange(0, 40), 0, n), (np.arange(40, 3000), 0, 700), (np.arange(40, 3000), 700, n - 700)]
    last = np.arange(3000, n)
    cpu_acc, gpu_acc = both(n, integer=True)
    cpu = feed(cpu_acc, d, blocks + [(last, 0, n)], np.float32, np)
    for rows, start, width in blocks:
        gpu_acc.update(rows, start, cupy.asarray(d[rows][:, start : start + width].astype(np.float32)))
    # The last rows as a view of a wider array: rows n + 7 entries apart in memory.
    wide = cupy.asarray(np.concatenate([d[last], d[last][:, :7]], axis=1).astype(np.float32))
    gpu_acc.update(last, 0, wide[:, :n])
    assert_same(gpu_acc.finalize(), cpu, exact_sums=True)


@pytest.mark.parametrize("top", [20_000, 70_000, 3_000_000])
def test_large_integer_distances_use_global_bins_and_wider_levels(top, overlap):
    """Bins past the shared ones (global atomics) and levels reached inside one block and across blocks."""
    import cupy

    rng = np.random.default_rng(top)
    n = 1500
    d = rng.integers(0, top, (n, n)).astype(np.float64)
    d[:200] = rng.integers(0, 50, (200, n))  # the first blocks stay in the first level
    d[rng.random((n, n)) < 0.05] = np.inf
    np.fill_diagonal(d, 0)
    blocks = [(np.arange(a, min(n, a + 200)), 0, n) for a in range(0, n, 200)]
    for max_distance in (None, float(top)):
        cpu_acc, gpu_acc = both(n, integer=True, max_distance=max_distance)
        cpu = feed(cpu_acc, d, blocks, np.float32, np)
        gpu = feed(gpu_acc, d, blocks, np.float32, cupy)
        assert_same(gpu, cpu, exact_sums=True)
        top_seen = d[np.isfinite(d)].max()
        level = next(L for L in range(40) if top_seen < 65536 * 2.0**L)
        assert gpu.histogram["bin_width"] == 2.0**level


def test_real_weights_with_a_narrow_first_width():
    """The width doubles many times (test_histogram_width_doubles_exactly on the GPU), one row a block too."""
    import cupy

    rng = np.random.default_rng(10)
    n = 300
    d = rng.uniform(0.0, 40.0, (n, n))
    d[rng.random((n, n)) < 0.2] = np.inf
    np.fill_diagonal(d, 0)
    for blocks in ([(np.array([v]), 0, n) for v in range(n)], [(np.arange(n), 0, n)]):
        cpu_acc, gpu_acc = both(n, integer=False, bin_width=2.0**-12)
        cpu = feed(cpu_acc, d, blocks, np.float64, np)
        gpu = feed(gpu_acc, d, blocks, np.float64, cupy)
        assert_same(gpu, cpu, exact_sums=False)
        assert gpu.histogram["bin_width"] > 2.0**-12


def test_integer_weights_with_another_first_width_take_the_generic_path():
    import cupy

    rng = np.random.default_rng(12)
    n = 200
    d = rng.integers(0, 500, (n, n)).astype(np.float64)
    np.fill_diagonal(d, 0)
    cpu_acc, gpu_acc = both(n, integer=True, bin_width=4.0)
    blocks = [(np.arange(n), 0, n)]
    assert_same(feed(gpu_acc, d, blocks, np.float32, cupy), feed(cpu_acc, d, blocks, np.float32, np),
                exact_sums=True)


def test_runs_twice_give_identical_row_sums():
    """Row partials are added in a fixed order: the float64 sums are the same every run."""
    import cupy

    rng = np.random.default_rng(13)
    n = 3000
    d = rng.uniform(0.5, 9.0, (n, n))
    np.fill_diagonal(d, 0)
    results = []
    for _ in range(2):
        acc = StatsAccumulator(n, xp=cupy, integer=False, directed=True, bin_width=2.0**-3)
        results.append(feed(acc, d, [(np.arange(n), 0, n)], np.float64, cupy))
    np.testing.assert_array_equal(results[0]["sum_distances"], results[1]["sum_distances"])
    np.testing.assert_array_equal(results[0]["harmonic_out"], results[1]["harmonic_out"])


@pytest.mark.parametrize("sssp_method", ["frontier", "boundary-graph"])
def test_pipeline_stats_on_the_gpu_equal_networkx(sssp_method, overlap):
    """fastapsp.stats on CuPy, through the whole pipeline, on a directed graph with unreachable pairs."""
    graph = disconnected_graph(np.random.default_rng(21), [120, 90, 60], directed=True, weighted=True,
                               zero_weights=True)
    part = partition_graph(graph, 6, "metis")
    acc = StatsAccumulator.for_graph(graph, "cupy")
    run_components(graph, part, range(part.k), backend="cupy", sink=NullSink(), dtype=np.float32,
                   boundary_rows=sssp_method, on_block=acc.update)
    s = acc.finalize()
    cpu = fastapsp.stats(graph, partition=part, backend="numpy", dtype="float32")
    assert_same(s, cpu, exact_sums=True)
    G = to_networkx(graph)
    closeness = nx.closeness_centrality(G, distance="weight", wf_improved=True)
    np.testing.assert_allclose(s["closeness"], [closeness[v] for v in range(graph.n)], rtol=1e-12)
    assert s["wiener_index"] == np.inf and not s["strongly_connected"]


def test_pipeline_stats_unit_weights_undirected():
    graph = random_graph(np.random.default_rng(22), 900, 2600, directed=False, weighted=False)
    s = fastapsp.stats(graph, k=5, backend="cupy", dtype="float32")
    d = reference_apsp(graph)
    finite = np.isfinite(d) & ~np.eye(graph.n, dtype=bool)
    np.testing.assert_array_equal(s.histogram["counts"], np.bincount(d[finite].astype(np.int64)))
    np.testing.assert_array_equal(s["sum_distances"], np.where(finite, d, 0).sum(axis=1).astype(np.int64))
    assert s["diameter"] == int(d[finite].max())


@pytest.mark.parametrize("method", ["frontier", "boundary-graph"])
@pytest.mark.parametrize("kind", ["unit", "integer", "disconnected"])
def test_each_pair_once_on_the_gpu_equals_the_whole_matrix(kind, method, overlap, monkeypatch):
    """Each pair once (reduce_stats.cu with ST_PAIRS: column sums and maxima, every value counted twice)
    gives the statistics of the whole matrix on the GPU and on NumPy, in column chunks too."""
    from test_reductions import paired_stats

    rng = np.random.default_rng(51)
    if kind == "unit":
        graph = random_graph(rng, 700, 1900, directed=False, weighted=False)
    elif kind == "integer":
        graph = random_graph(rng, 600, 1500, directed=False, weighted=True, zero_weights=True)
    else:
        graph = disconnected_graph(rng, [200, 150, 90], directed=False, weighted=True)
    for k, block_bytes in ((1, None), (6, None), (40, 20000)):
        part = partition_graph(graph, k, "metis")
        paired = paired_stats(graph, part, method=method, block_bytes=block_bytes, backend="cupy",
                              dtype=np.float32)
        whole = StatsAccumulator.for_graph(graph, "numpy")
        run_components(graph, part, range(part.k), backend="numpy", sink=NullSink(), dtype=np.float32,
                       boundary_rows=method, on_block=whole.update)
        assert_same(paired, whole.finalize(), exact_sums=True)
    part = partition_graph(graph, 6, "metis")  # the API's default road, against the whole matrix
    paired = fastapsp.stats(graph, partition=part, backend="cupy", dtype="float32")
    from fastapsp.comm import SerialComm
    from fastapsp.execute import execute
    from fastapsp.options import SolveOptions
    from fastapsp.planning import make_plan

    opts = SolveOptions(backend="cupy", dtype="float32", stats=True, quiet=True)
    whole_plan = make_plan(graph, opts, comm=SerialComm(), partition=part, force={"each_pair_once": False})
    assert not whole_plan.each_pair_once
    assert_same(paired, execute(whole_plan, graph, comm=SerialComm()).stats, exact_sums=True)
    assert_same(paired, fastapsp.stats(graph, partition=part, backend="numpy", dtype="float32"), exact_sums=True)


def _grid(side: int):
    """A side x side grid, unit weights, undirected (a road network's shape: thin component boundaries)."""
    from fastapsp.graph import Graph

    ids = np.arange(side * side).reshape(side, side)
    src = np.concatenate([ids[:, :-1].ravel(), ids[:-1, :].ravel()])
    dst = np.concatenate([ids[:, 1:].ravel(), ids[1:, :].ravel()])
    return Graph.from_edges(side * side, src, dst, np.ones(src.size), directed=False, name=f"grid{side}")


@pytest.mark.parametrize("inner", [1, 5, 20, 33, 48])
@pytest.mark.parametrize("top", [400, 20_000, 200_000])
def test_product_reduced_as_made_equals_its_stored_block(inner, top, overlap, monkeypatch):
    """min_plus_stats.cu: a product made and reduced in one kernel (update_product) gives the statistics of
    its block stored and fed to NumPy (update_beyond): unreachable entries, shapes off the block's 64 x 512,
    launches split by rows (a small partial budget), distances past the 16-bit encoding (the float32 path
    of a block) and past the first histogram level."""
    import cupy

    from fastapsp import reductions_gpu

    monkeypatch.setattr(reductions_gpu, "_PARTIAL_BYTES", 1)  # 64 rows a launch
    rng = np.random.default_rng(inner + top)
    n, r, start = 3000, 150, 700
    rows = np.arange(10, 10 + r)
    a = rng.integers(0, 400, (r, inner)).astype(np.float32)
    b = rng.integers(0, 400, (inner, n - start)).astype(np.float32)
    a[rng.random(a.shape) < 0.1] = np.inf
    b[rng.random(b.shape) < 0.1] = np.inf
    far = rng.integers(0, n - start, 40)
    b[0, far], b[1:, far] = top, np.inf  # past 16,383: those blocks take float32; minima through k = 0
    block = np.min(a[:, :, None].astype(np.float64) + b[None, :, :], axis=1)
    cpu_acc, gpu_acc = both(n, integer=True, directed=False)
    assert gpu_acc.product_fuses(cupy.asarray(a), cupy.asarray(b)) and not cpu_acc.product_fuses(a, b)
    cpu_acc.update_beyond(rows, start, block)
    gpu_acc.update_product(rows, start, cupy.asarray(a), cupy.asarray(b))
    cpu, gpu = cpu_acc.finalize(), gpu_acc.finalize()
    assert_same(gpu, cpu, exact_sums=True)
    assert gpu.histogram["bin_width"] == (1.0 if top < 65536 else 4.0)


def test_product_refuses_what_its_kernel_does_not_take():
    import cupy

    acc = StatsAccumulator(100, xp=cupy, integer=True, directed=False)
    a, b = cupy.zeros((4, 49), dtype=cupy.float32), cupy.zeros((49, 60), dtype=cupy.float32)
    assert not acc.product_fuses(a, b)  # K past PRODUCT_MAX_K
    with pytest.raises(ValueError, match="inner dimension 49"):
        acc.update_product(np.arange(4), 40, a, b)
    assert not acc.product_fuses(a[:, :5].astype(cupy.float64), b[:5].astype(cupy.float64))
    real = StatsAccumulator(100, xp=cupy, integer=False, directed=False)
    assert not real.product_fuses(a[:, :5], b[:5])
    with pytest.raises(ValueError, match="row 41 is not before column 40"):
        acc.update_product(np.arange(38, 42), 40, a[:, :5], b[:5])


@pytest.mark.parametrize("k", [12, 30])
def test_stats_of_a_road_shape_take_the_fused_product(k, monkeypatch):
    """fastapsp.stats of an undirected unit-weight grid on the GPU reduces the products past each component's
    own columns as they are made, and equals the NumPy path and the whole matrix."""
    import functools

    from fastapsp import reductions_gpu

    calls = []
    original = reductions_gpu.GpuStats.update_product

    @functools.wraps(original)
    def spy(self, *args, **kwargs):
        calls.append(args[3].shape)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(reductions_gpu.GpuStats, "update_product", spy)
    graph = _grid(50)
    part = partition_graph(graph, k, "metis")
    gpu = fastapsp.stats(graph, partition=part, backend="cupy")
    assert calls and all(1 <= inner <= 48 for _, inner in calls)
    assert_same(gpu, fastapsp.stats(graph, partition=part, backend="numpy"), exact_sums=True)
    d = reference_apsp(graph)
    off = ~np.eye(graph.n, dtype=bool)
    np.testing.assert_array_equal(gpu.histogram["counts"][: int(d.max()) + 1], np.bincount(d[off].astype(np.int64)))
