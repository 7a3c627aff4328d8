"""Jet (fastapsp.partition.jet): its NumPy path in CI, the GPU partitioner where CuPy sees a device.

Validity and balance are checked from the raw edge list with plain NumPy/Python.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import DATA, _cupy_usable, host
from fastapsp.errors import BackendError
from fastapsp.graph import Graph
from fastapsp.partition import partition_graph
from fastapsp.partition.jet import _contract, _Level, _match, jet_partition

pytest.importorskip("pymetis")  # the coarsest graph is partitioned by METIS


def edge_set(src, dst):
    return {(min(u, v), max(u, v)) for u, v in zip(np.asarray(src).tolist(), np.asarray(dst).tolist()) if u != v}


def grid(side):
    idx = np.arange(side * side).reshape(side, side)
    src = np.concatenate([idx[:, :-1].ravel(), idx[:-1, :].ravel(), idx[:-1, :-1].ravel()])
    dst = np.concatenate([idx[:, 1:].ravel(), idx[1:, :].ravel(), idx[1:, 1:].ravel()])
    return Graph.from_edges(side * side, src, dst, directed=False, name="grid"), edge_set(src, dst)


def road():
    from fastapsp.io import read_graph

    g = read_graph(DATA / "minnesota.mtx.gz")
    src, dst, _ = g.arcs()
    return g, edge_set(src, dst)


def random_sparse():
    rng = np.random.default_rng(5)
    n = 500
    src, dst = rng.integers(0, n, 1300), rng.integers(0, n, 1300)
    return Graph.from_edges(n, src, dst, directed=False, name="random"), edge_set(src, dst)


GRAPHS = {"grid": lambda: grid(40), "minnesota": road, "random": random_sparse}


def check_valid(graph, labels, k, imbalance):
    labels = np.asarray(labels)
    assert labels.shape == (graph.n,)
    assert np.issubdtype(labels.dtype, np.integer)
    assert labels.min() >= 0 and labels.max() < k
    sizes = np.bincount(labels, minlength=k)
    assert sizes.max() <= math.ceil((1 + imbalance) * graph.n / k - 1e-9), (sizes.max(), graph.n, k)


def cut(edges, labels):
    return sum(labels[u] != labels[v] for u, v in edges)


# ------------------------------------------------------------------ NumPy path (CI)
@pytest.mark.parametrize("name", list(GRAPHS))
@pytest.mark.parametrize("k", [2, 7, 16])
def test_numpy_path_valid_and_balanced(name, k):
    graph, edges = GRAPHS[name]()
    indptr, indices = graph.undirected_adjacency()
    # A small coarsest size, so that several levels of coarsening and refinement run.
    labels = jet_partition(indptr, indices, k, seed=3, imbalance=0.03, coarsest=max(4 * k, 60))
    check_valid(graph, labels, k, 0.03)
    assert labels.dtype == np.int32
    # A partition, not a labelling at random: within 1.5 times METIS's edge cut.
    metis = partition_graph(graph, k, "metis", seed=3).labels
    assert cut(edges, labels) <= 1.5 * cut(edges, metis)


def test_numpy_path_deterministic_and_seeded():
    graph, _ = GRAPHS["grid"]()
    indptr, indices = graph.undirected_adjacency()
    a = jet_partition(indptr, indices, 8, seed=11, imbalance=0.03, coarsest=60)
    b = jet_partition(indptr, indices, 8, seed=11, imbalance=0.03, coarsest=60)
    np.testing.assert_array_equal(a, b)
    others = {jet_partition(indptr, indices, 8, seed=s, imbalance=0.03, coarsest=60).tobytes() for s in range(4)}
    assert len(others) > 1


def test_k_one_and_bad_k():
    graph, _ = GRAPHS["random"]()
    indptr, indices = graph.undirected_adjacency()
    assert not jet_partition(indptr, indices, 1, seed=0, imbalance=0.03).any()
    with pytest.raises(ValueError, match="k: 0 is outside"):
        jet_partition(indptr, indices, 0, seed=0, imbalance=0.03)


def test_matching_and_contraction_keep_weights():
    """Coarse vertex weights sum to n, coarse edge weights to the edges between different coarse vertices."""
    graph, edges = GRAPHS["minnesota"]()
    indptr, indices = graph.undirected_adjacency()
    g = _Level(np, indptr, indices, np.ones(indices.size, np.int64), np.ones(graph.n, np.int64))
    mate = _match(np, g, 4, seed=1, level=1)
    matched = np.flatnonzero(mate >= 0)
    assert np.all(mate[mate[matched]] == matched)  # a matching: partners point at each other
    assert np.all(mate[matched] != matched)
    coarse = _contract(np, g, mate)
    cmap = g.coarse_map
    assert coarse.n < 0.8 * graph.n
    assert coarse.vweights.sum() == graph.n
    np.testing.assert_array_equal(coarse.vweights, np.bincount(cmap, minlength=coarse.n))
    between = sum(cmap[u] != cmap[v] for u, v in edges)
    assert coarse.eweights.sum() == 2 * between
    assert np.all(coarse.indices != np.repeat(np.arange(coarse.n), np.diff(coarse.indptr)))  # no loops


def test_two_hop_matching_pairs_leaves_of_a_star():
    """A star has one heavy-edge match at most; leaves hanging from the hub are paired by two-hop matching."""
    n = 21
    graph = Graph.from_edges(n, np.zeros(n - 1, np.int64), np.arange(1, n), directed=False, name="star")
    indptr, indices = graph.undirected_adjacency()
    g = _Level(np, indptr, indices, np.ones(indices.size, np.int64), np.ones(n, np.int64))
    mate = _match(np, g, 2, seed=0, level=1)
    assert np.count_nonzero(mate >= 0) >= n - 2


# ------------------------------------------------------------------ the registered GPU partitioner
def test_jet_without_gpu_names_cupy(monkeypatch):
    if _cupy_usable():
        pytest.skip("a GPU is visible")
    graph, _ = GRAPHS["random"]()
    with pytest.raises(BackendError, match="cupy"):
        partition_graph(graph, 4, "jet")
    with pytest.raises(BackendError, match="cupy"):
        partition_graph(graph, 4, "jet+b")


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(GRAPHS))
def test_gpu_jet_valid_deterministic_and_same_as_numpy(xp, name):
    if xp is np:
        pytest.skip("runs on CuPy")
    graph, _ = GRAPHS[name]()
    indptr, indices = graph.undirected_adjacency()
    for k in (2, 16):
        on_device = jet_partition(xp.asarray(indptr), xp.asarray(indices), k, seed=3, imbalance=0.03,
                                  coarsest=max(4 * k, 60))
        assert type(on_device).__module__.startswith("cupy")
        on_host = jet_partition(indptr, indices, k, seed=3, imbalance=0.03, coarsest=max(4 * k, 60))
        np.testing.assert_array_equal(host(on_device), on_host)
        part = partition_graph(graph, k, "jet", seed=3)
        check_valid(graph, part.labels, k, 0.03)
        again = partition_graph(graph, k, "jet", seed=3)
        np.testing.assert_array_equal(part.labels, again.labels)
        refined = partition_graph(graph, k, "jet+b", seed=3)
        check_valid(graph, refined.labels, k, 0.03)
        assert refined.details["refine_backend"] == "cupy"
        assert refined.metrics()["boundary_vertices"] <= refined.details["boundary_vertices_before_refine"]
        assert refined.details["boundary_vertices_before_refine"] == part.metrics()["boundary_vertices"]
