"""The whole pipeline, in one process, against SciPy."""

import json

import numpy as np
import pytest
from scipy.sparse.csgraph import shortest_path

import fastapsp
from fastapsp.comm import SerialComm
from fastapsp.graph import Graph
from fastapsp.partition import PARTITIONERS, partition_graph
from fastapsp.options import SolveOptions
from fastapsp.components import run_components
from fastapsp.pipeline import solve_job
from fastapsp.schedule import component_costs, schedule_components, schedule_in_order
from fastapsp.sink import MemorySink

DATA = __import__("pathlib").Path(__file__).resolve().parent / "data"


def reference(graph):
    return shortest_path(graph.to_scipy(), method="D", directed=True)


def random_graph(seed, n, m, *, directed, zero=False, components=1):
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, m)
    if components > 1:  # arcs stay inside their block of vertices: a disconnected graph
        block = src * components // n
        lo, hi = block * n // components, (block + 1) * n // components
        dst = lo + rng.integers(0, 1 << 30, m) % (hi - lo)
    else:
        dst = rng.integers(0, n, m)
    w = rng.integers(0 if zero else 1, 10, m).astype(float)
    return Graph.from_edges(n, src, dst, w, directed=directed, name=f"random{seed}")


GRAPHS = {
    "directed": lambda: random_graph(1, 300, 900, directed=True),
    "undirected": lambda: random_graph(2, 300, 700, directed=False),
    "zero-weights": lambda: random_graph(3, 200, 600, directed=True, zero=True),
    "disconnected": lambda: random_graph(4, 240, 700, directed=True, components=3),
}


@pytest.mark.parametrize("name", GRAPHS)
@pytest.mark.parametrize("k", [1, 2, 7, 16])
def test_solve_matches_scipy(name, k):
    graph = GRAPHS[name]()
    result = fastapsp.solve(graph, k=k, backend="numpy")
    np.testing.assert_array_equal(result, reference(graph))


@pytest.mark.parametrize("partitioner", sorted(PARTITIONERS))
def test_every_partitioner_gives_exact_distances(partitioner):
    base = partitioner.removesuffix("+b")
    if base == "kaminpar":
        pytest.importorskip("kaminpar")
    if base == "jet":
        from conftest import _cupy_usable

        if not _cupy_usable():
            pytest.skip("partitioner 'jet' needs CuPy with a visible CUDA device")
    graph = random_graph(5, 400, 1200, directed=True)
    result = fastapsp.solve(graph, k=6, partitioner=partitioner, backend="numpy", dtype="float32")
    assert result.dtype == np.float32
    np.testing.assert_array_equal(result, reference(graph).astype(np.float32))


def test_real_road_graph_float32():
    graph = fastapsp.read_graph(DATA / "minnesota.mtx.gz")
    result = fastapsp.solve(graph, k=8, backend="numpy", dtype="float32")
    np.testing.assert_array_equal(result, reference(graph).astype(np.float32))


def test_real_weighted_graph_float64():
    # cal.cedge: 21,048 vertices with real-valued weights; check a sample of rows.
    graph = fastapsp.read_graph(DATA / "cal.cedge.gz")
    part = partition_graph(graph, 64)
    sink = MemorySink(graph.n, np.float64)
    rng = np.random.default_rng(0)
    picked = rng.choice(64, 3, replace=False)
    run_components(graph, part, picked, sink=sink, dtype=np.float64)
    rows = np.concatenate([part.component(p)[0] for p in picked])
    ref = shortest_path(graph.to_scipy(), method="D", indices=rows)
    np.testing.assert_allclose(sink.result[rows], ref, rtol=1e-12)


@pytest.mark.parametrize("block_bytes", [1, 4096, 50_000])
def test_column_chunks_give_the_same_rows(block_bytes):
    graph = random_graph(6, 250, 800, directed=True)
    part = partition_graph(graph, 5)
    sink = MemorySink(graph.n, np.float64)
    run_components(graph, part, range(5), sink=sink, dtype=np.float64, block_bytes=block_bytes)
    np.testing.assert_array_equal(sink.result, reference(graph))


def test_schedule_covers_every_nonempty_component_once():
    graph = random_graph(7, 500, 1500, directed=False)
    part = partition_graph(graph, 12)
    for ranks in (1, 2, 3, 5):
        plan = schedule_components(component_costs(part, graph.n, graph.m), ranks)
        assigned = sorted(p for rank in plan for p in rank)
        assert assigned == [p for p in range(12) if part.sizes[p] > 0]
        assert len(plan) == ranks


def test_schedule_balances_largest_first():
    plan = schedule_components([10, 1, 1, 1, 7, 2, 0], 2)
    assert plan == [[0, 2], [4, 5, 1, 3]]


@pytest.mark.parametrize("ranks", [1, 2, 3, 7, 20])
def test_schedule_in_order_gives_balanced_consecutive_runs(ranks):
    rng = np.random.default_rng(ranks)
    costs = rng.uniform(1, 10, 15)
    costs[[3, 9]] = 0  # empty components are left out
    order = rng.permutation(15)
    plan = schedule_in_order(costs, order, ranks)
    assert len(plan) == ranks
    flat = [p for rank in plan for p in rank]
    assert flat == [p for p in order if costs[p] > 0]  # the runs, one after another, are the order itself
    share = costs.sum() / ranks
    assert all(costs[rank].sum() <= share + costs.max() for rank in plan)


def test_schedule_in_order_needs_every_component_once():
    with pytest.raises(ValueError, match="order: expected each of the 3 components once"):
        schedule_in_order([1.0, 2.0, 3.0], [0, 1, 1], 2)


def test_solve_job_report_and_output_file(tmp_path):
    out = tmp_path / "d.npy"
    opts = SolveOptions(graph=str(DATA / "minnesota.mtx.gz"), k=4, output=str(out), backend="numpy",
                        report=str(tmp_path / "r.json"))
    report, _ = solve_job(opts, comm=SerialComm())
    graph = fastapsp.read_graph(DATA / "minnesota.mtx.gz")
    np.testing.assert_array_equal(np.load(out), reference(graph).astype(np.float32))
    assert not list(tmp_path.glob("*.tmp*"))
    part = partition_graph(graph, 4)
    assert report["n"] == 2642 and report["m"] == 3303 and report["k"] == 4
    assert report["edge_cut"] == part.edge_cut
    assert report["boundary_vertices"] == int(part.boundary.sum())
    assert report["ranks"] == 1 and report["backend"] == "numpy"
    for stage in ("read", "partition", "sssp", "build", "floyd_warshall", "extract", "min_plus", "assemble"):
        assert report["stages"][stage] >= 0
    json.dumps(report)


def test_partition_file_is_saved_then_reused(tmp_path):
    pfile = tmp_path / "p.npz"
    opts = SolveOptions(graph=str(DATA / "minnesota.mtx.gz"), k=5, partition_file=str(pfile), backend="numpy",
                        partitioner="kahip-fast")
    first, _ = solve_job(opts, comm=SerialComm())
    assert pfile.exists()
    opts2 = SolveOptions(graph=str(DATA / "minnesota.mtx.gz"), partition_file=str(pfile), backend="numpy")
    second, _ = solve_job(opts2, comm=SerialComm())
    assert second["k"] == 5 and second["partitioner"] == "kahip-fast"
    assert second["edge_cut"] == first["edge_cut"]


def test_default_k_and_auto_dtype(tmp_path):
    graph = random_graph(8, 120, 300, directed=True)
    result = fastapsp.solve(graph, backend="numpy")
    assert result.dtype == np.float32  # whole-number distances of at most 119 * 9: float32 is exact
    np.testing.assert_array_equal(result, reference(graph))


def test_sssp_groups_respect_the_budget(monkeypatch):
    import fastapsp.components as components

    graph = random_graph(9, 300, 900, directed=True)
    part = partition_graph(graph, 6)
    row_bytes = graph.n * 8
    most = int(part.boundary_per_part.max()) * row_bytes
    monkeypatch.setattr(components, "available_bytes", lambda xp: 4 * most)
    groups = components.sssp_groups(part, list(range(6)), graph.n, 8, np)
    assert sorted(p for g in groups for p in g) == list(range(6)) and len(groups) > 1
    for g in groups:
        assert len(g) == 1 or sum(int(part.boundary_per_part[p]) for p in g) * row_bytes <= most
    # The batched SSSP rows are sliced per component: any grouping gives the same answer.
    sink = MemorySink(graph.n, np.float64)
    run_components(graph, part, range(6), sink=sink, dtype=np.float64, block_bytes=10**6)
    np.testing.assert_array_equal(sink.result, reference(graph))


def test_npy_sink_past_2_gib(tmp_path):
    # 24,000^2 float32 = 2.3 GB: the file is sparse on disk; only a few rows are written.
    from fastapsp.sink import NpySink

    n, path = 24_000, tmp_path / "big.npy"
    sink = NpySink(str(path), n, np.float32, comm=SerialComm())
    rows = np.array([0, 11_999, n - 1])
    block = np.arange(3 * 50, dtype=np.float32).reshape(3, 50)
    sink.write(rows, n - 50, block)
    sink.commit()
    result = np.load(path, mmap_mode="r")
    assert result.shape == (n, n) and result.dtype == np.float32 and path.stat().st_size > 2**31
    np.testing.assert_array_equal(result[rows, n - 50 :], block)
    assert not list(tmp_path.glob("*.tmp*"))


def test_select_device_and_gpu_name_with_a_stand_in_cupy(monkeypatch):
    import sys
    import types

    from fastapsp.backend import gpu_name
    from fastapsp.comm import select_device

    used = []
    runtime = types.SimpleNamespace(getDeviceCount=lambda: 2, getDeviceProperties=lambda d: {"name": b"Fake GPU"})
    device = lambda d: types.SimpleNamespace(use=lambda: used.append(d))  # noqa: E731
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=runtime,
                                                                                                Device=device)))
    assert select_device(SerialComm()) == 0 and used == [0]
    assert gpu_name(1) == "Fake GPU"
