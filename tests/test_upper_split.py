"""The upper levels of the boundary graph shared out among MPI ranks (BoundaryGraph(comm=...)).

Run under a real launcher: each rank closes its share of every level's super-groups, receives what
it lacks, and makes the boundary rows of its own components.  Rank 0 gathers every rank's rows and
checks them, bit for bit, against one process closing everything, and against SciPy; it also checks
that the levels were really split and that what each rank received is the stated formula.  This file
is also the per-rank program (``python test_upper_split.py CASE OUT [FAULT]``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cli_util import find_mpiexec  # noqa: E402
from fastapsp.stages.boundary_graph import assign_closures  # noqa: E402

HERE = Path(__file__).resolve()


# --------------------------------------------------------------- assignment (no MPI)
def test_every_super_group_is_closed_once_by_its_owner_and_loads_stay_within_lpt():
    rng = np.random.default_rng(4)
    for _ in range(200):
        ranks, k = int(rng.integers(1, 6)), int(rng.integers(1, 30))
        sizes = rng.integers(1, 60, k)
        need = rng.random((ranks, k)) < 0.4
        owner, closes = assign_closures(sizes, need)
        assert owner.shape == (k,) and closes.shape == (ranks, k)
        assert closes[owner, np.arange(k)].all()  # the owner closes what it owns
        cost = sizes.astype(np.int64) ** 3
        loads = (closes * cost).sum(axis=1)
        owned = np.array([cost[owner == r].sum() for r in range(ranks)])
        assert loads.max() == owned.max()  # extra closures never pass the slowest rank
        assert (closes <= (need | (owner[None, :] == np.arange(ranks)[:, None]))).all()  # extras only where needed
        # greedy by decreasing cost: within 4/3 of the lower bound plus the largest closure
        assert owned.max() <= max(cost.sum() / ranks, cost.max()) * 4 / 3 + cost.max()
        again = assign_closures(sizes.tolist(), need.tolist())
        assert np.array_equal(again[0], owner) and np.array_equal(again[1], closes)  # a pure function


def test_a_level_of_one_group_is_closed_by_every_rank_that_needs_it():
    owner, closes = assign_closures([1500], np.array([[True], [False], [True]]))
    assert owner.tolist() == [0] and closes.ravel().tolist() == [True, False, True]


def test_a_rank_closes_what_costs_less_than_receiving_it():
    """With a price on receiving, the assignment keeps its owners and every closure it made, and adds
    exactly the closures that cost a rank fewer relaxations than the rows it would receive."""
    rng = np.random.default_rng(9)
    for _ in range(200):
        ranks, k = int(rng.integers(2, 6)), int(rng.integers(1, 30))
        sizes = rng.integers(1, 60, k)
        boundary = rng.integers(0, sizes + 1)
        need = rng.random((ranks, k)) < 0.4
        price = int(rng.integers(0, 40))
        owner0, closes0 = assign_closures(sizes, need)
        owner, closes = assign_closures(sizes, need, boundary, receive_cost=price)
        assert np.array_equal(owner, owner0) and (closes >= closes0).all()
        rows = np.where(need, sizes[None, :], boundary[None, :])
        cheaper = sizes[None, :].astype(np.int64) ** 3 <= price * rows * sizes[None, :]
        assert np.array_equal(closes, closes0 | cheaper)
    with pytest.raises(ValueError, match="boundary"):
        assign_closures([3, 4], np.ones((2, 2), dtype=bool), receive_cost=5)


def test_levels_split_when_one_rank_is_left_idle():
    """Two super-groups, three ranks, each needed by all: the idle rank closes the larger one too
    (within the slowest rank's time, and it spares the larger transfer)."""
    owner, closes = assign_closures([10, 9], np.ones((3, 2), dtype=bool))
    assert owner.tolist() == [0, 1]
    assert closes.astype(int).tolist() == [[1, 0], [0, 1], [1, 0]]


# --------------------------------------------------------------- under mpiexec
def _grid(side, rng):
    from fastapsp.graph import Graph

    ids = np.arange(side * side).reshape(side, side)
    src = np.concatenate([ids[:, :-1].ravel(), ids[:-1, :].ravel()])
    dst = np.concatenate([ids[:, 1:].ravel(), ids[1:, :].ravel()])
    return Graph.from_edges(side * side, src, dst, rng.integers(1, 9, src.size).astype(float), directed=False)


def _case(name):
    """``(graph, labels, k, limits, dtype)`` of a named case (the same on every rank)."""
    from conftest import disconnected_graph, random_graph
    from fastapsp.graph import Graph
    from fastapsp.partition import partition_graph

    rng = np.random.default_rng(11)
    if name == "grid":  # 4 x 4 blocks of a 24 x 24 grid: several levels of super-groups
        graph = _grid(24, rng)
        ids = np.arange(graph.n)
        return graph, (ids // 24 // 4) * 6 + (ids % 24) // 4, 36, dict(dense_limit=40, super_size=30), np.float64
    if name == "random":  # directed, zero weights, METIS's 40 parts and 4 empty ones
        graph = random_graph(rng, 200, 300, directed=True, weighted=True, zero_weights=True)
        return graph, partition_graph(graph, 40).labels, 44, dict(dense_limit=12, super_size=5), np.float32
    if name == "real":  # real weights in float32: rounding makes the order of additions show
        graph = _grid(20, rng)
        graph = Graph.from_edges(graph.n, *_arcs(graph), rng.random(graph.indices.size) * 3.7 + 0.01, directed=True)
        ids = np.arange(graph.n)
        return graph, (ids // 20 // 4) * 5 + (ids % 20) // 4, 25, dict(dense_limit=30, super_size=20), np.float32
    if name == "disconnected":  # blobs without arcs between them: the last level has several groups
        graph = disconnected_graph(rng, [80, 1, 70, 90], directed=False, weighted=True)
        return graph, partition_graph(graph, 20).labels, 20, dict(dense_limit=16, super_size=8), np.float64
    raise ValueError(name)


def _arcs(graph):
    src = np.repeat(np.arange(graph.n), np.diff(graph.indptr))
    return src, graph.indices


CASES = ["grid", "random", "real", "disconnected"]


def _rank_program(name: str, out: str, fault: str | None) -> None:
    """One rank: shape the tree on rank 0, close the components, build the split levels, make the
    boundary rows of this rank's components; rank 0 checks everything and writes ``out``."""
    from mpi4py import MPI

    from conftest import reference_apsp, share_on_host
    from fastapsp.comm import run_or_abort
    from fastapsp.partition import make_partition
    from fastapsp.schedule import component_costs, schedule_in_order
    from fastapsp.stages.boundary_graph import BoundaryGraph, LevelTree, close_components, pack_boundary_rows

    comm = MPI.COMM_WORLD
    # "CASE:local": receiving costs more than any closure; "CASE:peers": the closures go through
    # peers.share_on_device (each rank exposes one buffer, the others take their segments), here
    # stood in by host arrays gathered everywhere.
    name, _, mode = name.partition(":")
    receive_cost = 10**9 if mode == "local" else 0
    if mode == "peers":
        from fastapsp import peers

        peers.share_on_device = share_on_host
    graph, labels, k, limits, dtype = _case(name)
    part = make_partition(graph, labels, k, method="given", seed=0, imbalance=1.0, seconds=0.0)
    tree = comm.bcast(LevelTree(graph, part, seed=42, **limits) if comm.rank == 0 else None)
    plan = schedule_in_order(component_costs(part, graph.n, graph.m), tree.order(), comm.size)
    mine = list(plan[comm.rank])
    comps = [p for p in range(k) if part.sizes[p]]
    blocks = pack_boundary_rows(close_components(graph.indptr, graph.indices, graph.weights, part, comps,
                                                 dtype=dtype), part)
    used: set = set()
    full_rows = BoundaryGraph._full_rows

    def counting(self, level, s):
        used.add((level, s))
        return full_rows(self, level, s)

    BoundaryGraph._full_rows = counting
    if fault is not None:  # this rank fails at its second closure of an upper level
        rank = int(fault)
        close = BoundaryGraph._super_matrix
        calls = []

        def failing(self, *args):
            calls.append(1)
            if comm.rank == rank and len(calls) == 2:
                raise RuntimeError("injected failure in an upper level")
            return close(self, *args)

        BoundaryGraph._super_matrix = failing

    def build_and_rows():
        bg = BoundaryGraph(graph, part, blocks, np, dtype, tree=tree, comm=comm, components=mine,
                           receive_cost=receive_cost, on_device=mode == "peers")
        return bg, {p: rows.copy() for p, rows in bg.boundary_rows(mine)}

    bg, rows = run_or_abort(comm, "building the boundary graph", build_and_rows)
    BoundaryGraph._full_rows = full_rows
    itemsize = np.dtype(dtype).itemsize
    formula = []
    for i, step in enumerate(tree.steps):
        sizes, nb = np.diff(step.starts), step.nb
        held = set(bg.levels[i + 1].inner)
        closed = set(bg.closed[i].tolist())
        formula.append(int(sum(nb[s] * sizes[s] for s in range(sizes.size) if s not in closed)
                           + sum((sizes[s] - nb[s]) * sizes[s] for s in held - closed)) * itemsize)
    mine_report = dict(rows=rows, received=bg.received_bytes, formula=formula,
                       closed=[c.tolist() for c in bg.closed], held=[sorted(lev.inner) for lev in bg.levels[1:]],
                       used=sorted(used), upper=bg.upper_seconds)
    everyone = comm.gather(mine_report)
    if comm.rank != 0:
        return
    serial = BoundaryGraph(graph, part, blocks, np, dtype, tree=tree)
    want = {p: r for p, r in serial.boundary_rows(range(k))}
    ref = reference_apsp(graph)
    seen, same, scipy = set(), True, True
    for report in everyone:
        for p, got in report["rows"].items():
            seen.add(p)
            same &= got.dtype == want[p].dtype and got.tobytes() == want[p].tobytes()
            vertices, nb = part.component(p)
            expect = ref[vertices[:nb]]
            scipy &= bool(np.array_equal(got, expect) if name != "real" else
                          np.allclose(got, expect, rtol=1e-5) and np.array_equal(np.isinf(got), np.isinf(expect)))
    upper = len(tree.steps)
    split = [sum(len(report["closed"][i]) for report in everyone) for i in range(upper)]
    result = dict(
        ranks=comm.size, levels=tree.level_sizes, groups=[int(s.nb.size) for s in tree.steps],
        all_rows=seen == {p for p in range(k) if part.sizes[p]}, bit_identical=bool(same), scipy=bool(scipy),
        received=[report["received"] for report in everyone], formula=[report["formula"] for report in everyone],
        closures=split,
        every_group_closed=all(set().union(*(report["closed"][i] for report in everyone))
                               == set(range(tree.steps[i].nb.size)) for i in range(upper)),
        # The report's record of the levels: one entry a level, what this rank closed and received.
        upper_recorded=all(len(report["upper"]) == upper and all(
            entry["level"] == i + 1 and entry["closed_here"] == len(report["closed"][i])
            and entry["received_bytes"] == (report["received"][i] if comm.size > 1 else 0)
            and entry["super_groups"] == tree.steps[i].nb.size and min(entry["close"], entry["exchange"]) >= 0
            for i, entry in enumerate(report["upper"])) for report in everyone),
        held_is_used=all({(i + 1, s) for i, held in enumerate(report["held"]) for s in held}
                         == {tuple(u) for u in report["used"]} for report in everyone),
    )
    Path(out).write_text(json.dumps(result))


def _launch(ranks, *args, timeout=120):
    import subprocess

    from cli_util import cli_env

    cmd = [find_mpiexec(), "-n", str(ranks), sys.executable, str(HERE), *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=cli_env())


@pytest.mark.parametrize("ranks", [2, 3])
@pytest.mark.parametrize("case", CASES + ["grid:peers", "random:peers"])
@pytest.mark.mpi
@pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec (install the 'mpi' extra)")
def test_split_levels_equal_one_process_bit_for_bit(tmp_path, case, ranks):
    """Through the host, or each rank's one exposed buffer read in segments (``:peers``, as GPU to GPU)."""
    out = tmp_path / "result.json"
    proc = _launch(ranks, case, out)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    assert len(result["groups"]) >= 2, result  # at least one level of several super-groups, then the top
    assert result["all_rows"] and result["bit_identical"] and result["scipy"], result
    assert result["every_group_closed"] and result["held_is_used"] and result["upper_recorded"], result
    assert result["received"] == result["formula"], result
    below_top = [i for i, groups in enumerate(result["groups"]) if groups > 1]
    assert any(result["closures"][i] < ranks * result["groups"][i] for i in below_top), result  # really split
    assert sum(map(sum, result["received"])) > 0, result  # and something travelled


@pytest.mark.parametrize("case", ["grid", "random"])
@pytest.mark.mpi
@pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec (install the 'mpi' extra)")
def test_levels_closed_by_every_rank_where_receiving_costs_more(tmp_path, case):
    """Receiving priced above every closure: each rank closes every super-group of every level itself,
    nothing travels, and the rows are still the one-process rows bit for bit."""
    out = tmp_path / "result.json"
    proc = _launch(3, f"{case}:local", out)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    assert result["all_rows"] and result["bit_identical"] and result["scipy"], result
    assert result["upper_recorded"] and result["received"] == result["formula"], result
    assert result["closures"] == [3 * groups for groups in result["groups"]], result
    assert sum(map(sum, result["received"])) == 0, result


@pytest.mark.mpi
@pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec (install the 'mpi' extra)")
def test_a_rank_failing_in_an_upper_level_ends_the_job(tmp_path):
    out = tmp_path / "result.json"
    proc = _launch(3, "grid", out, "1", timeout=60)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if "fastapsp: error" in line]
    assert len(errors) == 1 and "rank 1 of 3" in errors[0] and "injected failure" in errors[0], proc.stderr
    assert not out.exists()


# --------------------------------------------------------------- the command line
DELAUNAY_K = 600  # on this 8,192-vertex Delaunay graph: two levels of super-groups below the top (numpy limits)


@pytest.fixture(scope="module")
def delaunay_run(tmp_path_factory):
    """A Delaunay graph of 2**13 vertices, its partition and the one-process result of the boundary-graph method."""
    import subprocess

    from cli_util import ROOT, run_cli

    folder = tmp_path_factory.mktemp("delaunay")
    graph, part, out = folder / "d13.mtx", folder / "part.npz", folder / "one.npy"
    made = subprocess.run([sys.executable, str(ROOT / "scripts" / "make_delaunay.py"), "--scale", "13", "--seed", "1",
                           "-o", str(graph)], capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    proc = run_cli("solve", graph, "-k", DELAUNAY_K, "--backend", "numpy", "--sssp-method", "boundary-graph",
                   "--partition-file", part, "--output", out)
    assert proc.returncode == 0, proc.stderr
    return graph, part, out


def test_the_delaunay_graph_has_several_upper_levels(delaunay_run):
    """The command-line test below is about split levels: with numpy's limits this partition gives
    levels of several super-groups below the top, and the one-process result is SciPy's."""
    from scipy.sparse.csgraph import shortest_path

    from fastapsp.io import read_graph
    from fastapsp.partition import load_partition
    from fastapsp.stages.boundary_graph import DENSE_LIMIT, SUPER_SIZE, LevelTree

    graph_path, part_path, out = delaunay_run
    graph = read_graph(graph_path)
    tree = LevelTree(graph, load_partition(part_path, graph), dense_limit=DENSE_LIMIT["numpy"],
                     super_size=SUPER_SIZE["numpy"], seed=42)
    assert [step.nb.size > 1 for step in tree.steps] == [True, True, False], tree.level_sizes
    got = np.load(out, mmap_mode="r")
    for first in range(0, graph.n, 2048):
        rows = np.arange(first, min(graph.n, first + 2048))
        want = shortest_path(graph.to_scipy(), method="D", directed=True, indices=rows)
        assert np.array_equal(got[rows], want.astype(np.float32)), f"rows {first}.."


@pytest.mark.parametrize("ranks", [2, 3])
@pytest.mark.mpi
@pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec (install the 'mpi' extra)")
def test_ranks_write_the_one_process_result_bit_for_bit(delaunay_run, tmp_path, ranks):
    from cli_util import run_cli

    graph, part, one = delaunay_run
    out = tmp_path / "d.npy"
    proc = run_cli("solve", graph, "-k", DELAUNAY_K, "--backend", "numpy", "--sssp-method", "boundary-graph",
                   "--partition-file", part, "--output", out, ranks=ranks, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes() == one.read_bytes()  # the same file, byte for byte (float32 distances)


if __name__ == "__main__":
    _rank_program(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
