"""The parallel schedule of the refinement's pairwise cuts: rounds of pairs, forked workers, their errors."""

from __future__ import annotations

import math
import multiprocessing
import os

import numpy as np
import pytest

from partition_cases import count_boundary, grid_case, minnesota_case, random_case
from fastapsp.graph import Graph
from fastapsp.partition import partition_graph, refine_boundary
from fastapsp.partition import refine as R
from fastapsp.partition.workers import WORKERS_ENV, ForkedWorkers, WorkerError, worker_count

CASES = {"random": lambda: random_case(7), "grid": grid_case, "minnesota": minnesota_case}


@pytest.fixture
def fork_always(monkeypatch):
    """Fork workers for the small test graphs too (they run in-process below FLOW_PARALLEL_MIN vertices)."""
    monkeypatch.setattr(R, "FLOW_PARALLEL_MIN", 0)


def delaunay_case(n: int, seed: int):
    from scipy.spatial import Delaunay

    tri = Delaunay(np.random.default_rng(seed).random((n, 2))).simplices
    src, dst = tri.ravel(), tri[:, [1, 2, 0]].ravel()
    return Graph.from_edges(n, src, dst, directed=False, name=f"delaunay{n}")


def _adjacency(graph):
    return tuple(a.astype(np.int64) for a in graph.undirected_adjacency())


# ------------------------------------------------------------------ rounds
@pytest.mark.parametrize("seed", range(4))
def test_rounds_share_no_part_and_keep_each_parts_order(seed):
    rng = np.random.default_rng(seed)
    k = 25
    a, b = rng.integers(0, k, 200), rng.integers(0, k, 200)
    keys = np.unique(np.minimum(a, b)[a != b] * k + np.maximum(a, b)[a != b])
    keys = keys[rng.permutation(keys.shape[0])]
    rounds = R._rounds(keys, k)
    flat = np.concatenate(rounds)
    assert sorted(flat.tolist()) == sorted(keys.tolist())
    for round_keys in rounds:
        parts = np.concatenate([round_keys // k, round_keys % k])
        assert np.unique(parts).shape[0] == parts.shape[0]  # no part twice in a round
    for p in range(k):  # the pairs of every part come in the order of the pass
        def mine(order):
            return [key for key in order.tolist() if p in divmod(key, k)]
        assert mine(flat) == mine(keys)
    assert R._rounds(keys[:0], k) == []


# ------------------------------------------------------------------ same labels with any number of workers
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("start", ["random", "metis"])
@pytest.mark.parametrize("workers", [2, 3])
def test_flows_give_the_same_labels_with_any_number_of_workers(fork_always, case, start, workers):
    if start == "metis":
        pytest.importorskip("pymetis")
    graph, edges = CASES[case]()
    indptr, indices = _adjacency(graph)
    k = 12
    labels = (np.random.default_rng(3).integers(0, k, graph.n).astype(np.int32) if start == "random"
              else partition_graph(graph, k, "metis", seed=3).labels)
    bound = R.max_part_size(graph.n, k, 0.03)
    one, removed_one = R._flow_refine(indptr, indices, labels, k, bound, passes=3, alpha=8.0, seed=5, workers=1)
    many, removed_many = R._flow_refine(indptr, indices, labels, k, bound, passes=3, alpha=8.0, seed=5,
                                        workers=workers)
    np.testing.assert_array_equal(one, many)
    assert removed_one == removed_many == count_boundary(edges, labels) - count_boundary(edges, many) >= 0
    sizes_before, sizes_after = np.bincount(labels, minlength=k), np.bincount(many, minlength=k)
    assert np.all(sizes_after[sizes_after > sizes_before] <= bound)
    assert not multiprocessing.active_children()


def test_refinement_gives_the_same_labels_with_one_and_two_workers(fork_always, monkeypatch):
    """The whole refinement, restart and its pieces in blocks included."""
    pytest.importorskip("pymetis")
    monkeypatch.setattr(R, "LAYOUT_BLOCKS_MIN", 0)
    graph = delaunay_case(9000, seed=2)
    indptr, indices = graph.undirected_adjacency()
    k = 4
    labels = partition_graph(graph, k, "metis", seed=1).labels
    stats_one, stats_two = {}, {}
    one = refine_boundary(indptr, indices, labels, k, imbalance=0.03, seed=3, workers=1, stats=stats_one)
    two = refine_boundary(indptr, indices, labels, k, imbalance=0.03, seed=3, workers=2, stats=stats_two)
    np.testing.assert_array_equal(one, two)
    assert (stats_one.pop("workers"), stats_two.pop("workers")) == (1, 2)
    assert stats_one.pop("timings") and stats_two.pop("timings")  # seconds: the rest must agree
    assert stats_one == stats_two
    assert stats_two["boundary_after"] <= stats_two["boundary_after_flows"] <= stats_two["boundary_before"]
    assert R.boundary_count(indptr, indices, two) == stats_two["boundary_after"]
    assert np.bincount(two, minlength=k).max() <= math.ceil(1.03 * graph.n / k)
    assert not multiprocessing.active_children()


def test_pieces_do_not_depend_on_the_workers(monkeypatch):
    pytest.importorskip("pymetis")
    monkeypatch.setattr(R, "LAYOUT_BLOCKS_MIN", 0)  # pieces in blocks (8,192 vertices or more)
    graph = delaunay_case(9000, seed=4)
    indptr, indices = _adjacency(graph)
    one, count_one = R._pieces(indptr, indices, 7, 1)
    two, count_two = R._pieces(indptr, indices, 7, 2)
    np.testing.assert_array_equal(one, two)
    assert count_one == count_two
    assert abs(count_one - graph.n / R.LAYOUT_PIECE) <= R.LAYOUT_BLOCKS  # one rounding per block
    assert one.min() == 0 and one.max() == count_one - 1
    assert np.bincount(one, minlength=count_one).max() <= 2 * R.LAYOUT_PIECE


# ------------------------------------------------------------------ the workers
class _Adder:
    """solve: (task, the total applied so far); apply: adds to the total."""

    def __init__(self, fail_on=None, die_on=None):
        self.total, self.fail_on, self.die_on = 0, fail_on, die_on

    def solve(self, task):
        if task == self.fail_on:
            raise ValueError(f"task {task} fails")
        if task == self.die_on:
            os._exit(3)
        return task, self.total

    def apply(self, amount):
        self.total += amount


@pytest.mark.parametrize("count", [1, 2, 4])
def test_workers_answer_in_task_order_and_follow_the_updates(count):
    with ForkedWorkers(_Adder(), count) as pool:
        assert pool.map([(t,) for t in range(9)]) == [(t, 0) for t in range(9)]
        pool.broadcast([(5,), (2,)])
        if count == 1:  # in-process: the caller's state is the one that is solved on, and updates it itself
            pool.state.apply(5)
            pool.state.apply(2)
        assert pool.map([(t,) for t in range(6)]) == [(t, 7) for t in range(6)]
    assert not multiprocessing.active_children()


def test_a_raising_worker_is_an_error_not_a_hang():
    with pytest.raises(WorkerError, match=r"failed on task \(3,\): ValueError: task 3 fails"):
        with ForkedWorkers(_Adder(fail_on=3), 2) as pool:
            pool.map([(t,) for t in range(8)])
    assert not multiprocessing.active_children()


def test_a_dying_worker_is_an_error_not_a_hang():
    with pytest.raises(WorkerError, match=r"exited with code 3 while solving task \(2,\)"):
        with ForkedWorkers(_Adder(die_on=2), 3) as pool:
            pool.map([(t,) for t in range(8)])
    assert not multiprocessing.active_children()


def test_a_failing_cut_ends_the_refinement_with_an_error(fork_always, monkeypatch):
    graph, _ = minnesota_case()
    indptr, indices = graph.undirected_adjacency()
    labels = np.random.default_rng(1).integers(0, 8, graph.n).astype(np.int32)

    def broken(self, a, b, limit_a, limit_b):
        raise RuntimeError(f"no cut between {a} and {b}")

    monkeypatch.setattr(R._PairFlows, "solve", broken)
    with pytest.raises(WorkerError, match="RuntimeError: no cut between"):
        refine_boundary(indptr, indices, labels, 8, imbalance=0.03, workers=2)
    assert not multiprocessing.active_children()


def test_worker_count(monkeypatch):
    monkeypatch.delenv(WORKERS_ENV, raising=False)
    assert worker_count() >= 1
    assert worker_count(3) == 3
    monkeypatch.setenv(WORKERS_ENV, "5")
    assert worker_count() == 5
    assert worker_count(2) == 2  # the argument wins
    for bad in ("0", "two"):
        monkeypatch.setenv(WORKERS_ENV, bad)
        with pytest.raises(ValueError, match=WORKERS_ENV):
            worker_count()
    with pytest.raises(ValueError, match="workers: 0"):
        worker_count(0)
    monkeypatch.delenv(WORKERS_ENV)
    import fastapsp.partition.workers as W

    monkeypatch.setattr(W, "_mpi_running", lambda: True)
    assert worker_count() == 1  # inside MPI: no fork unless asked for
    monkeypatch.setenv(WORKERS_ENV, "4")
    assert worker_count() == 4


@pytest.mark.parametrize("fork", [False, True])
def test_a_started_call_runs_alongside_and_its_failure_is_an_error(fork):
    with ForkedWorkers(_Adder(), 1, fork=fork) as one:
        one.start((4,))
        assert bool(one.workers) == fork
        assert one.finish() == (4, 0)
    with pytest.raises(WorkerError if fork else ValueError, match="task 3 fails"):  # in-process: the error itself
        with ForkedWorkers(_Adder(fail_on=3), 1, fork=fork) as one:
            one.start((3,))
            one.finish()
    assert not multiprocessing.active_children()


def _gone(pid: int) -> bool:
    """True when the process has ended (a zombie waiting for its new parent counts as ended)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            return any(line.startswith("State:") and "Z" in line.split()[1] for line in fh)
    except FileNotFoundError:
        return True


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc")
def test_workers_end_when_their_parent_is_killed():
    """A parent killed by a timeout (SIGKILL: no clean-up runs) leaves no worker computing on."""
    import signal
    import subprocess
    import sys
    import time

    code = ("import os, sys, time\n"
            "from fastapsp.partition.workers import ForkedWorkers\n"
            "class Slow:\n"
            "    def solve(self):\n"
            "        time.sleep(60)\n"
            "with ForkedWorkers(Slow(), 2) as pool:\n"
            "    print(' '.join(str(p.pid) for p, _ in pool.workers), flush=True)\n"
            "    pool.map([(), ()])\n")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        pids = [int(p) for p in parent.stdout.readline().split()]
        assert len(pids) == 2
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        deadline = time.monotonic() + 10
        while not all(_gone(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert all(_gone(pid) for pid in pids)
    finally:
        parent.kill()
        parent.wait()
