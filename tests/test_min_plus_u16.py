"""The packed 16-bit min-plus (``min_plus(..., integer=True)``) gives the float32 answers.

On the GPU, whole-number float32 operands run in packed 16-bit arithmetic
(``fastapsp/kernels/min_plus_u16.cu`` from K = 57, ``min_plus_smallk_u16.cu`` up to
K = 56), block by block falling back to float32 where an operand does not fit
(above 16,383, negative, fractional).  The host path
ignores the flag; both are checked against a plain NumPy min-plus.
"""

import numpy as np
import pytest

import fastapsp
from conftest import host, random_graph, reference_apsp
from fastapsp.graph import Graph
from fastapsp.stages import min_plus

LIMIT = 16383  # largest finite operand of the packed path (U16_LIMIT)


def _reference(a, b):
    return np.min(a[:, :, None] + b[None, :, :], axis=1) if a.shape[1] else np.full((a.shape[0], b.shape[1]), np.inf)


def _operand(rng, shape, high, inf_share=0.2):
    x = rng.integers(0, high + 1, shape).astype(np.float32)
    x[rng.random(shape) < inf_share] = np.inf
    return x


# min_plus_u16.cu takes inner dimensions from 57 on, min_plus_smallk_u16.cu 9 to 56 (its blocks
# sweep 4 column tiles of 128: N = 1300 ends inside a block, inside a tile, on an odd column).
SHAPES = [(1, 64, 1), (66, 49, 700), (130, 56, 1301),
          (64, 64, 128), (65, 65, 129), (130, 150, 300), (7, 70, 1000), (200, 99, 5), (3, 5, 7),
          (1, 1, 1), (131, 3, 1300), (64, 4, 512), (97, 19, 1301), (130, 20, 2049), (70, 31, 777), (65, 32, 1024),
          (40, 40, 700), (66, 48, 1500), (64, 9, 600), (64, 8, 600), (70, 33, 513), (66, 52, 1300), (65, 57, 640),
          (70, 35, 700), (66, 47, 900), (64, 53, 1300), (65, 55, 777)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("high", [9, LIMIT])
def test_packed_equals_float(xp, shape, high):
    m, k, n = shape
    rng = np.random.default_rng(m * 1000 + k + n)
    a, b = _operand(rng, (m, k), high), _operand(rng, (k, n), high)
    want = _reference(a, b)
    packed = min_plus(xp.asarray(a), xp.asarray(b), integer=True)
    plain = min_plus(xp.asarray(a), xp.asarray(b), integer=False)
    np.testing.assert_array_equal(host(packed), want)
    np.testing.assert_array_equal(host(plain), want)


@pytest.mark.parametrize("k", [80, 20, 40, 54])
@pytest.mark.parametrize("case", ["too_large", "fractional", "negative_zero", "one_tile", "late_column"])
def test_operands_that_do_not_fit_fall_back(xp, case, k):
    """Values the 16-bit encoding cannot hold give the float32 answer, not a wrapped one
    (K = 20, 40 and 54: min_plus_smallk_u16.cu, whose blocks switch to float32 from the tile that meets one:
    with min_plus_smallk.cu's loop at K = 20, with 64 x 64 tiles at K = 40)."""
    rng = np.random.default_rng(5)
    a, b = _operand(rng, (150, k), 9000), _operand(rng, (k, 1400), 9000)
    if case == "too_large":
        a[3, 7] = LIMIT + 1
        b[10, 20] = 60000
    elif case == "fractional":
        b[5, 300] = 2.5
    elif case == "negative_zero":
        a[:, 0] = -0.0
    elif case == "one_tile":  # only the tiles of rows 64..127 see a large value
        a[70, 3] = 40000
    else:  # the third column tile of 128 of the second block of 512: the block's first two stay packed
        b[k - 1, 512 + 2 * 128 + 5] = 20000
    want = _reference(a, b)
    got = min_plus(xp.asarray(a), xp.asarray(b), integer=True)
    np.testing.assert_array_equal(host(got), want)


@pytest.mark.parametrize("k", [80, 20, 40, 54])
def test_views_and_accumulate(xp, k):
    """Operands as views with odd leading dimensions, the result into rows of a larger block."""
    rng = np.random.default_rng(11)
    big_a = _operand(rng, (90, 101), 500)
    big_b = _operand(rng, (101, 1003), 500)
    a, b = big_a[:, 5 : 5 + k], big_b[5 : 5 + k, 3:1000]
    block = _operand(rng, (100, 997), 800, inf_share=0.5)
    want = block.copy()
    want[10:] = np.minimum(block[10:], _reference(a, b))
    got = xp.asarray(block)
    min_plus(xp.asarray(big_a)[:, 5 : 5 + k], xp.asarray(big_b)[5 : 5 + k, 3:1000], out=got[10:], accumulate=True,
             integer=True)
    np.testing.assert_array_equal(host(got), want)


@pytest.mark.parametrize("integer", [False, True])
def test_many_launches_over_the_columns(xp, monkeypatch, integer):
    """Column tiles beyond the grid's y limit go to further launches (the limit shrunk here)."""
    if xp is np:
        pytest.skip("launch geometry of the GPU path")
    from fastapsp.stages import _cuda

    monkeypatch.setattr(_cuda, "MAX_GRID_Y", 3)
    rng = np.random.default_rng(8)
    a, b = _operand(rng, (70, 66), 300), _operand(rng, (66, 2000), 300)
    got = min_plus(xp.asarray(a), xp.asarray(b)[:, 1:], integer=integer)
    np.testing.assert_array_equal(host(got), _reference(a, b[:, 1:]))


def test_empty_inner_dimension(xp):
    a, b = np.zeros((4, 0), np.float32), np.zeros((0, 6), np.float32)
    got = min_plus(xp.asarray(a), xp.asarray(b), integer=True)
    assert np.isinf(host(got)).all()


@pytest.mark.parametrize("method", ["boundary-graph", "frontier"])
@pytest.mark.parametrize("scale", [1, 3000])
def test_solve_with_integer_weights_small_and_large(xp, method, scale):
    """Whole-number weights: distances below 16,384 (packed path) and far above it (float32 products)."""
    backend = "numpy" if xp is np else "cupy"
    graph = random_graph(np.random.default_rng(scale), n=300, m=900, directed=True, weighted=True)
    graph = Graph(graph.indptr, graph.indices, graph.weights * scale, directed=True)
    got = fastapsp.solve(graph, k=7, backend=backend, dtype="float32", sssp_method=method)
    np.testing.assert_array_equal(got, reference_apsp(graph).astype(np.float32))
    assert graph.integer_weights
    if scale > 1:
        assert np.nanmax(got[np.isfinite(got)]) > LIMIT  # the fallback was needed


@pytest.mark.parametrize("scale, packed", [(1, True), (30000, False)])
def test_a_run_packs_only_where_its_distances_fit(xp, monkeypatch, scale, packed):
    """A run decides once whether its products are packed: not where most of the first boundary row's
    distances pass 16,383 (as many tiles would fall back to float32 inside the packed kernels)."""
    if xp is np:
        pytest.skip("the packed path is the GPU's")
    from fastapsp import components

    seen = []
    real = components.min_plus

    def spy(a, b, **kw):
        seen.append(kw.get("integer"))
        return real(a, b, **kw)

    monkeypatch.setattr(components, "min_plus", spy)
    graph = random_graph(np.random.default_rng(8), n=400, m=1200, directed=False, weighted=True)
    graph = Graph(graph.indptr, graph.indices, graph.weights * scale, directed=False)
    got = fastapsp.solve(graph, k=9, backend="cupy", dtype="float32")
    np.testing.assert_array_equal(got, reference_apsp(graph).astype(np.float32))
    assert seen and set(seen) == {packed}


def test_integer_weights_property():
    assert Graph.from_edges(3, [0, 1], [1, 2], weights=[2.0, 7.0], directed=True).integer_weights
    assert not Graph.from_edges(3, [0, 1], [1, 2], weights=[2.0, 0.5], directed=True).integer_weights


@pytest.mark.parametrize("k, tiles", [(70, 18), (20, 6), (40, 6)])
@pytest.mark.parametrize("fits", [True, False])
def test_fallback_tiles_are_counted(xp, capsys, fits, k, tiles):
    """``count_fallbacks`` reports the tiles computed in float32: none when every operand fits.
    Tiles of 64 x 128 for min_plus_u16.cu (K = 70), blocks of 64 x 512 for min_plus_smallk_u16.cu."""
    if xp is np:
        pytest.skip("the packed path is the GPU's")
    from fastapsp.stages._cuda import min_plus_cuda

    rng = np.random.default_rng(4)
    a, b = _operand(rng, (130, k), 900), _operand(rng, (k, 700), 900)
    if not fits:
        b[3, 650] = LIMIT + 1  # one column tile (of 128, or block of 512), every row tile
    got = xp.empty((130, 700), dtype=np.float32)
    min_plus_cuda(xp.asarray(a), xp.asarray(b), got, False, True, count_fallbacks=True)
    np.testing.assert_array_equal(host(got), _reference(a, b))
    line = capsys.readouterr().err
    assert (f"0 of {tiles} tiles" in line) if fits else (f"3 of {tiles} tiles" in line), line
