"""--verify N: sampled rows are recomputed with SciPy's Dijkstra; a wrong distance fails the run."""

import json

import numpy as np
import pytest
from conftest import random_graph

from cli_util import DATA, run_cli
from fastapsp.comm import SerialComm
from fastapsp.verify import RowSampler, VerificationError, pick_rows, verify_rows
from scipy.sparse.csgraph import dijkstra

MINNESOTA = DATA / "minnesota.mtx.gz"


@pytest.mark.parametrize("output", ["none", "file"])
def test_cli_verify_reports_rows(tmp_path, output):
    out = tmp_path / "d.npy" if output == "file" else "none"
    report = tmp_path / "r.json"
    proc = run_cli("solve", MINNESOTA, "-k", 5, "--backend", "numpy", "--verify", 7, "--output", out,
                   "--report", report)
    assert proc.returncode == 0, proc.stderr
    assert "verified 7 rows" in proc.stdout
    assert json.loads(report.read_text())["verified_rows"] == 7


def test_cli_verify_with_sources(tmp_path):
    proc = run_cli("solve", MINNESOTA, "-k", 5, "--backend", "numpy", "--sources", "0:4", "--verify", 10)
    assert proc.returncode == 0, proc.stderr
    assert "verified 4 rows" in proc.stdout  # only the 4 computed rows can be checked


def test_a_wrong_distance_fails():
    graph = random_graph(np.random.default_rng(1), 30, 90, directed=True, weighted=True)
    d = dijkstra(graph.to_scipy(), directed=True)
    rows = pick_rows(np.arange(graph.n), 5, seed=2)
    good, bad = RowSampler(rows, graph.n), RowSampler(rows, graph.n)
    for v in range(graph.n):  # rows arrive in two column chunks
        good(np.array([v]), 0, d[v : v + 1, :10])
        good(np.array([v]), 10, d[v : v + 1, 10:])
    assert verify_rows(graph, good, np.float64, comm=SerialComm())["verified_rows"] == 5
    wrong = d.copy()
    wrong[rows[2], 3] = 0.5 if wrong[rows[2], 3] != 0.5 else 1.5
    for v in range(graph.n):
        bad(np.array([v]), 0, wrong[v : v + 1])
    with pytest.raises(VerificationError, match=f"d\\({rows[2]}, 3\\)"):
        verify_rows(graph, bad, np.float64, comm=SerialComm())


def test_pick_rows():
    assert pick_rows(np.arange(10), 20).tolist() == list(range(10))
    picked = pick_rows(np.arange(100), 5, seed=3)
    assert picked.size == 5 and np.all(np.diff(picked) > 0)
    with pytest.raises(ValueError, match="verify"):
        pick_rows(np.arange(3), -1)


def test_negative_verify_is_refused():
    proc = run_cli("solve", MINNESOTA, "-k", 2, "--verify", -3)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr and "verify" in proc.stderr


def test_wrong_result_fails_the_run_and_leaves_no_output(tmp_path, monkeypatch):
    import fastapsp.components as components
    from fastapsp.options import SolveOptions
    from fastapsp.pipeline import solve_job

    real = components.assemble_row_block

    def broken(block, *args, **kwargs):
        out = real(block, *args, **kwargs)
        out[:, :] += 1.0  # every distance off by one
        return out

    monkeypatch.setattr(components, "assemble_row_block", broken)
    out = tmp_path / "d.npy"
    opts = SolveOptions(graph=str(MINNESOTA), k=3, backend="numpy", output=str(out), verify=3)
    with pytest.raises(VerificationError, match="SciPy"):
        solve_job(opts, comm=SerialComm())
    assert not out.exists() and not list(tmp_path.iterdir())
