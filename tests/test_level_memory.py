"""The boundary graph's levels in the memory plan: their shape and size (LevelTree.shape, upper_items), the
local closures kept only while they leave room for them (closure_budget), and the dry run using the tree."""

from __future__ import annotations

import inspect

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
    items = rows = 0
    for entry, starts, nb in zip(shape, tree.starts[1:], tree.nb[1:]):
        sizes = np.diff(starts)
        assert entry["vertices"] == int(starts[-1]) and entry["groups"] == sizes.size
        assert entry["largest_group"] == int(sizes.max()) and entry["boundary"] == int(nb.sum())
        items += int((sizes**2).sum()) + int((nb * sizes).sum())
        rows += 2 * int(sizes.max()) * int(starts[-1])  # a super-group's full rows and their reordered copy
    assert tree.upper_items() == items and tree.row_items() == rows
    level0 = int((part.boundary_per_part * part.sizes).sum())
    assert levels_bytes(tree, part, 4) == 4 * (level0 + items + rows)
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
    batches = []
    close = components_module.close_components

    def recording(*args, **kw):
        batches.append((inspect.stack()[1].function, list(args[4])))
        return close(*args, **kw)

    monkeypatch.setattr(components_module, "close_components", recording)
    sink = MemorySink(graph.n, np.float64)
    components_module.run_components(graph, part, range(part.k), backend="numpy", sink=sink, dtype=np.float64,
                                     boundary_rows="boundary-graph")
    np.testing.assert_array_equal(sink.result, reference_apsp(graph))
    again = [b for caller, b in batches if caller == "run_components"]  # closed again at the components' turns
    closed_again = [p for b in again for p in b]
    arcs = components_module.internal_arcs(graph, part)
    needing = [p for p in range(part.k) if part.sizes[p] and components_module._needs_matrix(part, arcs, p)]
    assert len(needing) >= 4 and sorted(closed_again) == needing  # each that needs its closure, once
    assert len(again) < len(closed_again)  # several at once


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
    assert with_tree - without == (tree.upper_items() + tree.row_items() - boundary * boundary) * 4


def test_the_plan_describes_the_upper_levels():
    graph = _grid(30, seed=3)
    plan = fastapsp.plan(graph, k=60, backend="numpy", sssp_method="boundary-graph")
    levels = plan.describe()["upper_levels"]
    assert isinstance(levels, list) and levels and levels[0]["level"] == 1
    assert levels[0]["vertices"] == int(plan.partition.boundary.sum())


class _ShortDevice:
    """An array module whose allocations above ``limit`` elements fail as a full GPU's do."""

    def __init__(self, limit):
        self.limit, self.asked = limit, []

    def empty(self, shape, dtype):
        self.asked.append(tuple(shape))
        if int(np.prod(shape)) > self.limit:
            raise MemoryError("Out of memory allocating")
        return np.empty(shape, dtype=dtype)


def test_column_blocks_halve_a_chunk_the_device_cannot_hold():
    device = _ShortDevice(limit=10 * 300)
    chunks = [(start, cols, block.shape) for start, cols, block, _ in
              components_module.column_blocks(device, 10, 5, 2005, 1000, np.float32, pad=4)]
    starts = [c[0] for c in chunks]
    assert starts[0] == 5 and all(a + c[1] == b for a, c, b in zip(starts, chunks, starts[1:]))
    assert chunks[-1][0] + chunks[-1][1] == 2005  # every column once, in order
    assert max(c[1] for c in chunks) <= 250 and all(c[2] == (10, c[1]) for c in chunks)
    assert (10, 1000) in device.asked and (10, 500) in device.asked  # halved, and halved again


def test_column_blocks_give_up_at_the_narrowest_block():
    device = _ShortDevice(limit=10)
    with pytest.raises(MemoryError):
        list(components_module.column_blocks(device, 10, 0, 100, 64, np.float32, predecessors=True))


def test_column_blocks_with_predecessors_and_no_shortage():
    chunks = list(components_module.column_blocks(np, 3, 0, 10, 4, np.float64, predecessors=True))
    assert [(s, c) for s, c, _, _ in chunks] == [(0, 4), (4, 4), (8, 2)]
    assert all(p.dtype == np.int32 and p.shape == b.shape for _, _, b, p in chunks)


def test_dry_run_sizes_a_block_from_what_is_free_after_what_is_held():
    """The block of the min-plus stage takes at most what the earlier stages leave free (as the run sizes it)."""
    graph = _grid(24, seed=11)
    part = partition_graph(graph, 6)
    tree = LevelTree(graph, part, dense_limit=40, super_size=24)
    common = dict(dtype=np.float32, backend="numpy", output="none", rows=graph.n, method="boundary-graph", tree=tree)
    unbounded = dry_run(graph, part, [list(range(part.k))], **common)[0]["device_bytes_per_stage"]
    held = unbounded["extract"]
    available = held + 40 * 1024  # room for a block of a few hundred columns only
    stages = dry_run(graph, part, [list(range(part.k))], available=available, **common)[0]["device_bytes_per_stage"]
    block = stages["min_plus"] - stages["extract"]
    assert 0 < block <= max(available - int(0.85 * stages["extract"]), 0) + 32 * 4 * int(part.sizes.max())
    assert unbounded["min_plus"] - unbounded["extract"] > block  # unbounded: whole rows


def test_levels_hold_their_blocks_encoded_where_products_may_pack():
    """Whole numbers in float32 on the GPU: every level's blocks are also held encoded for the packed grouped
    product, K rounded up to 16 and columns to whole tiles of 128, two bytes a column's pair half."""
    from fastapsp.stages.min_plus import Packing

    graph = _grid(16)
    part = partition_graph(graph, 32)
    tree = LevelTree(graph, part, dense_limit=40, super_size=24)
    plain = levels_bytes(tree, part, 4)

    def encoded(nb, sizes):
        nb, sizes = np.asarray(nb), np.asarray(sizes)
        return int((-(-nb // 16) * 16 * -(-sizes // 128) * 64 * 4).sum())

    want = encoded(part.boundary_per_part, part.sizes)
    want += sum(encoded(nb, np.diff(starts)) for starts, nb in zip(tree.starts[1:], tree.nb[1:]))
    assert want > 0 and levels_bytes(tree, part, 4, packed=True) == plain + want
    assert levels_bytes(None, part, 4, packed=True) == levels_bytes(None, part, 4) + encoded(part.boundary_per_part,
                                                                                            part.sizes)
    assert Packing.possible(graph, np.float32, True)
    assert not Packing.possible(graph, np.float64, True) and not Packing.possible(graph, np.float32, False)
    real = Graph.from_edges(3, [0, 1], [1, 2], [0.5, 1.0], directed=True)
    assert not Packing.possible(real, np.float32, True)
