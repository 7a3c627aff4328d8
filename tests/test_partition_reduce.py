"""Partitioning the reduced graph (fastapsp/partition/reduce.py): trees peeled, chains contracted, labels put back."""

import math

import numpy as np
import pytest
from scipy.sparse.csgraph import shortest_path

from conftest import DATA
from fastapsp.graph import Graph
from fastapsp.io import read_graph
from fastapsp.partition import partition_graph
from fastapsp.partition.reduce import reduce_graph, should_reduce


def _road_like(seed: int = 0) -> Graph:
    """A small grid whose streets are chains, with trees hanging off it, a lone cycle, a lone path,
    a lone edge, a loop through one crossing, and isolated vertices."""
    rng = np.random.default_rng(seed)
    side, bends = 6, 3
    src, dst = [], []
    nxt = side * side

    def chain(u, v, length):
        nonlocal nxt
        path = [u] + list(range(nxt, nxt + length)) + [v]
        nxt += length
        src.extend(path[:-1]), dst.extend(path[1:])

    grid = np.arange(side * side).reshape(side, side)
    for r in range(side):
        for c in range(side):
            if c + 1 < side:
                chain(grid[r, c], grid[r, c + 1], int(rng.integers(0, bends + 1)))
            if r + 1 < side:
                chain(grid[r, c], grid[r + 1, c], int(rng.integers(0, bends + 1)))
    for _ in range(30):  # trees: each new vertex hangs from any earlier one
        parent = int(rng.integers(0, nxt))
        src.append(parent), dst.append(nxt)
        nxt += 1
    loop = [0, nxt, nxt + 1, nxt + 2, 0]  # a loop through crossing 0
    nxt += 3
    src.extend(loop[:-1]), dst.extend(loop[1:])
    cycle = list(range(nxt, nxt + 7)) + [nxt]  # a cycle alone
    nxt += 7
    src.extend(cycle[:-1]), dst.extend(cycle[1:])
    path = list(range(nxt, nxt + 5))  # a path alone
    nxt += 5
    src.extend(path[:-1]), dst.extend(path[1:])
    src.append(nxt), dst.append(nxt + 1)  # an edge alone
    nxt += 2
    n = nxt + 4  # four isolated vertices
    weights = rng.integers(1, 10, len(src)).astype(np.float64)
    return Graph.from_edges(n, np.array(src), np.array(dst), weights, directed=False, name="road-like")


def _check(graph, part, k, imbalance=0.03):
    labels = part.labels
    assert labels.shape == (graph.n,) and labels.min() >= 0 and labels.max() < k
    sizes = np.bincount(labels, minlength=k)
    assert np.count_nonzero(sizes) == k
    assert sizes.max() <= math.ceil((1 + imbalance) * graph.n / k - 1e-9) + 1  # as test_metis_respects_imbalance


@pytest.mark.parametrize("k", [1, 2, 3, 5, 8])
def test_reduced_partition_is_valid_and_balanced(k):
    graph = _road_like()
    part = partition_graph(graph, k, "metis", reduce="always")
    _check(graph, part, k)
    if k > 1:
        assert part.details["reduced_vertices"] < graph.n


def test_k_equal_to_n_falls_back_to_the_whole_graph():
    graph = Graph.from_edges(6, [0, 1, 2, 3, 4], [1, 2, 3, 4, 5], directed=False)  # a path
    part = partition_graph(graph, 6, "metis", reduce="always")
    # Fewer reduced vertices than k: the whole graph is partitioned, as without the reduction.
    np.testing.assert_array_equal(part.labels, partition_graph(graph, 6, "metis").labels)
    assert part.details["reduce_fallback"] == "fewer reduced vertices than k"


def test_directed_graph_reduces_its_undirected_structure():
    rng = np.random.default_rng(4)
    base = _road_like(1)
    src, dst, w = base.arcs()
    keep = rng.random(src.size) < 0.7  # some streets one way only
    keep |= src > dst
    directed = Graph.from_edges(base.n, src[keep], dst[keep], w[keep], directed=True)
    part = partition_graph(directed, 4, "metis", reduce="always")
    _check(directed, part, 4)


def test_reduction_keeps_weights_and_the_cut_of_every_labelling():
    graph = _road_like(2)
    indptr, indices = graph.undirected_adjacency()
    reduction = reduce_graph(indptr, indices, cap=3)
    with_arcs = np.count_nonzero(np.diff(indptr))
    assert reduction.vweights.sum() == 2 * graph.n - 2 * (graph.n - with_arcs) + 2 * (graph.n - with_arcs)
    assert reduction.kept.size < with_arcs
    rng = np.random.default_rng(0)
    for _ in range(5):
        reduced = rng.integers(0, 3, reduction.kept.size).astype(np.int32)
        labels = reduction.expand(reduced)
        # Every edge of the reduced graph stands for as many edges of the graph (a chain for one):
        # the cut of the expanded labels is the weighted cut of the reduced ones.
        rows = np.repeat(np.arange(reduction.kept.size), np.diff(reduction.indptr))
        reduced_cut = reduction.eweights[reduced[rows] != reduced[reduction.indices]].sum() // 2
        src = np.repeat(np.arange(graph.n), np.diff(indptr))
        assert np.count_nonzero(labels[src] != labels[indices]) // 2 == reduced_cut
        np.testing.assert_array_equal(labels[reduction.kept], reduced)


def test_only_graphs_with_many_degree_1_or_2_vertices_and_weighted_partitioners_reduce():
    road = read_graph(DATA / "minnesota.mtx.gz")
    side = 20
    idx = np.arange(side * side).reshape(side, side)
    mesh = Graph.from_edges(side * side, np.concatenate([idx[:, :-1].ravel(), idx[:-1, :].ravel(), idx[:-1, :-1].ravel()]),
                            np.concatenate([idx[:, 1:].ravel(), idx[1:, :].ravel(), idx[1:, 1:].ravel()]), directed=False)
    assert should_reduce("metis", road.undirected_adjacency()[0])
    assert not should_reduce("metis", mesh.undirected_adjacency()[0])
    assert not should_reduce("jet", road.undirected_adjacency()[0])
    assert "reduced_vertices" in partition_graph(road, 4, "metis", reduce="auto").details
    assert "reduced_vertices" not in partition_graph(mesh, 4, "metis", reduce="auto").details
    assert "reduced_vertices" not in partition_graph(road, 4, "metis").details  # off by default


def test_same_seed_same_labels():
    graph = _road_like(3)
    first = partition_graph(graph, 4, "metis", seed=7, reduce="always").labels
    np.testing.assert_array_equal(first, partition_graph(graph, 4, "metis", seed=7, reduce="always").labels)


@pytest.mark.parametrize("k", [pytest.param(4, marks=pytest.mark.xfail(
    strict=True, reason="measured: 106 boundary vertices against 88 of METIS on the whole graph (3 seeds); "
    "why is not found yet, one reason reduce is off by default")), 8, 16])
def test_boundary_close_to_metis_on_the_whole_graph(k):
    graph = read_graph(DATA / "minnesota.mtx.gz")
    plain = np.mean([partition_graph(graph, k, "metis", seed=s).boundary.sum() for s in range(3)])
    reduced = [partition_graph(graph, k, "metis", seed=s, reduce="always") for s in range(3)]
    for part in reduced:
        _check(graph, part, k)
    assert np.mean([p.boundary.sum() for p in reduced]) <= 1.08 * plain


def test_exact_distances_through_solve_with_a_reduced_partition():
    from fastapsp import solve

    graph = _road_like(5)
    part = partition_graph(graph, 4, "metis", reduce="always")
    result = solve(graph, k=4, partition=part, backend="numpy")
    distances = np.asarray(getattr(result, "distances", result))
    src, dst, w = graph.arcs()
    from scipy.sparse import csr_matrix

    expected = shortest_path(csr_matrix((w, (src, dst)), shape=(graph.n, graph.n)), directed=True)
    np.testing.assert_allclose(distances, expected)
