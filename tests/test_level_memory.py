"""The boundary graph's levels in the memory plan: their shape and size (LevelTree.shape, upper_items), the
local closures kept only while they leave room for them (closure_budget), and the dry run using the tree."""

from __future__ import annotations

import numpy as np
import pytest

import fastapsp
import fastapsp.components as components_module
from conftest import reference_apsp
from fastapsp.graph import Graph
from fastapsp.partition import partition_graph
from fastapsp.sink import MemorySink
from fastapsp.sizing import dry_run
from fastapsp.stages.boundary_graph import LevelTree, closure_budget, levels_bytes


def _grid(side, seed=5):
    rng = np.random.default_rng(seed)
    ids = np.arange(side * side).reshape(side, side)
    src = np.concatenate([ids[:, :-1].ravel(), ids[:-1, :].ravel()])
    dst = np.concatenate([ids[:, 1:].ravel(), ids[1:, :].ravel()])
    return Graph.from_edges(side * side, src, dst, rng.integers(1, 9, src.size).astype(float), directed=False)


def test_shape_and_items_follow_the_levels():
    graph = _grid(16)
    part = partition_graph(graph, 32)
    tree = LevelTree(graph, part, dense_limit=40, super_size=24)
    shape = tree.shape()
    assert len(shape) == len(tree.level_sizes) - 1 >= 2
    items = 0
    for entry, starts, nb in zip(shape, tree.starts[1:], tree.nb[1:]):
        sizes = np.diff(starts)
        assert entry["vertices"] == int(starts[-1]) and entry["groups"] == sizes.size
        assert entry["largest_group"] == int(sizes.max()) and entry["boundary"] == int(nb.sum())
        items += int((sizes**2).sum()) + int((nb * sizes).sum())
    assert tree.upper_items() == items
    level0 = int((part.boundary_per_part * part.sizes).sum())
    assert levels_bytes(tree, part, 4) == 4 * (level0 + items)
    assert levels_bytes(None, part, 8) == 8 * level0


def test_closure_budget():
    assert closure_budget(900) == 300
    assert closure_budget(900, reserve=800) == 100
    assert closure_budget(900, reserve=2000) == 0


def test_closures_not_kept_when_the_levels_need_the_room(monkeypatch):
    """With no room left for kept closures every component is closed again at its turn: the same rows."""
    graph = _grid(14, seed=7)
    part = partition_graph(graph, 12)
    closed, blocks = components_module.local_closures(graph, part, range(part.k), backend="numpy",
                                                      dtype=np.float64, reserve=1 << 62)
    assert all(closed[p] is None for p in closed) and set(blocks) == set(closed)
    kept, _ = components_module.local_closures(graph, part, range(part.k), backend="numpy", dtype=np.float64)
    assert any(m is not None for m in kept.values())
    monkeypatch.setattr(components_module, "levels_bytes", lambda *a, **k: 1 << 62)
    sink = MemorySink(graph.n, np.float64)
    components_module.run_components(graph, part, range(part.k), backend="numpy", sink=sink, dtype=np.float64,
                                     boundary_rows="boundary-graph")
    np.testing.assert_array_equal(sink.result, reference_apsp(graph))


def test_dry_run_counts_the_levels_of_the_tree():
    graph = _grid(16)
    part = partition_graph(graph, 32)
    tree = LevelTree(graph, part, dense_limit=40, super_size=24)
    plan = [list(range(part.k))]
    common = dict(dtype=np.float32, backend="numpy", output="none", rows=graph.n, method="boundary-graph")
    without = dry_run(graph, part, plan, **common)[0]["device_bytes_per_stage"]["boundary_graph"]
    with_tree = dry_run(graph, part, plan, tree=tree, **common)[0]["device_bytes_per_stage"]["boundary_graph"]
    boundary = int(part.boundary.sum())
    assert boundary <= 1536  # without the tree: the whole boundary closed densely (numpy's dense limit)
    # the same base, closures and level 0 (memory unbounded: every closure kept); the upper levels as the tree has them
    assert with_tree - without == (tree.upper_items() - boundary * boundary) * 4


def test_the_plan_describes_the_upper_levels():
    graph = _grid(30, seed=3)
    plan = fastapsp.plan(graph, k=60, backend="numpy", sssp_method="boundary-graph")
    levels = plan.describe()["upper_levels"]
    assert isinstance(levels, list) and levels and levels[0]["level"] == 1
    assert levels[0]["vertices"] == int(plan.partition.boundary.sum())
