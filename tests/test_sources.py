"""--sources: the chosen rows equal the full matrix's rows, by both methods, from the API and the CLI."""

import json

import numpy as np
import pytest
from conftest import disconnected_graph, random_graph, reference_apsp

import fastapsp
from cli_util import DATA, find_mpiexec, run_cli
import fastapsp.components as components
import fastapsp.sink as sink_module
from fastapsp.errors import ConfigError
from fastapsp.partition import partition_graph
from fastapsp.execute import _positions
from fastapsp.components import local_closures, run_components, run_sssp_rows
from fastapsp.sink import MemorySink, _scatter_rows
from fastapsp.sources import (RowSubsetSink, SourceRows, choose_source_rows, parse_sources, pipeline_seconds,
                              sssp_before_partition)

MINNESOTA = DATA / "minnesota.mtx.gz"


def backend_name(xp):
    return "numpy" if xp is np else "cupy"


GRAPHS = {
    "directed": lambda: random_graph(np.random.default_rng(1), 200, 700, directed=True, weighted=True),
    "undirected-unit": lambda: random_graph(np.random.default_rng(2), 180, 400, directed=False, weighted=False),
    "disconnected-zero": lambda: disconnected_graph(np.random.default_rng(3), [50, 40, 60], directed=True,
                                                    weighted=True, zero_weights=True),
}


@pytest.mark.parametrize("name", GRAPHS)
@pytest.mark.parametrize("method", ["pipeline", "sssp", "auto"])
def test_source_rows_equal_full_rows(name, method, xp):
    graph = GRAPHS[name]()
    full = reference_apsp(graph)
    part = partition_graph(graph, 6, "metis")
    rng = np.random.default_rng(4)
    # boundary and interior vertices, unsorted, one repeated
    boundary, interior = np.flatnonzero(part.boundary), np.flatnonzero(~part.boundary)
    wanted = np.concatenate([rng.choice(boundary, 3, replace=False), rng.choice(interior, 5, replace=False)])
    wanted = np.concatenate([wanted, wanted[:1]])
    rows = fastapsp.solve(graph, partition=part, backend=backend_name(xp), sources=wanted, sources_method=method)
    assert rows.shape == (wanted.size, graph.n)
    np.testing.assert_array_equal(rows, full[wanted])


def _mixed_sources(part, rng):
    """Sorted distinct ids: boundary and interior vertices, with a component holding only boundary sources."""
    boundary, interior = np.flatnonzero(part.boundary), np.flatnonzero(~part.boundary)
    vertices, nb = part.component(int(np.argmax(part.boundary_per_part)))
    picked = [rng.choice(boundary, 3, replace=False), rng.choice(interior, 5, replace=False), vertices[:nb]]
    return np.unique(np.concatenate(picked))


def _rows_by_pipeline(graph, part, ids, method, backend="numpy"):
    memory = MemorySink(graph.n, np.float32 if backend == "cupy" else np.float64, rows=ids.size)
    run_components(graph, part, range(part.k), backend=backend, sink=RowSubsetSink(memory, _positions(ids, graph.n)),
                   dtype=memory.result.dtype, rows=SourceRows(part, ids), boundary_rows=method)
    assert memory.rows_written.all()
    return memory.result


@pytest.mark.parametrize("name", GRAPHS)
@pytest.mark.parametrize("method", ["frontier", "boundary-graph"])
def test_pipeline_rows_equal_full_rows_by_each_boundary_method(name, method, xp):
    graph = GRAPHS[name]()
    full = reference_apsp(graph)
    part = partition_graph(graph, 6, "metis")
    ids = _mixed_sources(part, np.random.default_rng(5))
    rows = _rows_by_pipeline(graph, part, ids, method, backend_name(xp))
    np.testing.assert_array_equal(rows, full[ids].astype(rows.dtype))


def test_boundary_graph_sources_use_the_local_closures_once(monkeypatch):
    """The wanted interior rows come from the kept local closures: no second build and Floyd-Warshall."""
    graph = GRAPHS["directed"]()
    part = partition_graph(graph, 6, "metis")
    ids = _mixed_sources(part, np.random.default_rng(6))
    closes = []
    real_close = components.close_components

    def counting(indptr, indices, weights, partition, components, **kw):
        closes.extend(components)
        return real_close(indptr, indices, weights, partition, components, **kw)

    def refuse(*args, **kw):
        raise AssertionError("a component was built and closed a second time")

    monkeypatch.setattr(components, "close_components", counting)
    monkeypatch.setattr(components, "build_and_close", refuse)
    rows = _rows_by_pipeline(graph, part, ids, "boundary-graph")
    np.testing.assert_array_equal(rows, reference_apsp(graph)[ids])
    assert sorted(closes) == [p for p in range(part.k) if part.sizes[p] > 0]


def test_local_closures_keep_only_what_is_asked():
    graph = GRAPHS["undirected-unit"]()
    part = partition_graph(graph, 5, "metis")
    keep = np.zeros(part.k, dtype=bool)
    keep[[1, 3]] = True
    closed, blocks = local_closures(graph, part, range(part.k), backend="numpy", dtype=np.float64, keep=keep)
    for p in range(part.k):
        c, nb = int(part.sizes[p]), int(part.boundary_per_part[p])
        assert blocks[p].shape == (nb, c)
        assert (closed[p] is not None) == keep[p]
        if keep[p]:
            np.testing.assert_array_equal(blocks[p], closed[p][:nb])
    selection = SourceRows(part, np.flatnonzero(~part.boundary)[:3])
    assert selection.closures_needed().tolist() == (selection.interior_per_component > 0).tolist()
    assert selection.interior_per_component.sum() == 3


def test_host_answer_is_the_sink_array_not_a_copy(monkeypatch):
    """The API hands back the rows the sink holds (sorted distinct ids): one host copy of the answer."""
    import tracemalloc

    graph = fastapsp.read_graph(MINNESOTA)
    ids = parse_sources("random:600:2", graph.n)
    monkeypatch.setattr(components, "available_bytes", lambda xp: 4 * 20 * graph.n * 4)  # batches of 20 rows
    fastapsp.solve(graph, backend="numpy", sources=ids, sources_method="sssp", dtype="float32")  # imports, caches
    tracemalloc.start()
    try:
        rows = fastapsp.solve(graph, backend="numpy", sources=ids, sources_method="sssp", dtype="float32")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert rows.flags.owndata and rows.shape == (600, graph.n)
    # the answer and one batch (its rows and SciPy's float64 rows): no second copy of the answer
    assert peak < rows.nbytes + 20 * graph.n * 12 + (1 << 20)
    np.testing.assert_array_equal(rows, reference_apsp(graph)[ids].astype(np.float32))


@pytest.mark.parametrize("consecutive", [True, False])
@pytest.mark.parametrize("shape", [(3, 5000), (40, 300), (1, 100)])
def test_scatter_pieces_equal_plain_assignment(monkeypatch, consecutive, shape):
    monkeypatch.setattr(sink_module, "_TASK_BYTES", 2048)  # many pieces: column spans and row groups
    rng = np.random.default_rng(7)
    block = rng.random(shape)
    rows = shape[0] + 7
    vertices = np.arange(2, 2 + shape[0]) if consecutive else rng.choice(rows, shape[0], replace=False)
    got = np.zeros((rows, shape[1] + 11))
    _scatter_rows(got, vertices, 4, block)
    expected = np.zeros_like(got)
    expected[vertices, 4 : 4 + shape[1]] = block
    np.testing.assert_array_equal(got, expected)


def test_only_boundary_rows_of_a_component_and_spec_strings():
    graph = GRAPHS["directed"]()
    part = partition_graph(graph, 5, "metis")
    full = reference_apsp(graph)
    vertices, nb = part.component(2)
    rows = fastapsp.solve(graph, partition=part, backend="numpy", sources=vertices[:nb], sources_method="pipeline")
    np.testing.assert_array_equal(rows, full[vertices[:nb]])
    rows = fastapsp.solve(graph, partition=part, backend="numpy", sources="10:20", sources_method="pipeline")
    np.testing.assert_array_equal(rows, full[10:20])


def test_only_needed_components_run():
    graph = GRAPHS["directed"]()
    part = partition_graph(graph, 6, "metis")
    vertices, _ = part.component(3)
    selection = SourceRows(part, np.sort(vertices[-2:]))
    assert selection.needed().tolist() == [p == 3 for p in range(6)]


def test_parse_sources(tmp_path):
    assert parse_sources("3:6", 10).tolist() == [3, 4, 5]
    picked = parse_sources("random:5:1", 100)
    assert picked.size == 5 and np.array_equal(picked, parse_sources("random:5:1", 100))
    text = tmp_path / "ids.txt"
    text.write_text("# chosen\n7 3\n3  # again\n9\n")
    assert parse_sources(str(text), 10).tolist() == [3, 7, 9]
    npy = tmp_path / "ids.npy"
    np.save(npy, np.array([4, 1]))
    assert parse_sources(str(npy), 10).tolist() == [1, 4]
    for spec, fragment in [("5:3", "range"), ("0:11", "range"), ("random:0", "random:0"), ("random:x", "random"),
                           ("nofile", "nofile"), (str(text) + "x", "x")]:
        with pytest.raises(ConfigError, match=fragment):
            parse_sources(spec, 10)
    bad = tmp_path / "bad.txt"
    bad.write_text("1\n2 x\n")
    with pytest.raises(ConfigError, match="line 2"):
        parse_sources(str(bad), 10)
    with pytest.raises(ConfigError, match="12"):
        parse_sources([1, 12], 10)


def test_auto_prefers_sssp_for_few_sources_and_pipeline_for_all():
    graph = fastapsp.read_graph(MINNESOTA)
    part = partition_graph(graph, 16, "metis")
    assert choose_source_rows(part, np.array([5]), graph.n, graph.m) == "sssp"
    assert choose_source_rows(part, np.arange(graph.n), graph.n, graph.m) == "pipeline"
    costs = pipeline_seconds(part, np.arange(graph.n), graph.n, graph.m, unit_weights=graph.unit_weights)
    assert set(costs) == {"frontier", "boundary-graph"} and min(costs.values()) > 0
    # fewer wanted components cost less
    fewer = pipeline_seconds(part, part.component(0)[0], graph.n, graph.m, unit_weights=graph.unit_weights)
    assert all(fewer[key] < costs[key] for key in costs)


def test_sssp_before_partition_follows_the_cost_model():
    """roadFLA's size: 1,000 sources by GPU SSSP cost less than METIS alone; on the host they do not."""
    n, arcs, k = 1_070_376, 2_687_902, 595
    assert sssp_before_partition(1000, n, arcs, k, unit_weights=True, backend="cupy")
    assert not sssp_before_partition(1000, n, arcs, k, unit_weights=True, backend="numpy")
    assert not sssp_before_partition(n, n, arcs, k, unit_weights=True, backend="cupy")


def test_auto_sources_by_sssp_make_no_partition(tmp_path):
    report = tmp_path / "r.json"
    proc = run_cli("solve", MINNESOTA, "--backend", "numpy", "--sources", "random:3", "--output", "memory",
                   "--report", report)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(report.read_text())
    assert data["sources_method"] == "sssp" and data["partitioner"] == "none" and "choose_k" not in data["stages"]


@pytest.mark.parametrize("method, sssp_method", [("pipeline", "frontier"), ("pipeline", "boundary-graph"),
                                                  ("sssp", "auto")])
def test_cli_sources_file_and_ids(tmp_path, method, sssp_method):
    out = tmp_path / "rows.npy"
    proc = run_cli("solve", MINNESOTA, "-k", 6, "--backend", "numpy", "--sources", "random:40:3", "--output", out,
                   "--sources-method", method, "--sssp-method", sssp_method, "--report", tmp_path / "r.json",
                   "--dtype", "float64")
    assert proc.returncode == 0, proc.stderr
    ids = np.load(tmp_path / "rows.sources.npy")
    assert ids.tolist() == parse_sources("random:40:3", 2642).tolist()
    full = reference_apsp(fastapsp.read_graph(MINNESOTA))
    np.testing.assert_array_equal(np.load(out), full[ids])
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["sources"] == 40 and report["sources_method"] == method
    assert report["sssp_method"] == (None if method == "sssp" else sssp_method)


def test_cli_sources_refusals(tmp_path):
    for args, fragment in [(["--sources", "0:99999"], "sources"), (["--sources", "random:5", "--stats", "x"],
                                                                    "stats")]:
        proc = run_cli("solve", MINNESOTA, "-k", 2, *args, cwd=tmp_path)
        assert proc.returncode != 0 and "Traceback" not in proc.stderr
        assert fragment in proc.stderr


@pytest.mark.mpi
@pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec (install the 'mpi' extra)")
@pytest.mark.parametrize("method", ["pipeline", "sssp"])
def test_sources_under_two_ranks(tmp_path, method):
    out = tmp_path / "rows.npy"
    proc = run_cli("solve", MINNESOTA, "-k", 6, "--backend", "numpy", "--sources", "100:160", "--output", out,
                   "--sources-method", method, "--dtype", "float64", ranks=2)
    assert proc.returncode == 0, proc.stderr
    full = reference_apsp(fastapsp.read_graph(MINNESOTA))
    np.testing.assert_array_equal(np.load(out), full[100:160])


@pytest.mark.gpu
def test_gpu_host_copy_in_chunks_through_small_buffers(monkeypatch):
    """A block larger than a chunk reaches the sink whole, through two pinned buffers of at most a chunk."""
    if not _gpu():
        pytest.skip("CuPy with a visible CUDA device is not available")
    import cupy

    from fastapsp.timing import StageTimer
    from fastapsp.hostcopy import HostWriter

    monkeypatch.setattr(HostWriter, "CHUNK_BYTES", 3 * 1000 * 4 + 5)  # three rows of 1000 float32 a chunk
    block = cupy.arange(20 * 1000, dtype=cupy.float32).reshape(20, 1000)
    memory = MemorySink(1000, np.float32, rows=25)
    writer = HostWriter(cupy, memory, np.float32)
    vertices = np.arange(5, 25)
    writer.put(vertices, 0, block, StageTimer(cupy))
    writer.close(StageTimer(cupy))
    np.testing.assert_array_equal(memory.result[5:], block.get())
    assert all(slot["buffer"].nbytes <= 4 * 4096 for slot in writer.slots)  # 3 rows, rounded to a power of two


@pytest.mark.gpu
def test_gpu_sources_equal_numpy_by_every_method():
    if not _gpu():
        pytest.skip("CuPy with a visible CUDA device is not available")
    graph = fastapsp.read_graph(MINNESOTA)
    part = partition_graph(graph, 8, "metis")
    ids = _mixed_sources(part, np.random.default_rng(8))
    expected = reference_apsp(graph)[ids].astype(np.float32)
    for method in ("frontier", "boundary-graph"):
        np.testing.assert_array_equal(_rows_by_pipeline(graph, part, ids, method, "cupy"), expected)
    memory = MemorySink(graph.n, np.float32, rows=ids.size)
    run_sssp_rows(graph, ids, backend="cupy", sink=RowSubsetSink(memory, _positions(ids, graph.n)),
                  dtype=np.float32, block_bytes=7 * graph.n * 4)  # batches of 7 rows
    np.testing.assert_array_equal(memory.result, expected)


def _gpu() -> bool:
    from fastapsp.backend import gpu_count

    return gpu_count() > 0
