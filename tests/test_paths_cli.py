"""--predecessors and ``fastapsp path``: files beside the output, every path checked arc by arc."""

import numpy as np
import pytest

import fastapsp
from cli_util import DATA, find_mpiexec, run_cli
from fastapsp.backend import gpu_count
from fastapsp.paths import reconstruct_path

MINNESOTA = DATA / "minnesota.mtx.gz"


def assert_shortest_paths(graph, dist, pred, rows, targets):
    weights = graph.to_scipy().tocsr()
    for i, s in enumerate(rows):
        for t in targets:
            path = reconstruct_path(pred, int(s), int(t), sources=rows)
            if not np.isfinite(dist[i, t]):
                assert path == []
                continue
            assert path[0] == s and path[-1] == t
            assert all(weights[u, v] != 0 or v in weights[u].indices for u, v in zip(path, path[1:]))
            length = sum(weights[u, v] for u, v in zip(path, path[1:]))
            assert length == pytest.approx(float(dist[i, t]), rel=1e-6)


GPU = pytest.param("cupy", marks=[pytest.mark.gpu, pytest.mark.skipif(gpu_count() == 0, reason="no CUDA GPU")])


@pytest.mark.parametrize("backend", ["numpy", GPU])
@pytest.mark.parametrize("sources", [None, "random:12:5", "random:300:2"])
def test_predecessor_file_and_path_command(tmp_path, sources, backend):
    out = tmp_path / "d.npy"
    extra = [] if sources is None else ["--sources", sources]
    proc = run_cli("solve", MINNESOTA, "-k", 4, "--backend", backend, "--output", out, "--predecessors", *extra)
    assert proc.returncode == 0, proc.stderr
    dist, pred = np.load(out), np.load(tmp_path / "d.predecessors.npy")
    assert pred.dtype == np.int32 and pred.shape == dist.shape
    graph = fastapsp.read_graph(MINNESOTA)
    rows = np.arange(graph.n) if sources is None else np.load(tmp_path / "d.sources.npy")
    targets = np.random.default_rng(0).choice(graph.n, 40, replace=False)
    pick = slice(None) if sources else slice(0, graph.n, 97)
    assert_shortest_paths(graph, dist[pick], pred[pick], rows[pick], targets)
    s, t = int(rows[1]), int(targets[0])
    proc = run_cli("path", out, s, t)
    assert proc.returncode == 0, proc.stderr
    line = proc.stdout.strip()
    i = int(np.flatnonzero(rows == s)[0])
    assert line.split(" (")[0].split() == [str(v) for v in reconstruct_path(pred, s, t, sources=rows)]
    assert f"length {dist[i, t]:g}" in line


def test_path_command_errors(tmp_path):
    for args, fragment in [((tmp_path / "none.npy", 0, 1), "none.npy"), ((tmp_path / "x.txt", 0, 1), "x.txt")]:
        proc = run_cli("path", *args)
        assert proc.returncode != 0 and "Traceback" not in proc.stderr and fragment in proc.stderr
    out = tmp_path / "d.npy"
    assert run_cli("solve", MINNESOTA, "-k", 2, "--backend", "numpy", "--output", out).returncode == 0
    proc = run_cli("path", out, 0, 1)
    assert proc.returncode != 0 and "--predecessors" in proc.stderr


def test_predecessors_need_a_file_output():
    proc = run_cli("solve", MINNESOTA, "-k", 2, "--predecessors")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr and "predecessors" in proc.stderr


@pytest.mark.mpi
@pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec (install the 'mpi' extra)")
def test_predecessors_under_two_ranks(tmp_path):
    """Each rank writes the predecessors of its own rows into the one file."""
    out = tmp_path / "d.npy"
    proc = run_cli("solve", MINNESOTA, "-k", 5, "--backend", "numpy", "--output", out, "--predecessors", ranks=2)
    assert proc.returncode == 0, proc.stderr
    dist, pred = np.load(out), np.load(tmp_path / "d.predecessors.npy")
    graph = fastapsp.read_graph(MINNESOTA)
    targets = np.random.default_rng(1).choice(graph.n, 30, replace=False)
    rows = np.arange(graph.n)
    assert_shortest_paths(graph, dist[::53], pred[::53], rows[::53], targets)
