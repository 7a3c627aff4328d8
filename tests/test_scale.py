"""Scale limits: results past 2**31 elements and files past 2 GiB use 64-bit offsets everywhere."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from cli_util import find_mpiexec, run_cli
from fastapsp.comm import SerialComm
from fastapsp.graph import Graph, index_dtype
from fastapsp.io import read_graph
from fastapsp.sink import NpySink, check_result


def free_bytes(path) -> int:
    return shutil.disk_usage(path).free


def test_tiny_block_at_a_huge_offset(tmp_path):
    # 50,000 x 50,000 float32 is 10 GB: the file is sparse, only two small blocks are written,
    # one past element 2**31 and byte 2**33.
    n = 50_000
    path = tmp_path / "huge.npy"
    sink = NpySink(path, n, np.float32, comm=SerialComm())
    sink.write(np.array([n - 1, 46_341]), n - 7, np.arange(14, dtype=np.float32).reshape(2, 7))
    sink.write(np.array([3]), 0, np.full((1, 5), 2.5, dtype=np.float32))
    sink.commit()
    d = np.load(path, mmap_mode="r")
    assert d.shape == (n, n) and d.dtype == np.float32
    assert (n - 1) * n + n - 7 > 2**31
    np.testing.assert_array_equal(d[n - 1, n - 7:], np.arange(7))
    np.testing.assert_array_equal(d[46_341, n - 7:], np.arange(7, 14))
    np.testing.assert_array_equal(d[3, :5], 2.5)
    assert check_result(path)["n"] == n


def test_many_isolated_vertices_reach_past_2_31_cells(tmp_path):
    # n^2 = 2.5e9 > 2**31 cells; only the CSR and the partition are built, no result is stored.
    n = 50_000
    path = tmp_path / "isolated.gr"
    path.write_text(f"p sp {n} 2\na 1 {n} 5\na {n} 1 7\n")
    g = read_graph(path)
    assert g.n == n and g.n**2 > 2**31 and g.indptr.dtype == np.int32
    assert g.indptr[-1] == 2 and g.degrees()[n - 1] == 1


def test_index_dtype_goes_64_bit():
    assert index_dtype(10, 2**31 - 2) == np.int32
    assert index_dtype(10, 2**31) == np.int64
    assert index_dtype(2**31, 10) == np.int64
    # int64 CSR arrays are accepted and keep their type through the graph.
    g = Graph(np.array([0, 1, 1], dtype=np.int64), np.array([1], dtype=np.int64), np.ones(1), True)
    assert g.arcs()[0].dtype == np.int64


@pytest.mark.mpi
@pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec")
def test_output_past_2_gib_written_by_several_ranks(tmp_path):
    # 23,200^2 float32 cells are 2.15 GB (> 2**31 bytes); pairs (2i, 2i + 1) joined by an
    # edge of weight 3, components of 116 vertices that keep every pair together.
    n = 23_200
    if free_bytes(tmp_path) < 3 * n * n * 4:
        pytest.skip("not enough free disk for a 2.15 GB result")
    graph = tmp_path / "pairs.mtx"
    lines = [f"{2 * i + 2} {2 * i + 1} 3" for i in range(n // 2)]
    graph.write_text("%%MatrixMarket matrix coordinate integer symmetric\n"
                     f"{n} {n} {n // 2}\n" + "\n".join(lines) + "\n")
    labels = tmp_path / "labels.npy"
    np.save(labels, (np.arange(n) // 116).astype(np.int32))
    out = tmp_path / "d.npy"
    proc = run_cli("solve", graph, "--partition-file", labels, "--output", out, "--backend", "numpy",
                   ranks=3, timeout=600)
    assert proc.returncode == 0, proc.stderr
    d = np.load(out, mmap_mode="r")
    assert d.shape == (n, n) and d.dtype == np.float32 and d.nbytes > 2**31
    rows = np.arange(n)
    assert np.all(d[rows, rows] == 0)
    assert np.all(d[rows, rows ^ 1] == 3)
    for start in range(0, n, 2_000):  # every other cell is unreachable: inf
        block = np.array(d[start : start + 2_000])
        r = np.arange(start, start + block.shape[0])
        block[r - start, r] = np.inf
        block[r - start, r ^ 1] = np.inf
        assert np.all(np.isinf(block)), start
    assert check_result(out)["bytes"] > 2**31
