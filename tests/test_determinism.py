"""Determinism: the same input and options give bit-identical output across ranks and runs."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from cli_util import DATA, find_mpiexec, run_cli

def real_weight_graph(tmp_path):
    """A seeded 1,500-vertex directed graph with real weights: a change of summation order would show."""
    rng = np.random.default_rng(8)
    n, m = 1500, 6000
    src, dst = rng.integers(1, n + 1, m), rng.integers(1, n + 1, m)
    w = rng.random(m) * 10
    path = tmp_path / "real.mtx"
    body = "\n".join(f"{a} {b} {x!r}" for a, b, x in zip(src.tolist(), dst.tolist(), w.tolist()))
    path.write_text(f"%%MatrixMarket matrix coordinate real general\n{n} {n} {m}\n{body}\n")
    return path


def digest(path) -> str:
    return hashlib.sha256(np.load(path).tobytes()).hexdigest()


def solve(tmp_path, name, *extra, ranks=None):
    out = tmp_path / name
    proc = run_cli("solve", real_weight_graph(tmp_path), "-k", 7, "--output", out, *extra, ranks=ranks,
                   timeout=300)
    assert proc.returncode == 0, proc.stderr
    return digest(out)


@pytest.mark.mpi
@pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_bit_identical_across_1_2_3_ranks_and_runs_numpy(tmp_path, dtype):
    opts = ("--backend", "numpy", "--dtype", dtype)
    first = solve(tmp_path, "serial.npy", *opts)
    assert solve(tmp_path, "again.npy", *opts) == first
    for ranks in (1, 2, 3):
        assert solve(tmp_path, f"r{ranks}.npy", *opts, ranks=ranks) == first, ranks


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_bit_identical_across_ranks_and_runs_cupy(tmp_path, dtype):
    from conftest import _cupy_usable

    if not _cupy_usable():
        pytest.skip("CuPy with a visible CUDA device is not available")
    opts = ("--backend", "cupy", "--dtype", dtype)
    first = solve(tmp_path, "serial.npy", *opts)
    assert solve(tmp_path, "again.npy", *opts) == first
    if find_mpiexec() is not None:
        for ranks in (2, 3):
            assert solve(tmp_path, f"r{ranks}.npy", *opts, ranks=ranks) == first, ranks
    # The device gives the same bits as the host for whole-number inputs (exact either way).
    minnesota = tmp_path / "host.npy"
    device = tmp_path / "device.npy"
    for backend, out in (("numpy", minnesota), ("cupy", device)):
        proc = run_cli("solve", DATA / "minnesota.mtx.gz", "-k", 6, "--output", out, "--backend", backend,
                       "--dtype", dtype, timeout=300)
        assert proc.returncode == 0, proc.stderr
    assert digest(minnesota) == digest(device)
