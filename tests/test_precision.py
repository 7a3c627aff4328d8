"""Numeric honesty: the distance dtype is chosen so that whole-number distances stay exact."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from cli_util import run_cli
from fastapsp.errors import PrecisionWarning
from fastapsp.graph import Graph
from fastapsp.options import SolveOptions
from fastapsp.pipeline import solve_job
from fastapsp.comm import SerialComm
from fastapsp.precision import choose_dtype, distance_bound, path_bound
from conftest import random_graph, reference_apsp


def path_graph(weights, name="path"):
    n = len(weights) + 1
    return Graph.from_edges(n, np.arange(n - 1), np.arange(1, n), np.asarray(weights, float), directed=True,
                            name=name)


def test_bound_is_an_upper_bound_and_cheap_to_tighten():
    g = path_graph([3, 4, 5])
    assert distance_bound(g) == 12  # the sum of all weights beats (n - 1) * max = 15
    star = Graph.from_edges(4, [0, 0, 0], [1, 2, 3], [1.0, 1.0, 100.0], directed=False)
    assert distance_bound(star) >= 101  # 1 -> 0 -> 3 is the longest shortest path


@pytest.mark.parametrize("directed, m, zeros", [(False, 260, False), (False, 120, True), (True, 700, False),
                                               (True, 200, False)])
def test_path_bound_is_an_upper_bound(directed, m, zeros):
    """Undirected (connected or not, zero weights too), directed strongly connected and not."""
    rng = np.random.default_rng(m)
    g = random_graph(rng, 150, m, directed=directed, weighted=True)
    w = np.rint(g.weights * 50)
    if zeros:
        w[rng.random(w.size) < 0.3] = 0.0
    g = Graph(g.indptr, g.indices, w, directed=directed)
    d = reference_apsp(g)
    largest = d[np.isfinite(d)].max()
    assert largest <= path_bound(g) <= distance_bound(g)
    # Asked only to prove a tiny bound, the searches give up early: what they return still bounds.
    assert largest <= path_bound(g, enough=1.0) <= distance_bound(g)


def test_loose_bound_tightened_keeps_float32():
    """A grid with whole weights up to 1000: the weight sum passes 2**24, the distances stay far below."""
    side = 200
    ids = np.arange(side * side).reshape(side, side)
    src = np.concatenate([ids[:, :-1].ravel(), ids[:-1, :].ravel()])
    dst = np.concatenate([ids[:, 1:].ravel(), ids[1:, :].ravel()])
    w = np.random.default_rng(0).integers(1, 1001, src.size).astype(float)
    g = Graph.from_edges(side * side, src, dst, w, directed=False)
    assert distance_bound(g) > 2**24
    choice = choose_dtype(g)
    assert choice.dtype == "float32" and choice.bound <= 2 * 2 * side * 1000


@pytest.mark.parametrize("weights, requested, dtype, warns", [
    ([1, 2, 3], None, "float32", False),             # small whole numbers: float32 is exact
    ([2**23, 2**23], None, "float32", False),        # exactly 2**24 still fits
    ([2**24, 1], None, "float64", False),            # 16,777,217 would round in float32
    ([2**24, 1], "auto", "float64", False),
    ([2**24, 1], "float32", "float32", True),        # asked for: kept, with a warning
    ([2**24, 1], "float64", "float64", False),
    ([0.1, 0.2], None, "float32", False),            # real weights: float32, the reason says it rounds
    ([2**52, 2**52, 1], None, "float64", True),      # past 2**53 even float64 rounds
    ([1e38, 1e38, 1e38, 1e38], None, "float64", True),  # would overflow float32; as whole numbers > 2**53
    ([1e38, 1e38, 1e38, 1e38], "float32", "float32", True),
    ([1e308, 1e308], None, "float64", True),         # could overflow float64 itself
])
def test_choose_dtype(weights, requested, dtype, warns):
    choice = choose_dtype(path_graph(weights), requested)
    assert choice.dtype == dtype
    assert (choice.warning is not None) == warns, choice
    assert choice.reason


def test_real_weights_reason_says_float32_rounds():
    assert "rounds" in choose_dtype(path_graph([0.1, 0.25])).reason


def test_bad_dtype_name():
    with pytest.raises(ValueError, match="dtype: 'float16'"):
        choose_dtype(path_graph([1]), "float16")


def write_big(tmp_path):
    # 16,777,216 + 1 = 16,777,217 = 2**24 + 1: float32 cannot hold it.
    path = tmp_path / "big.mtx"
    path.write_text("%%MatrixMarket matrix coordinate integer general\n3 3 2\n1 2 16777216\n2 3 1\n")
    return path


def test_solve_job_picks_float64_and_reports_why(tmp_path):
    lines = []
    opts = SolveOptions(graph=str(write_big(tmp_path)), k=1, backend="numpy", output="memory")
    report, sink = solve_job(opts, comm=SerialComm(), log=lines.append)
    assert report["dtype"] == "float64" and "2**24" in report["dtype_reason"]
    assert sink.result.dtype == np.float64 and sink.result[0, 2] == 16777217
    assert len(lines) == 1 and lines[0].startswith("note: float64 chosen")


def test_solve_job_explicit_float32_warns(tmp_path):
    opts = SolveOptions(graph=str(write_big(tmp_path)), k=1, backend="numpy", output="memory", dtype="float32")
    with pytest.warns(PrecisionWarning, match="rounds"):
        report, sink = solve_job(opts, comm=SerialComm())
    assert report["dtype"] == "float32" and sink.result.dtype == np.float32


def test_solve_job_small_weights_stay_float32_quietly(tmp_path):
    path = tmp_path / "small.mtx"
    path.write_text("%%MatrixMarket matrix coordinate integer general\n3 3 2\n1 2 5\n2 3 1\n")
    lines = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report, _ = solve_job(SolveOptions(graph=str(path), k=1, backend="numpy"), comm=SerialComm(),
                              log=lines.append)
    assert report["dtype"] == "float32" and lines == []


def test_cli_exact_answer_and_one_note(tmp_path):
    out, rep = tmp_path / "d.npy", tmp_path / "r.json"
    proc = run_cli("solve", write_big(tmp_path), "-k", 1, "--output", out, "--report", rep, "--backend", "numpy")
    assert proc.returncode == 0, proc.stderr
    d = np.load(out)
    assert d.dtype == np.float64 and d[0, 2] == 16777217
    notes = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(notes) == 1 and notes[0].startswith("fastapsp: note: float64 chosen"), proc.stderr
    data = json.loads(rep.read_text())
    assert data["dtype"] == "float64" and "2**24" in data["dtype_reason"]


def test_cli_explicit_float32_warns_in_one_line(tmp_path):
    out = tmp_path / "d.npy"
    proc = run_cli("solve", write_big(tmp_path), "-k", 1, "--output", out, "--dtype", "float32",
                   "--backend", "numpy")
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("fastapsp: warning:") and "float32" in lines[0], proc.stderr
    assert np.load(out)[0, 2] == 16777216  # the rounding the warning announced


# ------------------------------------------------------------- Python API
def test_api_solve_defaults_to_auto_like_the_cli(tmp_path):
    import fastapsp

    big = fastapsp.read_graph(write_big(tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # auto picks float64 quietly, as the CLI does (its note aside)
        d = fastapsp.solve(big, k=1, backend="numpy")
    assert d.dtype == np.float64 and d[0, 2] == 16777217
    small = path_graph([5, 1])
    assert fastapsp.solve(small, k=1, backend="numpy").dtype == np.float32
    assert fastapsp.solve(small, k=1, backend="numpy", dtype="float64").dtype == np.float64
    real = path_graph([0.1, 0.25])
    assert fastapsp.solve(real, k=1, backend="numpy", dtype="auto").dtype == np.float32
    for graph in (big, small, real):  # the same rule as the command line's --dtype auto
        assert str(fastapsp.solve(graph, k=1, backend="numpy").dtype) == choose_dtype(graph).dtype
    assert fastapsp.solve(big, k=1, backend="numpy", sources=[0]).dtype == np.float64


def test_api_solve_explicit_float32_warns_and_bad_names_fail(tmp_path):
    import fastapsp

    big = fastapsp.read_graph(write_big(tmp_path))
    with pytest.warns(PrecisionWarning, match="rounds") as caught:
        d = fastapsp.solve(big, k=1, backend="numpy", dtype=np.float32)
    assert d.dtype == np.float32 and d[0, 2] == 16777216
    assert caught[0].filename == __file__  # the warning points at the caller's line
    for bad in ("float16", "bogus", int):
        with pytest.raises(ValueError, match="is not one of auto, float32, float64"):
            fastapsp.solve(big, k=1, backend="numpy", dtype=bad)


def test_api_docs_state_the_auto_rule():
    import inspect

    import fastapsp

    assert inspect.signature(fastapsp.solve).parameters["dtype"].default == "auto"
    doc = fastapsp.solve.__doc__
    assert "``auto`` (the default" in doc and "2**24" in doc
