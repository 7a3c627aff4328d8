"""Jet (fastapsp.partition.jet): its NumPy path in CI, the GPU partitioner where CuPy sees a device.

Validity and balance are checked from the raw edge list with plain NumPy/Python
(tests/partition_cases.py).  The CUDA kernels of fastapsp/kernels/jet.cu are
checked twice: their logic, written out as plain loops here, against the NumPy
functions they replace (in CI), and the kernels themselves on a GPU.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from conftest import _cupy_usable, host
from fastapsp.errors import BackendError
from fastapsp.graph import Graph
from fastapsp.partition import partition_graph
from fastapsp.partition.jet import (_afterburner, _connections, _contract, _heaviest_neighbour, _Level, _match,
                                    _part_weights, jet_partition)
from partition_cases import check_valid, edge_cut, grid_case, minnesota_case, random_case

pytest.importorskip("pymetis")  # the coarsest graph is partitioned by METIS


GRAPHS = {"grid": lambda: grid_case(40), "minnesota": minnesota_case, "random": lambda: random_case(5, 500, 1300)}


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
    assert edge_cut(edges, labels) <= 1.5 * edge_cut(edges, metis)


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


# ------------------------------------------------------------------ the kernels of jet.cu
def weighted_level(seed):
    """A level with random arc and vertex weights (ties likely: weights 1..3), random labels, k = 5."""
    rng = np.random.default_rng(seed)
    graph, _ = random_case(seed, 200, 600)
    indptr, indices = graph.undirected_adjacency()
    g = _Level(np, indptr, indices, rng.integers(1, 4, indices.size), rng.integers(1, 3, graph.n))
    return g, rng.integers(0, 5, graph.n).astype(np.int32), rng


def hash32(x, salt):
    """The kernels' hash, with Python integers."""
    mask = 0xFFFFFFFF
    h = (x ^ salt) & mask
    h ^= h >> 16
    h = (h * 0x7FEB352D) & mask
    h ^= h >> 15
    h = (h * 0x846CA68B) & mask
    return h ^ (h >> 16)


def arcs_of(g, v):
    return range(int(g.indptr[v]), int(g.indptr[v + 1]))


def loop_heaviest_neighbour(g, allowed, salt):
    """jet_heaviest_neighbour, one vertex at a time."""
    best = []
    for v in range(g.n):
        pick = None
        for a in arcs_of(g, v):
            if allowed[a]:
                key = (int(g.eweights[a]), hash32(int(g.indices[a]), salt))
                if pick is None or key > pick[0]:
                    pick = (key, int(g.indices[a]))
        best.append(-1 if pick is None else pick[1])
    return np.array(best)


def loop_connections(g, labels, allowed_part):
    """jet_connections, one vertex at a time."""
    best, conn, own = [], [], []
    for v in range(g.n):
        sums, mine = {}, 0
        for a in arcs_of(g, v):
            p = int(labels[g.indices[a]])
            if p == labels[v]:
                mine += int(g.eweights[a])
            elif allowed_part[p]:
                sums[p] = sums.get(p, 0) + int(g.eweights[a])
        pick = min(sums, key=lambda p: (-sums[p], p)) if sums else -1
        best.append(pick)
        conn.append(sums.get(pick, 0))
        own.append(mine)
    return np.array(best), np.array(conn), np.array(own)


def loop_afterburner(g, labels, dest, cand, rank):
    """jet_afterburner, one vertex at a time."""
    gain = []
    for v in range(g.n):
        total = 0
        if cand[v]:
            for a in arcs_of(g, v):
                u = int(g.indices[a])
                where = dest[u] if cand[u] and rank[u] > rank[v] else labels[u]
                total += int(g.eweights[a]) * (int(where == dest[v]) - int(where == labels[v]))
        gain.append(total)
    return np.array(gain)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kernel_logic_matches_numpy_functions(seed):
    """The per-vertex loops of jet.cu, written out in Python, give what the NumPy functions give."""
    g, labels, rng = weighted_level(seed)
    allowed = rng.random(g.indices.size) < 0.7
    salt = 12345 + seed
    np.testing.assert_array_equal(_heaviest_neighbour(np, g, allowed, salt), loop_heaviest_neighbour(g, allowed, salt))
    for parts in (None, rng.random(5) < 0.6):
        got = _connections(np, g, labels, 5, allowed_part=parts)
        want = loop_connections(g, labels, np.ones(5, bool) if parts is None else parts)
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)
    dest, _, _ = _connections(np, g, labels, 5)
    cand = (dest >= 0) & (rng.random(g.n) < 0.5)
    rank = np.zeros(g.n, np.int64)
    rank[cand] = rng.permutation(int(cand.sum())) + 1
    np.testing.assert_array_equal(_afterburner(np, g, labels, dest, cand, rank),
                                  loop_afterburner(g, labels, dest, cand, rank))
    np.testing.assert_array_equal(_part_weights(np, labels, g.vweights, 5),
                                  np.bincount(labels, weights=g.vweights, minlength=5).astype(np.int64))


@pytest.mark.gpu
@pytest.mark.skipif(os.environ.get("FASTAPSP_JET_KERNELS") != "1",
                    reason="jet.cu kernels are opt-in (FASTAPSP_JET_KERNELS=1) until validated on a GPU")
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_gpu_kernels_match_numpy_functions(xp, seed):
    if xp is np:
        pytest.skip("runs on CuPy")
    g, labels, rng = weighted_level(seed)
    gd = _Level(xp, xp.asarray(g.indptr), xp.asarray(g.indices), xp.asarray(g.eweights), xp.asarray(g.vweights))
    allowed = rng.random(g.indices.size) < 0.7
    np.testing.assert_array_equal(host(_heaviest_neighbour(xp, gd, xp.asarray(allowed), 99)),
                                  _heaviest_neighbour(np, g, allowed, 99))
    for parts in (None, rng.random(5) < 0.6):
        got = _connections(xp, gd, xp.asarray(labels), 5, allowed_part=None if parts is None else xp.asarray(parts))
        for a, b in zip(got, _connections(np, g, labels, 5, allowed_part=parts)):
            np.testing.assert_array_equal(host(a), b)
    dest, _, _ = _connections(np, g, labels, 5)
    cand = (dest >= 0) & (rng.random(g.n) < 0.5)
    rank = np.zeros(g.n, np.int64)
    rank[cand] = rng.permutation(int(cand.sum())) + 1
    got = _afterburner(xp, gd, xp.asarray(labels), xp.asarray(dest), xp.asarray(cand), xp.asarray(rank))
    np.testing.assert_array_equal(host(got), _afterburner(np, g, labels, dest, cand, rank))
    np.testing.assert_array_equal(host(_part_weights(xp, xp.asarray(labels), gd.vweights, 5)),
                                  _part_weights(np, labels, g.vweights, 5))


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
