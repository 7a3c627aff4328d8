"""One engine behind every door: the library, the command line (one process and under MPI) and saved plans
give the same numbers, bit for bit, and those numbers are SciPy's.

Each graph is written as a Matrix Market file; the library reads that same file
(``fastapsp.read_graph``), so both doors start from identical arcs and weights.
"""

import json

import numpy as np
import pytest
from cli_util import find_mpiexec, run_cli
from conftest import _cupy_usable, disconnected_graph, random_graph
from scipy.sparse.csgraph import shortest_path as scipy_shortest_path

import fastapsp
from fastapsp.graph import Graph

SMALL = 60  # k = n only up to this many vertices


def _directed(rng):
    return random_graph(rng, 60, 240, directed=True, weighted=True)


def _undirected_real(rng):
    src, dst = rng.integers(0, 50, 150), rng.integers(0, 50, 150)
    keep = src != dst
    weights = rng.uniform(0.05, 10.0, int(keep.sum()))  # not whole numbers: float32, about 7 digits
    return Graph.from_edges(50, src[keep], dst[keep], weights, directed=False, name="undirected-real")


def _disconnected(rng):
    return disconnected_graph(rng, [20, 15, 12], directed=True, weighted=True)


def _isolated(rng):
    # Arcs among 38 of the first 50 vertices; the other 12 and the last five ids (only the size line
    # knows them) touch nothing.
    used = np.sort(rng.choice(50, 38, replace=False))
    src, dst = used[rng.integers(0, 38, 130)], used[rng.integers(0, 38, 130)]
    keep = src != dst
    return Graph.from_edges(55, src[keep], dst[keep], rng.integers(1, 10, int(keep.sum())).astype(float),
                            directed=False, name="isolated")


def _larger(rng):
    return random_graph(rng, 200, 700, directed=True, weighted=True)


GRAPHS = {"directed": _directed, "undirected-real": _undirected_real, "disconnected": _disconnected,
          "isolated": _isolated, "directed-200": _larger}


def write_mtx(path, graph) -> None:
    """``graph`` as a Matrix Market file: ``general`` with every arc, or ``symmetric`` with the lower triangle."""
    coo = graph.to_scipy().tocoo()
    rows, cols, weights = coo.row, coo.col, coo.data
    if not graph.directed:
        keep = rows >= cols
        rows, cols, weights = rows[keep], cols[keep], weights[keep]
    integer = bool(np.all(weights == np.round(weights)))
    lines = [f"%%MatrixMarket matrix coordinate {'integer' if integer else 'real'} "
             f"{'general' if graph.directed else 'symmetric'}", f"{graph.n} {graph.n} {rows.size}"]
    lines += [f"{r + 1} {c + 1} {int(w) if integer else repr(w)}"  # repr: the float64 comes back unchanged
              for r, c, w in zip(rows.tolist(), cols.tolist(), weights.tolist())]
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def graphs(tmp_path_factory):
    """name -> (graph as read back from its file, file path, SciPy's distances, whole-number weights)."""
    folder = tmp_path_factory.mktemp("graphs")
    made = {}
    for seed, (name, build) in enumerate(GRAPHS.items()):
        built = build(np.random.default_rng(100 + seed))
        path = folder / f"{name}.mtx"
        write_mtx(path, built)
        graph = fastapsp.read_graph(path)
        assert graph.n == built.n and graph.directed == built.directed
        assert graph.checksum() == built.checksum(), f"{name}: the file does not hold the graph it was written from"
        integer = bool(np.all(built.weights == np.round(built.weights)))
        made[name] = (graph, path, scipy_shortest_path(built.to_scipy(), method="D"), integer)
    return made


def check_against_scipy(dist, want, integer) -> None:
    assert dist.shape == want.shape
    if integer:
        np.testing.assert_array_equal(dist, want)
    else:  # float32 (dtype auto for real weights): the same infs, finite values to float32's rounding
        np.testing.assert_allclose(dist, want, rtol=2e-6, atol=0)


def cli_solve(path, out, *args, ranks=None):
    proc = run_cli("solve", path, "--backend", "numpy", "--output", out, "--quiet", *args, ranks=ranks)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return np.load(out)


def k_values():
    return [pytest.param(name, k, id=f"{name}-k{k}") for name in GRAPHS for k in (1, 3, "n")
            if not (k == "n" and name == "directed-200")]


def resolve_k(k, graph):
    return graph.n if k == "n" else k


# ------------------------------------------------------------------ library and command line
@pytest.mark.parametrize("name, k", k_values())
def test_library_and_cli_give_the_same_distances(graphs, tmp_path, name, k):
    graph, path, want, integer = graphs[name]
    k = resolve_k(k, graph)
    assert k <= SMALL or k == 1 or k == 3
    lib = fastapsp.solve(graph, k=k, backend="numpy")
    cli = cli_solve(path, tmp_path / "d.npy", "-k", k)
    assert isinstance(lib, np.ndarray) and lib.dtype == cli.dtype
    assert np.array_equal(lib, cli), f"{name} k={k}: library and command line differ"
    check_against_scipy(lib, want, integer)
    check_against_scipy(cli, want, integer)


def stats_json(stats) -> dict:
    """What ``--stats PREFIX`` writes to PREFIX.json, from a Stats object (through JSON, as the file is)."""
    return json.loads(json.dumps(stats.to_json_dict(), allow_nan=False))


@pytest.mark.parametrize("name", ["directed", "undirected-real", "disconnected", "isolated"])
@pytest.mark.parametrize("k", [1, 3])
def test_library_stats_equal_the_cli_stats(graphs, tmp_path, name, k):
    graph, path, want, integer = graphs[name]
    prefix = tmp_path / "st"
    proc = run_cli("solve", path, "-k", k, "--backend", "numpy", "--stats", prefix, "--quiet")
    assert proc.returncode == 0, proc.stderr
    from_cli = json.loads((prefix.parent / "st.json").read_text())
    stats = fastapsp.stats(graph, k=k, backend="numpy")
    assert stats_json(stats) == from_cli
    with np.load(prefix.parent / "st.npz") as per_vertex:
        assert sorted(per_vertex.files) == sorted(stats.vertex)
        for key in per_vertex.files:
            assert np.array_equal(per_vertex[key], np.asarray(stats[key])), key
    # and both are SciPy's matrix reduced
    finite = np.isfinite(want)
    np.fill_diagonal(finite, False)
    assert stats["reachable_pairs"] == int(finite.sum())
    assert stats["diameter"] == pytest.approx(float(want[finite].max()), rel=2e-6)
    assert stats["sum_of_distances"] == pytest.approx(float(want[finite].sum()), rel=1e-5)


# ------------------------------------------------------------------ MPI
MPI_CASES = [("directed", 3), ("isolated", "n"), ("undirected-real", 3)]


@pytest.mark.mpi
@pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec (install the 'mpi' extra)")
@pytest.mark.parametrize("name, k", MPI_CASES, ids=[f"{n}-k{k}" for n, k in MPI_CASES])
def test_three_ranks_write_what_one_process_writes(graphs, tmp_path, name, k):
    graph, path, want, integer = graphs[name]
    k = resolve_k(k, graph)
    one = cli_solve(path, tmp_path / "one.npy", "-k", k)
    three = cli_solve(path, tmp_path / "three.npy", "-k", k, ranks=3)
    assert one.dtype == three.dtype and np.array_equal(one, three)
    check_against_scipy(three, want, integer)


# ------------------------------------------------------------------ plans
def test_plan_gives_the_same_result_and_survives_saving(graphs, tmp_path):
    graph, path, want, integer = graphs["directed"]
    plain = fastapsp.solve(graph, k=3, backend="numpy")
    p = fastapsp.plan(graph, k=3, backend="numpy")
    assert p.k == 3 and isinstance(p.describe(), dict)
    assert np.array_equal(fastapsp.solve(graph, plan=p), plain)
    saved = tmp_path / "plan.npz"
    p.save(saved, graph)
    loaded = fastapsp.load_plan(saved, graph, backend="numpy")
    assert loaded.k == 3
    assert np.array_equal(loaded.partition.labels, p.partition.labels)
    assert np.array_equal(fastapsp.solve(graph, plan=loaded), plain)
    assert np.array_equal(fastapsp.solve(graph, plan=str(saved), backend="numpy"), plain)  # the path itself
    check_against_scipy(plain, want, integer)
    # the command line takes the library's plan file: same partition, same numbers
    report = tmp_path / "r.json"
    cli = cli_solve(path, tmp_path / "d.npy", "--plan", saved, "--report", report)
    assert np.array_equal(cli, plain)
    assert json.loads(report.read_text())["k_choice"]["rule"] == "from the plan file"


def test_stats_with_a_plan(graphs):
    graph = graphs["undirected-real"][0]
    p = fastapsp.plan(graph, k=3, stats=True, backend="numpy")
    assert stats_json(fastapsp.stats(graph, plan=p)) == stats_json(fastapsp.stats(graph, k=3, backend="numpy"))


def test_plan_of_one_graph_is_refused_for_another(graphs, tmp_path):
    a, b = graphs["directed"][0], graphs["disconnected"][0]
    p = fastapsp.plan(a, k=3, backend="numpy")
    saved = tmp_path / "plan.npz"
    p.save(saved, a)
    with pytest.raises(ValueError, match="plan"):
        fastapsp.load_plan(saved, b)
    with pytest.raises(ValueError, match="plan"):
        fastapsp.solve(b, plan=p)
    with pytest.raises(ValueError, match="plan"):
        fastapsp.solve(b, plan=str(saved), backend="numpy")
    with pytest.raises(ValueError, match="plan"):
        p.save(tmp_path / "other.npz", b)


def test_cli_plan_file_made_then_reused(graphs, tmp_path):
    graph, path, want, integer = graphs["disconnected"]
    plan_file = tmp_path / "plan.npz"
    first, second = tmp_path / "r1.json", tmp_path / "r2.json"
    d1 = cli_solve(path, tmp_path / "d1.npy", "-k", 3, "--plan", plan_file, "--report", first)
    assert plan_file.exists()
    assert json.loads(first.read_text())["k_choice"]["rule"] == "given"
    d2 = cli_solve(path, tmp_path / "d2.npy", "--plan", plan_file, "--report", second)
    report = json.loads(second.read_text())
    assert report["k_choice"]["rule"] == "from the plan file" and report["k"] == 3
    assert np.array_equal(d1, d2)
    check_against_scipy(d2, want, integer)
    # the library reads the command line's plan file: the same partition and numbers
    loaded = fastapsp.load_plan(plan_file, graph, backend="numpy")
    assert np.array_equal(fastapsp.solve(graph, plan=loaded), d1)


def test_cli_plan_file_with_another_k_is_refused(graphs, tmp_path):
    path = graphs["directed"][1]
    plan_file = tmp_path / "plan.npz"
    cli_solve(path, tmp_path / "d.npy", "-k", 3, "--plan", plan_file)
    out = tmp_path / "d5.npy"
    proc = run_cli("solve", path, "-k", 5, "--backend", "numpy", "--plan", plan_file, "--output", out)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fastapsp: error") and "plan" in lines[0], proc.stderr
    assert not out.exists()


def test_dry_run_prints_the_plan(graphs):
    path = graphs["directed"][1]
    proc = run_cli("solve", path, "-k", 3, "--backend", "numpy", "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert any(line.startswith("plan:") for line in proc.stdout.splitlines()), proc.stdout


def test_device_output_needs_the_cupy_backend(graphs):
    # No GPU needed: the numpy backend never gives a device array.
    with pytest.raises(ValueError, match="output"):
        fastapsp.solve(graphs["directed"][0], k=3, backend="numpy", output="device")


# ------------------------------------------------------------------ GPU
@pytest.fixture
def cupy():
    if not _cupy_usable():
        pytest.skip("CuPy with a visible CUDA device is not available")
    import cupy

    return cupy


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["directed", "undirected-real", "isolated"])
def test_device_output_equals_the_numpy_path(graphs, cupy, name):
    graph, path, want, integer = graphs[name]
    on_device = fastapsp.solve(graph, k=3, backend="cupy", output="device")
    assert isinstance(on_device, cupy.ndarray)
    on_host = fastapsp.solve(graph, k=3, backend="numpy")
    assert on_device.dtype == on_host.dtype
    if integer:
        assert np.array_equal(on_device.get(), on_host)
    else:  # real weights: float32 sums on another device, same infs
        np.testing.assert_allclose(on_device.get(), on_host, rtol=2e-6, atol=0)
    check_against_scipy(on_device.get(), want, integer)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["directed", "disconnected", "directed-200"])
def test_cupyx_shortest_path_equals_scipy(graphs, cupy, name):
    import cupyx.scipy.sparse as cupyx_sparse

    graph, path, want, integer = graphs[name]
    got = fastapsp.shortest_path(cupyx_sparse.csr_matrix(graph.to_scipy()))
    assert isinstance(got, cupy.ndarray) and got.dtype == np.float64
    np.testing.assert_array_equal(got.get(), scipy_shortest_path(graph.to_scipy()))


@pytest.mark.gpu
@pytest.mark.parametrize("method", ["frontier", "boundary-graph"])
def test_device_output_of_sources_predecessors_and_widened_rows(graphs, cupy, method):
    """Rows in the order asked (repeats too), predecessors beside them, a float64 result from a float32 run
    and 16-bit rows: all on the device, equal to the host path."""
    graph, path, want, integer = graphs["directed-200"]
    asked = [17, 3, 3, 150, 0]
    rows = fastapsp.solve(graph, k=5, backend="cupy", output="device", sources=asked, sssp_method=method,
                          sources_method="pipeline")
    assert isinstance(rows, cupy.ndarray) and rows.shape == (5, graph.n)
    np.testing.assert_array_equal(rows.get(), want[asked])
    wide = fastapsp.solve(graph, k=5, backend="cupy", output="device", sssp_method=method, result_dtype="float64")
    assert wide.dtype == np.float64 and np.array_equal(wide.get(), want)
    dist, pred = fastapsp.solve(graph, k=5, backend="cupy", output="device", return_predecessors=True)
    assert isinstance(dist, cupy.ndarray) and isinstance(pred, cupy.ndarray)
    dist, pred = dist.get(), pred.get()
    np.testing.assert_array_equal(dist, want)
    # Every predecessor closes a shortest path (ties may pick another one than the host's).
    weight = np.full((graph.n, graph.n), np.inf)
    src, dst, w = graph.arcs()
    np.minimum.at(weight, (src, dst), w)
    s, t = np.nonzero(np.isfinite(dist) & ~np.eye(graph.n, dtype=bool))
    before = pred[s, t]
    assert np.all(before >= 0)
    np.testing.assert_array_equal(dist[s, before] + weight[before, t], dist[s, t])
    unit = random_graph(np.random.default_rng(11), 120, 400, directed=True, weighted=False)
    small = fastapsp.solve(unit, k=4, backend="cupy", output="device", dtype="uint16")
    reference = scipy_shortest_path(unit.to_scipy())
    expected = np.where(np.isinf(reference), 65535, reference).astype(np.uint16)
    assert small.dtype == np.uint16 and np.array_equal(small.get(), expected)


@pytest.mark.gpu
def test_device_allocation_in_the_background(cupy):
    """The device result is allocated in a thread on the device and stream current where it was asked for;
    a failed allocation is raised where the array is wanted, and nothing is left behind."""
    from fastapsp.sink import DeviceAllocation, DeviceSink

    stream = cupy.cuda.Stream()
    with stream:
        allocation = DeviceAllocation((7, 5), np.float32)
        array = allocation.array()
    assert isinstance(array, cupy.ndarray) and array.shape == (7, 5) and array.dtype == np.float32
    assert array.device.id == cupy.cuda.Device().id
    assert allocation.matches((7, 5), "float32") and not allocation.matches((5, 7), "float32")
    sink = DeviceSink(5, np.float32, rows=7, allocation=allocation)
    assert sink.result is array  # the allocation started for this shape is the one used
    other = DeviceSink(5, np.float64, rows=7, allocation=allocation)
    assert other.result.dtype == np.float64  # another dtype: allocated anew
    huge = DeviceAllocation((1 << 20, 1 << 20), np.float64)  # 8 TiB
    with pytest.raises(MemoryError):
        huge.array()
    huge.release()


@pytest.mark.gpu
def test_device_output_started_while_the_plan_is_made(graphs, cupy):
    """Without a plan, the result's allocation starts inside make_plan (the output size known) and the run
    writes into that very array; with a reused plan, the executor starts it."""
    import fastapsp.sink as sink_module

    graph, path, want, integer = graphs["directed-200"]
    made = []
    original = sink_module.DeviceAllocation

    class Recorded(original):
        def __init__(self, shape, dtype):
            super().__init__(shape, dtype)
            made.append(self)

    sink_module.DeviceAllocation = Recorded
    try:
        got = fastapsp.solve(graph, k=5, backend="cupy", output="device")
        assert len(made) == 1 and got is made[0].array()
        plan = fastapsp.plan(graph, k=5, backend="cupy", output="device")
        assert len(made) == 1  # a plan alone allocates nothing
        again = fastapsp.solve(graph, plan=plan)
        assert len(made) == 2 and again is made[1].array()
    finally:
        sink_module.DeviceAllocation = original
    np.testing.assert_array_equal(got.get(), want)
    np.testing.assert_array_equal(again.get(), want)


@pytest.mark.gpu
@pytest.mark.parametrize("method", ["frontier", "boundary-graph"])
@pytest.mark.parametrize("name", ["directed-200", "undirected-real", "isolated"])
def test_device_result_rows_made_where_they_lie(graphs, cupy, method, name):
    """A float32 run into a float32 device result makes each component's rows in the result itself (no
    row block, no write stage): the same numbers as the host path, by both boundary-row methods."""
    from fastapsp.sink import DeviceSink

    graph, path, want, integer = graphs[name]
    taken = []
    original = DeviceSink.direct

    def direct(self, dtype):
        array = original(self, dtype)
        taken.append(array is not None)
        return array

    DeviceSink.direct = direct
    try:
        got = fastapsp.solve(graph, k=5, backend="cupy", output="device", sssp_method=method, dtype="float32")
    finally:
        DeviceSink.direct = original
    assert taken and all(taken) and got.dtype == np.float32
    on_host = fastapsp.solve(graph, k=5, backend="numpy", sssp_method=method, dtype="float32")
    if integer:
        np.testing.assert_array_equal(got.get(), on_host)
    else:  # real weights: float32 sums on another device, same infs
        np.testing.assert_allclose(got.get(), on_host, rtol=2e-6, atol=0)
