"""The whole pipeline on the GPU gives exactly the NumPy result (integer weights)."""

import numpy as np
import pytest
from scipy.sparse.csgraph import shortest_path

import fastapsp
from cli_util import DATA, run_cli
from fastapsp.backend import gpu_count
from fastapsp.graph import Graph

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(gpu_count() == 0, reason="no CUDA GPU visible")]


def random_graph(seed, n, m, *, directed, zero=False):
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    if n > 3:  # vertices of the last third reach only each other: unreachable pairs
        tail = src >= 2 * n // 3
        dst[tail] = rng.integers(2 * n // 3, n, int(tail.sum()))
    w = rng.integers(0 if zero else 1, 10, m).astype(float)
    return Graph.from_edges(n, src, dst, w, directed=directed)


@pytest.mark.parametrize("directed", [True, False])
@pytest.mark.parametrize("k", [1, 3, 8])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gpu_solve_equals_numpy(directed, k, dtype):
    graph = random_graph(k, 700, 2500, directed=directed, zero=True)
    gpu = fastapsp.solve(graph, k=k, backend="cupy", dtype=dtype)
    cpu = fastapsp.solve(graph, k=k, backend="numpy", dtype=dtype)
    np.testing.assert_array_equal(gpu, cpu)
    np.testing.assert_array_equal(gpu, shortest_path(graph.to_scipy(), method="D").astype(dtype))


def test_gpu_unit_weights_road_graph():
    graph = fastapsp.read_graph(DATA / "minnesota.mtx.gz")
    gpu = fastapsp.solve(graph, k=8, backend="cupy", dtype="float32")
    np.testing.assert_array_equal(gpu, shortest_path(graph.to_scipy(), method="D").astype(np.float32))


def test_gpu_column_chunks():
    from fastapsp.partition import partition_graph
    from fastapsp.components import run_components
    from fastapsp.sink import MemorySink

    graph = random_graph(11, 500, 1800, directed=True)
    part = partition_graph(graph, 4)
    sink = MemorySink(graph.n, np.float32)
    run_components(graph, part, range(4), backend="cupy", sink=sink, dtype=np.float32, block_bytes=20_000)
    np.testing.assert_array_equal(sink.result, shortest_path(graph.to_scipy(), method="D").astype(np.float32))


def test_gpu_cli_writes_the_numpy_file(tmp_path):
    outs = {}
    for backend in ("numpy", "cupy"):
        outs[backend] = tmp_path / f"{backend}.npy"
        proc = run_cli("solve", DATA / "minnesota.mtx.gz", "-k", 6, "--backend", backend, "--output", outs[backend])
        assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(outs["cupy"]), np.load(outs["numpy"]))


_IMPORTS_AFTER_A_SOLVE = """
import sys
from fastapsp.cli import main
status = main(sys.argv[1:])
# ``import cupy`` leaves a lazy ``cupyx`` module in sys.modules; loading it imports its submodules.
print("imported:", " ".join(sorted(name for name in sys.modules
                                   if name.startswith("cupyx.") or name == "scipy.sparse")))
sys.exit(status)
"""


@pytest.mark.parametrize("options", [[], ["--partitioner", "jet"], ["--stats", "OUT"], ["--output", "OUT"],
                                     ["--output", "OUT", "--predecessors"], ["--sources", "0:40"],
                                     ["--sssp-method", "frontier"], ["--dtype", "float64"], ["--partitioner", "jet+b"]],
                         ids=["defaults", "jet", "stats", "file", "predecessors", "sources", "frontier", "float64",
                              "refined"])
def test_a_gpu_solve_loads_neither_cupyx_nor_scipy_sparse(options, tmp_path):
    """CuPy loads ``cupyx`` (and with it SciPy's sparse module, a few tenths of a second holding the
    interpreter lock) on the first operator between an array and a scalar; a GPU run makes none.

    The boundary refinement (``jet+b``) uses SciPy's sparse graphs on the host itself (its
    minimum cuts), so there only ``cupyx`` is checked.
    """
    import subprocess
    import sys

    from cli_util import cli_env

    options = [str(tmp_path / "d.npy") if option == "OUT" else option for option in options]
    if "--output" not in options and "--stats" not in options:
        options += ["--output", "none"]
    proc = subprocess.run([sys.executable, "-c", _IMPORTS_AFTER_A_SOLVE, "solve", str(DATA / "minnesota.mtx.gz"),
                           "-k", "6", "--backend", "cupy", "--quiet", *options],
                          capture_output=True, text=True, timeout=180, env=cli_env())
    assert proc.returncode == 0, proc.stderr
    loaded = proc.stdout.splitlines()[-1].split()[1:]
    if "jet+b" in options:
        loaded = [name for name in loaded if name != "scipy.sparse"]
    assert loaded == [], proc.stdout


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_count_values_on_the_device_is_bincount(dtype):
    import cupy

    from fastapsp.graph import count_values

    values = np.random.default_rng(3).integers(0, 50, 10_000).astype(dtype)
    for length in (50, 64):
        got = count_values(cupy, cupy.asarray(values), length)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(cupy.asnumpy(got), np.bincount(values, minlength=length))
    assert count_values(cupy, cupy.zeros(0, dtype=dtype), 3).tolist() == [0, 0, 0]
