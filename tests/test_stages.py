"""Every stage of fastapsp against SciPy / brute force, on NumPy and (with a GPU) CuPy."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from scipy.sparse.csgraph import csgraph_from_dense, dijkstra, shortest_path

from conftest import (dense_reference, disconnected_graph, host, random_edges, random_graph,
                      reference_apsp)
from fastapsp.graph import Graph
from fastapsp.stages.floyd_warshall import close_many
from fastapsp.stages import (assemble_row_block, blocked_floyd_warshall, boundary_sssp,
                             build_component_matrix, extract_inner_to_boundary, min_plus)

DTYPES = [np.float32, np.float64]


def device_csr(graph, xp):
    return xp.asarray(graph.indptr), xp.asarray(graph.indices), xp.asarray(graph.weights)


# =================================================================== boundary_sssp
GRAPH_KINDS = {
    "directed-weighted": dict(directed=True, weighted=True),
    "undirected-weighted": dict(directed=False, weighted=True),
    "directed-unit": dict(directed=True, weighted=False),
    "undirected-unit": dict(directed=False, weighted=False),
    "zero-weights": dict(directed=True, weighted=True, zero_weights=True),
    "loops-and-duplicates": dict(directed=True, weighted=True, self_loops=True, duplicates=True),
    "undirected-duplicates": dict(directed=False, weighted=True, self_loops=True, duplicates=True),
}


@pytest.mark.parametrize("kind", sorted(GRAPH_KINDS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_boundary_sssp_matches_scipy_and_raw_edges(xp, kind, dtype):
    opts = GRAPH_KINDS[kind]
    rng = np.random.default_rng(zlib.crc32(kind.encode()))
    n = 60
    src, dst, w = random_edges(rng, n, 150, weighted=opts["weighted"], zero_weights=opts.get("zero_weights", False),
                               self_loops=opts.get("self_loops", False), duplicates=opts.get("duplicates", False))
    g = Graph.from_edges(n, src, dst, w if opts["weighted"] else None, directed=opts["directed"])
    sources = np.array([0, 7, 7, 59, 13, 42])
    out = boundary_sssp(*device_csr(g, xp), xp.asarray(sources), dtype=dtype)
    assert out.dtype == dtype and out.shape == (sources.size, n)
    got = host(out).astype(np.float64)
    expected = dijkstra(g.to_scipy(), directed=True, indices=sources)
    np.testing.assert_array_equal(got, expected)
    # Independent of Graph's CSR: loops dropped, lightest parallel arc, zero weights kept.
    np.testing.assert_array_equal(got, dense_reference(n, src, dst, w, directed=opts["directed"])[sources])


@pytest.mark.parametrize("directed", [True, False])
def test_boundary_sssp_unit_weights_flag_gives_same_answer(xp, directed):
    rng = np.random.default_rng(3)
    g = random_graph(rng, 80, 200, directed=directed, weighted=False)
    assert g.unit_weights
    sources = xp.asarray(np.arange(0, 80, 3))
    csr = device_csr(g, xp)
    bfs = host(boundary_sssp(*csr, sources, unit_weights=True, dtype=np.float64))
    dij = host(boundary_sssp(*csr, sources, unit_weights=False, dtype=np.float64))
    auto = host(boundary_sssp(*csr, sources, dtype=np.float64))
    expected = reference_apsp(g)[np.arange(0, 80, 3)]
    np.testing.assert_array_equal(bfs, expected)
    np.testing.assert_array_equal(dij, expected)
    np.testing.assert_array_equal(auto, expected)


def test_boundary_sssp_zero_weight_chain_by_hand(xp):
    # 0 -0-> 1 -0-> 2 -5-> 3, and 3 -0-> 0: zero arcs are edges, not missing edges.
    g = Graph.from_edges(5, [0, 1, 2, 3], [1, 2, 3, 0], [0.0, 0.0, 5.0, 0.0], directed=True)
    out = host(boundary_sssp(*device_csr(g, xp), xp.asarray([0, 2, 4]), dtype=np.float64))
    inf = np.inf
    np.testing.assert_array_equal(out, [[0, 0, 0, 5, inf], [5, 5, 0, 5, inf], [inf, inf, inf, inf, 0]])


def test_boundary_sssp_unreachable_is_inf(xp):
    rng = np.random.default_rng(11)
    g = disconnected_graph(rng, [20, 15, 1, 30], directed=True, weighted=True)
    sources = np.array([0, 25, 35, 40])
    out = host(boundary_sssp(*device_csr(g, xp), xp.asarray(sources), dtype=np.float32))
    expected = reference_apsp(g)[sources]
    np.testing.assert_array_equal(out, expected)
    # No arc joins the blobs: everything outside a source's blob is unreachable.
    blob = np.repeat(np.arange(4), [20, 15, 1, 30])
    assert np.all(np.isinf(out[blob[None, :] != blob[sources][:, None]]))
    assert out[2, 35] == 0 and np.isinf(out[2]).sum() == g.n - 1  # the isolated vertex


@pytest.mark.parametrize("dtype", DTYPES)
def test_boundary_sssp_writes_into_out(xp, dtype):
    rng = np.random.default_rng(5)
    g = random_graph(rng, 40, 120, directed=True, weighted=True)
    sources = np.array([3, 1, 39])
    out = xp.full((3, 40), -7.0, dtype=dtype)
    result = boundary_sssp(*device_csr(g, xp), xp.asarray(sources), out=out)
    assert result is out and out.dtype == dtype
    np.testing.assert_array_equal(host(out), reference_apsp(g)[sources].astype(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_boundary_sssp_empty_sources(xp, dtype):
    g = Graph.from_edges(4, [0, 1], [1, 2], directed=True)
    out = boundary_sssp(*device_csr(g, xp), xp.asarray(np.array([], dtype=np.int64)), dtype=dtype)
    assert out.shape == (0, 4) and out.dtype == dtype


@pytest.mark.parametrize("sources", [[0, 4], [-1], [[0, 1]]], ids=["too-large", "negative", "2-d"])
def test_boundary_sssp_bad_sources(xp, sources):
    g = Graph.from_edges(4, [0, 1], [1, 2], directed=True)
    with pytest.raises(ValueError, match="sources"):
        boundary_sssp(*device_csr(g, xp), xp.asarray(np.array(sources)))


def test_boundary_sssp_bad_out_shape(xp):
    g = Graph.from_edges(4, [0, 1], [1, 2], directed=True)
    with pytest.raises(ValueError, match="out"):
        boundary_sssp(*device_csr(g, xp), xp.asarray([0, 1]), out=xp.empty((2, 5)))


# =================================================================== the whole chain, by hand
def chain_apsp(graph, partition, xp, *, tile, dtype=np.float64, chunk=None):
    """Distance matrix from the stages run per component, in column chunks of width ``chunk``."""
    n = graph.n
    csr = device_csr(graph, xp)
    result = np.full((n, n), np.nan)
    chunk = chunk or max(n, 1)
    for p in range(partition.k):
        vertices, nb = partition.component(p)
        if vertices.size == 0:
            continue
        dv = xp.asarray(vertices)
        rows = boundary_sssp(*csr, dv[:nb], dtype=dtype)
        matrix = build_component_matrix(*csr, dv, nb, rows)
        assert matrix.dtype == dtype
        blocked_floyd_warshall(matrix, tile=tile)
        inner = extract_inner_to_boundary(matrix, nb)
        for c0 in range(0, n, chunk):
            width = min(chunk, n - c0)
            block = xp.full((vertices.size, width), -1.0, dtype=dtype)
            min_plus(inner, rows[:, c0 : c0 + width], out=block[nb:])
            assemble_row_block(block, rows, matrix, dv, nb, column_start=c0)
            result[vertices, c0 : c0 + width] = host(block)
    return result


def chain_graph(kind, n, seed):
    rng = np.random.default_rng(seed)
    if kind == "directed-weighted":
        return random_graph(rng, n, 3 * n, directed=True, weighted=True, self_loops=True, duplicates=True)
    if kind == "undirected-weighted":
        return random_graph(rng, n, 2 * n, directed=False, weighted=True)
    if kind == "unit-weights":
        return random_graph(rng, n, 2 * n, directed=True, weighted=False)
    if kind == "disconnected":
        third = n // 3
        return disconnected_graph(rng, [third, third, n - 2 * third], directed=True, weighted=True)
    if kind == "zero-weights":
        return random_graph(rng, n, 3 * n, directed=True, weighted=True, zero_weights=True)
    raise AssertionError(kind)


CHAIN_KINDS = ["directed-weighted", "undirected-weighted", "unit-weights", "disconnected", "zero-weights"]


@pytest.fixture(scope="module")
def metis_partition():
    pytest.importorskip("pymetis")
    from fastapsp.partition import partition_graph

    return lambda g, k: partition_graph(g, k, "metis")


@pytest.mark.parametrize("kind", CHAIN_KINDS)
@pytest.mark.parametrize("k", [1, 2, 5])
def test_chain_equals_reference(xp, metis_partition, kind, k):
    g = chain_graph(kind, 90, seed=k)
    part = metis_partition(g, k)
    expected = reference_apsp(g)
    dtype = np.float32 if k == 2 else np.float64
    np.testing.assert_array_equal(chain_apsp(g, part, xp, tile=7, dtype=dtype), expected)


@pytest.mark.parametrize("n", [1, 31, 32, 33, 63, 64, 65, 127, 129])
@pytest.mark.parametrize("tile", [1, 7, 32, 64])
def test_chain_component_sizes_around_tile_edges(xp, metis_partition, n, tile):
    # k = 1: the one component matrix is n x n, so n walks across tile edges.
    g = chain_graph("directed-weighted", n, seed=n)
    part = metis_partition(g, 1)
    np.testing.assert_array_equal(chain_apsp(g, part, xp, tile=tile, dtype=np.float32), reference_apsp(g))


@pytest.mark.parametrize("kind", ["directed-weighted", "undirected-weighted", "disconnected"])
@pytest.mark.parametrize("k", [1, 2, 5])
@pytest.mark.parametrize("chunk", [1, 7, 13, 76])
def test_chain_in_column_chunks_equals_reference(xp, metis_partition, kind, k, chunk):
    g = chain_graph(kind, 77, seed=10 + k)  # 77 is divisible by neither 13 nor 76
    part = metis_partition(g, k)
    np.testing.assert_array_equal(chain_apsp(g, part, xp, tile=32, chunk=chunk), reference_apsp(g))


# =================================================================== blocked_floyd_warshall
def random_distance_matrix(rng, c, density, *, zeros=False):
    low = 0 if zeros else 1
    m = rng.integers(low, 10, (c, c)).astype(np.float64)
    m[rng.random((c, c)) >= density] = np.inf
    np.fill_diagonal(m, 0.0)
    return m


def scipy_closure(m):
    # null_value=inf: zero off-diagonal entries stay (zero-weight) edges.
    return shortest_path(csgraph_from_dense(m, null_value=np.inf), method="FW", directed=True)


@pytest.mark.parametrize("c", [0, 1, 2, 31, 32, 33, 63, 64, 65, 127, 129])
@pytest.mark.parametrize("tile", [1, 7, 32, 64])
def test_floyd_warshall_sizes_and_tiles(xp, c, tile):
    rng = np.random.default_rng(1000 * c + tile)
    m = random_distance_matrix(rng, c, density=min(1.0, 3.0 / max(c, 1)))
    d = xp.asarray(m.astype(np.float32))
    out = blocked_floyd_warshall(d, tile=tile)
    assert out is d
    np.testing.assert_array_equal(host(d), scipy_closure(m) if c else m)


@pytest.mark.parametrize("density", [0.02, 0.1, 0.5, 1.0])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("tile", [1, 5, 16, 1000])
def test_floyd_warshall_dense_and_sparse(xp, density, dtype, tile):
    rng = np.random.default_rng(int(density * 100) + tile)
    m = random_distance_matrix(rng, 50, density, zeros=True)
    d = xp.asarray(m.astype(dtype))
    blocked_floyd_warshall(d, tile=tile)
    assert d.dtype == dtype
    np.testing.assert_array_equal(host(d), scipy_closure(m))


@pytest.mark.parametrize("dtype", DTYPES)
def test_close_many_equals_one_by_one(xp, dtype):
    """Matrices of many sizes (one a view) closed together equal SciPy's closure of each."""
    rng = np.random.default_rng(17)
    sizes = [1, 0, 63, 64, 65, 130, 2, 200]
    originals = [random_distance_matrix(rng, c, density=min(1.0, 3.0 / max(c, 1)), zeros=True) for c in sizes]
    big = xp.full((205, 207), -1, dtype=dtype)
    view = big[2:202, 3:203]
    view[...] = xp.asarray(originals[-1].astype(dtype))
    matrices = [xp.asarray(m.astype(dtype)) for m in originals[:-1]] + [view]
    close_many(matrices)
    for m, got in zip(originals, matrices):
        np.testing.assert_array_equal(host(got), scipy_closure(m) if m.shape[0] else m)
    assert bool((big[:2] == -1).all()) and bool((big[:, :3] == -1).all()) and bool((big[:, 203:] == -1).all())


def test_close_many_rejects_non_square(xp):
    with pytest.raises(ValueError, match="square"):
        close_many([xp.zeros((2, 2)), xp.zeros((2, 3))])


def test_floyd_warshall_docstring_example(xp):
    d = xp.asarray([[0, 1, np.inf], [np.inf, 0, 2], [5, np.inf, 0]])
    np.testing.assert_array_equal(host(blocked_floyd_warshall(d, tile=2)), [[0, 1, 3], [7, 0, 2], [5, 6, 0]])


@pytest.mark.parametrize("shape", [(3, 4), (4,), (2, 2, 2)])
def test_floyd_warshall_rejects_non_square(xp, shape):
    with pytest.raises(ValueError, match="square"):
        blocked_floyd_warshall(xp.zeros(shape))


@pytest.mark.parametrize("tile", [0, -3])
def test_floyd_warshall_rejects_bad_tile(xp, tile):
    with pytest.raises(ValueError, match="tile"):
        blocked_floyd_warshall(xp.zeros((3, 3)), tile=tile)


# =================================================================== min_plus
def brute_min_plus(a, b):
    if a.shape[1] == 0:
        return np.full((a.shape[0], b.shape[1]), np.inf)
    return np.min(a[:, :, None] + b[None], axis=1)


def random_operand(rng, shape, dtype):
    x = rng.integers(0, 20, shape).astype(dtype)
    x[rng.random(shape) < 0.2] = np.inf
    return x


@pytest.mark.parametrize("r,t,c", [(1, 1, 1), (5, 3, 7), (17, 0, 9), (0, 4, 6), (6, 4, 0), (33, 65, 31),
                                   (50, 5, 3000)])  # the last spans several host row chunks
@pytest.mark.parametrize("dtype", DTYPES)
def test_min_plus_matches_brute_force(xp, r, t, c, dtype):
    rng = np.random.default_rng(r * 10000 + t * 100 + c)
    a, b = random_operand(rng, (r, t), dtype), random_operand(rng, (t, c), dtype)
    out = min_plus(xp.asarray(a), xp.asarray(b))
    assert out.shape == (r, c) and out.dtype == dtype
    np.testing.assert_array_equal(host(out), brute_min_plus(a, b))


@pytest.mark.parametrize("t", [0, 6])
@pytest.mark.parametrize("dtype", DTYPES)
def test_min_plus_accumulate(xp, t, dtype):
    rng = np.random.default_rng(21 + t)
    a, b = random_operand(rng, (9, t), dtype), random_operand(rng, (t, 11), dtype)
    before = random_operand(rng, (9, 11), dtype)
    out = xp.asarray(before)
    result = min_plus(xp.asarray(a), xp.asarray(b), out=out, accumulate=True)
    assert result is out
    np.testing.assert_array_equal(host(out), np.minimum(before, brute_min_plus(a, b)))


@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_min_plus_into_row_slice_of_larger_array(xp, accumulate, dtype):
    rng = np.random.default_rng(8)
    a, b = random_operand(rng, (6, 4), dtype), random_operand(rng, (4, 10), dtype)
    big_host = rng.integers(0, 50, (15, 10)).astype(dtype)
    big = xp.asarray(big_host)
    min_plus(xp.asarray(a), xp.asarray(b), out=big[5:11], accumulate=accumulate)
    expected = big_host.copy()
    product = brute_min_plus(a, b)
    expected[5:11] = np.minimum(big_host[5:11], product) if accumulate else product
    np.testing.assert_array_equal(host(big), expected)


def test_min_plus_into_column_slice(xp):
    rng = np.random.default_rng(9)
    a, b = random_operand(rng, (5, 3), np.float64), random_operand(rng, (3, 4), np.float64)
    big = xp.full((5, 12), -1.0)
    min_plus(xp.asarray(a), xp.asarray(b), out=big[:, 4:8])
    expected = np.full((5, 12), -1.0)
    expected[:, 4:8] = brute_min_plus(a, b)
    np.testing.assert_array_equal(host(big), expected)


def test_min_plus_shape_errors(xp):
    a, b = xp.zeros((3, 4)), xp.zeros((5, 2))
    with pytest.raises(ValueError, match="chain"):
        min_plus(a, b)
    with pytest.raises(ValueError, match="chain"):
        min_plus(xp.zeros(4), xp.zeros((4, 2)))
    with pytest.raises(ValueError, match="out"):
        min_plus(xp.zeros((3, 4)), xp.zeros((4, 2)), out=xp.zeros((3, 3)))
    with pytest.raises(ValueError, match="accumulate"):
        min_plus(xp.zeros((3, 4)), xp.zeros((4, 2)), accumulate=True)


# =================================================================== build_component_matrix
# A 4-vertex directed graph, component C = {0, 1, 2}, the rest = {3}:
#   0 -> 1 (2)   1 -> 2 (3)   2 -> 0 (4)   0 -> 2 (9)   2 -> 3 (1)   3 -> 1 (1)
# Boundary of C: 2 (arc 2 -> 3) and 1 (arc 3 -> 1); interior: 0.
HAND_GRAPH = dict(n=4, src=[0, 1, 2, 0, 2, 3], dst=[1, 2, 0, 2, 3, 1], w=[2.0, 3.0, 4.0, 9.0, 1.0, 1.0])
HAND_VERTICES = np.array([1, 2, 0])  # boundary first
HAND_ROWS = np.array([  # global distances from 1 and from 2 to vertices 0..3, worked out by hand
    [7.0, 0.0, 3.0, 4.0],  # 1->2->0 = 7, 1->2 = 3, 1->2->3 = 4
    [4.0, 2.0, 0.0, 1.0],  # 2->0 = 4, 2->3->1 = 2, 2->3 = 1
])
HAND_MATRIX = np.array([  # local order (1, 2, 0)
    [0.0, 3.0, 7.0],
    [2.0, 0.0, 4.0],
    [2.0, 9.0, 0.0],  # interior vertex 0: its own arcs 0->1 (2), 0->2 (9)
])


def hand_graph():
    h = HAND_GRAPH
    return Graph.from_edges(h["n"], h["src"], h["dst"], h["w"], directed=True)


def test_build_component_matrix_by_hand(xp):
    g = hand_graph()
    csr = device_csr(g, xp)
    rows = boundary_sssp(*csr, xp.asarray(HAND_VERTICES[:2]), dtype=np.float64)
    np.testing.assert_array_equal(host(rows), HAND_ROWS)
    matrix = build_component_matrix(*csr, xp.asarray(HAND_VERTICES), 2, rows)
    np.testing.assert_array_equal(host(matrix), HAND_MATRIX)
    # and the rest of the chain, still by hand: 0->1->2 = 5 beats 0->2 = 9; 0 to 3 costs 6.
    blocked_floyd_warshall(matrix, tile=2)
    np.testing.assert_array_equal(host(extract_inner_to_boundary(matrix, 2)), [[2.0, 5.0]])
    np.testing.assert_array_equal(host(min_plus(extract_inner_to_boundary(matrix, 2), rows)), [[9.0, 2.0, 5.0, 6.0]])


def test_build_component_matrix_drops_arcs_leaving_the_component(xp):
    # Treat 2 as interior: its arc 2 -> 3 leaves the component and must not appear.
    g = hand_graph()
    rows = xp.asarray(HAND_ROWS[:1])  # boundary vertex 1 only
    matrix = host(build_component_matrix(*device_csr(g, xp), xp.asarray(HAND_VERTICES), 1, rows))
    np.testing.assert_array_equal(matrix, [[0.0, 3.0, 7.0], [np.inf, 0.0, 4.0], [2.0, 9.0, 0.0]])


@pytest.mark.parametrize("dtype", [None, np.float32])
def test_build_component_matrix_random(xp, dtype):
    rng = np.random.default_rng(17)
    n = 40
    src, dst, w = random_edges(rng, n, 160, weighted=True, zero_weights=True, duplicates=True, self_loops=True)
    g = Graph.from_edges(n, src, dst, w, directed=True)
    vertices = rng.permutation(n)[:15]
    nb = 6
    rows = rng.integers(0, 30, (nb, n)).astype(np.float64)  # any values: they must be copied as given
    matrix = host(build_component_matrix(*device_csr(g, xp), xp.asarray(vertices), nb, xp.asarray(rows),
                                         dtype=dtype))
    assert matrix.dtype == (dtype or np.float64)
    # Expected, from the raw arcs: lightest arc between interior row and component column.
    adjacency = np.full((n, n), np.inf)
    for u, v, x in zip(src, dst, w):
        if u != v:
            adjacency[u, v] = min(adjacency[u, v], x)
    expected = adjacency[np.ix_(vertices, vertices)]
    expected[:nb] = rows[:, vertices]
    np.fill_diagonal(expected, 0.0)
    np.testing.assert_array_equal(matrix, expected)


def test_build_component_matrix_errors(xp):
    g = hand_graph()
    csr = device_csr(g, xp)
    with pytest.raises(ValueError, match="n_boundary"):
        build_component_matrix(*csr, xp.asarray(HAND_VERTICES), 4, xp.zeros((4, 4)))
    with pytest.raises(ValueError, match="boundary_rows"):
        build_component_matrix(*csr, xp.asarray(HAND_VERTICES), 2, xp.zeros((2, 3)))


# =================================================================== extract_inner_to_boundary
@pytest.mark.parametrize("c,nb", [(6, 2), (6, 0), (6, 6), (5, 1), (40, 17)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_extract_inner_to_boundary_values_and_layout(xp, c, nb, dtype):
    m = np.random.default_rng(c + nb).integers(0, 100, (c, c)).astype(dtype)
    got = extract_inner_to_boundary(xp.asarray(m), nb)
    assert got.shape == (c - nb, nb) and got.dtype == dtype
    assert got.flags.c_contiguous
    np.testing.assert_array_equal(host(got), m[nb:, :nb])


@pytest.mark.parametrize("c,nb", [(6, 2), (6, 5)])
def test_extract_inner_to_boundary_is_a_copy(xp, c, nb):
    m = xp.asarray(np.arange(c * c, dtype=np.float64).reshape(c, c))
    got = extract_inner_to_boundary(m, nb)
    got[...] = -1.0
    np.testing.assert_array_equal(host(m), np.arange(c * c, dtype=np.float64).reshape(c, c))


def test_extract_inner_to_boundary_errors(xp):
    with pytest.raises(ValueError, match="square"):
        extract_inner_to_boundary(xp.zeros((3, 4)), 1)
    with pytest.raises(ValueError, match="n_boundary"):
        extract_inner_to_boundary(xp.zeros((3, 3)), 4)
    with pytest.raises(ValueError, match="n_boundary"):
        extract_inner_to_boundary(xp.zeros((3, 3)), -1)


# =================================================================== assemble_row_block
@pytest.mark.parametrize("column_start,width", [(0, 30), (0, 11), (12, 7), (29, 1)])
def test_assemble_row_block_by_loops(xp, column_start, width):
    rng = np.random.default_rng(column_start + width)
    n, vertices, nb = 30, np.array([4, 29, 0, 13, 12, 5]), 2
    c = vertices.size
    block0 = rng.integers(0, 99, (c, width)).astype(np.float64)
    rows = rng.integers(0, 99, (nb, n)).astype(np.float64)
    matrix = rng.integers(0, 99, (c, c)).astype(np.float64)
    block = xp.asarray(block0)
    out = assemble_row_block(block, xp.asarray(rows), xp.asarray(matrix), xp.asarray(vertices), nb,
                             column_start=column_start)
    assert out is block
    expected = block0.copy()
    for a in range(c):
        for j in range(width):
            v = column_start + j
            if a < nb:
                expected[a, j] = rows[a, v]
            elif v in vertices:
                expected[a, j] = matrix[a, list(vertices).index(v)]
    np.testing.assert_array_equal(host(block), expected)


@pytest.mark.parametrize("minimum", [False, True])
def test_assemble_row_block_with_its_boundary_rows_in_place(xp, minimum):
    """Boundary rows made in the block's own first rows (a view of them passed as ``boundary_rows``, as
    the boundary-graph method does on the GPU): the same block as with the rows in an array of their own."""
    from fastapsp.stages.assemble import _same_elements

    rng = np.random.default_rng(7)
    n, vertices, nb = 30, np.array([4, 29, 0, 13, 12, 5]), 2
    block0 = rng.integers(0, 99, (vertices.size, n)).astype(np.float64)
    matrix = rng.integers(0, 99, (vertices.size, vertices.size)).astype(np.float64)
    apart = assemble_row_block(xp.asarray(block0.copy()), xp.asarray(block0[:nb].copy()), xp.asarray(matrix),
                               xp.asarray(vertices), nb, minimum=minimum)
    block = xp.asarray(block0.copy())
    assert _same_elements(block[:nb], block[:nb, :n]) and not _same_elements(block[:nb], block[1 : nb + 1])
    assert not _same_elements(block[:nb], xp.asarray(block0[:nb]))
    in_place = assemble_row_block(block, block[:nb], xp.asarray(matrix), xp.asarray(vertices), nb, minimum=minimum)
    np.testing.assert_array_equal(host(in_place), host(apart))


def test_assemble_row_block_errors(xp):
    rows, vertices = xp.zeros((1, 5)), xp.asarray([0, 3])
    with pytest.raises(ValueError, match="matrix"):
        assemble_row_block(xp.zeros((2, 5)), rows, xp.zeros((3, 3)), vertices, 1)
    with pytest.raises(ValueError, match="boundary_rows"):
        assemble_row_block(xp.zeros((2, 3)), rows, xp.zeros((2, 2)), vertices, 1, column_start=3)
    with pytest.raises(ValueError, match="vertices"):
        assemble_row_block(xp.zeros((2, 5)), rows, xp.zeros((2, 2)), xp.asarray([0, 3, 4]), 1)


def test_leading_dimension_of_the_layouts_the_kernels_take():
    """Rows unit-strided, in order and apart by at least a row: their distance in elements; else None."""
    from fastapsp.stages._cuda import _leading_dimension

    a = np.zeros((6, 40), np.float32)
    assert _leading_dimension(a) == 40 and _leading_dimension(a[:, 11:28]) == 40  # a column slice keeps its rows
    assert _leading_dimension(a[::2]) == 80 and _leading_dimension(a[:1, :5]) == 5  # one row: its own width
    assert _leading_dimension(np.zeros((3, 1), np.float64)) == 1
    for view in (a[:, ::2], a[::-1], a.T, np.lib.stride_tricks.as_strided(a, (3, 40), (4, 4))):
        assert _leading_dimension(view) is None  # strided rows, reversed, columns, overlapping rows


def test_stored_by_columns_of_the_layouts_the_gather_takes():
    """Columns unit-strided, apart by at least a column of rows: their distance in elements; else None
    (a row-major array, one row, one column, strided columns)."""
    from fastapsp.stages._cuda import stored_by_columns
    from fastapsp.stages.boundary_graph import _by_columns_ld

    stored = np.zeros((1000, 24), np.float32)  # 1000 columns of up to 24 rows
    assert stored_by_columns(stored[:, :17].T) == 24 and stored_by_columns(stored[:, 5:6].T) == 24
    assert stored_by_columns(stored.T[3:20]) == 24  # rows 3 .. 19 of it
    for view in (np.zeros((5, 100), np.float32), np.zeros((1, 100), np.float32), stored[:1].T, stored[:, ::2].T,
                 np.lib.stride_tricks.as_strided(stored, (30, 100), (4, 4))):
        assert stored_by_columns(view) is None  # row-major, one row, one column, strided rows, overlapping
    assert [_by_columns_ld(r) for r in (1, 8, 9, 100, 512)] == [8, 8, 16, 104, 512]  # whole 32-byte sectors


@pytest.mark.gpu
def test_copy_rows_cuda_copies_views_and_declines_what_it_cannot():
    """copy_rows_cuda copies a column slice into rows of a wider buffer, and leaves other cases untouched."""
    cp = pytest.importorskip("cupy")
    from fastapsp.stages._cuda import copy_rows_cuda

    src = cp.arange(6 * 40, dtype=cp.float32).reshape(6, 40)
    dst = cp.full((9, 25), -1.0, dtype=cp.float32)
    assert copy_rows_cuda(dst[2:8, 3:20], src[:, 11:28])
    expected = np.full((9, 25), -1.0, dtype=np.float32)
    expected[2:8, 3:20] = host(src)[:, 11:28]
    np.testing.assert_array_equal(host(dst), expected)
    assert copy_rows_cuda(dst[:1, :5], src[5:6, :5])  # one row: no pitch to read
    np.testing.assert_array_equal(host(dst)[0, :5], host(src)[5, :5])
    before = host(dst).copy()
    assert not copy_rows_cuda(dst[:2, :4], src[:2, :4].astype(cp.float64))  # dtypes differ
    assert not copy_rows_cuda(dst[:2, ::2], src[:2, :13])  # rows not unit-strided
    assert not copy_rows_cuda(dst[2:0:-1, :4], src[:2, :4])  # rows in reverse
    np.testing.assert_array_equal(host(dst), before)


def test_min_plus_into_scattered_rows():
    """out_rows: row i of the product lands in row out_rows[i]; the other rows stay; accumulate keeps the minimum."""
    rng = np.random.default_rng(21)
    a = rng.integers(0, 9, (4, 3)).astype(float)
    b = rng.integers(0, 9, (3, 5)).astype(float)
    rows = np.array([6, 1, 3, 0])
    out = np.full((7, 5), 4.0)
    min_plus(a, b, out=out, out_rows=rows, accumulate=True)
    np.testing.assert_array_equal(out[rows], np.minimum(4.0, min_plus(a, b)))
    np.testing.assert_array_equal(out[[2, 4, 5]], np.full((3, 5), 4.0))
    fresh = np.zeros((7, 5))
    min_plus(a, b, out=fresh, out_rows=rows)
    np.testing.assert_array_equal(fresh[rows], min_plus(a, b))
    with pytest.raises(ValueError, match="out_rows"):
        min_plus(a, b, out=np.zeros((7, 4)), out_rows=rows)


@pytest.mark.parametrize("minimum", [False, True])
def test_assemble_in_result_equals_the_row_block(minimum):
    """A component's rows completed where they lie in a whole result equal the row block assembled and scattered."""
    from fastapsp.stages.assemble import assemble_in_result

    rng = np.random.default_rng(5)
    n, vertices, nb = 9, np.array([7, 2, 4, 0]), 2
    boundary_rows = rng.integers(0, 9, (nb, n)).astype(float)
    matrix = rng.integers(0, 9, (4, 4)).astype(float)
    through = rng.integers(0, 9, (2, n)).astype(float)  # the interior rows through the boundary
    block = np.vstack([np.zeros((nb, n)), through])
    assemble_row_block(block, boundary_rows, matrix, vertices, nb, minimum=minimum)
    result = np.full((n, n), -1.0)
    result[vertices[nb:]] = through
    assemble_in_result(result, boundary_rows, matrix, vertices, nb, minimum=minimum)
    np.testing.assert_array_equal(result[vertices], block)
    others = np.setdiff1d(np.arange(n), vertices)
    assert np.all(result[others] == -1.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("c,arcs_per_vertex", [(300, 2), (700, 3), (40, 39)])
def test_close_matrix_takes_searches_where_they_pay(dtype, c, arcs_per_vertex):
    """close_matrix closes a host matrix as Floyd-Warshall does: by Dijkstra where the matrix is sparse enough
    (searches_pay), else by Floyd-Warshall itself; whole-number weights (zeros among them) give the same bits."""
    from fastapsp.stages.floyd_warshall import close_matrix, searches_pay

    rng = np.random.default_rng(c)
    matrix = np.full((c, c), np.inf, dtype=dtype)
    src = rng.integers(0, c, c * arcs_per_vertex)
    dst = rng.integers(0, c, src.size)
    matrix[src, dst] = rng.integers(0, 20, src.size)
    np.fill_diagonal(matrix, 0)
    finite = int(np.isfinite(matrix).sum()) - c
    assert searches_pay(c, finite) == (arcs_per_vertex < 10)
    want = blocked_floyd_warshall(matrix.copy())
    got = close_matrix(matrix)
    assert got is matrix and got.dtype == dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("largest", [100.0, 16383.0, 20000.0])
def test_host_min_plus_in_16_bits_is_the_float_product(accumulate, largest, monkeypatch):
    """min_plus(integer=True) on the host takes 16-bit integers where the operands fit (up to U16_LIMIT) and
    floats where they do not (``largest`` past it), row chunks of ``out`` with larger distances in floats:
    the same numbers as the float product, inf where no path."""
    from fastapsp.stages.min_plus import U16_LIMIT

    rng = np.random.default_rng(int(largest) + accumulate)
    rows, inner, cols = 70, 16, 40_000  # a few row chunks of 512 KB; an inner dimension that packs
    a = rng.integers(0, int(min(largest, U16_LIMIT) // 2) + 1, (rows, inner)).astype(np.float32)
    b = rng.integers(0, int(min(largest, U16_LIMIT) // 2) + 1, (inner, cols)).astype(np.float32)
    a[rng.random(a.shape) < 0.2] = np.inf
    b[rng.random(b.shape) < 0.3] = np.inf
    b[0, 5] = largest
    out = rng.integers(0, 40_000, (rows, cols)).astype(np.float32)  # some chunks past the limit
    out[: rows // 2] = np.minimum(out[: rows // 2], U16_LIMIT)
    out[rng.random(out.shape) < 0.5] = np.inf
    module = __import__("sys").modules["fastapsp.stages.min_plus"]  # the package exports the function by that name

    packed = []
    real = module._host_u16
    monkeypatch.setattr(module, "_host_u16", lambda *args: packed.append(real(*args)) or packed[-1])
    want = min_plus(a, b, out=out.copy(), accumulate=accumulate)
    assert packed == []
    got = min_plus(a, b, out=out.copy(), accumulate=accumulate, integer=True)
    assert packed == [largest <= U16_LIMIT]
    np.testing.assert_array_equal(got, want)
    scattered = np.full((rows + 5, cols), 7.0, dtype=np.float32)
    ids = rng.permutation(rows + 5)[:rows]
    min_plus(a, b, out=scattered, out_rows=ids, integer=True)
    np.testing.assert_array_equal(scattered[ids], min_plus(a, b))
