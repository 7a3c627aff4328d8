"""The cut of a graph into one piece per rank (fastapsp/partition/pieces.py) and when the ranks use it.

Each property is checked against an independent computation: the pieces cover every vertex once,
their shares of k add up, every rank's own piece is the one the whole cut gives, a cut falls at a
bridge where one is within reach, disconnected parts are never cut, and the induced structure
matches SciPy's submatrix.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from fastapsp.cost import pieces_seconds
from fastapsp.distributed import in_pieces
from fastapsp.errors import ConfigError
from fastapsp.graph import Graph
from fastapsp.options import SolveOptions
from fastapsp.partition.pieces import CUT_SLACK, PIECES_FROM, cut_pieces, piece_graph, piece_imbalance


def grid_edges(rows: int, cols: int, first: int = 0):
    ids = np.arange(rows * cols).reshape(rows, cols) + first
    right = np.stack([ids[:, :-1].ravel(), ids[:, 1:].ravel()])
    down = np.stack([ids[:-1, :].ravel(), ids[1:, :].ravel()])
    return np.concatenate([right, down], axis=1)


def symmetric(n: int, edges):
    graph = Graph.from_edges(n, edges[0], edges[1], directed=False)
    return graph.undirected_adjacency()


def shuffled(n: int, edges, seed: int):
    """The same graph with its vertices renumbered at random (no help from the ids' order)."""
    perm = np.random.default_rng(seed).permutation(n)
    return perm[edges]


def cut_arcs(indptr, indices, piece):
    rows = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
    return int(np.sum(piece[rows] != piece[indices]))


def piece_of(n, pieces):
    piece = np.full(n, -1)
    for p, vertices, _ in pieces:
        assert np.all(piece[vertices] == -1), "a vertex in two pieces"
        piece[vertices] = p
    return piece


@pytest.mark.parametrize("count", [1, 2, 3, 4, 5, 8])
def test_pieces_cover_every_vertex_once_and_share_k(count):
    n = 40 * 30
    indptr, indices = symmetric(n, shuffled(n, grid_edges(40, 30), seed=count))
    k = 37
    pieces = cut_pieces(indptr, indices, count, k)
    assert [p for p, _, _ in pieces] == list(range(count))
    piece = piece_of(n, pieces)
    assert np.all(piece >= 0)
    shares = np.array([c for _, _, c in pieces])
    assert shares.sum() == k and shares.min() >= 1
    sizes = np.array([v.size for _, v, _ in pieces])
    for _, vertices, _ in pieces:
        assert np.all(np.diff(vertices) > 0), "vertices ascending"
    # each share follows its piece's size: within one component of the proportion, per bisection level
    levels = int(np.ceil(np.log2(count))) if count > 1 else 0
    assert np.all(np.abs(shares - k * sizes / n) <= levels + 1)
    # sizes within the slack of each bisection (compounded over the levels)
    assert np.all(sizes <= n / count * (1 + 2 * CUT_SLACK * count) ** max(levels, 1))


@pytest.mark.parametrize("count", [2, 3, 4, 6])
def test_each_rank_finds_its_own_piece_alone(count):
    n = 30 * 30
    indptr, indices = symmetric(n, shuffled(n, grid_edges(30, 30), seed=7))
    whole = cut_pieces(indptr, indices, count, 3 * count)
    for p, vertices, share in whole:
        (only,) = cut_pieces(indptr, indices, count, 3 * count, only=p)
        assert only[0] == p and only[2] == share
        np.testing.assert_array_equal(only[1], vertices)


def test_a_bridge_within_reach_is_where_the_cut_falls():
    """Two 20 x 20 grids joined by one edge: the cut is that edge (a front of one vertex)."""
    n = 800
    edges = np.concatenate([grid_edges(20, 20), grid_edges(20, 20, first=400), [[399], [400]]], axis=1)
    edges = shuffled(n, edges, seed=3)
    indptr, indices = symmetric(n, edges)
    piece = piece_of(n, cut_pieces(indptr, indices, 2, 8))
    assert cut_arcs(indptr, indices, piece) == 2  # the bridge, once each way
    assert np.bincount(piece).tolist() == [400, 400]


def test_disconnected_parts_are_not_cut():
    n = 3 * 100
    edges = np.concatenate([grid_edges(10, 10, first=f) for f in (0, 100, 200)], axis=1)
    indptr, indices = symmetric(n, shuffled(n, edges, seed=5))
    piece = piece_of(n, cut_pieces(indptr, indices, 3, 9))
    assert cut_arcs(indptr, indices, piece) == 0
    assert sorted(np.bincount(piece).tolist()) == [100, 100, 100]


def test_pockets_beyond_the_front_join_the_near_side():
    """A grid with dead-end paths hanging off it: no piece holds a dead end cut off from the rest."""
    rows, cols, hang = 30, 30, 6
    grid = grid_edges(rows, cols)
    extra, next_id = [], rows * cols
    for anchor in range(0, rows * cols, 37):  # paths of `hang` vertices hanging off grid vertices
        chain = [anchor] + list(range(next_id, next_id + hang))
        extra += list(zip(chain[:-1], chain[1:]))
        next_id += hang
    n = next_id
    edges = shuffled(n, np.concatenate([grid, np.array(extra).T], axis=1), seed=11)
    indptr, indices = symmetric(n, edges)
    adjacency = sp.csr_matrix((np.ones(indices.size), indices, indptr), shape=(n, n))
    for _, vertices, _ in cut_pieces(indptr, indices, 2, 10):
        count, labels = connected_components(adjacency[vertices][:, vertices], directed=False)
        # a piece may fall apart only into parts of the grid, never into a hanging path alone
        assert np.bincount(labels).min() > hang or count == 1


def test_a_piece_without_levels_near_its_share_is_split_inside_a_level():
    """A star: one level holds all leaves but one; the cut splits it by vertex id, then leaves cut off
    from the far side's centre-less rest join the near side while it stays within the slack."""
    n = 101
    edges = np.array([[0] * 100, list(range(1, 101))])
    indptr, indices = symmetric(n, edges)
    sizes = sorted(v.size for _, v, _ in cut_pieces(indptr, indices, 2, 4))
    assert sum(sizes) == n and sizes[1] <= n / 2 + CUT_SLACK * n and sizes[0] >= n / 2 - CUT_SLACK * n


def test_piece_graph_is_the_induced_submatrix():
    rng = np.random.default_rng(0)
    n = 200
    edges = rng.integers(0, n, size=(2, 900))
    indptr, indices = symmetric(n, edges)
    vertices = np.sort(rng.choice(n, size=77, replace=False))
    sub_ptr, sub_ind = piece_graph(indptr, indices, vertices)
    expected = sp.csr_matrix((np.ones(indices.size), indices, indptr), shape=(n, n))[vertices][:, vertices]
    got = sp.csr_matrix((np.ones(sub_ind.size), sub_ind, sub_ptr), shape=(77, 77))
    expected.sum_duplicates()
    got.sum_duplicates()
    assert (expected != got).nnz == 0
    assert sub_ind.dtype == indices.dtype


def test_piece_imbalance_keeps_the_whole_graphs_bound():
    n, k, imbalance = 10_000, 100, 0.03
    bound = (1 + imbalance) * n / k
    for size, share in [(5_000, 50), (5_300, 52), (4_700, 48), (1, 1)]:
        allowed = piece_imbalance(n, k, imbalance, size, share)
        assert allowed >= 0
        assert (1 + allowed) * size / share <= bound + 1e-9 or allowed == 0
    assert piece_imbalance(n, k, imbalance, 0, 3) == imbalance


def test_bad_arguments_are_named():
    indptr, indices = symmetric(4, np.array([[0, 1, 2], [1, 2, 3]]))
    with pytest.raises(ValueError, match="k: 2 components cannot be shared among 3 pieces"):
        cut_pieces(indptr, indices, 3, 2)
    with pytest.raises(ValueError, match="only: piece 3 is outside 0..1"):
        cut_pieces(indptr, indices, 2, 2, only=3)
    with pytest.raises(ValueError, match="pieces: 0"):
        cut_pieces(indptr, indices, 0, 2)


def test_when_the_ranks_partition_in_pieces(tmp_path):
    auto, on, off = (SolveOptions(graph="g", parallel_partition=v) for v in ("auto", "on", "off"))
    big = PIECES_FROM
    assert not in_pieces(auto, big, 1000, 1) and not in_pieces(on, 100, 10, 1)  # one rank: never
    assert in_pieces(auto, big, 1000, 2) and not in_pieces(auto, big - 1, 1000, 2)  # METIS on the host here
    assert not in_pieces(auto, big, 7, 4)  # fewer than two components a rank
    assert in_pieces(on, 100, 4, 4) and not in_pieces(on, 100, 3, 4)
    assert not in_pieces(off, big, 1000, 2)
    # auto follows the cost model: METIS on the host costs more than a cut, Jet on the GPU less
    metis, jet = (SolveOptions(graph="g", partitioner=p) for p in ("metis", "jet"))
    assert in_pieces(metis, big, 1400, 4, arcs=6 * big, solve=30.0)
    assert not in_pieces(jet, big, 1400, 4, arcs=6 * big, solve=30.0)
    expected = pieces_seconds(big, 6 * big, 1400, 4, "metis", solve=3000.0)
    assert in_pieces(metis, big, 1400, 4, arcs=6 * big, solve=3000.0) == \
        (expected["pieces"] + expected["added"] < expected["whole"])
    assert not in_pieces(metis, big, 1400, 4, arcs=6 * big, solve=3000.0)  # the added boundary outweighs it
    saved = tmp_path / "part.npz"
    saved.write_bytes(b"")
    loaded = SolveOptions(graph="g", partition_file=str(saved), parallel_partition="on")
    assert not in_pieces(loaded, big, 1000, 2)  # a partition file is loaded by rank 0
    with pytest.raises(ConfigError, match="parallel_partition: 'yes' is not one of auto, on, off"):
        SolveOptions(graph="g", parallel_partition="yes").check(need_graph=False)


@pytest.mark.parametrize("searched", [2, 5, 1 << 14])
def test_hops_by_searches_and_by_pointer_jumping_equal_scipy(monkeypatch, searched):
    """Levels found one search each, or past SEARCHED_LEVELS by pointer jumping (a long path, a grid,
    a disconnected part): SciPy's hop counts, -1 where not reached."""
    from scipy.sparse.csgraph import shortest_path

    from fastapsp.partition import pieces

    monkeypatch.setattr(pieces, "SEARCHED_LEVELS", searched)
    path = np.stack([np.arange(0, 3000), np.arange(1, 3001)])
    grid = grid_edges(30, 40, first=3001)
    edges = shuffled(3001 + 1200 + 7, np.concatenate([path, grid, [[3001], [3000]]], axis=1), seed=3)
    indptr, indices = symmetric(3001 + 1200 + 7, edges)
    adjacency = sp.csr_matrix((np.ones(indices.size), indices, indptr))
    for source in (int(edges[0, 0]), int(edges[1, -1]), int(edges[0, 1500])):
        want = shortest_path(adjacency, unweighted=True, indices=source)
        want = np.where(np.isinf(want), -1, want).astype(np.int64)
        np.testing.assert_array_equal(pieces._hops(adjacency, source), want)
