"""Predecessors carried through the stages (fastapsp/stages/predecessors.py), NumPy and CuPy.

Every predecessor is checked against the graph itself: the arc p -> t exists,
d(s, p) + w(p, t) = d(s, t), and following predecessors from any reachable t ends
at s without a cycle (zero-weight arcs, ties, zero cycles).  Arc counts are
unique (the fewest arcs of any shortest path), so they are compared exactly with
an independent breadth-first search.
"""

import numpy as np
import pytest
from conftest import disconnected_graph, host, random_graph, reference_apsp

import fastapsp
from fastapsp.graph import Graph
from fastapsp.partition import partition_graph
from fastapsp.paths import NO_PREDECESSOR, reconstruct_path, tight_tree
from fastapsp.stages import blocked_floyd_warshall, boundary_sssp, build_component_matrix, min_plus
from fastapsp.stages.predecessors import (boundary_predecessors, component_predecessors,
                                          floyd_warshall_predecessors, min_plus_predecessors)


def backend_name(xp):
    return "numpy" if xp is np else "cupy"


def arc_matrix(graph):
    """Dense matrix of arc weights (lightest of parallel arcs; inf: no arc)."""
    w = np.full((graph.n, graph.n), np.inf)
    src, dst, weight = graph.arcs()
    np.minimum.at(w, (src, dst), weight)
    return w


def fewest_arcs(graph, dist, sources):
    """Arcs of a shortest path with the fewest arcs, by breadth-first search over tight arcs (-1: unreachable)."""
    src, dst, w = graph.arcs()
    arcs = (src.astype(np.int64), dst.astype(np.int64), w)
    return np.stack([tight_tree(arcs, dist[i].astype(np.float64), int(s), graph.n)[0]
                     for i, s in enumerate(sources)])


def assert_predecessors(graph, dist, pred, sources, *, rel=0.0):
    """Every predecessor is the tail of a tight arc, and every walk back reaches its source."""
    dist, pred = np.asarray(dist, dtype=np.float64), np.asarray(pred)
    sources = np.asarray(sources)
    assert pred.dtype == np.int32 and pred.shape == dist.shape
    weights = arc_matrix(graph)
    rows = np.arange(sources.size)[:, None]
    cols = np.arange(graph.n)[None, :]
    reachable = np.isfinite(dist) & (cols != sources[:, None])
    # none exactly at the source and the unreachable vertices
    assert np.all(pred[~reachable] == NO_PREDECESSOR)
    assert np.all((pred[reachable] >= 0) & (pred[reachable] < graph.n))
    p = np.where(reachable, pred, 0)
    through = dist[rows, p] + weights[p, cols]
    np.testing.assert_allclose(through[reachable], dist[reachable], rtol=rel, atol=0)
    # no cycle: n steps back from every reachable vertex end at the source
    cur = np.where(reachable, cols, sources[:, None]).astype(np.int64)
    for _ in range(graph.n):
        at_source = cur == sources[:, None]
        if at_source.all():
            break
        cur = np.where(at_source, cur, pred[rows, cur])
    assert np.all(cur == sources[:, None]), "a cycle of predecessors"


GRAPHS = {
    "directed-zero": lambda: random_graph(np.random.default_rng(1), 90, 330, directed=True, weighted=True,
                                          zero_weights=True),
    "undirected-zero": lambda: random_graph(np.random.default_rng(2), 80, 220, directed=False, weighted=True,
                                            zero_weights=True),
    "unit": lambda: random_graph(np.random.default_rng(3), 100, 260, directed=False, weighted=False),
    "disconnected": lambda: disconnected_graph(np.random.default_rng(4), [30, 25, 40], directed=True, weighted=True,
                                               zero_weights=True),
    "zero-cliques": lambda: zero_cliques(),
}


def zero_cliques():
    """Groups of vertices joined by zero-weight arcs both ways (zero cycles everywhere), chained by weight-1 arcs."""
    rng = np.random.default_rng(5)
    src, dst, w = [], [], []
    for g in range(12):
        members = np.arange(6 * g, 6 * g + 6)
        for a in members:
            for b in members:
                if a != b:
                    src.append(a), dst.append(b), w.append(0.0)
        nxt = (6 * (g + 1)) % 72
        src += [members[rng.integers(6)]]
        dst += [nxt + rng.integers(6)]
        w += [1.0]
    return Graph.from_edges(72, np.array(src), np.array(dst), np.array(w), directed=True, name="zero-cliques")


# ------------------------------------------------------------------ stages
@pytest.mark.parametrize("name", GRAPHS)
def test_boundary_predecessors_are_a_shortest_path_tree(name, xp):
    graph = GRAPHS[name]()
    sources = np.array([0, 3, graph.n - 1, 17])
    csr = [xp.asarray(a) for a in (graph.indptr, graph.indices, graph.weights)]
    dist = boundary_sssp(*csr, xp.asarray(sources), dtype=np.float32)
    hops, pred = boundary_predecessors(*csr, xp.asarray(sources), dist)
    dist, hops, pred = host(dist), host(hops), host(pred)
    assert_predecessors(graph, dist, pred, sources)
    np.testing.assert_array_equal(hops, fewest_arcs(graph, dist, sources))


def component_matrices(graph, xp, k=4, seed=0):
    """The component matrices (distances, arcs, predecessors) of every component, before Floyd-Warshall."""
    part = partition_graph(graph, k, "metis", seed=seed)
    csr = [xp.asarray(a) for a in (graph.indptr, graph.indices, graph.weights)]
    for p in range(part.k):
        vertices, nb = part.component(p)
        if vertices.size == 0:
            continue
        rows = boundary_sssp(*csr, xp.asarray(vertices[:nb]), dtype=np.float64)
        hops, pred = boundary_predecessors(*csr, xp.asarray(vertices[:nb]), rows)
        matrix = build_component_matrix(*csr, xp.asarray(vertices), nb, rows)
        m_h, m_p = component_predecessors(*csr, xp.asarray(vertices), nb, hops, pred)
        yield vertices, nb, matrix, m_h, m_p


@pytest.mark.parametrize("name", ["directed-zero", "undirected-zero", "zero-cliques"])
def test_floyd_warshall_carries_predecessors(name, xp):
    """Closed component matrices: the distances of the plain stage, paths in the graph behind every entry."""
    graph = GRAPHS[name]()
    d = reference_apsp(graph)
    weights = arc_matrix(graph)
    for vertices, nb, matrix, m_h, m_p in component_matrices(graph, xp):
        plain = blocked_floyd_warshall(matrix.copy())
        floyd_warshall_predecessors(matrix, m_h, m_p)
        matrix, m_h, m_p = host(matrix), host(m_h), host(m_p)
        np.testing.assert_array_equal(matrix, host(plain))
        np.testing.assert_array_equal(matrix, d[np.ix_(vertices, vertices)])  # global distances
        c = vertices.size
        reach = np.isfinite(matrix) & ~np.eye(c, dtype=bool)
        assert np.all(m_p[~reach] == NO_PREDECESSOR)
        # the predecessor is a global vertex: d(s, p) + w(p, t) = d(s, t)
        s_of = np.repeat(vertices[:, None], c, axis=1)[reach]
        t_of = np.repeat(vertices[None, :], c, axis=0)[reach]
        p = m_p[reach]
        np.testing.assert_array_equal(d[s_of, p] + weights[p, t_of], matrix[reach])
        np.testing.assert_array_equal(m_h[reach], fewest_arcs(graph, d[vertices], vertices)[:, vertices][reach])


def brute_min_plus(a, ah, ap, b, bh, bp):
    """Every candidate of every entry, the (d, h) smallest kept: distances, arcs and the allowed predecessors."""
    cand_d = a[:, :, None] + b[None, :, :]
    cand_h = ah[:, :, None].astype(np.int64) + bh[None, :, :]
    cand_p = np.where(bp[None, :, :] != NO_PREDECESSOR, bp[None, :, :], ap[:, :, None])
    d = cand_d.min(axis=1)
    h = np.where(cand_d == d[:, None, :], cand_h, np.iinfo(np.int64).max).min(axis=1)
    best = (cand_d == d[:, None, :]) & (cand_h == h[:, None, :]) & np.isfinite(cand_d)
    return d, h, cand_p, best


@pytest.mark.parametrize("shape", [(5, 7, 9), (40, 33, 70), (70, 1, 40), (3, 0, 4)])
def test_min_plus_takes_the_winner_predecessor(shape, xp):
    rng = np.random.default_rng(sum(shape))
    r, t, w = shape
    a = rng.integers(0, 4, (r, t)).astype(np.float32)
    b = rng.integers(0, 4, (t, w)).astype(np.float32)
    a[rng.random((r, t)) < 0.2] = np.inf
    b[rng.random((t, w)) < 0.2] = np.inf
    ah, bh = rng.integers(0, 5, (r, t)).astype(np.int32), rng.integers(0, 5, (t, w)).astype(np.int32)
    ap, bp = rng.integers(0, 99, (r, t)).astype(np.int32), rng.integers(0, 99, (t, w)).astype(np.int32)
    bp[rng.random((t, w)) < 0.1] = NO_PREDECESSOR  # "b[t, j] is the source itself": the left operand's then
    out, out_p, out_h = (xp.empty((r, w), dtype=np.float32), xp.empty((r, w), dtype=np.int32),
                         xp.empty((r, w), dtype=np.int32))
    min_plus_predecessors(*(xp.asarray(x) for x in (a, ah, ap, b, bh, bp)), out=out, out_pred=out_p, out_hops=out_h)
    out, out_p, out_h = host(out), host(out_p), host(out_h)
    np.testing.assert_array_equal(out, host(min_plus(xp.asarray(a), xp.asarray(b))))
    if t == 0:
        assert np.all(np.isinf(out)) and np.all(out_p == NO_PREDECESSOR)
        return
    d, h, cand_p, best = brute_min_plus(a, ah, ap, b, bh, bp)
    np.testing.assert_array_equal(out, d)
    finite = np.isfinite(d)
    np.testing.assert_array_equal(out_h[finite], h[finite])
    assert np.all(out_p[~finite] == NO_PREDECESSOR)
    allowed = (cand_p == out_p[:, None, :]) & best
    assert np.all(allowed.any(axis=1)[finite]), "a predecessor of no winning candidate"


def test_min_plus_on_column_views(xp):
    """Operands that are column slices of wider arrays (the boundary rows of one column chunk)."""
    rng = np.random.default_rng(7)
    a = rng.integers(0, 5, (20, 6)).astype(np.float32)
    b = rng.integers(0, 5, (6, 50)).astype(np.float32)
    ah, bh = np.ones((20, 6), np.int32), np.ones((6, 50), np.int32)
    ap, bp = rng.integers(0, 9, (20, 6)).astype(np.int32), rng.integers(0, 9, (6, 50)).astype(np.int32)
    B, BH, BP = (xp.asarray(x) for x in (b, bh, bp))
    out, out_p = xp.empty((20, 30), dtype=np.float32), xp.empty((20, 30), dtype=np.int32)
    min_plus_predecessors(xp.asarray(a), xp.asarray(ah), xp.asarray(ap), B[:, 10:40], BH[:, 10:40], BP[:, 10:40],
                          out=out, out_pred=out_p)
    d, _, cand_p, best = brute_min_plus(a, ah, ap, b[:, 10:40], bh[:, 10:40], bp[:, 10:40])
    np.testing.assert_array_equal(host(out), d)
    assert np.all(((cand_p == host(out_p)[:, None, :]) & best).any(axis=1)[np.isfinite(d)])


# ------------------------------------------------------------------ the whole pipeline
@pytest.mark.parametrize("name", GRAPHS)
@pytest.mark.parametrize("k", [1, 5])
def test_solve_with_predecessors(name, k, xp):
    graph = GRAPHS[name]()
    dist, pred = fastapsp.solve(graph, k=k, backend=backend_name(xp), dtype="float32", return_predecessors=True)
    np.testing.assert_array_equal(dist, reference_apsp(graph).astype(np.float32))
    np.testing.assert_array_equal(dist, fastapsp.solve(graph, k=k, backend=backend_name(xp), dtype="float32"))
    assert_predecessors(graph, dist, pred, np.arange(graph.n))
    weights = arc_matrix(graph)
    rng = np.random.default_rng(k)
    for s, t in zip(rng.integers(0, graph.n, 60).tolist(), rng.integers(0, graph.n, 60).tolist()):
        path = reconstruct_path(pred, s, t)  # arc by arc, and by length
        if not np.isfinite(dist[s, t]):
            assert path == []
            continue
        assert path[0] == s and path[-1] == t and len(set(path)) == len(path)
        assert sum(weights[u, v] for u, v in zip(path, path[1:])) == dist[s, t]


@pytest.mark.parametrize("method", ["pipeline", "sssp"])
def test_sources_with_predecessors(method, xp):
    graph = GRAPHS["directed-zero"]()
    ids = np.array([5, 0, 77, 31, 64])
    dist, pred = fastapsp.solve(graph, k=6, backend=backend_name(xp), dtype="float64", sources=ids,
                                sources_method=method, return_predecessors=True)
    np.testing.assert_array_equal(dist, reference_apsp(graph)[ids])
    assert_predecessors(graph, dist, pred, ids)
    for i, s in enumerate(ids):
        assert reconstruct_path(pred, int(s), int(s), sources=ids) == [int(s)]
        assert reconstruct_path(pred[i : i + 1], int(s), int(graph.n - 1), sources=[s]) \
            == reconstruct_path(pred, int(s), int(graph.n - 1), sources=ids)


def test_real_weights_with_predecessors(xp):
    rng = np.random.default_rng(8)
    n = 80
    src, dst = rng.integers(0, n, 300), rng.integers(0, n, 300)
    graph = Graph.from_edges(n, src, dst, rng.uniform(0.1, 3.0, 300), directed=True)
    dist, pred = fastapsp.solve(graph, k=4, backend=backend_name(xp), dtype="float64", return_predecessors=True)
    assert_predecessors(graph, dist, pred, np.arange(n), rel=1e-12)


def test_boundary_graph_method_is_replaced_by_frontier():
    """solve(return_predecessors) takes the boundary rows from the frontier SSSP whatever is asked."""
    graph = GRAPHS["undirected-zero"]()
    dist, pred = fastapsp.solve(graph, k=4, backend="numpy", sssp_method="boundary-graph", return_predecessors=True)
    assert_predecessors(graph, dist, pred, np.arange(graph.n))
