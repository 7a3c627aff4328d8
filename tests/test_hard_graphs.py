"""Graphs the method finds hard stay exact: stars, hubs over a grid, isolated vertices.

A star's leaves and a hub's neighbours are boundary vertices; isolated vertices fill components of their
own (fastapsp/partition/isolated.py); a given k predicted far slower than the cost model's is replaced
(fastapsp/planning.py).  Every answer is compared with SciPy's, with the default settings, with a bad
k given (replaced, or kept where imposed) and with extreme k.
"""

import numpy as np
import pytest
from scipy.sparse.csgraph import shortest_path

import fastapsp
import fastapsp.planning as planning
from fastapsp.comm import SerialComm
from fastapsp.execute import execute
from fastapsp.graph import Graph
from fastapsp.options import SolveOptions
from fastapsp.planning import make_plan
from fastapsp.reductions import StatsAccumulator


def _weights(rng, size):
    return rng.integers(1, 10, size).astype(np.float64)


def star(leaves: int, *, directed: bool, seed: int = 0) -> Graph:
    """Vertex 0 joined to every leaf; directed: some leaves only reached, some only reaching, most both."""
    rng = np.random.default_rng(seed)
    leaf = np.arange(1, leaves + 1)
    if not directed:
        return Graph.from_edges(leaves + 1, np.zeros(leaves, dtype=np.int64), leaf, _weights(rng, leaves),
                                directed=False, name="star")
    way = rng.integers(0, 3, leaves)  # 0: hub -> leaf, 1: leaf -> hub, 2: both
    out, back = leaf[way != 1], leaf[way != 0]
    src = np.concatenate([np.zeros(out.size, dtype=np.int64), back])
    dst = np.concatenate([out, np.zeros(back.size, dtype=np.int64)])
    return Graph.from_edges(leaves + 1, src, dst, _weights(rng, src.size), directed=True, name="star")


def hub_grid(side: int, hubs: int, share: float, *, directed: bool, seed: int = 0) -> Graph:
    """A side x side grid and ``hubs`` extra vertices, each joined to ``share`` of the grid's vertices."""
    rng = np.random.default_rng(seed)
    ids = np.arange(side * side).reshape(side, side)
    src = [ids[:, :-1].ravel(), ids[:-1, :].ravel()]
    dst = [ids[:, 1:].ravel(), ids[1:, :].ravel()]
    for h in range(hubs):
        linked = rng.choice(side * side, int(share * side * side), replace=False)
        src.append(np.full(linked.size, side * side + h))
        dst.append(linked)
    src, dst = np.concatenate(src), np.concatenate(dst)
    if directed:  # each edge one way or the other, a quarter both ways
        flip = rng.random(src.size) < 0.5
        src, dst = np.where(flip, dst, src), np.where(flip, src, dst)
        both = rng.random(src.size) < 0.25
        src, dst = np.concatenate([src, dst[both]]), np.concatenate([dst, src[both]])
    return Graph.from_edges(side * side + hubs, src, dst, _weights(rng, src.size), directed=directed,
                            name="hub-grid")


def mostly_isolated(n: int, arcs: int, *, directed: bool, seed: int = 0) -> Graph:
    """``n`` vertices, ``arcs`` random arcs among the first tenth of them, ids shuffled: most vertices have none."""
    rng = np.random.default_rng(seed)
    linked = rng.permutation(n)[: n // 10]
    src, dst = linked[rng.integers(0, linked.size, arcs)], linked[rng.integers(0, linked.size, arcs)]
    return Graph.from_edges(n, src, dst, _weights(rng, arcs), directed=directed, name="mostly-isolated")


GRAPHS = {
    "star": lambda directed: star(300, directed=directed),
    "hub-grid": lambda directed: hub_grid(18, 3, 0.05, directed=directed),
    "mostly-isolated": lambda directed: mostly_isolated(700, 120, directed=directed),
}
CASES = [(name, directed) for name in GRAPHS for directed in (False, True)]


def _scipy(graph: Graph) -> np.ndarray:
    return shortest_path(graph.to_scipy(), directed=graph.directed)


def _solve(graph: Graph, **options) -> np.ndarray:
    return fastapsp.solve(graph, backend="numpy", dtype="float64", **options)


@pytest.mark.parametrize("name, directed", CASES)
def test_defaults_give_scipys_distances(name, directed):
    graph = GRAPHS[name](directed)
    np.testing.assert_array_equal(_solve(graph), _scipy(graph))


@pytest.mark.parametrize("name, directed", CASES)
@pytest.mark.parametrize("k", [1, 2, 7, "n"])
def test_any_given_k_gives_scipys_distances(name, directed, k):
    graph = GRAPHS[name](directed)
    k = graph.n if k == "n" else k
    np.testing.assert_array_equal(_solve(graph, k=k, sssp_method="frontier"), _scipy(graph))
    np.testing.assert_array_equal(_solve(graph, k=k, sssp_method="boundary-graph"), _scipy(graph))


@pytest.mark.parametrize("name, directed", CASES)
def test_a_bad_given_k_replaced_or_kept_gives_scipys_distances(name, directed, monkeypatch):
    """With every prediction counted slow, k = 2 (most vertices in two large components) is far slower
    than the cost model's k: it is replaced, unless imposed, and both answers are exact."""
    monkeypatch.setattr(planning, "SLOW_K_SECONDS", 0.0)
    graph = GRAPHS[name](directed)
    want = _scipy(graph)
    lines = []
    opts = SolveOptions(backend="numpy", dtype="float64", k=2, output="memory")
    replaced = make_plan(graph, opts, comm=SerialComm(), log=lines.append)
    if replaced.k != 2:  # the cost model's k is ten times faster
        assert replaced.k_choice["rule"] == "cost model, given k replaced" and replaced.k_choice["given"] == 2
        assert lines and lines[-1].endswith(f"k={replaced.k} is used instead")
    np.testing.assert_array_equal(execute(replaced, graph, comm=SerialComm()).result, want)
    kept = make_plan(graph, opts, comm=SerialComm(), log=lines.append, force={"given_k": True})
    assert kept.k == 2 and kept.k_choice["rule"] == "given"
    np.testing.assert_array_equal(execute(kept, graph, comm=SerialComm()).result, want)


def test_the_stars_bad_k_is_replaced():
    """The star's leaves outside the hub's component are all boundary: at k = 2 on a star of 30,000 leaves
    each half is one dense closure of 15,000 vertices (half an hour predicted on the CPU), ten times the
    cost model's choice of small components."""
    graph = star(30000, directed=False)
    lines = []
    plan = make_plan(graph, SolveOptions(backend="numpy", k=2, stats=True, dry_run=True), comm=SerialComm(),
                     log=lines.append)
    assert plan.k_choice["given"] == 2 and plan.k_choice["given_predicted_seconds"] >= planning.SLOW_K_SECONDS
    assert plan.k > 2 and plan.k == plan.partition.k == plan.k_choice["k"]
    assert len(lines) == 1 and lines[0].startswith("note: k=2 is predicted to take") and "is used instead" in lines[0]


@pytest.mark.parametrize("name, directed", CASES)
def test_statistics_by_default_are_those_of_scipys_matrix(name, directed):
    graph = GRAPHS[name](directed)
    acc = StatsAccumulator.for_graph(graph)
    acc.update(np.arange(graph.n), 0, _scipy(graph))
    want = acc.finalize()
    got = fastapsp.stats(graph, backend="numpy", dtype="float64")
    assert got.scalars == want.scalars and got.histogram == want.histogram
    for key in want.vertex:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-12, atol=0, err_msg=key)


@pytest.mark.parametrize("directed", [False, True])
def test_isolated_vertices_fill_components_without_boundary_by_default(directed):
    graph = mostly_isolated(700, 120, directed=directed)
    plan = fastapsp.plan(graph, backend="numpy", stats=True)
    part = plan.partition
    alone = np.diff(graph.undirected_adjacency()[0]) == 0
    mixed = np.unique(part.labels[~alone])
    assert not np.isin(part.labels[alone], mixed).any()  # no isolated vertex shares a component with others
    assert part.details["isolated_vertices"] == int(alone.sum())
    assert plan.k_choice.get("isolated") == int(alone.sum())
