"""Components that need no dense work (fastapsp/components.py): all-boundary and arc-less ones.

A component whose vertices are all boundary vertices takes its rows from its
boundary rows alone; one without arcs of its own is neither built nor closed.
The graph below is partitioned by hand so that every kind occurs: the hub's
component, leaves that are all boundary without arcs among them, leaves that
are all boundary with arcs among them, boundary leaves beside isolated vertices
(arc-less, with interior vertices), isolated vertices alone (no boundary) and
ordinary random components.  Every answer is compared with SciPy's, and with
the dense path (every component built and closed) bit for bit.
"""

import numpy as np
import pytest
from scipy.sparse.csgraph import shortest_path

import fastapsp
import fastapsp.components as components
from fastapsp.graph import Graph
from fastapsp.partition import make_partition
from fastapsp.paths import NO_PREDECESSOR
from fastapsp.reductions import StatsAccumulator
from fastapsp.sink import MemorySink

METHODS = ["frontier", "boundary-graph"]
N = 60
# Component of every vertex: 0 hub and leaves 1-4; 1 leaves 5-12; 2 leaves 13-18 (a path among 13-16);
# 3 leaves 19-20 and isolated 25-29; 4 isolated 30-39; 5 and 6 random arcs among 40-59 (21-24: hub's leaves too).
LABELS = np.zeros(N, dtype=np.int64)
LABELS[5:13], LABELS[13:19], LABELS[19:21], LABELS[25:30] = 1, 2, 3, 3
LABELS[30:40], LABELS[40:50], LABELS[50:60] = 4, 5, 6


def mixed_graph(directed: bool, *, whole: bool = True, seed: int = 0) -> Graph:
    """A star of 24 leaves (a path among leaves 13-16), 15 isolated vertices and 20 randomly joined ones.

    ``whole``: weights 1-9, whose sums every order of additions gets exactly (as SciPy's); else weights
    with three decimals, which float rounding shows any other order of additions by.
    """
    rng = np.random.default_rng(seed)
    leaves = np.arange(1, 25)
    src = [np.zeros(leaves.size, dtype=np.int64), np.array([13, 14, 15])]
    dst = [leaves, np.array([14, 15, 16])]
    src.append(rng.integers(40, 60, 30))
    dst.append(rng.integers(40, 60, 30))
    src, dst = np.concatenate(src), np.concatenate(dst)
    if directed:  # the star's arcs one way or the other, some both
        flip = rng.random(src.size) < 0.4
        src, dst = np.where(flip, dst, src), np.where(flip, src, dst)
        both = rng.random(src.size) < 0.3
        src, dst = np.concatenate([src, dst[both]]), np.concatenate([dst, src[both]])
    weights = rng.integers(1, 10, src.size).astype(np.float64) if whole else np.round(rng.uniform(0.1, 9, src.size), 3)
    return Graph.from_edges(N, src, dst, weights, directed=directed, name="mixed")


def hand_partition(graph):
    return make_partition(graph, LABELS, int(LABELS.max()) + 1, method="by hand", seed=0, imbalance=0.0,
                          seconds=0.0)


def scipy_distances(graph):
    return shortest_path(graph.to_scipy(), directed=graph.directed)


@pytest.fixture(params=[False, True], ids=["undirected", "directed"])
def graph(request):
    return mixed_graph(request.param)


def test_internal_arcs_counts_arcs_inside_each_component_without_self_loops():
    g = Graph.from_edges(5, [0, 0, 1, 2, 3, 4, 4], [1, 2, 1, 3, 4, 0, 4], [1.0] * 7, directed=True)
    part = make_partition(g, np.array([0, 0, 1, 1, 2]), 3, method="by hand", seed=0, imbalance=0.0, seconds=0.0)
    src, dst, _ = g.arcs()
    want = [sum(1 for s, d in zip(src, dst) if s != d and part.labels[s] == part.labels[d] == p) for p in range(3)]
    assert components.internal_arcs(g, part).tolist() == want == [1, 1, 0]


def test_the_hand_partition_has_every_kind_of_component(graph):
    part = hand_partition(graph)
    arcs = components.internal_arcs(graph, part)
    nb, sizes = part.boundary_per_part, part.sizes
    assert arcs[1] == 0 and nb[1] == sizes[1]  # all boundary, no arcs of its own
    assert arcs[2] > 0 and nb[2] == sizes[2]  # all boundary, arcs of its own
    assert arcs[3] == 0 and 0 < nb[3] < sizes[3]  # no arcs of its own, interior (isolated) vertices
    assert arcs[4] == 0 and nb[4] == 0  # isolated vertices alone
    assert arcs[0] > 0 and 0 < nb[0] < sizes[0]  # the hub's: needs its matrix


@pytest.mark.parametrize("method", METHODS)
def test_distances_are_scipys(graph, method):
    got = fastapsp.solve(graph, partition=hand_partition(graph), backend="numpy", dtype="float64",
                         sssp_method=method)
    np.testing.assert_array_equal(got, scipy_distances(graph))


def test_predecessors_lead_along_shortest_paths(graph):
    want = scipy_distances(graph)
    dist, pred = fastapsp.solve(graph, partition=hand_partition(graph), backend="numpy", dtype="float64",
                                sssp_method="frontier", return_predecessors=True)
    np.testing.assert_array_equal(dist, want)
    weight = np.full((N, N), np.inf)
    src, dst, w = graph.arcs()
    np.minimum.at(weight, (src, dst), w)
    none = ~np.isfinite(want) | np.eye(N, dtype=bool)
    assert np.all(pred[none] == NO_PREDECESSOR)
    s, t = np.nonzero(~none)
    p = pred[s, t]
    assert np.all(p >= 0)
    np.testing.assert_allclose(want[s, p] + weight[p, t], want[s, t], rtol=1e-12)


@pytest.mark.parametrize("method", METHODS)
def test_statistics_are_those_of_scipys_matrix(graph, method):
    acc = StatsAccumulator.for_graph(graph)
    acc.update(np.arange(N), 0, scipy_distances(graph))
    want = acc.finalize()
    got = fastapsp.stats(graph, partition=hand_partition(graph), backend="numpy", dtype="float64",
                         sssp_method=method)
    assert got.scalars == want.scalars and got.histogram == want.histogram
    for key in want.vertex:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-12, atol=0, err_msg=key)


@pytest.mark.parametrize("method", METHODS)
def test_chosen_rows_are_scipys(graph, method):
    rows = np.array([0, 3, 7, 14, 19, 27, 33, 45, 58])  # one or two of every kind of component
    got = fastapsp.solve(graph, partition=hand_partition(graph), backend="numpy", dtype="float64",
                         sssp_method=method, sources=rows, sources_method="pipeline")
    np.testing.assert_array_equal(got, scipy_distances(graph)[rows])


def _dense_everywhere(monkeypatch):
    """Every component built and closed, as without the shortcuts."""
    monkeypatch.setattr(components, "internal_arcs", lambda graph, partition: np.ones(partition.k, dtype=np.int64))
    monkeypatch.setattr(components, "_needs_matrix", lambda partition, arcs, p: True)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("directed", [False, True])
def test_the_same_bits_as_the_dense_path(directed, method, monkeypatch):
    """float32 with weights that are not whole numbers: any other order of additions could show."""
    graph = mixed_graph(directed, whole=False)
    part = hand_partition(graph)
    run = dict(partition=part, backend="numpy", dtype="float32", sssp_method=method)
    short = fastapsp.solve(graph, **run)
    short_stats = fastapsp.stats(graph, **run)
    rows = np.array([2, 9, 15, 20, 26, 31, 52])
    short_rows = fastapsp.solve(graph, sources=rows, sources_method="pipeline", **run)
    if method == "frontier":
        short_d, short_p = fastapsp.solve(graph, return_predecessors=True, **run)
    with monkeypatch.context() as m:
        _dense_everywhere(m)
        dense = fastapsp.solve(graph, **run)
        dense_stats = fastapsp.stats(graph, **run)
        dense_rows = fastapsp.solve(graph, sources=rows, sources_method="pipeline", **run)
        if method == "frontier":
            dense_d, dense_p = fastapsp.solve(graph, return_predecessors=True, **run)
    assert short.dtype == np.float32
    np.testing.assert_array_equal(short, dense)
    np.testing.assert_array_equal(short_rows, dense_rows)
    assert short_stats.scalars == dense_stats.scalars and short_stats.histogram == dense_stats.histogram
    for key in dense_stats.vertex:
        np.testing.assert_array_equal(short_stats[key], dense_stats[key], err_msg=key)
    if method == "frontier":
        np.testing.assert_array_equal(short_d, dense_d)
        np.testing.assert_array_equal(short_p, dense_p)


def test_no_matrix_is_made_for_the_components_that_need_none(graph, monkeypatch):
    """Only the components with interior vertices and arcs of their own are built (frontier) or closed again."""
    part = hand_partition(graph)
    built = []
    real = components.build_and_close

    def spy(csr, vertices, nb, rows_b, **kw):
        built.append(int(part.labels[int(vertices[0])]))
        return real(csr, vertices, nb, rows_b, **kw)

    monkeypatch.setattr(components, "build_and_close", spy)
    fastapsp.solve(graph, partition=part, backend="numpy", dtype="float64", sssp_method="frontier")
    assert sorted(built) == [0, 5, 6]
    closed, blocks = components.local_closures(graph, part, components.nonempty(part), backend="numpy",
                                               dtype=np.float64)
    assert closed[1] is None and closed[3] is None and closed[4] is None  # arc-less: not closed
    no_arcs = np.full((2, 7), np.inf)
    no_arcs[[0, 1], [0, 1]] = 0
    np.testing.assert_array_equal(blocks[3], no_arcs)  # L_3[:nb_3], boundary leaves beside isolated vertices
    assert blocks[4].shape == (0, 10)


def test_the_boundary_graph_method_closes_again_only_the_components_that_need_it(graph, monkeypatch):
    """With no closure kept, only the components with interior vertices and arcs of their own are closed again."""
    part = hand_partition(graph)
    everything = components.nonempty(part)
    _, blocks = components.local_closures(graph, part, everything, backend="numpy", dtype=np.float64)
    again = []
    real = components.close_components

    def spy(indptr, indices, weights, partition, which, **kw):
        again.extend(which)
        return real(indptr, indices, weights, partition, which, **kw)

    monkeypatch.setattr(components, "close_components", spy)
    sink = MemorySink(N, np.float64)
    components.run_components(graph, part, everything, backend="numpy", sink=sink, dtype=np.float64,
                              boundary_rows="boundary-graph", closed={}, boundary_blocks=blocks)
    assert sorted(again) == [0, 5, 6]
    assert sink.rows_written.all()
    np.testing.assert_array_equal(sink.result, scipy_distances(graph))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_internal_arcs_equals_a_count_over_every_arc(seed):
    """Counted from the boundary vertices' arcs and the loops: the same as one pass over every arc, on a
    directed graph with self loops, isolated vertices and components of every kind."""
    rng = np.random.default_rng(seed)
    n, m, k = 300, 900, 12
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    src = np.concatenate([src, np.arange(0, n, 7)])  # self loops on every seventh vertex
    dst = np.concatenate([dst, np.arange(0, n, 7)])
    keys = np.unique(src.astype(np.int64) * n + dst)  # a CSR built directly keeps its loops
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys // n, minlength=n), out=indptr[1:])
    g = Graph(indptr, (keys % n).astype(np.int64), np.ones(keys.size), directed=True)
    labels = rng.integers(0, k, n)
    part = make_partition(g, labels, k, method="by hand", seed=0, imbalance=1.0, seconds=0.0)
    s, d, _ = g.arcs()
    want = np.bincount(labels[s][(labels[s] == labels[d]) & (s != d)], minlength=k)
    assert g.loops().size > 0
    np.testing.assert_array_equal(components.internal_arcs(g, part), want)
