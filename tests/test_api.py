"""fastapsp.shortest_path against scipy.sparse.csgraph.shortest_path, and every reconstructed path."""

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import random_edges
from scipy.sparse.csgraph import shortest_path as scipy_shortest_path

import fastapsp
from fastapsp.paths import NO_PREDECESSOR, predecessors_from_distances, reconstruct_path


def backend_name(xp):
    return "numpy" if xp is np else "cupy"


def matrix(seed, n, m, *, zero=False, container=sp.csr_matrix):
    src, dst, w = random_edges(np.random.default_rng(seed), n, m, weighted=True, zero_weights=zero)
    keep = np.unique(src * n + dst, return_index=True)[1]  # one entry per pair: SciPy would add duplicates up
    return container((w[keep], (src[keep], dst[keep])), shape=(n, n))


CASES = {
    "directed": dict(),
    "undirected": dict(directed=False),
    "unweighted": dict(unweighted=True),
    "indices": dict(indices=[3, 0, 7, 3]),
    "one-index": dict(indices=5),
    "negative-index": dict(indices=-1),
    "undirected-unweighted-indices": dict(directed=False, unweighted=True, indices=np.arange(10, 20)),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("container", [sp.csr_matrix, sp.csr_array, sp.coo_matrix])
def test_same_results_as_scipy(case, container, xp):
    g = matrix(1, 80, 260, zero=True, container=container)
    kwargs = CASES[case]
    want = scipy_shortest_path(g, **kwargs)
    got = fastapsp.shortest_path(g, backend=backend_name(xp), k=3, **kwargs)
    assert got.shape == want.shape and got.dtype == np.float64
    np.testing.assert_array_equal(got, want)


def test_dense_input_and_errors():
    dense = matrix(2, 30, 90).toarray()
    dense[dense == 0] = np.inf  # SciPy reads inf (and 0) as "no arc" in dense input
    np.testing.assert_array_equal(fastapsp.shortest_path(dense, backend="numpy", k=2),
                                  scipy_shortest_path(dense))
    with pytest.raises(ValueError, match="negative"):
        fastapsp.shortest_path(sp.csr_matrix(np.array([[0, -1.0], [0, 0]])), backend="numpy")
    with pytest.raises(ValueError, match="method"):
        fastapsp.shortest_path(sp.csr_matrix((3, 3)), method="X", backend="numpy")
    with pytest.raises(ValueError, match="shape"):
        fastapsp.shortest_path(sp.csr_matrix((3, 4)), backend="numpy")
    with pytest.raises(ValueError, match="sources"):
        fastapsp.shortest_path(matrix(3, 10, 20), indices=[12], backend="numpy")


def check_paths(graph_matrix, dist, pred, rows, directed=True):
    """Every path: starts at its source, each step an arc, total weight equal to the distance."""
    coo = sp.coo_matrix(graph_matrix)
    best = np.full(coo.shape, np.inf)
    np.minimum.at(best, (coo.row, coo.col), coo.data)
    if not directed:
        best = np.minimum(best, best.T)
    has = np.isfinite(best)
    checked = 0
    for i, s in enumerate(rows):
        for t in range(dist.shape[1]):
            path = reconstruct_path(pred, i, t)
            if not np.isfinite(dist[i, t]):
                assert path == [] and pred[i, t] == NO_PREDECESSOR
                continue
            assert path[0] == s and path[-1] == t
            length = 0.0
            for u, v in zip(path, path[1:]):
                assert has[u, v], f"{u}->{v} is not an arc"
                length += best[u, v]
            assert length == pytest.approx(dist[i, t], rel=1e-12, abs=0)
            checked += 1
    assert checked > 0


@pytest.mark.parametrize("directed", [True, False])
def test_predecessors_give_shortest_paths(directed, xp):
    g = matrix(4, 60, 200, zero=True)  # zero weights: ties and zero cycles must not loop
    dist, pred = fastapsp.shortest_path(g, directed=directed, return_predecessors=True, backend=backend_name(xp),
                                        k=3)
    assert pred.dtype == np.int32 and pred.shape == dist.shape
    check_paths(g, dist, pred, np.arange(60), directed)


def test_predecessors_of_indices_and_zero_cycle():
    # 0 -> 1 -> 2 -> 1 with zero weights both ways between 1 and 2
    g = sp.csr_matrix((np.array([1.0, 0.0, 0.0, 5.0]), (np.array([0, 1, 2, 0]), np.array([1, 2, 1, 3]))),
                      shape=(4, 4))
    g.data[1:3] = 0.0
    dist, pred = fastapsp.shortest_path(g, return_predecessors=True, indices=[0], backend="numpy", k=1)
    assert reconstruct_path(pred, 0, 2) == [0, 1, 2]
    assert reconstruct_path(pred, 0, 3) == [0, 3]
    check_paths(g, dist, pred, [0])


def test_reconstruct_path_errors():
    pred = np.array([[NO_PREDECESSOR, 0], [1, NO_PREDECESSOR]])
    with pytest.raises(ValueError, match="target"):
        reconstruct_path(pred, 0, 5)
    with pytest.raises(ValueError, match="not among"):
        reconstruct_path(pred, 9, 1, sources=[2, 3])
    with pytest.raises(ValueError, match="cycle"):
        reconstruct_path(np.array([[NO_PREDECESSOR, 2, 1]]), 0, 1)


def test_predecessors_from_float32_rows_with_real_weights():
    rng = np.random.default_rng(5)
    n = 50
    src, dst = rng.integers(0, n, 200), rng.integers(0, n, 200)
    g = fastapsp.Graph.from_edges(n, src, dst, rng.uniform(0.1, 2.0, 200), directed=True)
    d32 = fastapsp.solve(g, k=2, backend="numpy", dtype="float32")
    pred = predecessors_from_distances(g, d32, np.arange(n))
    weights = g.to_scipy()
    for s in range(0, n, 7):
        for t in range(n):
            path = reconstruct_path(pred, s, t)
            assert (path == []) == (not np.isfinite(d32[s, t]))
            if path:
                assert all(weights[u, v] > 0 for u, v in zip(path, path[1:]))  # real weights: every arc > 0
                length = sum(weights[u, v] for u, v in zip(path, path[1:]))
                assert length == pytest.approx(float(d32[s, t]), rel=1e-5)


@pytest.mark.gpu
def test_cupyx_input_gives_results_on_the_gpu():
    cupy = pytest.importorskip("cupy")
    cupyx_sparse = pytest.importorskip("cupyx.scipy.sparse")
    try:
        if cupy.cuda.runtime.getDeviceCount() == 0:
            pytest.skip("no GPU")
    except Exception:
        pytest.skip("no GPU")
    g = matrix(6, 70, 250)
    got = fastapsp.shortest_path(cupyx_sparse.csr_matrix(g), k=2)
    assert isinstance(got, cupy.ndarray)
    np.testing.assert_array_equal(got.get(), scipy_shortest_path(g))
