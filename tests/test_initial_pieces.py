"""Jet's initial partition in pieces (``fastapsp.partition.initial``): the top bisections, then every piece
on its own, solved in this process, in forked workers or on the MPI ranks, always with the same labels.

This file is also the per-rank program (``python test_initial_pieces.py MODE OUT``).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cli_util import cli_env, find_mpiexec  # noqa: E402

pytest.importorskip("pymetis")

HERE = Path(__file__).resolve()
K = 160  # eight pieces of 20 parts


def _grid(side: int = 96, seed: int = 3):
    """A weighted grid of side**2 vertices with some diagonals: a coarse graph's shape and weights."""
    rng = np.random.default_rng(seed)
    ids = np.arange(side * side).reshape(side, side)
    pairs = [(ids[:, :-1], ids[:, 1:]), (ids[:-1, :], ids[1:, :]), (ids[:-1, :-1], ids[1:, 1:])]
    tails = np.concatenate([a.ravel() for a, _ in pairs])
    heads = np.concatenate([b.ravel() for _, b in pairs])
    keep = rng.random(tails.size) < 0.8
    tails, heads = tails[keep], heads[keep]
    weights = rng.integers(1, 20, tails.size)
    rows = np.concatenate([tails, heads])
    cols = np.concatenate([heads, tails])
    ew = np.concatenate([weights, weights])
    order = np.lexsort((cols, rows))
    rows, cols, ew = rows[order], cols[order], ew[order]
    indptr = np.zeros(side * side + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=side * side), out=indptr[1:])
    vw = rng.integers(1, 4, side * side)
    return indptr, cols.astype(np.int64), vw.astype(np.int64), ew.astype(np.int64)


def _cut(indptr, indices, ew, labels):
    rows = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
    return int(ew[labels[rows] != labels[indices]].sum()) // 2


def _labels(**kwargs):
    from fastapsp.partition.initial import initial_labels

    indptr, indices, vw, ew = _grid()
    return initial_labels(indptr, indices, K, seed=7, imbalance=0.03, vweights=vw, eweights=ew, **kwargs)


def _digest(labels) -> str:
    return hashlib.sha256(np.asarray(labels, dtype=np.int32).tobytes()).hexdigest()


def test_pieces_cut_about_as_well_as_one_metis_call():
    """Every part used, the cut within a tenth of METIS's recursive bisection into all parts, the
    heaviest part within the balance METIS's recursion keeps."""
    from fastapsp.partition.initial import piece_count
    from fastapsp.partition.metis import metis

    indptr, indices, vw, ew = _grid()
    assert piece_count(indptr.size - 1, K) == 8
    labels = _labels()
    assert labels.dtype == np.int32 and labels.min() == 0 and labels.max() == K - 1
    weights = np.bincount(labels, weights=vw, minlength=K)
    assert weights.min() > 0
    assert weights.max() <= 1.1 * vw.sum() / K
    whole = metis(indptr, indices, K, seed=7, imbalance=0.03, vweights=vw, eweights=ew, recursive=True)
    assert _cut(indptr, indices, ew, labels) <= 1.1 * _cut(indptr, indices, ew, whole)


def test_every_piece_keeps_its_own_parts():
    """Piece by piece the parts are consecutive label ranges: a part never spans two pieces, so
    the top bisections' sides are unions of parts (here: the first bisection's two sides)."""
    import fastapsp.partition.initial as initial

    seen = []

    def recording(tasks):
        seen.extend(int(t[4]) for t in tasks)
        return initial.solve_here(tasks)

    labels = _labels(solve=recording)
    assert len(seen) == 8 and sum(seen) == K
    ends = np.cumsum(seen)
    indptr, indices, _, _ = _grid()
    piece = np.searchsorted(ends, labels, side="right")  # the piece of every vertex's part
    assert set(np.unique(piece)) == set(range(8))
    rows = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
    # the pieces are bisections of the grid: far fewer arcs cross them than cross parts
    assert np.count_nonzero(piece[rows] != piece[indices]) < 0.3 * np.count_nonzero(labels[rows] != labels[indices])


def test_the_same_labels_in_forked_workers_or_in_this_process(monkeypatch):
    import fastapsp.partition.initial as initial
    from fastapsp.partition.workers import WORKERS_ENV

    monkeypatch.setattr(initial, "FORK_FROM", 0)
    monkeypatch.setenv(WORKERS_ENV, "1")
    alone = _labels()
    monkeypatch.setenv(WORKERS_ENV, "3")
    calls = []
    from fastapsp.partition import workers

    class Counting(workers.ForkedWorkers):
        def __init__(self, state, count, **kwargs):
            calls.append(count)
            super().__init__(state, count, **kwargs)

    monkeypatch.setattr(workers, "ForkedWorkers", Counting)
    forked = _labels()
    assert calls == [3]
    np.testing.assert_array_equal(alone, forked)


def test_a_rank_names_its_failing_piece_whoever_solved_it(monkeypatch):
    """A rank's share (``_answer``): a piece that raises is named, in workers as in the process; a worker that
    dies fails the share at its first piece, with what its pool saw."""
    import fastapsp.partition.initial as initial
    from fastapsp.partition.workers import WORKERS_ENV

    tasks = [(i, task) for i, task in zip((3, 5, 7), _tasks())]
    real = initial._solve
    monkeypatch.setattr(initial, "FORK_FROM", 0)
    for workers in ("1", "2"):
        monkeypatch.setenv(WORKERS_ENV, workers)

        def refusing(task, real=real):
            if task is tasks[1][1]:
                raise RuntimeError("no cut")
            return real(task)

        monkeypatch.setattr(initial, "_solve", refusing)
        results, failure = initial._answer(tasks)
        assert failure == (5, "RuntimeError: no cut") and [i for i, _ in results] == [3], workers

    def dying(task):
        os._exit(3)

    monkeypatch.setenv(WORKERS_ENV, "2")  # the pieces in forked workers: one of them dies
    monkeypatch.setattr(initial, "_solve", dying)
    results, failure = initial._answer(tasks)
    assert results == [] and failure[0] == 3 and "exited with code 3" in failure[1]


def _tasks():
    """Three pieces' tasks of the test grid (as initial_labels hands them to its helpers)."""
    handed = []

    def helpers(tasks):
        handed.extend(tasks)
        from fastapsp.partition.initial import solve_here

        return solve_here(tasks)

    _labels(solve=helpers)
    return handed[:3]


def test_a_small_coarsest_graph_is_one_metis_call():
    from fastapsp.partition.initial import initial_labels
    from fastapsp.partition.metis import metis

    indptr, indices, vw, ew = _grid(side=24)
    got = initial_labels(indptr, indices, 20, seed=7, imbalance=0.03, vweights=vw, eweights=ew,
                         solve=lambda tasks: pytest.fail("no pieces expected"))
    want = metis(indptr, indices, 20, seed=7, imbalance=0.03, vweights=vw, eweights=ew, recursive=True)
    np.testing.assert_array_equal(got, want)


def test_a_piece_with_no_more_vertices_than_parts_gets_one_part_each(capfd):
    """Heavy coarse vertices may leave a piece as many parts as vertices: each its own part, METIS not
    asked (it would print to stderr)."""
    from fastapsp.partition.initial import _solve

    indptr, indices = np.array([0, 1, 3, 4]), np.array([1, 0, 2, 1])
    labels = _solve((indptr, indices, np.array([5, 1, 9]), np.ones(4, dtype=np.int64), 4, 1, 0.03))
    assert labels.tolist() == [0, 1, 2] and labels.dtype == np.int32
    assert capfd.readouterr().err == ""


def test_jet_takes_the_pieces_helpers():
    """Jet's NumPy path hands its coarsest graph's pieces to the helpers it is given."""
    from fastapsp.partition.initial import solve_here
    from fastapsp.partition.jet import jet_partition

    indptr, indices, _, _ = _grid(side=128)
    handed = []

    def helpers(tasks):
        handed.append(len(tasks))
        return solve_here(tasks)

    with_helpers = jet_partition(indptr, indices, K, seed=5, imbalance=0.03, helpers=helpers)
    assert len(handed) == 1 and handed[0] >= 2  # one hand-over, of several pieces
    np.testing.assert_array_equal(with_helpers, jet_partition(indptr, indices, K, seed=5, imbalance=0.03))


# ------------------------------------------------------------------ under a launcher
def _rank_program(mode: str, out: str) -> None:
    from mpi4py import MPI

    import fastapsp.partition.initial as initial
    from fastapsp.comm import run_phase
    from fastapsp.partition.jet import jet_partition

    comm = MPI.COMM_WORLD
    pools = []
    if mode.endswith("forked"):  # every rank's share in forked workers (FASTAPSP_REFINE_WORKERS, set by the test)
        from fastapsp.partition import workers

        class Counting(workers.ForkedWorkers):
            def __init__(self, state, count, **kwargs):
                pools.append(count)
                super().__init__(state, count, **kwargs)

        workers.ForkedWorkers = Counting
        initial.FORK_FROM = 0
    if mode.startswith("fail") and comm.rank == comm.size - 1:  # the last rank's METIS fails on its pieces
        def failing(task):
            raise RuntimeError("METIS refused this piece")

        initial._solve = failing
    found = {}

    def on_rank0():
        with initial.RankHelpers(comm) as helpers:
            found["initial"] = _digest(_labels(solve=helpers))
            indptr, indices, _, _ = _grid(side=128)
            found["jet"] = _digest(jet_partition(indptr, indices, K, seed=5, imbalance=0.03, helpers=helpers))

    run_phase(comm, "partitioning", on_rank0 if comm.rank == 0 else (lambda: initial.serve(comm)))
    pools = comm.gather((len(os.sched_getaffinity(0)), pools))  # a launcher may bind a rank to one core
    if comm.rank == 0:
        found["pools"] = pools
        Path(out).write_text(json.dumps(found))


def _launch(ranks: int, mode: str, out: Path, **env):
    """The rank program under ``ranks`` ranks; ``env``: variables set, or removed where None."""
    mpiexec = find_mpiexec()
    if mpiexec is None:
        pytest.skip("no mpiexec (install the 'mpi' extra)")
    full = cli_env()
    for name, value in env.items():
        if value is None:
            full.pop(name, None)
        else:
            full[name] = value
    return subprocess.run([mpiexec, "-n", str(ranks), sys.executable, str(HERE), mode, str(out)],
                          capture_output=True, text=True, timeout=240, env=full)


@pytest.mark.mpi
@pytest.mark.parametrize("ranks", [2, 3])
def test_ranks_share_the_pieces_and_give_one_process_labels(tmp_path, ranks):
    from fastapsp.partition.jet import jet_partition

    out = tmp_path / "found.json"
    proc = _launch(ranks, "ok", out)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(out.read_text())
    indptr, indices, _, _ = _grid(side=128)
    found.pop("pools")
    assert found == {"initial": _digest(_labels()),
                     "jet": _digest(jet_partition(indptr, indices, K, seed=5, imbalance=0.03))}


@pytest.mark.mpi
@pytest.mark.parametrize("workers", ["3", None])
def test_each_rank_solves_its_pieces_in_forked_workers(tmp_path, workers):
    """A rank's share of the pieces goes to its forked workers, by default as with FASTAPSP_REFINE_WORKERS
    set (they only run METIS between the rank's MPI calls): the labels of one process still."""
    from fastapsp.partition.jet import jet_partition
    from fastapsp.partition.workers import WORKERS_ENV

    out = tmp_path / "found.json"
    proc = _launch(2, "forked", out, **{WORKERS_ENV: workers})
    assert proc.returncode == 0, proc.stderr
    found = json.loads(out.read_text())
    pools = found.pop("pools")
    assert len(pools) == 2 and all(counts for _, counts in pools), pools
    for cores, counts in pools:  # by default up to the cores a rank may use (one: none forked)
        assert min(counts) > 1 if workers or cores > 1 else counts == [1] * len(counts), pools
    indptr, indices, _, _ = _grid(side=128)
    assert found == {"initial": _digest(_labels()),
                     "jet": _digest(jet_partition(indptr, indices, K, seed=5, imbalance=0.03))}


@pytest.mark.mpi
def test_a_piece_failing_on_another_rank_fails_every_rank(tmp_path):
    out = tmp_path / "found.json"
    proc = _launch(3, "fail", out)
    assert proc.returncode != 0
    assert "the initial partition's piece" in proc.stderr and "on rank 2" in proc.stderr
    assert "METIS refused this piece" in proc.stderr
    assert not out.exists()


@pytest.mark.mpi
def test_a_piece_failing_in_a_forked_worker_fails_every_rank(tmp_path):
    from fastapsp.partition.workers import WORKERS_ENV

    out = tmp_path / "found.json"
    proc = _launch(3, "fail-forked", out, **{WORKERS_ENV: "2"})
    assert proc.returncode != 0
    assert "the initial partition's piece" in proc.stderr and "on rank 2" in proc.stderr
    assert "RuntimeError: METIS refused this piece" in proc.stderr
    assert not out.exists()


if __name__ == "__main__":
    _rank_program(sys.argv[1], sys.argv[2])
