"""Vertices without arcs get components of their own (fastapsp/partition/isolated.py)."""

import math

import numpy as np
import pytest

from fastapsp.graph import Graph
from fastapsp.partition import partition_graph
from fastapsp.partition.isolated import isolated_split, partition_apart


def _core_and_isolated(n: int, core: int, *, directed: bool, seed: int = 3) -> Graph:
    """A random graph on ``core`` vertices spread among ``n`` ids; the others have no arc."""
    rng = np.random.default_rng(seed)
    ids = rng.permutation(n)[:core]
    src, dst = ids[rng.integers(0, core, 4 * core)], ids[rng.integers(0, core, 4 * core)]
    return Graph.from_edges(n, src, dst, directed=directed)


@pytest.mark.parametrize("n, isolated, k", [(1000, 500, 8), (1000, 10, 8), (1000, 1000, 8), (10, 9, 10),
                                            (10, 1, 10), (7, 3, 2), (5000, 4990, 3), (100, 60, 1)])
def test_the_split_shares_k_and_leaves_no_part_without_vertices(n, isolated, k):
    k_rest, k_alone = isolated_split(n, isolated, k)
    assert k_rest + k_alone == k and 0 <= k_alone <= isolated and 0 <= k_rest <= n - isolated
    assert k_rest >= 1 or isolated == n  # the vertices with arcs always have a component
    if k_alone:  # each share about the components its vertices fill
        assert abs(k_alone - k * isolated / n) <= 1 or k_rest in (1, n - isolated)


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("partitioner", ["metis", "metis+b", "kahip-fast"])
def test_isolated_vertices_fill_their_own_components(directed, partitioner):
    graph = _core_and_isolated(3000, 400, directed=directed)
    k = 15
    part = partition_graph(graph, k, partitioner)
    alone = np.diff(graph.undirected_adjacency()[0]) == 0
    k_rest, k_alone = isolated_split(graph.n, int(alone.sum()), k)
    assert part.k == k and part.details["isolated_components"] == k_alone and k_alone > 0
    assert set(np.unique(part.labels[~alone])) <= set(range(k_rest))
    assert (part.labels[alone] >= k_rest).all()
    assert (part.boundary_per_part[k_rest:] == 0).all() and not part.boundary[alone].any()
    sizes = part.sizes[k_rest:]
    assert sizes.max() - sizes.min() <= 1  # the isolated vertices spread evenly, in the order of their ids
    assert np.all(np.diff(part.labels[alone]) >= 0)


def test_a_few_isolated_vertices_are_left_to_the_partitioner():
    graph = _core_and_isolated(2000, 1990, directed=False)
    part = partition_graph(graph, 4, "metis")
    assert "isolated_vertices" not in part.details
    labels, details = partition_apart(*graph.undirected_adjacency(), 4,
                                      lambda ip, ix, k, imbalance: np.arange(ip.size - 1) % k, imbalance=0.03)
    assert details == {} and np.array_equal(labels, np.arange(graph.n) % 4)


def test_the_partitioner_sees_the_vertices_with_arcs_renumbered():
    graph = _core_and_isolated(600, 100, directed=True)
    indptr, indices = graph.undirected_adjacency()
    seen = {}

    def spy(ip, ix, k, imbalance):
        seen.update(n=ip.size - 1, arcs=ix.size, k=k, top=int(ix.max()), imbalance=imbalance)
        return np.arange(ip.size - 1) % k

    labels, details = partition_apart(indptr, indices, 12, spy, imbalance=0.03)
    linked = np.diff(indptr) > 0
    assert seen["n"] == int(linked.sum()) and seen["arcs"] == indices.size and seen["top"] < seen["n"]
    assert seen["k"] >= 2 and seen["k"] + details["isolated_components"] == 12
    np.testing.assert_array_equal(labels[linked], np.arange(int(linked.sum())) % seen["k"])


def test_a_graph_without_arcs_is_all_isolated_components():
    graph = Graph.from_edges(50, np.array([], dtype=np.int64), np.array([], dtype=np.int64), directed=False)
    part = partition_graph(graph, 5, "metis")
    assert part.sizes.tolist() == [10] * 5 and not part.boundary.any()


@pytest.mark.parametrize("n, linked, k", [(1000, 700, 16), (1000, 300, 16), (600, 500, 12), (5000, 4950, 64),
                                          (333, 100, 7)])
def test_no_component_passes_the_balance_bound(n, linked, k):
    """The split's rounding must not let a component grow past what the imbalance allows for k of n."""
    graph = _core_and_isolated(n, linked, directed=False)
    part = partition_graph(graph, k, "metis")
    assert part.sizes.max() <= math.ceil(1.03 * n / k - 1e-9), (part.sizes.max(), part.details)
