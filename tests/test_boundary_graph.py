"""The boundary-graph method gives the same boundary rows and distances as the frontier SSSP and SciPy."""

import numpy as np
import pytest

import fastapsp
from conftest import disconnected_graph, host, random_graph, reference_apsp
from fastapsp.graph import Graph
from fastapsp.partition import make_partition, partition_graph
from fastapsp.stages import boundary_sssp
from fastapsp.schedule import component_costs, schedule_in_order
from fastapsp.stages.boundary_graph import BoundaryGraph, LevelTree, close_components, pack_boundary_rows


def _levels(graph, part, xp, dtype=np.float64, **kw):
    indptr, indices, weights = (xp.asarray(a) for a in (graph.indptr, graph.indices, graph.weights))
    comps = [p for p in range(part.k) if part.sizes[p]]
    closed = close_components(indptr, indices, weights, part, comps, dtype=dtype)
    return BoundaryGraph(graph, part, pack_boundary_rows(closed, part), xp, dtype, **kw)


def _check_rows(graph, part, xp, **kw):
    ref = reference_apsp(graph)
    bg = _levels(graph, part, xp, **kw)
    seen = set()
    for p, rows in bg.boundary_rows(range(part.k)):
        vertices, nb = part.component(p)
        np.testing.assert_array_equal(host(rows), ref[vertices[:nb]], err_msg=f"component {p}")
        seen.add(p)
    assert seen == set(range(part.k))
    return bg


CASES = {
    "directed weighted": dict(n=90, m=300, directed=True, weighted=True),
    "undirected weighted": dict(n=90, m=200, directed=False, weighted=True),
    "zero weights": dict(n=70, m=260, directed=True, weighted=True, zero_weights=True),
    "unit": dict(n=80, m=180, directed=False, weighted=False),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("k", [1, 2, 7, 20])
@pytest.mark.parametrize("limits", [{}, {"dense_limit": 6, "super_size": 3}])
def test_boundary_rows_equal_scipy(xp, case, k, limits):
    graph = random_graph(np.random.default_rng(k), **CASES[case])
    _check_rows(graph, partition_graph(graph, k), xp, **limits)


@pytest.mark.parametrize("case", ["unit", "undirected weighted", "directed weighted"])
@pytest.mark.parametrize("k", [7, 20])
@pytest.mark.parametrize("limits", [{}, {"dense_limit": 6, "super_size": 3}])
def test_boundary_rows_in_float32_of_whole_numbers(xp, case, k, limits):
    """Whole-number weights in float32: on the GPU the grouped products of the rows run packed in 16 bits
    (grouped_min_plus_u16.cu); the rows are SciPy's all the same."""
    graph = random_graph(np.random.default_rng(100 + k), **CASES[case])
    assert graph.integer_weights
    bg = _check_rows(graph, partition_graph(graph, k), xp, dtype=np.float32)
    assert bg.packing.answer in (None, True)  # nothing past 16,383 here: packed wherever a product ran


@pytest.mark.parametrize("seed", range(12))
def test_random_labels_many_levels(xp, seed):
    """Arbitrary (non-contiguous, unbalanced) labels, some empty parts, forced through several levels."""
    rng = np.random.default_rng(100 + seed)
    graph = random_graph(rng, int(rng.integers(5, 90)), int(rng.integers(0, 300)), directed=bool(seed % 2),
                         weighted=True, zero_weights=bool(seed % 3 == 0))
    k = int(rng.integers(1, graph.n + 1))
    part = make_partition(graph, rng.integers(0, k, graph.n), k, method="random", seed=seed, imbalance=1.0,
                          seconds=0.0)
    bg = _check_rows(graph, part, xp, dense_limit=int(rng.integers(1, 12)), super_size=int(rng.integers(2, 6)))
    assert bg.level_sizes[0] == graph.n


def _grid(side, rng):
    ids = np.arange(side * side).reshape(side, side)
    src = np.concatenate([ids[:, :-1].ravel(), ids[:-1, :].ravel()])
    dst = np.concatenate([ids[:, 1:].ravel(), ids[1:, :].ravel()])
    return Graph.from_edges(side * side, src, dst, rng.integers(1, 9, src.size).astype(float), directed=False)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_local_closures_equal_numpy(xp, dtype):
    """close_components (on the GPU: every matrix built by one launch into one buffer) against the
    NumPy build: random labels with empty parts, a directed graph with zero weights, a subset of parts."""
    rng = np.random.default_rng(3)
    graph = random_graph(rng, 120, 500, directed=True, weighted=True, zero_weights=True)
    part = make_partition(graph, rng.integers(0, 9, graph.n), 11, method="random", seed=0, imbalance=1.0, seconds=0.0)
    wanted = [0, 3, 4, 7, 8, 9, 10]  # 9 and 10 are empty
    want = close_components(graph.indptr, graph.indices, graph.weights, part, wanted, dtype=dtype)
    got = close_components(*(xp.asarray(a) for a in (graph.indptr, graph.indices, graph.weights)), part, wanted,
                           dtype=dtype)
    assert sorted(got) == sorted(want) == [p for p in wanted if part.sizes[p]]
    for p in want:
        assert got[p].dtype == want[p].dtype
        np.testing.assert_array_equal(host(got[p]), want[p], err_msg=f"component {p}")


@pytest.mark.parametrize("itype", [np.int32, np.int64])
def test_prepare_local_closures_closes_a_toy_of_the_graphs_index_type(xp, itype, monkeypatch):
    """The toy that prepare_local_closures closes has the graph's index type and closes to its two paths'
    distances; on the GPU the thread loads the device form (then used by close_components), and without a
    GPU it loads nothing and changes nothing.  A graph of other weights, or a process warm on its GPU,
    starts no thread."""
    from fastapsp.stages import boundary_graph

    monkeypatch.setattr(boundary_graph, "_DEVICE_FORM", {"thread": None, "loaded": False})
    toy, part = boundary_graph._toy_components(itype)
    assert toy.indptr.dtype == toy.indices.dtype == itype and part.boundary_per_part.tolist() == [1, 1]
    closed = close_components(toy.indptr, toy.indices, toy.weights, part, [0, 1], dtype=np.float64)
    path = np.abs(np.subtract.outer(np.arange(4), np.arange(4))).astype(float)  # a path of four: hops apart
    for p in (0, 1):
        vertices, _ = part.component(p)
        local = vertices - 4 * p
        np.testing.assert_array_equal(closed[p], path[np.ix_(local, local)])
    weighted = Graph(toy.indptr, toy.indices, toy.weights * 2, directed=False)
    assert boundary_graph.prepare_local_closures(weighted, np.float32, 0) is None
    graph = Graph(toy.indptr, toy.indices, toy.weights, directed=False)
    thread = boundary_graph.prepare_local_closures(graph, np.float32, 0)
    thread.join(60)
    assert boundary_graph._device_form_loaded() == (xp is not np)
    assert boundary_graph.prepare_local_closures(graph, np.float32, 0) is None  # once a process


def test_prepare_local_closures_starts_nothing_in_a_process_warm_on_its_gpu(monkeypatch):
    from fastapsp.stages import boundary_graph

    monkeypatch.setattr(boundary_graph, "_DEVICE_FORM", {"thread": None, "loaded": False})
    monkeypatch.setattr(boundary_graph, "gpu_warm", lambda: True)
    toy, _ = boundary_graph._toy_components(np.int32)
    assert boundary_graph.prepare_local_closures(toy, np.float32, 0) is None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("warm", [False, True])
def test_local_closures_by_searches_equal_numpy(xp, dtype, directed, wide, warm, monkeypatch):
    """Unit weights (close_components(unit_weights=True); on the GPU breadth-first searches, 32 sources a
    block) against the NumPy closures: components of 1 to 200 vertices (sizes off multiples of 32,
    pieces no arc joins, empty parts), long paths, directed arcs, int32 and int64 ids; with the size
    limit lowered below the largest component, the batch is closed by Floyd-Warshall instead.  ``warm``:
    the local CSR made on the device (a process warm on its GPU) or on the host."""
    from fastapsp.stages import _cuda
    from fastapsp.stages import boundary_graph

    monkeypatch.setattr(boundary_graph, "gpu_warm", lambda: warm)

    rng = np.random.default_rng(11 + directed + 2 * wide)
    n = 900
    others = np.concatenate([np.arange(300), np.arange(500, n)])
    src, dst = rng.choice(others, 1400), rng.choice(others, 1400)
    chain = np.arange(300, 499)  # a path of 200 vertices: 199 levels
    src, dst = np.concatenate([src, chain]), np.concatenate([dst, chain + 1])
    graph = Graph.from_edges(n, src, dst, np.ones(src.size), directed=directed)
    itype = np.int64 if wide else np.int32
    graph = Graph(graph.indptr.astype(itype), graph.indices.astype(itype), graph.weights, directed=directed)
    labels = rng.integers(0, 12, n)
    labels[rng.random(n) < 0.01] = 13  # a few scattered vertices, mostly without arcs between them
    labels[300:500] = 12  # the path, one component of 200
    part = make_partition(graph, labels, 16, method="random", seed=0, imbalance=1.0, seconds=0.0)
    wanted = [p for p in range(16) if p != 5]  # 14 and 15 are empty
    want = close_components(graph.indptr, graph.indices, graph.weights, part, wanted, dtype=dtype)
    arrays = [xp.asarray(a) for a in (graph.indptr, graph.indices, graph.weights)]
    host_csr = (graph.indptr, graph.indices)
    got = close_components(*arrays, part, wanted, dtype=dtype, unit_weights=True, host_csr=host_csr)
    assert sorted(got) == sorted(want) == [p for p in wanted if part.sizes[p]]
    for p in want:
        assert got[p].dtype == want[p].dtype
        np.testing.assert_array_equal(host(got[p]), want[p], err_msg=f"component {p}")
    path = host(got[12])
    assert float(path[np.isfinite(path)].max()) == 199.0  # the path's two ends
    if xp is not np:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(_cuda, "bfs_closure_max", lambda: 100)
            again = close_components(*arrays, part, wanted, dtype=dtype, unit_weights=True, host_csr=host_csr)
            for p in want:
                np.testing.assert_array_equal(host(again[p]), want[p], err_msg=f"component {p}")
            with pytest.raises(ValueError, match="searches"):
                _cuda.build_local_batch_cuda(*arrays, part, [12], dtype, searches=True, host_csr=host_csr,
                                             local_on_device=warm)


@pytest.mark.gpu
@pytest.mark.parametrize("directed", [False, True])
def test_local_closures_by_searches_past_default_shared_memory(xp, directed):
    """A component of 6,000 vertices (72 KB of the searches' shared memory, past the 48 KB a block gets
    without opting in) beside one of 40, closed by breadth-first searches on the GPU: every distance as
    SciPy's searches over the component's own arcs."""
    if xp is np:
        pytest.skip("the searches run on the GPU")
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import shortest_path

    from fastapsp.stages import _cuda

    rng = np.random.default_rng(5 + directed)
    side = (75, 80)  # a grid of 6,000 vertices with a few arcs removed, and a path of 40
    cells = np.arange(side[0] * side[1]).reshape(side)
    src = np.concatenate([cells[:, :-1].ravel(), cells[:-1, :].ravel()])
    dst = np.concatenate([cells[:, 1:].ravel(), cells[1:, :].ravel()])
    keep = rng.random(src.size) > 0.05
    src, dst = src[keep], dst[keep]
    if directed:  # both ways mostly, one way for some
        back = rng.random(src.size) > 0.2
        src, dst = np.concatenate([src, dst[back]]), np.concatenate([dst, src[back]])
    n = cells.size + 40
    chain = np.arange(cells.size, n - 1)
    src, dst = np.concatenate([src, chain]), np.concatenate([dst, chain + 1])
    graph = Graph.from_edges(n, src, dst, np.ones(src.size), directed=directed)
    labels = np.where(np.arange(n) < cells.size, 0, 1)
    part = make_partition(graph, labels, 2, method="given", seed=0, imbalance=1.0, seconds=0.0)
    assert 12 * int(part.sizes.max()) > 48 * 1024 and _cuda.bfs_closure_max() >= int(part.sizes.max())
    arrays = [xp.asarray(a) for a in (graph.indptr, graph.indices, graph.weights)]
    got = close_components(*arrays, part, [0, 1], dtype=np.float32, unit_weights=True,
                           host_csr=(graph.indptr, graph.indices))
    matrix = csr_matrix((graph.weights, graph.indices, graph.indptr), shape=(n, n))
    for p in (0, 1):
        vertices, _ = part.component(p)
        want = shortest_path(matrix[vertices][:, vertices], method="D", directed=directed, unweighted=True)
        np.testing.assert_array_equal(host(got[p]), want.astype(np.float32), err_msg=f"component {p}")


@pytest.mark.parametrize("batch", [(1, 512 << 20), (3, 512 << 20), (128, 1)])
def test_rows_made_in_batches_of_groups(xp, monkeypatch, batch):
    """Several groups' boundary rows from one grouped product (BATCH_ROWS rows at most, and one group
    alone when BATCH_BYTES holds less than a row): the same rows as SciPy."""
    from fastapsp.stages import boundary_graph

    monkeypatch.setattr(boundary_graph, "BATCH_ROWS", batch[0])
    monkeypatch.setattr(boundary_graph, "BATCH_BYTES", batch[1])
    rng = np.random.default_rng(7)
    graph = random_graph(rng, 150, 420, directed=True, weighted=True)
    _check_rows(graph, partition_graph(graph, 25), xp, dense_limit=20, super_size=12)


@pytest.mark.parametrize("entries", [1, 150, 1 << 22])
def test_cliques_placed_in_runs_of_groups(xp, monkeypatch, entries):
    """A super-group's cliques in runs of groups of at most CLIQUE_ENTRIES entries, a larger clique alone
    (1: every group alone; 150: runs of a few groups; the default: all at once): the rows of SciPy."""
    from fastapsp.stages import boundary_graph

    monkeypatch.setattr(boundary_graph, "CLIQUE_ENTRIES", entries)
    runs = []
    original = BoundaryGraph._place_cliques

    def recording(self, matrix, lev, groups, *args):
        runs.append(len(groups))
        return original(self, matrix, lev, groups, *args)

    monkeypatch.setattr(BoundaryGraph, "_place_cliques", recording)
    rng = np.random.default_rng(11)
    graph = _grid(14, rng)
    _check_rows(graph, partition_graph(graph, 24), xp, dense_limit=20, super_size=12)
    assert runs and (max(runs) == 1) == (entries == 1)
    if entries == 150:
        assert max(runs) > 1


def test_similar_sizes_batches_largest_first():
    """Upper-level closures batched by size: largest first; a batch's smallest keeps at least the share
    SIMILAR_TILES of its largest's 64-row tiles; every matrix once."""
    from fastapsp.stages.boundary_graph import SIMILAR_TILES, _similar_sizes

    matrices = [np.zeros((c, c)) for c in (100, 2100, 640, 2000, 1500, 64, 10825, 1)]
    batches = _similar_sizes(matrices)
    assert sorted(id(m) for b in batches for m in b) == sorted(id(m) for m in matrices)
    sizes = [[m.shape[0] for m in b] for b in batches]
    assert sizes == [[10825], [2100, 2000, 1500], [640], [100], [64, 1]]
    for b in sizes:
        assert min(-(-c // 64) for c in b) >= SIMILAR_TILES * -(-max(b) // 64)
    assert _similar_sizes([]) == []


@pytest.mark.parametrize("ratio", [0.0, 2.0])
def test_upper_levels_closed_in_batches_or_alone(xp, monkeypatch, ratio):
    """Every super-group of a level in one batch (ratio 0) or each alone (ratio above 1): SciPy's rows."""
    from fastapsp.stages import boundary_graph

    monkeypatch.setattr(boundary_graph, "SIMILAR_TILES", ratio)
    monkeypatch.setattr(boundary_graph._similar_sizes, "__defaults__", (ratio,))
    rng = np.random.default_rng(5)
    graph = _grid(16, rng)
    bg = _check_rows(graph, partition_graph(graph, 30), xp, dense_limit=20, super_size=12)
    assert len(bg.tree.steps) >= 2


def _count_full_rows(monkeypatch) -> list:
    """The (level, super-group) of every upper rows made (BoundaryGraph._make_full_rows), in a list."""
    made = []
    original = BoundaryGraph._make_full_rows

    def counting(self, level, s, *args):
        made.append((level, s))
        return original(self, level, s, *args)

    monkeypatch.setattr(BoundaryGraph, "_make_full_rows", counting)
    return made


def test_upper_rows_are_made_once_per_run_of_groups(xp, monkeypatch):
    """Groups are visited in the order of their super-groups; a super-group's rows are kept between them."""
    side = 24
    graph = _grid(side, np.random.default_rng(9))
    ids = np.arange(side * side)
    labels = (ids // side // 6) * 4 + (ids % side) // 6  # 6 x 6 blocks: 16 components
    part = make_partition(graph, labels, 16, method="given", seed=0, imbalance=1.0, seconds=0.0)
    made = _count_full_rows(monkeypatch)
    bg = _check_rows(graph, part, xp, dense_limit=30, super_size=60)
    assert len(bg.levels) >= 4  # levels 0, 1, 2, ...: upper rows are asked for by several groups below
    assert made and len(made) == len(set(made))


@pytest.mark.parametrize("ranks", [2, 3, 5])
def test_ranks_make_the_upper_rows_of_their_own_super_groups(xp, monkeypatch, ranks):
    """Components scheduled in the tree's order (schedule_in_order): each rank makes the upper rows of
    the super-groups of its own components; one is made twice only where two ranks' runs meet."""
    side = 24
    graph = _grid(side, np.random.default_rng(9))
    ids = np.arange(side * side)
    labels = (ids // side // 4) * 6 + (ids % side) // 4  # 4 x 4 blocks: 36 components
    part = make_partition(graph, labels, 36, method="given", seed=0, imbalance=1.0, seconds=0.0)
    limits = dict(dense_limit=40, super_size=30)
    tree = LevelTree(graph, part, seed=42, **limits)
    assert len(tree.steps) >= 2  # super-groups below the top
    order = tree.order()
    for step, ordinal in zip(tree.steps, tree.ordinals()):  # at every level, a super-group's groups are a run
        groups = np.argsort(ordinal, kind="stable")
        runs = np.flatnonzero(np.diff(step.super_of[groups])).size + 1
        assert runs == np.unique(step.super_of).size
    made = _count_full_rows(monkeypatch)
    ref = reference_apsp(graph)
    plan = schedule_in_order(component_costs(part, graph.n, graph.m), order, ranks)
    for mine in plan:
        bg = _levels(graph, part, xp, tree=tree)
        for p, rows in bg.boundary_rows(mine):
            vertices, nb = part.component(p)
            np.testing.assert_array_equal(host(rows), ref[vertices[:nb]], err_msg=f"component {p}")
    upper = len(tree.steps) - 1  # levels below the top whose rows are made
    assert len(made) <= len(set(made)) + (ranks - 1) * upper


def test_components_announced_keep_only_the_upper_rows_they_need(xp, monkeypatch):
    """BoundaryGraph(components=...): the interior rows of a level are kept for the super-groups above
    those components only (the ones whose rows are then made), and other components are refused."""
    side = 24
    graph = _grid(side, np.random.default_rng(9))
    ids = np.arange(side * side)
    labels = (ids // side // 4) * 6 + (ids % side) // 4
    part = make_partition(graph, labels, 36, method="given", seed=0, imbalance=1.0, seconds=0.0)
    tree = LevelTree(graph, part, seed=42, dense_limit=40, super_size=30)
    mine = [int(p) for p in tree.order()[:5]]
    made = _count_full_rows(monkeypatch)
    bg = _levels(graph, part, xp, tree=tree, components=mine)
    ref = reference_apsp(graph)
    for p, rows in bg.boundary_rows(mine):
        vertices, nb = part.component(p)
        np.testing.assert_array_equal(host(rows), ref[vertices[:nb]], err_msg=f"component {p}")
    held = {(level, s) for level, lev in enumerate(bg.levels) for s in lev.inner}
    top = len(bg.levels) - 1
    assert {(level, s) for level, s in made} | {(top, 0)} == held  # every row kept is used, the top's too
    assert len(held) < sum(lev.k for lev in bg.levels[1:])  # and not every super-group's
    other = next(p for p in range(part.k) if p not in mine)
    with pytest.raises(ValueError, match=rf"components: \[{other}\] were not among"):
        next(bg.boundary_rows([other]))


def test_a_tree_of_another_partition_is_refused():
    graph = random_graph(np.random.default_rng(1), n=30, m=60, directed=False, weighted=True)
    tree = LevelTree(graph, partition_graph(graph, 3), dense_limit=8, super_size=4)
    with pytest.raises(ValueError, match="tree: made for 30 vertices and 3 components, not 30 and 4"):
        _levels(graph, partition_graph(graph, 4), np, tree=tree)


def test_levels_are_built_when_the_boundary_is_large(xp):
    graph = _grid(16, np.random.default_rng(5))
    bg = _check_rows(graph, partition_graph(graph, 32), xp, dense_limit=40, super_size=24)
    assert len(bg.levels) >= 3  # level 0, at least one level of super-groups, the dense top
    assert all(a > b for a, b in zip(bg.level_sizes[1:], bg.level_sizes[2:]))


def test_a_level_that_would_not_shrink_is_widened_not_closed_whole(xp):
    """Super-groups of super_size vertices that gather no groups (here: more of them than groups) used to
    make the whole level the dense top, whatever its size; now fewer, larger super-groups are tried first
    (LevelTree(widen=True)), so the top stays within dense_limit.  Both trees give the exact rows."""
    side, block = 24, 4
    graph = _grid(side, np.random.default_rng(9))
    ids = np.arange(side * side)
    per = side // block
    labels = (ids // side // block) * per + (ids % side) // block
    part = make_partition(graph, labels, per * per, method="given", seed=0, imbalance=1.0, seconds=0.0)
    limits = dict(dense_limit=120, super_size=8)
    old = LevelTree(graph, part, seed=42, widen=False, **limits)
    new = LevelTree(graph, part, seed=42, **limits)
    assert len(old.level_sizes) == 2 and old.level_sizes[-1] > limits["dense_limit"]  # the whole boundary, dense
    assert len(new.level_sizes) > 2 and new.level_sizes[-1] <= limits["dense_limit"]
    assert all(a > b for a, b in zip(new.level_sizes[1:], new.level_sizes[2:]))
    for tree in (old, new):
        _check_rows(graph, part, xp, tree=tree)


def test_disconnected_and_components_without_boundary(xp):
    graph = disconnected_graph(np.random.default_rng(3), [30, 25, 1, 12], directed=True, weighted=True)
    labels = np.repeat([0, 1, 2, 3], [30, 25, 1, 12]).astype(np.int32)
    labels[:15] = 4  # the first blob split in two: only it has boundary vertices
    part = make_partition(graph, labels, 5, method="given", seed=0, imbalance=1.0, seconds=0.0)
    assert part.boundary_per_part[1] == 0 and part.boundary_per_part[3] == 0
    _check_rows(graph, part, xp)


def test_the_last_level_may_be_several_groups_without_boundary(xp):
    """Super-groups that no arc joins (blobs of a disconnected graph) end the tree without one dense
    top: each is the closure of its own blob, and the rows below reach nothing outside it."""
    graph = disconnected_graph(np.random.default_rng(11), [80, 1, 70, 90], directed=False, weighted=True)
    part = partition_graph(graph, 20)
    limits = dict(dense_limit=16, super_size=8)
    tree = LevelTree(graph, part, seed=42, weighted=False, **limits)  # the groups gathered so on this graph
    assert tree.nb[-1].size > 1 and tree.nb[-1].sum() == 0  # the case: no single top
    assert sorted(tree.order().tolist()) == list(range(part.k))
    _check_rows(graph, part, xp, tree=tree)


def test_k_equals_n_every_vertex_its_own_component(xp):
    graph = random_graph(np.random.default_rng(9), n=40, m=120, directed=True, weighted=True, zero_weights=True)
    part = make_partition(graph, np.arange(graph.n), graph.n, method="given", seed=0, imbalance=1.0, seconds=0.0)
    _check_rows(graph, part, xp, dense_limit=8, super_size=4)


def test_boundary_rows_equal_frontier_sssp(xp):
    graph = random_graph(np.random.default_rng(2), n=120, m=400, directed=True, weighted=True)
    part = partition_graph(graph, 6)
    indptr, indices, weights = (xp.asarray(a) for a in (graph.indptr, graph.indices, graph.weights))
    for p, rows in _levels(graph, part, xp).boundary_rows(range(6)):
        vertices, nb = part.component(p)
        frontier = boundary_sssp(indptr, indices, weights, xp.asarray(vertices[:nb]), dtype=np.float64)
        np.testing.assert_array_equal(host(rows), host(frontier))


@pytest.mark.parametrize("directed", [True, False])
@pytest.mark.parametrize("k", [1, 4, 11])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_solve_same_with_both_methods(xp, directed, k, dtype):
    backend = "numpy" if xp is np else "cupy"
    graph = random_graph(np.random.default_rng(k), n=160, m=500, directed=directed, weighted=True, zero_weights=True)
    a = fastapsp.solve(graph, k=k, backend=backend, dtype=dtype, sssp_method="boundary-graph")
    b = fastapsp.solve(graph, k=k, backend=backend, dtype=dtype, sssp_method="frontier")
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, reference_apsp(graph).astype(dtype))


def test_gpu_equals_numpy_on_a_road_graph(xp):
    """The shipped Minnesota road network (two connected pieces), both backends, both methods."""
    from conftest import DATA

    graph = fastapsp.read_graph(DATA / "minnesota.mtx.gz")
    backend = "numpy" if xp is np else "cupy"
    got = fastapsp.solve(graph, k=16, backend=backend, dtype="float32", sssp_method="boundary-graph")
    np.testing.assert_array_equal(got, reference_apsp(graph).astype(np.float32))


def test_missing_component_rows_are_an_error():
    graph = Graph.from_edges(4, [0, 1, 2], [1, 2, 3], directed=False)
    part = make_partition(graph, np.array([0, 0, 1, 1]), 2, method="given", seed=0, imbalance=0.0, seconds=0.0)
    with pytest.raises(ValueError, match="component 1"):
        BoundaryGraph(graph, part, {0: np.zeros((1, 2))}, np, np.float64)


def test_cli_reports_the_method(tmp_path):
    from cli_util import DATA, run_cli
    import json

    for method in ("frontier", "boundary-graph", "auto"):
        report = tmp_path / f"{method}.json"
        proc = run_cli("solve", DATA / "minnesota.mtx.gz", "-k", 6, "--backend", "numpy", "--sssp-method", method,
                       "--output", tmp_path / f"{method}.npy", "--report", report)
        assert proc.returncode == 0, proc.stderr
        data = json.loads(report.read_text())
        assert data["sssp_method"] in ("frontier", "boundary-graph")
        if method != "auto":
            assert data["sssp_method"] == method
        assert set(data["predicted_seconds"]) == {"frontier", "boundary-graph"}
    np.testing.assert_array_equal(np.load(tmp_path / "frontier.npy"), np.load(tmp_path / "boundary-graph.npy"))
    bad = run_cli("solve", DATA / "minnesota.mtx.gz", "--sssp-method", "magic")
    assert bad.returncode != 0 and "sssp-method" in bad.stderr



def test_rows_of_a_graph_renamed_to_level_order_need_no_reordering():
    """A run renamed component by component, boundary first (each pair once): the boundary graph's
    level order is the vertex order, its rows come as made and equal those of the graph as given."""
    from fastapsp.planning import renamed_by_component

    graph = random_graph(np.random.default_rng(8), 150, 500, directed=False, weighted=True)
    part = partition_graph(graph, 6, "metis")
    order, renamed, renamed_part = renamed_by_component(graph, part)
    plain, moved = _levels(graph, part, np), _levels(renamed, renamed_part, np)
    assert moved._in_vertex_order and not plain._in_vertex_order
    rows = np.arange(12.0).reshape(2, 6)
    assert moved.vertex_order(rows) is rows
    given = dict(plain.boundary_rows(range(6)))
    for p, rows_p in moved.boundary_rows(range(6)):
        np.testing.assert_array_equal(rows_p, given[p][:, order])  # the renamed graph's columns


@pytest.mark.parametrize("weighted", [False, True])
def test_super_groups_weigh_the_arcs_between_groups(xp, monkeypatch, weighted):
    """LevelTree(weighted=True) hands METIS the graph of groups with each pair's cut arcs as its edge
    weight (counted here from the arcs themselves), without it no edge weights; the rows are exact
    either way."""
    import importlib

    metis_module = importlib.import_module("fastapsp.partition.metis")
    side = 24
    graph = _grid(side, np.random.default_rng(9))
    ids = np.arange(side * side)
    labels = (ids // side // 4) * 6 + (ids % side) // 4  # 4 x 4 blocks: 36 components
    part = make_partition(graph, labels, 36, method="given", seed=0, imbalance=1.0, seconds=0.0)
    seen = []
    real = metis_module.metis

    def spy(xadj, adjncy, k, **kwargs):
        seen.append((np.asarray(xadj), np.asarray(adjncy), kwargs.get("eweights")))
        return real(xadj, adjncy, k, **kwargs)

    monkeypatch.setattr(metis_module, "metis", spy)
    tree = LevelTree(graph, part, seed=42, dense_limit=40, super_size=30, weighted=weighted)
    xadj, adjncy, eweights = seen[0]  # the first level: the 36 components
    if not weighted:
        assert eweights is None
    else:
        src = np.repeat(np.arange(graph.n), np.diff(graph.indptr))
        a, b = labels[src], labels[graph.indices]
        between = {}
        for x, y in zip(a[a != b].tolist(), b[a != b].tolist()):
            key = (min(x, y), max(x, y))
            between[key] = between.get(key, 0) + 1
        rows = np.repeat(np.arange(36), np.diff(xadj))
        got = {(int(r), int(c)): int(w) for r, c, w in zip(rows, adjncy, eweights)}
        assert got == {**between, **{(y, x): w for (x, y), w in between.items()}}
    ref = reference_apsp(graph)
    bg = _levels(graph, part, xp, tree=tree)
    for p, rows_of in bg.boundary_rows(range(part.k)):
        vertices, nb = part.component(p)
        np.testing.assert_array_equal(host(rows_of), ref[vertices[:nb]], err_msg=f"component {p}")
