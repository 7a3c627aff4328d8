"""Graph.permuted and Graph.subgraph against SciPy's row and column selection (heads ascending in each row,
weights carried, explicit zeros kept), for renamings that keep most rows in order and for random ones."""

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import random_graph

from fastapsp.graph import Graph


def reference(graph, vertices):
    """The induced graph on ``vertices`` (renamed 0..), rows sorted, as (indptr, indices, weights)."""
    a = sp.csr_matrix((np.arange(1, graph.m + 1, dtype=np.float64), graph.indices, graph.indptr),
                      shape=(graph.n, graph.n))  # arc numbers as values: explicit zero weights survive
    sub = a[vertices][:, vertices].tocsr()
    sub.sort_indices()
    arcs = sub.data.astype(np.int64) - 1
    return sub.indptr, sub.indices, graph.weights[arcs]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("directed", [False, True])
def test_renamings_equal_scipy(seed, directed):
    rng = np.random.default_rng(seed)
    graph = random_graph(rng, 300, 900, directed=directed, weighted=True, zero_weights=True)
    labels = rng.integers(0, 7, graph.n)
    by_label = np.argsort(labels, kind="stable")  # runs of components: only rows at their edges reorder
    for order in (by_label, rng.permutation(graph.n), np.arange(graph.n)):
        renamed = graph.permuted(order)
        indptr, indices, weights = reference(graph, order)
        np.testing.assert_array_equal(renamed.indptr, indptr)
        np.testing.assert_array_equal(renamed.indices, indices)
        np.testing.assert_array_equal(renamed.weights, weights)
    for vertices in (np.sort(rng.choice(graph.n, 120, replace=False)), rng.choice(graph.n, 120, replace=False)):
        sub = graph.subgraph(vertices)
        indptr, indices, weights = reference(graph, vertices)
        np.testing.assert_array_equal(sub.indptr, indptr)
        np.testing.assert_array_equal(sub.indices, indices)
        np.testing.assert_array_equal(sub.weights, weights)


def test_empty_rows_and_graph():
    graph = Graph.from_edges(5, [0, 3], [3, 0], [2.0, 2.0], directed=True)
    renamed = graph.permuted([4, 3, 2, 1, 0])
    assert renamed.indptr.tolist() == [0, 0, 1, 1, 1, 2] and renamed.indices.tolist() == [4, 1]
    assert graph.subgraph([1, 2]).m == 0
