"""--dtype uint16/uint8: equal to the float result on unweighted graphs, refused where distances may not fit."""

import numpy as np
import pytest
from conftest import random_graph, reference_apsp

from cli_util import DATA, run_cli
from fastapsp.errors import ConfigError
from fastapsp.graph import Graph
from fastapsp.precision import path_bound
from fastapsp.smalldist import check_small_dtype, sentinel, to_small

MINNESOTA = DATA / "minnesota.mtx.gz"  # unweighted (pattern), undirected


@pytest.mark.parametrize("dtype", ["uint16", "uint8"])
def test_small_dtype_equals_float_result(tmp_path, dtype):
    out, ref = tmp_path / "d.npy", tmp_path / "f.npy"
    args = ["solve", MINNESOTA, "-k", 4, "--backend", "numpy"]
    if dtype == "uint8":  # a directed unit graph with unreachable pairs
        graph_file = tmp_path / "g.mtx"
        g = random_graph(np.random.default_rng(1), 120, 300, directed=True, weighted=False)
        src, dst, _ = g.arcs()
        graph_file.write_text("%%MatrixMarket matrix coordinate pattern general\n"
                              f"{g.n} {g.n} {g.m}\n" + "".join(f"{u + 1} {v + 1}\n" for u, v in zip(src, dst)))
        args[1] = graph_file
    proc = run_cli(*args, "--dtype", dtype, "--output", out, "--verify", 5)
    assert proc.returncode == 0, proc.stderr
    assert run_cli(*args, "--dtype", "float32", "--output", ref).returncode == 0
    small, full = np.load(out), np.load(ref)
    assert small.dtype == np.dtype(dtype)
    assert (~np.isfinite(full)).any() or dtype == "uint16"
    np.testing.assert_array_equal(np.where(small == sentinel(dtype), np.inf, small.astype(np.float32)), full)


def test_refusals(tmp_path):
    long_path = tmp_path / "path.mtx"  # a path of 300 vertices: distances up to 299 do not fit uint8
    long_path.write_text("%%MatrixMarket matrix coordinate pattern symmetric\n300 300 299\n"
                         + "".join(f"{v + 1} {v}\n" for v in range(1, 300)))
    proc = run_cli("solve", long_path, "-k", 2, "--dtype", "uint8", "--output", tmp_path / "d.npy")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr and "uint8" in proc.stderr
    assert not (tmp_path / "d.npy").exists()
    weighted = tmp_path / "w.mtx"
    weighted.write_text("%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 2.5\n2 3 1\n")
    proc = run_cli("solve", weighted, "-k", 1, "--dtype", "uint16")
    assert proc.returncode != 0 and "unweighted" in proc.stderr


def test_distance_bound_is_an_upper_bound():
    for seed, directed in [(1, False), (2, True), (3, True)]:
        rng = np.random.default_rng(seed)
        g = random_graph(rng, 150, 330 if directed else 200, directed=directed, weighted=False)
        d = reference_apsp(g)
        assert path_bound(g) >= d[np.isfinite(d)].max()
    path = Graph.from_edges(300, np.arange(299), np.arange(1, 300), directed=False)
    assert 299 <= path_bound(path) <= 2 * 299
    with pytest.raises(ConfigError, match="uint8"):
        check_small_dtype(path, "uint8")
    check_small_dtype(path, "uint16")


def test_to_small():
    block = np.array([[0.0, 3.0, np.inf]], dtype=np.float32)
    assert to_small(block, "uint8").tolist() == [[0, 3, 255]]
    with pytest.raises(ConfigError, match="uint8"):
        to_small(np.array([[255.0]]), "uint8")
