"""The cost model's choice of k (``fastapsp.cost``): a measured boundary law, memory, the report."""

import json

import numpy as np
import pytest

from cli_util import run_cli
from fastapsp.cost import _SIZES, _candidates, auto_k, choose_k, sample_boundary
from fastapsp.graph import Graph


def _grid(side):
    ids = np.arange(side * side).reshape(side, side)
    src = np.concatenate([ids[:, :-1].ravel(), ids[:-1, :].ravel()])
    dst = np.concatenate([ids[:, 1:].ravel(), ids[1:, :].ravel()])
    return Graph.from_edges(side * side, src, dst, directed=False)


def _expander(n, degree, seed):
    """A random graph of ``degree`` random arcs a vertex: no small separators."""
    rng = np.random.default_rng(seed)
    src = np.repeat(np.arange(n), degree)
    return Graph.from_edges(n, src, rng.integers(0, n, src.size), directed=False)


def test_a_grid_has_a_perimeter_law():
    """Planar: boundary ~ sqrt(size); the sampled region is smaller than the grid."""
    alpha, beta = sample_boundary(_grid(300), sample=20_000, sizes=(1600, 400))
    assert 0.3 <= beta <= 0.7
    assert 1.0 <= alpha * 1600**beta <= 400  # between a point and the whole part


def test_an_expander_has_a_volume_law():
    """Random graphs: most of every part is boundary, so the law is close to linear."""
    _, beta = sample_boundary(_expander(20_000, 4, 1), sample=10_000, sizes=(1600, 400))
    assert beta >= 0.75


@pytest.mark.parametrize("directed", [False, True])
def test_induced_subgraph_equals_scipys(directed):
    """The sampled region (Graph.subgraph) is SciPy's submatrix A[order][:, order], heads sorted."""
    from scipy.sparse import csr_matrix

    rng = np.random.default_rng(7)
    n = 500
    graph = Graph.from_edges(n, rng.integers(0, n, 3000), rng.integers(0, n, 3000), directed=directed)
    a = csr_matrix((np.ones(graph.m), graph.indices, graph.indptr), shape=(n, n))
    for order in (np.arange(n), np.sort(rng.choice(n, 180, replace=False)), np.array([3])):
        sub = graph.subgraph(order)
        indptr, indices = sub.indptr, sub.indices
        sub = a[order][:, order].tocsr()
        sub.sort_indices()
        np.testing.assert_array_equal(indptr, sub.indptr)
        np.testing.assert_array_equal(indices, sub.indices)


def test_memory_rules_out_large_components():
    n = 1_000_000
    free, _ = choose_k(n, 6 * n, 3.0, 0.5, unit_weights=True, backend="cupy")
    # Room for components of at most about 2,000 vertices (three c x c matrices and two c x n blocks).
    memory = (3 * 2000.0**2 + 2 * 2000.0 * n) * 4
    tight, _ = choose_k(n, 6 * n, 3.0, 0.5, unit_weights=True, backend="cupy", memory_bytes=memory)
    assert n / tight <= 2000 * 1.01
    assert tight >= free or n / free <= 2000 * 1.01


def test_small_graphs_take_the_least_regret_k_without_sampling():
    """A 400-vertex grid on the GPU: one component whatever the boundary law; sampling would cost more than
    any k could lose."""
    choice = auto_k(_grid(20), backend="cupy")
    assert choice["rule"].startswith("least regret") and choice["k"] == 1
    assert choice["regret_seconds"] <= choice["sampling_seconds"]
    assert "alpha" not in choice and choice["predicted_seconds"]["total"] > 0


def test_small_graphs_are_still_split_on_the_cpu():
    """One dense closure of a 2,500-vertex grid is seconds in NumPy: under every known law the model splits it."""
    choice = auto_k(_grid(50), backend="numpy")
    assert 1 < choice["k"] < 2500
    tiny = auto_k(_grid(3), backend="numpy")  # 9 vertices
    assert 1 <= tiny["k"] <= 9


def test_sampling_where_it_can_pay_off():
    """A 60,000-vertex expander on the GPU and a 10,000-vertex grid on the CPU: the known laws disagree by more
    than sampling costs, so the graph's own law is measured."""
    for graph, backend in ((_expander(60_000, 3, 0), "cupy"), (_grid(100), "numpy")):
        choice = auto_k(graph, backend=backend)
        assert choice["rule"] == "cost model" and {"alpha", "beta", "predicted_seconds"} <= set(choice)


def test_planar_regions_weigh_the_laws_of_roads_and_meshes(monkeypatch):
    """A 40,000-vertex grid on the GPU: its sampled region grows like a plane, and over the laws of road networks
    and meshes alone the least-regret k falls short by less than sampling would cost; a 160,000-vertex one
    (a plane too, but the laws disagree by more there) is sampled, its region grown once."""
    from fastapsp.cost import LOW_GROWTH, growth_dimension, least_regret_k, LOW_GROWTH_LAWS

    grid = _grid(200)
    choice = auto_k(grid, backend="cupy")
    assert choice["rule"].startswith("least regret over the boundary laws of road networks")
    assert choice["growth"] <= LOW_GROWTH and choice["regret_seconds"] <= choice["sampling_seconds"]
    # whole-number weights: priced as packed 16-bit products; 40,000 vertices: METIS
    k, regret, _ = least_regret_k(grid.n, grid.m, unit_weights=True, backend="cupy", laws=LOW_GROWTH_LAWS,
                                  packed=True, partitioner="metis")
    assert (choice["k"], choice["regret_seconds"]) == (k, round(regret, 6))
    assert growth_dimension([1] + [5] * 3) < growth_dimension([1, 1000, 1000, 1000])  # a plane against an expander
    import fastapsp.cost as cost_module

    grown = []
    ball = cost_module._ball
    monkeypatch.setattr(cost_module, "_ball", lambda *a, **kw: grown.append(a[1:]) or ball(*a, **kw))
    big = auto_k(_grid(400), backend="cupy")
    assert big["rule"] == "cost model" and len(grown) == 1


def test_least_regret_k_weighs_every_law():
    """The regret is the most the k falls short of each law's own best k; with a limit the two most
    different laws may stop the weighing early, with a regret past the limit and no larger than the whole."""
    from fastapsp.cost import KNOWN_LAWS, least_regret_k

    n, arcs = 30_000, 180_000
    k, regret, predicted = least_regret_k(n, arcs, unit_weights=True, backend="cupy")
    worst, slowest = 0.0, 0.0
    for alpha, beta in KNOWN_LAWS:
        best, parts = choose_k(n, arcs, alpha, beta, unit_weights=True, backend="cupy")
        totals = dict(_candidates(n, arcs, alpha, beta, unit_weights=True, backend="cupy", dtype=np.float32,
                                  memory_bytes=None, sizes=_SIZES, isolated=0))
        assert totals[best]["total"] == pytest.approx(parts["total"])
        fastest = min(p["total"] for p in totals.values())  # choose_k may take a larger k within K_TIE of it
        worst = max(worst, totals[k]["total"] - fastest)
        slowest = max(slowest, totals[k]["total"])
    assert regret == pytest.approx(worst) and predicted["total"] == pytest.approx(slowest)
    early_k, early, _ = least_regret_k(n, arcs, unit_weights=True, backend="cupy", limit=regret / 10)
    assert regret / 10 < early <= regret or (early_k, early) == (k, regret)


def test_report_gives_the_chosen_k_and_a_given_k_wins(tmp_path):
    path = tmp_path / "grid.mtx"
    graph = _grid(70)  # 4,900 vertices
    src = np.repeat(np.arange(graph.n), np.diff(graph.indptr))
    keep = src < graph.indices
    lines = [f"{u + 1} {v + 1}" for u, v in zip(src[keep], graph.indices[keep])]
    path.write_text("%%MatrixMarket matrix coordinate pattern symmetric\n"
                    f"{graph.n} {graph.n} {len(lines)}\n" + "\n".join(lines) + "\n")
    auto = tmp_path / "auto.json"
    given = tmp_path / "given.json"
    for report, extra in ((auto, []), (given, ["-k", "7"])):
        proc = run_cli("solve", path, "--backend", "numpy", "--output", "none", "--report", report, "--quiet", *extra)
        assert proc.returncode == 0, proc.stderr
    a, g = json.loads(auto.read_text()), json.loads(given.read_text())
    assert a["k"] == a["k_choice"]["k"] >= 1
    # 4,900 vertices on the CPU, whose closures cost little next to the products: the known laws disagree by
    # more than sampling would cost, and the report says what was measured
    assert a["k_choice"]["rule"] == "cost model" and {"alpha", "beta", "predicted_seconds"} <= set(a["k_choice"])
    assert g["k"] == 7 and g["k_choice"] == {"k": 7, "rule": "given"}


@pytest.mark.parametrize("seed", [0, 1])
def test_the_choice_is_deterministic(seed):
    graph = _grid(90)
    assert auto_k(graph, backend="cupy", seed=seed)["k"] == auto_k(graph, backend="cupy", seed=seed)["k"]


def test_close_everywhere_weighs_closures_against_the_rows_shared():
    from fastapsp.cost import close_everywhere

    many_small = dict(sizes=np.full(1000, 1000), boundary=np.full(1000, 100))  # 0.4 GB of rows, 1e12 closure
    few_large = dict(sizes=np.full(10, 16000), boundary=np.full(10, 100))  # 64 MB of rows, 4e13 closure
    assert close_everywhere(**many_small, ranks=4, backend="cupy")
    assert not close_everywhere(**few_large, ranks=4, backend="cupy")
    assert not close_everywhere(**many_small, ranks=4, backend="numpy")  # closures are slow on the CPU
    assert not close_everywhere(**many_small, ranks=1, backend="cupy")  # nothing to share with


def test_components_without_boundary_need_only_their_own_columns_when_rows_are_not_kept():
    from fastapsp.cost import predict

    sizes, boundary = np.array([100, 100, 100]), np.array([10, 10, 0])
    whole = predict(sizes, boundary, 10_000, 50_000, unit_weights=True, backend="numpy")
    own = predict(sizes, boundary, 10_000, 50_000, unit_weights=True, backend="numpy", whole_rows=False)
    for method in whole:
        assert own[method]["assemble"] * 3 == pytest.approx(whole[method]["assemble"] * (2 + 100 / 10_000))
        assert own[method]["min_plus"] == whole[method]["min_plus"]


def test_isolated_vertices_are_sampled_apart_and_make_smaller_components():
    """A grid among many isolated vertices: the boundary law is the grid's, and components of isolated vertices
    (closures alone) are cheaper small, so the cost model takes more components than without them."""
    grid = _grid(60)
    n = 60_000
    rng = np.random.default_rng(1)
    ids = np.sort(rng.permutation(n)[: grid.n])  # in order: the vertices with arcs are the grid as it is numbered
    src = np.repeat(np.arange(grid.n), np.diff(grid.indptr))
    spread = Graph.from_edges(n, ids[src], ids[grid.indices], directed=False)
    alpha, beta = sample_boundary(spread, sample=20_000, sizes=(400, 100))
    grid_alpha, grid_beta = sample_boundary(grid, sample=20_000, sizes=(400, 100))
    assert (alpha, beta) == pytest.approx((grid_alpha, grid_beta))
    choice = auto_k(spread, backend="numpy")
    assert choice["isolated"] == n - grid.n
    without, _ = choose_k(n, spread.m, alpha, beta, unit_weights=True, backend="numpy")
    assert choice["k"] > without and n / choice["k"] < 256  # below the sizes considered without isolated vertices


def test_upper_levels_stop_at_the_dense_limit():
    """The boundary graph's levels are closed in super-groups until a level fits the dense limit, so the top
    closure never passes it however large the boundary; a boundary that fits is one dense closure."""
    from fastapsp.cost import RATES, _upper_levels_seconds

    rates = RATES["cupy"]
    small = _upper_levels_seconds(np.array(10_000.0), np.array(100.0), rates, 16384, 2048)
    assert small == pytest.approx(10_000.0**3 / rates["dense"])
    for total in (50_000.0, 200_000.0, 800_000.0):
        seconds = _upper_levels_seconds(np.array(total), np.array(100.0), rates, 16384, 2048)
        # at most: every level as large as the first (each shrinks), and a top of the dense limit
        levels = total * 2048.0**2 / rates["level"]
        assert levels < seconds < 20 * levels + 16384.0**3 / rates["dense"]
    # a level whose groups are all boundary (no shrinking) is closed densely, whatever its size
    stuck = _upper_levels_seconds(np.array(50_000.0), np.array(4096.0), rates, 16384, 2048)
    assert stuck == pytest.approx(50_000.0**3 / rates["dense"])


def test_min_plus_priced_by_the_kernel_each_inner_dimension_takes():
    """On the GPU the wide products pay relaxations and writes; the small-K kernels the slower of the two;
    packed 16-bit products are cheaper than float32 ones; float64 at half the rate."""
    from fastapsp.cost import MINPLUS_KERNELS, predict

    n, arcs = 1 << 20, 6 << 20

    def min_plus(c, b, **kw):
        return predict([c], [b], n, arcs, unit_weights=False, backend="cupy", counts=[n / c], **kw)["frontier"]["min_plus"]

    relax, written = (1000 - 100) * 100 * n * (n / 1000), (1000 - 100) * n * (n / 1000)
    rate, write = MINPLUS_KERNELS["tile"]
    assert min_plus(1000, 100) == pytest.approx(relax / rate + written / write)
    assert min_plus(1000, 100, packed=True) < min_plus(1000, 100)
    assert min_plus(1000, 100, dtype=np.float64) == pytest.approx(2 * min_plus(1000, 100))
    rate, write = MINPLUS_KERNELS["smallk_packed"]  # a road network's components: bound by their writes
    relax, written = (1000 - 20) * 20 * n * (n / 1000), (1000 - 20) * n * (n / 1000)
    assert min_plus(1000, 20, packed=True) == pytest.approx(max(relax / rate, written / write))
    # the host: relaxations at the dense rate, as before
    host = predict([1000], [100], n, arcs, unit_weights=False, backend="numpy", counts=[n / 1000])["frontier"]
    assert host["min_plus"] == pytest.approx((1000 - 100) * 100 * n * (n / 1000) / 2.0e9)


def test_choose_k_takes_the_largest_of_the_k_it_cannot_tell_apart():
    """choose_k's k is predicted within K_TIE of the fastest candidate, and no larger k is."""
    from fastapsp.cost import K_TIE

    n, arcs = 1 << 20, 6 << 20
    kw = dict(unit_weights=False, backend="cupy", dtype=np.float32, memory_bytes=None, sizes=_SIZES, isolated=0)
    for packed in (False, True):
        k, parts = choose_k(n, arcs, 4.18, 0.46, packed=packed, partitioner="jet", unit_weights=False, backend="cupy")
        totals = dict((kk, p["total"]) for kk, p in _candidates(n, arcs, 4.18, 0.46, packed=packed, partitioner="jet",
                                                                **kw))
        fastest = min(totals.values())
        assert totals[k] == parts["total"] <= fastest * (1 + K_TIE)
        assert all(totals[other] > fastest * (1 + K_TIE) for other in totals if other > k)


def test_a_faster_link_between_ranks_makes_sharing_pay():
    """The rate the ranks measured between their GPUs replaces the host's SHARE_RATE: a distance
    received costs fewer relaxations, and components closed by every rank through the host are shared
    at a hundred times the rate."""
    from fastapsp.cost import SHARE_RATE, close_everywhere, receive_relaxations

    host = receive_relaxations("cupy", np.float32)
    assert receive_relaxations("cupy", np.float32, SHARE_RATE) == host
    fast = receive_relaxations("cupy", np.float32, 100 * SHARE_RATE)
    assert fast == pytest.approx(host / 100, rel=0.01)
    sizes, boundary = np.full(3444, 609.0), np.full(3444, 150.0)
    assert close_everywhere(sizes, boundary, 2, backend="cupy")
    assert not close_everywhere(sizes, boundary, 2, backend="cupy", rate=100 * SHARE_RATE)
    assert not close_everywhere(sizes, boundary, 1, backend="cupy", rate=100 * SHARE_RATE)


def test_no_peer_rate_without_several_ranks():
    from fastapsp.comm import get_comm
    from fastapsp.peers import peer_rate

    assert peer_rate(None) is None
    assert peer_rate(get_comm()) is None  # one process: nothing travels


def test_what_the_k_choice_sampled_is_kept_with_the_graphs_cache(tmp_path, monkeypatch):
    """The region's growth and boundary law, measured by the first run, are kept beside the binary cache; a later
    read of the same file reuses them (the same k, nothing sampled) until the cache holds other arrays."""
    import fastapsp.cost as cost
    import fastapsp.io.cache as cache_module
    from fastapsp.io import read_graph

    monkeypatch.setattr(cache_module, "CACHE_FROM_BYTES", 0)
    monkeypatch.setattr(cost, "SAMPLE_SECONDS_PER_VERTEX", 0.0)  # sampling always pays: the whole path runs
    grid = _grid(180)  # 32,400 vertices: more than the region sampled (25,000)
    src, dst, _ = grid.arcs()
    path = tmp_path / "grid.mtx"
    path.write_text("%%MatrixMarket matrix coordinate pattern general\n"
                    f"{grid.n} {grid.n} {src.size}\n" + "".join(f"{a + 1} {b + 1}\n" for a, b in zip(src, dst)))
    first = auto_k(read_graph(path, cache="auto"), backend="numpy")
    assert first["rule"] == "cost model" and "sampled" not in first
    notes = json.loads((tmp_path / "grid.mtx.mtx.fastapsp-csr" / "notes.json").read_text())
    assert set(notes[cost.SAMPLING_NOTE]["value"]) == {"how", "growth", "whole", "alpha", "beta"}

    def no_sampling(*args, **kwargs):
        raise AssertionError("sampled again")

    with monkeypatch.context() as m:
        m.setattr(cost, "sample_boundary", no_sampling)
        m.setattr(cost, "_ball", no_sampling)
        again = auto_k(read_graph(path, cache="auto"), backend="numpy")
    assert again.pop("sampled") == "kept with the graph's binary cache"
    assert {key: again[key] for key in ("k", "alpha", "beta", "rule")} == \
        {key: first[key] for key in ("k", "alpha", "beta", "rule")}
    # A note written for other arrays is not used; a graph without a cache samples and keeps nothing.
    notes[cost.SAMPLING_NOTE]["crc32"] = {"indptr": 0, "indices": 0, "weights": 0}
    (tmp_path / "grid.mtx.mtx.fastapsp-csr" / "notes.json").write_text(json.dumps(notes))
    assert "sampled" not in auto_k(read_graph(path, cache="auto"), backend="numpy")
    plain = auto_k(read_graph(path, cache="none"), backend="numpy")
    assert "sampled" not in plain and plain["k"] == first["k"]
