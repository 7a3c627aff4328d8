"""--stats / fastapsp.stats: every statistic against networkx and a dense SciPy reference."""

import json

import networkx as nx
import numpy as np
import pytest
from conftest import disconnected_graph, random_graph, reference_apsp

import fastapsp
from cli_util import DATA, find_mpiexec, run_cli
from fastapsp.graph import Graph
from fastapsp.partition import partition_graph
from fastapsp.components import run_components
from fastapsp.reductions import StatsAccumulator
from fastapsp.sink import NullSink


def with_isolated(graph, extra):
    """``graph`` plus ``extra`` vertices without arcs."""
    src, dst, w = graph.arcs()
    return Graph.from_edges(graph.n + extra, src, dst, w, directed=graph.directed, name="isolated")


def real_weights(rng, n, m, directed):
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    return Graph.from_edges(n, src, dst, rng.uniform(0.1, 3.0, m), directed=directed, name="real")


GRAPHS = {
    "connected-undirected": lambda: random_graph(np.random.default_rng(1), 60, 200, directed=False, weighted=True),
    "unit-undirected": lambda: random_graph(np.random.default_rng(2), 70, 220, directed=False, weighted=False),
    "directed": lambda: random_graph(np.random.default_rng(3), 60, 240, directed=True, weighted=True),
    "directed-sparse": lambda: random_graph(np.random.default_rng(4), 50, 70, directed=True, weighted=True),
    "disconnected": lambda: disconnected_graph(np.random.default_rng(5), [20, 15, 25], directed=False,
                                               weighted=True),
    "zero-weights": lambda: random_graph(np.random.default_rng(6), 40, 150, directed=True, weighted=True,
                                         zero_weights=True),
    "isolated": lambda: with_isolated(random_graph(np.random.default_rng(7), 30, 90, directed=True,
                                                   weighted=True), 5),
    "real-weights": lambda: real_weights(np.random.default_rng(8), 50, 200, directed=True),
}


def to_networkx(graph):
    g = nx.DiGraph() if graph.directed else nx.Graph()
    g.add_nodes_from(range(graph.n))
    src, dst, w = graph.arcs()
    g.add_weighted_edges_from(zip(src.tolist(), dst.tolist(), w.tolist()))
    return g


def backend_name(xp):
    return "numpy" if xp is np else "cupy"


@pytest.mark.parametrize("name", GRAPHS)
def test_every_statistic_against_networkx_and_dense(name, xp):
    graph = GRAPHS[name]()
    n = graph.n
    s = fastapsp.stats(graph, k=3, backend=backend_name(xp), dtype="float64")  # the definitions, to 1e-12
    G = to_networkx(graph)
    d = reference_apsp(graph)
    finite = np.isfinite(d)
    off = ~np.eye(n, dtype=bool)

    def close(got, want):
        np.testing.assert_allclose(got, [want[v] for v in range(n)], rtol=1e-12, atol=0)

    # per vertex: networkx
    close(s["closeness"], nx.closeness_centrality(G, distance="weight", wf_improved=True))
    close(s["harmonic"], nx.harmonic_centrality(G, distance="weight"))
    rev = G.reverse() if graph.directed else G
    close(s["closeness_out"], nx.closeness_centrality(rev, distance="weight", wf_improved=True))
    close(s["harmonic_out"], nx.harmonic_centrality(rev, distance="weight"))
    # per vertex: dense reference
    np.testing.assert_array_equal(s["reachable"], (finite & off).sum(axis=1))
    np.testing.assert_array_equal(s["reachable_in"], (finite & off).sum(axis=0))
    np.testing.assert_allclose(s["sum_distances"], np.where(finite, d, 0).sum(axis=1), rtol=1e-12)
    np.testing.assert_allclose(s["sum_distances_in"], np.where(finite, d, 0).sum(axis=0), rtol=1e-12)
    np.testing.assert_array_equal(s["eccentricity"], d.max(axis=1))
    ecc_finite = np.where(finite, d, 0).max(axis=1)
    # scalars
    connected = bool(finite.all())
    assert s["strongly_connected"] is connected
    assert s["diameter"] == ecc_finite.max() and s["radius"] == ecc_finite.min()
    assert s["center_size"] == np.count_nonzero(ecc_finite == ecc_finite.min())
    assert s["periphery_size"] == np.count_nonzero(ecc_finite == ecc_finite.max())
    pairs = int((finite & off).sum())
    total = np.where(finite, d, 0).sum()
    assert s["reachable_pairs"] == pairs
    assert s["sum_of_distances"] == pytest.approx(total, rel=1e-12)
    assert s["average_shortest_path_length"] == pytest.approx(total / pairs, rel=1e-12)
    assert s["wiener_index"] == pytest.approx(nx.wiener_index(G, weight="weight"), rel=1e-12)
    if connected:
        ecc = nx.eccentricity(G, weight="weight")
        close(s["eccentricity"], ecc)
        assert s["diameter"] == pytest.approx(nx.diameter(G, weight="weight"))
        assert s["radius"] == pytest.approx(nx.radius(G, weight="weight"))
        assert s["center_size"] == len(nx.center(G, weight="weight"))
        assert s["periphery_size"] == len(nx.periphery(G, weight="weight"))
        assert s["average_shortest_path_length"] == pytest.approx(
            nx.average_shortest_path_length(G, weight="weight"), rel=1e-12)
    else:
        assert s["wiener_index"] == np.inf
    # histogram: every reachable ordered pair u != v once, in its bin
    h = s.histogram
    width = h["bin_width"]
    values = d[finite & off]
    want = np.bincount(np.floor(values / width).astype(np.int64))
    np.testing.assert_array_equal(h["counts"], want)
    assert h["edges"] == pytest.approx((np.arange(want.size + 1) * width).tolist())
    integer = name != "real-weights"
    assert h["exact_integer_bins"] is integer
    if integer:
        assert isinstance(s["diameter"], int) and isinstance(s["sum_of_distances"], int)
        assert s["sum_distances"].dtype == np.int64


def test_column_chunks_and_float32_give_the_same_statistics():
    graph = random_graph(np.random.default_rng(9), 120, 400, directed=True, weighted=True)
    part = partition_graph(graph, 4, "metis")
    whole = fastapsp.stats(graph, partition=part, backend="numpy")
    acc = StatsAccumulator.for_graph(graph)
    run_components(graph, part, range(part.k), backend="numpy", sink=NullSink(), dtype=np.float32,
                   block_bytes=600, on_block=acc.update)  # blocks of a few columns
    chunked = acc.finalize()
    assert chunked.scalars == whole.scalars and chunked.histogram == whole.histogram
    for key in whole.vertex:  # harmonic sums are added in another order: equal to rounding
        np.testing.assert_allclose(chunked[key], whole[key], rtol=1e-13, atol=0)


def test_histogram_width_doubles_exactly():
    graph = real_weights(np.random.default_rng(10), 40, 160, directed=False)
    d = reference_apsp(graph)
    acc = StatsAccumulator(graph.n, integer=False, directed=False, bin_width=2.0**-12)
    for v in range(graph.n):  # one row at a time, so the width grows between updates
        acc.update(np.array([v]), 0, d[v : v + 1])
    s = acc.finalize()
    width = s.histogram["bin_width"]
    assert width > 2.0**-12  # it had to double
    values = d[np.isfinite(d) & ~np.eye(graph.n, dtype=bool)]
    np.testing.assert_array_equal(s.histogram["counts"], np.bincount(np.floor(values / width).astype(np.int64)))


def test_accumulator_rejects_a_block_from_another_module():
    acc = StatsAccumulator(3, integer=True, directed=True)
    with pytest.raises(ValueError, match="rows"):
        acc.update(np.array([0, 1]), 0, np.zeros((1, 3)))
    with pytest.raises(ValueError, match="column_start"):
        acc.update(np.array([0]), 2, np.zeros((1, 3)))


def test_cli_stats_writes_json_and_npz(tmp_path):
    prefix = tmp_path / "minn"
    proc = run_cli("solve", DATA / "minnesota.mtx.gz", "-k", 4, "--backend", "numpy", "--stats", prefix)
    assert proc.returncode == 0, proc.stderr
    data = json.loads((tmp_path / "minn.json").read_text())
    arrays = np.load(tmp_path / "minn.npz")
    graph = fastapsp.read_graph(DATA / "minnesota.mtx.gz")
    d = reference_apsp(graph)
    finite = np.isfinite(d)
    assert data["reachable_pairs"] == int(finite.sum()) - graph.n
    assert data["diameter"] == np.where(finite, d, 0).max()
    assert data["strongly_connected"] is bool(finite.all())
    np.testing.assert_array_equal(arrays["reachable"], finite.sum(axis=1) - 1)
    assert sum(data["histogram"]["counts"]) == data["reachable_pairs"]
    if not finite.all():
        assert data["wiener_index"] is None  # strict JSON: inf is written as null


def test_cli_stats_folder_must_exist(tmp_path):
    proc = run_cli("solve", DATA / "minnesota.mtx.gz", "-k", 2, "--stats", tmp_path / "no" / "x")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "stats" in proc.stderr


@pytest.mark.mpi
@pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec (install the 'mpi' extra)")
def test_stats_under_two_ranks_equal_one_rank(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    for prefix, ranks in ((one, None), (two, 2)):
        proc = run_cli("solve", DATA / "minnesota.mtx.gz", "-k", 5, "--backend", "numpy", "--stats", prefix,
                       ranks=ranks)
        assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "one.json").read_text()) == json.loads((tmp_path / "two.json").read_text())
    a, b = np.load(tmp_path / "one.npz"), np.load(tmp_path / "two.npz")
    for key in a.files:  # harmonic sums add the ranks' parts in another order: equal to rounding
        np.testing.assert_allclose(a[key], b[key], rtol=1e-13, atol=0)
        if not key.startswith("harmonic"):
            np.testing.assert_array_equal(a[key], b[key])


PAIR_GRAPHS = {
    "weighted": lambda: random_graph(np.random.default_rng(41), 150, 420, directed=False, weighted=True,
                                     zero_weights=True),
    "unit": lambda: random_graph(np.random.default_rng(42), 160, 380, directed=False, weighted=False),
    "disconnected": lambda: disconnected_graph(np.random.default_rng(43), [40, 30, 50], directed=False,
                                               weighted=True),
    "isolated": lambda: with_isolated(random_graph(np.random.default_rng(44), 80, 200, directed=False,
                                                   weighted=False), 4),
    "real-weights": lambda: real_weights(np.random.default_rng(45), 90, 300, directed=False),
}


def paired_stats(graph, part, *, method="frontier", block_bytes=None, backend="numpy", dtype=np.float64):
    """Statistics of a run that computes each pair once (plan.renamed_by_component), as --stats makes them."""
    import functools

    from fastapsp.planning import renamed_by_component

    acc = StatsAccumulator.for_graph(graph, backend)
    order, renamed, renamed_part = renamed_by_component(graph, part)
    acc.vertex_order = order
    run_components(renamed, renamed_part, range(part.k), backend=backend, sink=NullSink(), dtype=dtype,
                   boundary_rows=method, block_bytes=block_bytes, pairs=True,
                   on_block=functools.partial(acc.update, pairs=True))
    return acc.finalize()


@pytest.mark.parametrize("method", ["frontier", "boundary-graph"])
@pytest.mark.parametrize("name", PAIR_GRAPHS)
def test_each_pair_once_gives_the_statistics_of_the_whole_matrix(name, method):
    """Undirected graphs: row blocks that skip the columns of earlier components (each pair of
    vertices in two components computed once, counted for both orders) give the statistics of the
    whole matrix, per vertex in the graph's own order, for k = 1, a few components and small ones,
    in column chunks too."""
    graph = PAIR_GRAPHS[name]()
    exact = name != "real-weights"
    d = reference_apsp(graph)
    finite = np.isfinite(d) & ~np.eye(graph.n, dtype=bool)
    for k, block_bytes in ((1, None), (4, None), (max(2, graph.n // 6), 3000)):
        part = partition_graph(graph, k, "metis")
        acc = StatsAccumulator.for_graph(graph)
        run_components(graph, part, range(part.k), backend="numpy", sink=NullSink(), dtype=np.float64,
                       boundary_rows=method, on_block=acc.update)
        whole = acc.finalize()
        paired = paired_stats(graph, part, method=method, block_bytes=block_bytes)
        assert paired.histogram["counts"] == whole.histogram["counts"] or not exact
        assert sum(paired.histogram["counts"]) == int(finite.sum())
        for key, value in whole.scalars.items():
            if not exact and key in ("center_size", "periphery_size"):
                continue  # d(u, v) and d(v, u) of the whole matrix may differ in the last bit (sums in
                # another order), and with them who attains the radius or the diameter
            assert paired.scalars[key] == (value if exact or not isinstance(value, float) else
                                           pytest.approx(value, rel=1e-12)), key
        for key, value in whole.vertex.items():
            np.testing.assert_allclose(paired[key], value, rtol=0 if exact and not key.startswith(
                ("harmonic", "closeness")) else 1e-12, atol=0, err_msg=key)
        np.testing.assert_allclose(paired["sum_distances"], np.where(finite, d, 0).sum(axis=1), rtol=1e-12)
        np.testing.assert_array_equal(paired["reachable"], finite.sum(axis=1))


def test_pairs_need_an_undirected_graph_and_consecutive_rows():
    directed = StatsAccumulator(4, integer=True, directed=True)
    with pytest.raises(ValueError, match="undirected"):
        directed.update(np.array([0, 1]), 0, np.zeros((2, 4)), pairs=True)
    acc = StatsAccumulator(4, integer=True, directed=False)
    with pytest.raises(ValueError, match="consecutive"):
        acc.update(np.array([0, 2]), 0, np.zeros((2, 4)), pairs=True)
    with pytest.raises(ValueError, match="consecutive"):
        acc.update(np.array([2, 3]), 1, np.zeros((2, 3)), pairs=True)


def test_cli_stats_with_and_without_pairs_agree(tmp_path):
    """fastapsp solve --stats (each pair once, the default for undirected graphs) writes what the
    whole matrix gives (a plan with each_pair_once=False imposed, run by tests/plan_driver.py)."""
    import subprocess
    import sys

    from cli_util import ROOT, cli_env

    outputs = {}
    for switch in ("1", "0"):
        prefix = tmp_path / f"p{switch}"
        if switch == "1":
            proc = run_cli("solve", DATA / "minnesota.mtx.gz", "-k", 6, "--backend", "numpy", "--stats", prefix)
        else:
            proc = subprocess.run([sys.executable, str(ROOT / "tests" / "plan_driver.py"), str(DATA / "minnesota.mtx.gz"),
                                   "none", "6", "auto", "--stats", str(prefix), "each_pair_once=0"],
                                  capture_output=True, text=True, timeout=180, env=cli_env())
            assert '"stats_each_pair_once": false' in proc.stdout, proc.stdout
        assert proc.returncode == 0, proc.stderr
        outputs[switch] = (json.loads((tmp_path / f"p{switch}.json").read_text()), np.load(f"{prefix}.npz"))
    (j1, a1), (j0, a0) = outputs["1"], outputs["0"]
    assert j1 == j0
    for key in a0.files:
        np.testing.assert_allclose(a1[key], a0[key], rtol=1e-13, atol=0, err_msg=key)


@pytest.mark.parametrize("directed", [False, True])
def test_permuted_graph_keeps_every_arc(directed):
    graph = random_graph(np.random.default_rng(46), 50, 160, directed=directed, weighted=True, zero_weights=True)
    order = np.random.default_rng(47).permutation(graph.n)
    renamed = graph.permuted(order)
    new = np.empty(graph.n, dtype=np.int64)
    new[order] = np.arange(graph.n)
    src, dst, w = graph.arcs()
    key = np.argsort(new[src] * graph.n + new[dst])
    r_src, r_dst, r_w = renamed.arcs()
    np.testing.assert_array_equal(r_src, new[src][key])
    np.testing.assert_array_equal(r_dst, new[dst][key])
    np.testing.assert_array_equal(r_w, w[key])
    assert renamed.directed == directed
    d, r = reference_apsp(graph), reference_apsp(renamed)
    np.testing.assert_array_equal(r, d[np.ix_(order, order)])
    with pytest.raises(ValueError, match="permutation"):
        graph.permuted(np.zeros(graph.n, dtype=np.int64))


def test_update_beyond_is_update_with_pairs_past_the_component():
    """update_beyond (rows that need not be consecutive, every column past them) adds what update with
    pairs adds for the columns past a component; and the NumPy accumulator fuses no product."""
    rng = np.random.default_rng(8)
    n = 40
    d = rng.integers(1, 30, (n, n)).astype(np.float64)
    d = np.minimum(d, d.T)
    np.fill_diagonal(d, 0)
    d[3, 20:25] = d[20:25, 3] = np.inf
    rows = np.arange(0, 10)
    paired = StatsAccumulator(n, integer=True, directed=False)
    paired.update(rows, 0, d[rows], pairs=True)
    beyond = StatsAccumulator(n, integer=True, directed=False)
    beyond.update(rows, 0, d[rows][:, :10])
    beyond.update_beyond(rows[[7, 2, 5, 0, 9, 1, 3, 4, 6, 8]], 10, d[[7, 2, 5, 0, 9, 1, 3, 4, 6, 8]][:, 10:])
    for key in ("row_sum", "col_sum", "row_reach", "col_reach", "row_max", "col_max", "hist"):
        np.testing.assert_array_equal(getattr(beyond, key), getattr(paired, key), err_msg=key)
    for key in ("row_harm", "col_harm"):  # the rows in another order: the sums in another order
        np.testing.assert_allclose(getattr(beyond, key), getattr(paired, key), rtol=1e-15, err_msg=key)
    assert not beyond.product_fuses(d[:4, :5], d[:5, 10:])
    with pytest.raises(ValueError, match="row 12 is not before column 10"):
        beyond.update_beyond(np.array([12]), 10, d[[12]][:, 10:])
    directed = StatsAccumulator(n, integer=True, directed=True)
    with pytest.raises(ValueError, match="undirected"):
        directed.update_beyond(rows, 10, d[rows][:, 10:])
