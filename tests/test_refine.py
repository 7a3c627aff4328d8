"""The boundary-vertex refinement (fastapsp.partition.refine) and the ``+b`` partitioners.

Boundary counts and part sizes are recomputed from the raw edge list with
plain Python (tests/partition_cases.py), never with fastapsp's helpers.
"""

from __future__ import annotations

import json
import math


import numpy as np
import pytest

from conftest import DATA, host
from fastapsp.graph import Graph
from partition_cases import count_boundary, edge_set, grid_case, minnesota_case, random_case
from fastapsp.partition import (PARTITIONERS, load_partition, partition_graph, refine_boundary,
                                save_partition)
from fastapsp.partition.refine import (_PairFlows, _best_moves, _centroidal_start, _coordinates, _flow_refine,
                                       _power_cells, max_part_size)


CASES = {"random": lambda: random_case(7), "grid": grid_case, "minnesota": minnesota_case}


def start_labels(kind, graph, k, seed):
    rng = np.random.default_rng(seed)
    if kind == "random":
        return rng.integers(0, k, graph.n).astype(np.int32)
    if kind == "blocks":  # contiguous id ranges: roughly balanced and coherent on the grid
        return (np.arange(graph.n) * k // graph.n).astype(np.int32)
    return partition_graph(graph, k, "metis", seed=seed).labels


# ------------------------------------------------------------------ the guarantee
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("start", ["random", "blocks", "metis"])
@pytest.mark.parametrize("k,imbalance", [(2, 0.03), (5, 0.1), (16, 0.03)])
def test_never_more_boundary_and_balance_kept(case, start, k, imbalance):
    if start == "metis":
        pytest.importorskip("pymetis")
    graph, edges = CASES[case]()
    indptr, indices = graph.undirected_adjacency()
    labels = start_labels(start, graph, k, seed=3)
    before = count_boundary(edges, labels)
    stats = {}
    refined = refine_boundary(indptr, indices, labels.copy(), k, imbalance=imbalance, seed=1, stats=stats)
    assert refined.shape == (graph.n,) and refined.dtype == np.int32
    assert refined.min() >= 0 and refined.max() < k
    after = count_boundary(edges, refined)
    assert after <= before
    assert stats["boundary_before"] == before and stats["boundary_after"] == after
    bound = math.ceil((1 + imbalance) * graph.n / k - 1e-9)
    sizes_before = np.bincount(labels, minlength=k)
    sizes_after = np.bincount(refined, minlength=k)
    # No part grows past the bound; a part above it at the start never grows.
    grew = sizes_after > sizes_before
    assert np.all(sizes_after[grew] <= bound)
    assert sizes_after.max() <= max(bound, sizes_before.max())


@pytest.mark.parametrize("case", ["random", "grid"])
def test_every_round_lowers_or_keeps_the_count(case):
    """The result after r rounds is a prefix of the run: the count never rises from one round to the next."""
    graph, edges = CASES[case]()
    indptr, indices = graph.undirected_adjacency()
    labels = start_labels("random", graph, 4, seed=5)
    counts = []
    for rounds in range(0, 12):
        refined = refine_boundary(indptr, indices, labels, 4, imbalance=0.05, seed=2, max_rounds=rounds,
                                  flow_passes=0)
        counts.append(count_boundary(edges, refined))
    assert counts[0] == count_boundary(edges, labels)
    assert all(b <= a for a, b in zip(counts, counts[1:])), counts
    assert counts[-1] < counts[0]  # a random start always has moves with a gain


def test_improves_a_bad_partition():
    """Alternating labels on a path: the refinement must remove boundary vertices."""
    n = 12
    graph = Graph.from_edges(n, np.arange(n - 1), np.arange(1, n), directed=False, name="path")
    indptr, indices = graph.undirected_adjacency()
    labels = (np.arange(n) % 2).astype(np.int32)
    refined = refine_boundary(indptr, indices, labels, 2, imbalance=0.5, seed=0)
    edges = edge_set(np.arange(n - 1), np.arange(1, n))
    assert count_boundary(edges, labels) == n
    assert count_boundary(edges, refined) < n // 2
    assert np.bincount(refined, minlength=2).max() <= 9


def test_no_room_no_move():
    """With imbalance 0 and full parts no cluster can move, however much it would gain."""
    indptr, indices = np.array([0, 1, 3, 5, 6]), np.array([1, 0, 2, 1, 3, 2])  # path 0-1-2-3
    labels = np.array([0, 1, 0, 1], dtype=np.int32)
    np.testing.assert_array_equal(refine_boundary(indptr, indices, labels, 2, imbalance=0.0, flow_passes=0),
                                  labels)


def test_flows_exchange_vertices_between_full_parts():
    """A minimum cut may swap vertices between two full parts: 0,0,1,0,1,1 on a path becomes two halves."""
    graph = Graph.from_edges(6, np.arange(5), np.arange(1, 6), directed=False, name="path")
    indptr, indices = graph.undirected_adjacency()
    labels = np.array([0, 0, 1, 0, 1, 1], dtype=np.int32)
    refined = refine_boundary(indptr, indices, labels, 2, imbalance=0.0, max_rounds=0)
    np.testing.assert_array_equal(refined, [0, 0, 0, 1, 1, 1])


@pytest.mark.parametrize("clusters", ["single", "groups"])
def test_gains_match_brute_force(clusters):
    """The best move of every cluster with a boundary vertex equals trying every neighbouring part by hand."""
    graph, edges = random_case(11, n=60, m=120)
    indptr, indices = graph.undirected_adjacency()
    k = 4
    labels = start_labels("random", graph, k, seed=1)
    if clusters == "single":
        cluster = np.arange(graph.n)
    else:  # groups of up to 3 vertices of one part (not necessarily connected)
        order = np.lexsort((np.arange(graph.n), labels))
        group = np.zeros(graph.n, dtype=np.int64)
        rank = np.arange(graph.n) - np.searchsorted(labels[order], labels[order])
        group[order] = labels[order].astype(np.int64) * graph.n + rank // 3
        cluster = np.unique(group, return_inverse=True)[1].astype(np.int64)
    c = int(cluster.max()) + 1
    base = count_boundary(edges, labels)
    rows = np.repeat(np.arange(graph.n), np.diff(indptr)).astype(np.int64)
    foreign = np.bincount(rows[labels[rows] != labels[indices]], minlength=graph.n)
    v, b, gain = _best_moves(np, indptr.astype(np.int64), rows, indices.astype(np.int64), labels, foreign,
                             cluster, c, k)
    expected = {}
    for x in range(c):
        members = np.flatnonzero(cluster == x)
        near = {int(labels[u]) for m in members for u in indices[indptr[m]:indptr[m + 1]]}
        parts = sorted(near - {int(labels[members[0]])})
        best = None
        for p in parts:
            trial = labels.copy()
            trial[members] = p
            g = base - count_boundary(edges, trial)
            if best is None or g > best[1]:
                best = (p, g)
        if best is not None:
            expected[x] = best
    assert dict(zip(v.tolist(), zip(b.tolist(), gain.tolist()))) == expected


# ------------------------------------------------------------------ pairwise flows
def _tiny_case(seed: int, n: int = 11, m: int = 22, k: int = 3):
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    graph = Graph.from_edges(n, src, dst, directed=False, name=f"tiny{seed}")
    labels = rng.integers(0, k, n).astype(np.int64)
    return graph, edge_set(src, dst), labels


def _layers(edges, labels, a: int, b: int, limit: int) -> list:
    """Up to ``limit`` vertices of part a, breadth-first layer by layer from those next to part b."""
    labels = labels.tolist()
    near = {}
    for u, v in edges:
        near.setdefault(u, set()).add(v)
        near.setdefault(v, set()).add(u)
    layer = sorted(v for v in near if labels[v] == a and any(labels[u] == b for u in near[v]))
    taken: list = []
    while layer and len(taken) < limit:
        layer = layer[: limit - len(taken)]
        taken += layer
        layer = sorted({u for v in layer for u in near[v] if labels[u] == a and u not in taken})
    return taken


@pytest.mark.parametrize("seed", range(12))
def test_pair_cut_is_the_best_labelling_of_its_corridor(seed):
    """One pair's minimum cut against every labelling of the corridor, by brute force.

    With room for everything, the cut found has exactly the fewest boundary
    vertices any labelling of the corridor (part a or part b for each of its
    vertices) can have; when it reports a part as too large instead, every
    labelling with that fewest count empties a part.  The corridor itself is
    checked against a breadth-first search written here.
    """
    graph, edges, labels = _tiny_case(seed)
    indptr, indices = (a.astype(np.int64) for a in graph.undirected_adjacency())
    n = graph.n
    state = _PairFlows(indptr, indices, labels, 3, bound=n)
    region = np.concatenate(state.corridors(0, 1, n, n))
    sizes = np.bincount(labels, minlength=3)
    expected = _layers(edges, labels, 0, 1, sizes[0] - 1) + _layers(edges, labels, 1, 0, sizes[1] - 1)
    assert sorted(region.tolist()) == sorted(expected)
    before = count_boundary(edges, labels)
    counts, empties = [], []
    for bits in range(2 ** region.shape[0]):
        trial = labels.copy()
        trial[region] = [(bits >> i) & 1 for i in range(region.shape[0])]
        counts.append(count_boundary(edges, trial))
        sizes = np.bincount(trial, minlength=3)
        empties.append(sizes[0] == 0 or sizes[1] == 0)
    best = min(counts)
    got = state.refine(0, 1, n, n)
    after = count_boundary(edges, state.labels)
    if isinstance(got, str):
        assert all(e for c, e in zip(counts, empties) if c == best)
        np.testing.assert_array_equal(state.labels, labels)
    elif got > 0:
        assert after == best == before - got
        np.testing.assert_array_equal(state.labels[state.labels == 2], labels[labels == 2])
        assert np.array_equal(np.bincount(state.labels, minlength=3), state.sizes)
    else:
        assert best == before == after


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("start", ["random", "blocks", "metis"])
@pytest.mark.parametrize("k", [3, 16])
def test_flows_count_what_they_remove(case, start, k):
    """The flows alone: the removed count is the recomputed drop, balance is kept, no part empties."""
    if start == "metis":
        pytest.importorskip("pymetis")
    graph, edges = CASES[case]()
    indptr, indices = (a.astype(np.int64) for a in graph.undirected_adjacency())
    labels = start_labels(start, graph, k, seed=4)
    bound = max_part_size(graph.n, k, 0.03)
    refined, removed = _flow_refine(indptr, indices, labels, k, bound, passes=4, alpha=16.0, seed=3)
    assert refined.dtype == np.int32 and refined.shape == labels.shape
    assert count_boundary(edges, labels) - count_boundary(edges, refined) == removed >= 0
    sizes_before, sizes_after = np.bincount(labels, minlength=k), np.bincount(refined, minlength=k)
    assert np.all(sizes_after[sizes_after > sizes_before] <= bound)
    assert np.all(sizes_after[sizes_before > 0] > 0)
    if case == "minnesota":  # a road graph: every start has cuts to straighten
        assert removed > 0


def test_flows_same_seed_same_labels():
    graph, _ = CASES["minnesota"]()
    indptr, indices = (a.astype(np.int64) for a in graph.undirected_adjacency())
    labels = start_labels("random", graph, 8, seed=2)
    bound = max_part_size(graph.n, 8, 0.03)
    a, _ = _flow_refine(indptr, indices, labels, 8, bound, passes=3, alpha=16.0, seed=7)
    b, _ = _flow_refine(indptr, indices, labels, 8, bound, passes=3, alpha=16.0, seed=7)
    np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------------ centroidal restart
def delaunay_case(n: int, seed: int):
    """The Delaunay graph of ``n`` seeded random points in the unit square, and the points."""
    from scipy.spatial import Delaunay

    points = np.random.default_rng(seed).random((n, 2))
    tri = Delaunay(points).simplices
    src, dst = tri.ravel(), tri[:, [1, 2, 0]].ravel()
    return Graph.from_edges(n, src, dst, directed=False, name=f"delaunay{n}"), edge_set(src, dst), points


def _adjacency(graph):
    return tuple(a.astype(np.int64) for a in graph.undirected_adjacency())


def test_coordinates_recover_the_plane():
    """The points of a Delaunay graph come back up to rotation and scale (random points would give about 1)."""
    from scipy.spatial import procrustes

    graph, _, points = delaunay_case(8000, seed=1)
    xy = _coordinates(*_adjacency(graph), seed=3)
    assert xy.shape == (graph.n, 2)
    assert procrustes(points, xy)[2] < 0.1


def test_coordinates_give_up_when_the_pieces_fall_apart():
    graph, _, _ = delaunay_case(3000, seed=2)
    src, dst, _ = graph.arcs()
    twice = Graph.from_edges(2 * graph.n, np.concatenate([src, src + graph.n]),
                             np.concatenate([dst, dst + graph.n]), directed=False, name="two")
    assert _coordinates(*_adjacency(twice), seed=0) is None


def test_power_cells_against_brute_force():
    rng = np.random.default_rng(5)
    points, centres, weights = rng.random((500, 2)), rng.random((6, 2)), rng.random(6) * 0.05
    power = ((points[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2) - weights[None, :]
    np.testing.assert_array_equal(_power_cells(points, centres, weights), np.argmin(power, axis=1))


def test_centroidal_start_is_balanced_and_seeded():
    pytest.importorskip("pymetis")
    graph, _, _ = delaunay_case(8000, seed=1)
    k = 4
    labels = partition_graph(graph, k, "metis", seed=1).labels
    bound = max_part_size(graph.n, k, 0.03)
    cells = _centroidal_start(*_adjacency(graph), labels, k, bound, seed=2)
    assert cells.shape == (graph.n,) and cells.min() == 0 and cells.max() == k - 1
    assert np.bincount(cells, minlength=k).max() <= bound
    np.testing.assert_array_equal(cells, _centroidal_start(*_adjacency(graph), labels, k, bound, seed=2))


def test_centroidal_start_skips_small_graphs():
    graph, _ = minnesota_case()  # 2,642 vertices: fewer than 8 pieces of 64 for each of 8 parts
    labels = start_labels("blocks", graph, 8, seed=0)
    assert _centroidal_start(*_adjacency(graph), labels, 8, max_part_size(graph.n, 8, 0.03), seed=0) is None


def test_restart_keeps_the_guarantee():
    """The restart changes the flows only when its start wins their first pass; the guarantee holds."""
    pytest.importorskip("pymetis")
    graph, edges, _ = delaunay_case(8000, seed=1)
    k = 4
    labels = partition_graph(graph, k, "metis", seed=1).labels
    with_restart, without = {}, {}
    refined = refine_boundary(*graph.undirected_adjacency(), labels, k, imbalance=0.03, seed=1, stats=with_restart)
    refine_boundary(*graph.undirected_adjacency(), labels, k, imbalance=0.03, seed=1, layout_restart=False,
                    stats=without)
    assert without["restarted"] is False
    if not with_restart["restarted"]:
        assert with_restart["boundary_after_flows"] == without["boundary_after_flows"]
    assert with_restart["boundary_after_flows"] <= count_boundary(edges, labels)
    assert count_boundary(edges, refined) == with_restart["boundary_after"] <= count_boundary(edges, labels)
    assert np.bincount(refined, minlength=k).max() <= max_part_size(graph.n, k, 0.03)


def test_same_seed_same_labels():
    graph, _ = CASES["grid"]()
    indptr, indices = graph.undirected_adjacency()
    labels = start_labels("random", graph, 6, seed=9)
    a = refine_boundary(indptr, indices, labels, 6, imbalance=0.03, seed=4)
    b = refine_boundary(indptr, indices, labels, 6, imbalance=0.03, seed=4)
    np.testing.assert_array_equal(a, b)


def test_input_not_modified_and_errors():
    graph, _ = CASES["random"]()
    indptr, indices = graph.undirected_adjacency()
    labels = start_labels("random", graph, 3, seed=1)
    keep = labels.copy()
    refine_boundary(indptr, indices, labels, 3, imbalance=0.03)
    np.testing.assert_array_equal(labels, keep)
    with pytest.raises(ValueError, match="labels: expected shape"):
        refine_boundary(indptr, indices, labels[:-1], 3, imbalance=0.03)
    with pytest.raises(ValueError, match=r"labels: must lie in 0\.\.2"):
        refine_boundary(indptr, indices, labels + 1, 3, imbalance=0.03)
    with pytest.raises(ValueError, match="imbalance"):
        refine_boundary(indptr, indices, labels, 3, imbalance=-0.1)
    with pytest.raises(ValueError, match="flow_passes: -1 is negative"):
        refine_boundary(indptr, indices, labels, 3, imbalance=0.03, flow_passes=-1)
    with pytest.raises(ValueError, match="flow_alpha: 0.0 is not positive"):
        refine_boundary(indptr, indices, labels, 3, imbalance=0.03, flow_alpha=0.0)


def test_max_part_size():
    assert max_part_size(100, 1, 0.03) == 103
    assert max_part_size(100, 3, 0.03) == 35  # 34.33...
    assert max_part_size(1000, 10, 0.0) == 100


# ------------------------------------------------------------------ NumPy and CuPy agree
@pytest.mark.gpu
@pytest.mark.parametrize("case", list(CASES))
def test_numpy_and_cupy_refinement_agree(xp, case):
    if xp is np:
        pytest.skip("compares CuPy against NumPy")
    graph, _ = CASES[case]()
    indptr, indices = graph.undirected_adjacency()
    for k, start in ((2, "random"), (8, "blocks"), (16, "random")):
        labels = start_labels(start, graph, k, seed=2)
        stats_np, stats_cp = {}, {}
        on_host = refine_boundary(indptr, indices, labels, k, imbalance=0.03, seed=5, stats=stats_np)
        on_device = refine_boundary(xp.asarray(indptr), xp.asarray(indices), xp.asarray(labels), k,
                                    imbalance=0.03, seed=5, stats=stats_cp)
        assert type(on_device).__module__.startswith("cupy")
        np.testing.assert_array_equal(host(on_device), on_host)
        assert stats_np.pop("timings") and stats_cp.pop("timings")  # seconds: the rest must agree
        assert stats_np == stats_cp


@pytest.mark.gpu
def test_numpy_and_cupy_agree_with_the_restart(xp):
    """CuPy arrays go through the host for the flows and the centroidal restart and come back the same."""
    if xp is np:
        pytest.skip("compares CuPy against NumPy")
    pytest.importorskip("pymetis")
    graph, _, _ = delaunay_case(8000, seed=1)
    indptr, indices = graph.undirected_adjacency()
    labels = partition_graph(graph, 4, "metis", seed=1).labels
    stats_np, stats_cp = {}, {}
    on_host = refine_boundary(indptr, indices, labels, 4, imbalance=0.03, seed=5, stats=stats_np)
    on_device = refine_boundary(xp.asarray(indptr), xp.asarray(indices), xp.asarray(labels), 4, imbalance=0.03,
                                seed=5, stats=stats_cp)
    assert type(on_device).__module__.startswith("cupy")
    np.testing.assert_array_equal(host(on_device), on_host)
    assert stats_np.pop("timings") and stats_cp.pop("timings")
    assert stats_np == stats_cp


# ------------------------------------------------------------------ +b names, details, CLI
def test_every_partitioner_has_a_refined_twin():
    names = [p for p in PARTITIONERS if not p.endswith("+b")]
    assert names and all(f"{p}+b" in PARTITIONERS for p in names)


@pytest.mark.parametrize("k", [2, 8])
def test_refined_twin_starts_from_the_same_partition(k):
    pytest.importorskip("pymetis")
    graph, edges = minnesota_case()
    plain = partition_graph(graph, k, "metis", seed=3)
    refined = partition_graph(graph, k, "metis+b", seed=3)
    also = partition_graph(graph, k, "metis", seed=3, refine="boundary")
    assert refined.method == also.method == "metis+b"
    np.testing.assert_array_equal(refined.labels, also.labels)
    before = count_boundary(edges, plain.labels)
    after = count_boundary(edges, refined.labels)
    metrics = refined.metrics()
    assert metrics["boundary_vertices_before_refine"] == before
    assert metrics["boundary_vertices"] == after <= before
    assert refined.sizes.max() <= max(max_part_size(graph.n, k, 0.03), plain.sizes.max())
    assert "boundary_vertices_before_refine" not in plain.metrics()


def test_refined_twin_on_the_host_when_asked(monkeypatch):
    """``gpu=False`` keeps the cluster moves on the host, with the labels of the +b name; the worker count
    is recorded."""
    from fastapsp.partition import refine_labels

    pytest.importorskip("pymetis")
    graph, _ = minnesota_case()
    monkeypatch.setenv("FASTAPSP_REFINE_WORKERS", "2")
    refined = partition_graph(graph, 8, "metis+b", seed=3)
    indptr, indices = graph.undirected_adjacency()
    labels = partition_graph(graph, 8, "metis", seed=3).labels
    on_host, details = refine_labels(indptr, indices, labels, 8, seed=3, imbalance=0.03, gpu=False)
    assert details["refine_backend"] == "numpy" and details["refine_workers"] == 2
    np.testing.assert_array_equal(on_host, refined.labels)


@pytest.mark.gpu
def test_refined_twin_moves_clusters_on_the_gpu_and_agrees_with_the_host(xp):
    """With a GPU the +b names run the cluster moves on CuPy by default, with the host's labels."""
    from fastapsp.partition import refine_labels

    if xp is np:
        pytest.skip("compares CuPy against NumPy")
    pytest.importorskip("pymetis")
    graph, _, _ = delaunay_case(8000, seed=3)
    on_gpu = partition_graph(graph, 4, "metis+b", seed=3)
    indptr, indices = graph.undirected_adjacency()
    labels = partition_graph(graph, 4, "metis", seed=3).labels
    on_host, details = refine_labels(indptr, indices, labels, 4, seed=3, imbalance=0.03, gpu=False)
    assert on_gpu.details["refine_backend"] == "cupy" and details["refine_backend"] == "numpy"
    np.testing.assert_array_equal(on_gpu.labels, on_host)


def test_unknown_refinement():
    graph, _ = CASES["random"]()
    with pytest.raises(ValueError, match="refine: 'edges' is not one of none, boundary"):
        partition_graph(graph, 2, "metis", refine="edges")


def test_saved_refined_partition_keeps_its_details(tmp_path):
    pytest.importorskip("pymetis")
    graph, _ = minnesota_case()
    part = partition_graph(graph, 4, "metis+b", seed=1)
    save_partition(tmp_path / "p.npz", graph, part)
    back = load_partition(tmp_path / "p.npz", graph, 4)
    assert back.method == "metis+b"
    assert back.metrics()["boundary_vertices_before_refine"] == part.details["boundary_vertices_before_refine"]
    np.testing.assert_array_equal(back.labels, part.labels)


def test_cli_refine_flag_and_report(tmp_path):
    pytest.importorskip("pymetis")
    from fastapsp.cli import main

    report = tmp_path / "r.json"
    status = main(["solve", str(DATA / "minnesota.mtx.gz"), "-k", "4", "--refine", "boundary", "--backend", "numpy",
                   "--report", str(report)])
    assert status == 0
    data = json.loads(report.read_text())
    assert data["partitioner"] == "metis+b"
    assert data["boundary_vertices"] <= data["boundary_vertices_before_refine"]
    plain = tmp_path / "plain.json"
    assert main(["solve", str(DATA / "minnesota.mtx.gz"), "-k", "4", "--backend", "numpy",
                 "--report", str(plain)]) == 0
    plain_data = json.loads(plain.read_text())
    assert plain_data["boundary_vertices_before_refine"] is None
    assert plain_data["boundary_vertices"] == data["boundary_vertices_before_refine"]


def test_cli_rejects_unknown_refinement(capsys):
    from fastapsp.cli import main

    assert main(["partition", str(DATA / "minnesota.mtx.gz"), "-k", "4", "--refine", "cut"]) == 2
    assert "--refine" in capsys.readouterr().err
