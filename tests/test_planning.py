"""The plan: its decisions, the renaming for each-pair-once, imposed variants and describe()."""

import json

import numpy as np
import pytest
from conftest import random_graph

import fastapsp
from fastapsp.comm import SerialComm
from fastapsp.errors import ConfigError
from fastapsp.options import SolveOptions
from fastapsp.partition import make_partition, partition_graph
from fastapsp.planning import make_plan, permuted_with, renamed_by_component


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("wide", [False, True])
def test_renaming_on_the_device_gives_the_host_graph(xp, directed, wide):
    """permuted_with (CuPy: on the GPU) gives the host's permuted graph: the same CSR, dtype and
    weights, heads ascending, isolated vertices and explicit zeros kept; the device CSR it keeps is that
    graph's; a non-permutation is refused."""
    from fastapsp.backend import device_csr
    from fastapsp.graph import Graph

    rng = np.random.default_rng(7 + directed + 2 * wide)
    graph = random_graph(rng, 300, 1500, directed=directed, weighted=True)
    weights = graph.weights.copy()
    weights[::17] = 0.0  # explicit zeros
    graph = Graph(graph.indptr.astype(np.int64 if wide else np.int32), graph.indices.astype(np.int64 if wide else np.int32),
                  weights, directed=directed, name="g")
    order = rng.permutation(graph.n)
    want, got = graph.permuted(order), permuted_with(graph, order, xp)
    assert got.indptr.dtype == want.indptr.dtype and got.directed == want.directed
    for a, b in ((got.indptr, want.indptr), (got.indices, want.indices), (got.weights, want.weights)):
        np.testing.assert_array_equal(a, b)
    if xp is not np:
        kept = device_csr(got, xp)
        np.testing.assert_array_equal(kept[1].get(), want.indices)
    with pytest.raises(ValueError, match="permutation"):
        permuted_with(graph, np.zeros(graph.n, dtype=np.int64), xp)
    empty = Graph(np.zeros(4, dtype=np.int32), np.zeros(0, dtype=np.int32), np.zeros(0), directed=False)
    assert permuted_with(empty, [2, 0, 1], xp).m == 0


@pytest.mark.parametrize("k", [1, 5, 17])
def test_renamed_partition_is_the_partition_of_the_renamed_graph(k):
    graph = random_graph(np.random.default_rng(k), 120, 400, directed=False, weighted=True)
    part = partition_graph(graph, k, "metis")
    order, renamed, moved = renamed_by_component(graph, part)
    assert np.array_equal(np.sort(order), np.arange(graph.n))
    fresh = make_partition(renamed, part.labels[order], k, method=part.method, seed=part.seed,
                           imbalance=part.imbalance, seconds=part.seconds)
    assert np.array_equal(moved.labels, fresh.labels) and np.array_equal(moved.boundary, fresh.boundary)
    assert moved.edge_cut == fresh.edge_cut
    for p in range(k):
        (a, na), (b, nb) = moved.component(p), fresh.component(p)
        assert na == nb and np.array_equal(a, b)
        assert np.all(np.diff(np.sort(a)) == 1)  # every component a run of consecutive ids
    # Boundary first within each run: the renamed partition's level order is the vertex order itself.
    assert np.array_equal(moved.order, np.arange(graph.n))


def test_stats_plan_renames_and_a_forced_plan_does_not():
    graph = random_graph(np.random.default_rng(3), 90, 300, directed=False, weighted=False)
    opts = SolveOptions(backend="numpy", k=4, stats=True, quiet=True)
    plan = make_plan(graph, opts, comm=SerialComm())
    assert plan.each_pair_once and plan.order is not None and plan.run_graph is not graph
    whole = make_plan(graph, opts, comm=SerialComm(), force={"each_pair_once": False})
    assert not whole.each_pair_once and whole.order is None and whole.run_graph is graph
    with pytest.raises(ConfigError, match="force"):
        make_plan(graph, opts, comm=SerialComm(), force={"k": 3})


def test_directed_or_host_output_never_pairs():
    graph = random_graph(np.random.default_rng(4), 60, 200, directed=True, weighted=True)
    assert not make_plan(graph, SolveOptions(backend="numpy", k=3, stats=True), comm=SerialComm()).each_pair_once
    undirected = random_graph(np.random.default_rng(5), 60, 200, directed=False, weighted=True)
    opts = SolveOptions(backend="numpy", k=3, stats=True, output="memory")
    assert not make_plan(undirected, opts, comm=SerialComm()).each_pair_once


def test_describe_is_json_and_names_every_decision():
    graph = random_graph(np.random.default_rng(6), 80, 250, directed=True, weighted=True)
    plan = fastapsp.plan(graph, k=3, backend="numpy")
    decided = json.loads(json.dumps(plan.describe()))
    for key in ("k", "k_choice", "partitioner", "boundary_rows", "dtype", "dtype_reason", "each_pair_once",
                "close_everywhere", "components_per_rank", "output", "predicted_seconds", "plan_seconds"):
        assert key in decided
    assert decided["k"] == 3 and decided["k_choice"]["rule"] == "given"


def test_a_plan_is_frozen_and_reused_as_is():
    graph = random_graph(np.random.default_rng(7), 70, 220, directed=False, weighted=True)
    plan = fastapsp.plan(graph, k=3, backend="numpy")
    with pytest.raises(Exception):
        plan.k_choice = {}
    import fastapsp.library as library

    assert library._plan_for(graph, dict(library._DEFAULTS, backend="numpy"), plan, None, None, stats=False) is plan
    other = library._plan_for(graph, dict(library._DEFAULTS, backend="numpy", sssp_method="frontier"), plan, None,
                              None, stats=False)
    assert other is not plan and other.partition is plan.partition and other.boundary_rows == "frontier"


def test_device_output_needs_the_gpu_backend():
    graph = random_graph(np.random.default_rng(8), 30, 80, directed=True, weighted=False)
    with pytest.raises(ValueError, match="output"):
        fastapsp.solve(graph, backend="numpy", output="device")


def test_a_plan_runs_only_on_as_many_ranks_as_it_was_made_for():
    from fastapsp.execute import execute

    class TwoRanks(SerialComm):
        size = 2

    graph = random_graph(np.random.default_rng(9), 40, 120, directed=True, weighted=True)
    plan = make_plan(graph, SolveOptions(backend="numpy", k=2, output="memory"), comm=SerialComm())
    with pytest.raises(ConfigError, match="rank"):
        execute(plan, graph, comm=TwoRanks())


def test_a_given_k_far_slower_than_the_cost_models_is_replaced_in_one_line(monkeypatch, tmp_path):
    import fastapsp.planning as planning
    from fastapsp.execute import execute

    import fastapsp.cost as cost

    monkeypatch.setattr(planning, "SLOW_K_SECONDS", 0.01)  # minnesota's k = 1 is predicted at seconds, not hours
    # closures by Floyd-Warshall alone: with the host's searches one closure of all of minnesota costs too little
    monkeypatch.setitem(cost.RATES, "numpy", {key: v for key, v in cost.RATES["numpy"].items() if key != "search"})
    graph = fastapsp.read_graph(str(__import__("cli_util").DATA / "minnesota.mtx.gz"))
    lines = []
    plan = make_plan(graph, SolveOptions(backend="numpy", k=1, output="memory"), comm=SerialComm(),
                     log=lines.append)
    model = plan.k_choice["cost_model"]["k"]
    assert model != 1 and plan.k == model and plan.k_choice["given"] == 1
    assert plan.k_choice["rule"] == "cost model, given k replaced"
    assert plan.k_choice["given_predicted_seconds"] > 10 * plan.k_choice["cost_model"]["predicted_seconds"]["total"]
    assert len(lines) == 1 and lines[0].startswith("note: k=1 is predicted to take")
    assert lines[0].endswith(f"k={model} is used instead")
    assert sum(len(s) for s in plan.schedule) == int((plan.partition.sizes > 0).sum())  # scheduled for the new k
    want = graph.to_scipy()
    from scipy.sparse.csgraph import shortest_path
    np.testing.assert_array_equal(execute(plan, graph, comm=SerialComm()).result,
                                  shortest_path(want, directed=graph.directed).astype(np.float32))
    with pytest.warns(UserWarning, match=f"k={model} is used instead"):
        assert fastapsp.plan(graph, k=1, backend="numpy").k == model
    # saved, the plan is taken back by a run that asks for the same k
    saved = tmp_path / "plan.npz"
    plan.save(saved, graph)
    again = make_plan(graph, SolveOptions(backend="numpy", k=1), comm=SerialComm(),
                      saved=planning.load_plan(saved, graph))
    assert again.k == model and np.array_equal(again.partition.labels, plan.partition.labels)
    # kept where imposed, and where the partition goes to a file: the line then says how to use the better k
    for kept in (make_plan(graph, SolveOptions(backend="numpy", k=1), comm=SerialComm(), log=lines.append,
                           force={"given_k": True}),
                 make_plan(graph, SolveOptions(backend="numpy", k=1, partition_file=str(tmp_path / "p.npz")),
                           comm=SerialComm(), log=lines.append)):
        assert kept.k == 1 and kept.k_choice["rule"] == "given"
        assert lines[-1].startswith("note: k=1 is predicted to take") and lines[-1].endswith("leave -k out to use it")
    lines.clear()
    assert make_plan(graph, SolveOptions(backend="numpy", k=10), comm=SerialComm(), log=lines.append).k == 10
    assert lines == []  # a k near the cost model's: nothing to say


def test_a_plan_with_another_partition_setting_is_refused():
    graph = random_graph(np.random.default_rng(12), 60, 200, directed=False, weighted=True)
    plan = fastapsp.plan(graph, k=3, backend="numpy")
    with pytest.raises(ValueError, match="plan: made with k=3, the call asks for k=4"):
        fastapsp.solve(graph, plan=plan, k=4)
    with pytest.raises(ValueError, match="seed"):
        fastapsp.stats(graph, plan=plan, seed=7)
    np.testing.assert_array_equal(fastapsp.solve(graph, plan=plan, sssp_method="frontier"),
                                  fastapsp.solve(graph, k=3, backend="numpy"))


def test_every_fixed_cost_of_a_plan_is_a_report_stage(tmp_path, monkeypatch):
    """Finding the backend, choosing k, partitioning and the rest of the plan are each timed and reported
    as stages of the run (the plan's spent()), so that a run's total is accounted for."""
    import time

    import scipy.io

    import fastapsp.planning as planning
    from fastapsp.pipeline import solve_job

    graph = random_graph(np.random.default_rng(5), 200, 700, directed=False, weighted=False)
    found = planning.resolve_backend

    def slow(name):  # a backend that takes a while to find (a first CuPy import)
        time.sleep(0.05)
        return found(name)

    monkeypatch.setattr(planning, "resolve_backend", slow)
    plan = make_plan(graph, SolveOptions(backend="numpy", stats=True, quiet=True), comm=SerialComm())
    assert set(plan.spent()) == {"backend", "choose_k", "partition", "plan"}
    assert plan.spent()["backend"] >= 0.05
    path = tmp_path / "g.mtx"
    scipy.io.mmwrite(str(path), graph.to_scipy())
    report, _ = solve_job(SolveOptions(graph=str(path), backend="numpy", output="none", quiet=True),
                          comm=SerialComm())
    assert {"read", "backend", "choose_k", "partition", "plan"} <= set(report["stages"])
    assert report["stages"]["backend"] >= 0.05


def test_launcher_local_rank(monkeypatch):
    """The rank on its node as the launcher says it (Open MPI, Hydra, SLURM): 0 for one process, None untold."""
    from fastapsp.backend import _LOCAL_RANK_VARS, launcher_local_rank

    for name in _LOCAL_RANK_VARS:
        monkeypatch.delenv(name, raising=False)
    assert launcher_local_rank(1) == 0 and launcher_local_rank(2) is None
    monkeypatch.setenv("SLURM_LOCALID", "3")
    assert launcher_local_rank(4) == 3
    monkeypatch.setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1")  # the first variable set wins
    assert launcher_local_rank(4) == 1
