"""Statistics skip what cannot be reached: a component that no arc joins to another computes only its own
columns when nothing needs whole rows, and the statistics stay those of the whole matrix."""

import numpy as np
import pytest
from conftest import random_graph

import fastapsp
from fastapsp.comm import SerialComm
from fastapsp.execute import execute
from fastapsp.graph import Graph
from fastapsp.options import SolveOptions
from fastapsp.partition import make_partition
from fastapsp.planning import make_plan
from fastapsp.reductions import StatsAccumulator


def _islands(directed: bool) -> tuple[Graph, np.ndarray]:
    """A connected core of 40 vertices, three islands of 5 and 60 isolated vertices; labels that give the
    islands and the isolated vertices components of their own (no boundary)."""
    rng = np.random.default_rng(5)
    core = random_graph(rng, 40, 160, directed=directed, weighted=True)
    src, dst, w = (list(a) for a in core.arcs())
    labels = list(rng.integers(0, 3, 40))  # the core in three components
    for island in range(3):
        base = 40 + 5 * island
        for a in range(5):
            src.append(base + a)
            dst.append(base + (a + 1) % 5)
            w.append(float(island + 1))
        labels += [3 + island] * 5
    labels += [6 + i % 4 for i in range(60)]  # isolated vertices, four components of them
    graph = Graph.from_edges(115, np.array(src), np.array(dst), np.array(w), directed=directed, name="islands")
    return graph, np.array(labels)


def _whole_matrix_stats(graph):
    acc = StatsAccumulator.for_graph(graph)
    d = fastapsp.solve(graph, k=1, backend="numpy", dtype="float64")
    acc.update(np.arange(graph.n), 0, d)
    return acc.finalize()


@pytest.mark.parametrize("directed", [False, True])
def test_islands_cover_their_own_columns_and_the_statistics_are_the_whole_matrixs(directed, monkeypatch):
    graph, labels = _islands(directed)
    part = make_partition(graph, labels, int(labels.max()) + 1, method="given", seed=0, imbalance=1.0, seconds=0.0)
    assert (part.boundary_per_part[3:] == 0).all() and (part.boundary_per_part[:3] > 0).all()
    widths = []
    real = StatsAccumulator.update

    def spy(self, rows, column_start, block, **kw):
        widths.append(block.shape[1])
        return real(self, rows, column_start, block, **kw)

    monkeypatch.setattr(StatsAccumulator, "update", spy)
    plan = make_plan(graph, SolveOptions(backend="numpy", stats=True, dtype="float64", quiet=True), comm=SerialComm(),
                     partition=part)
    assert not plan.whole_rows
    got = execute(plan, graph, comm=SerialComm()).stats
    assert min(widths) <= 15 < graph.n  # the islands' and isolated vertices' blocks: their own columns only
    monkeypatch.setattr(StatsAccumulator, "update", real)
    want = _whole_matrix_stats(graph)
    assert got.scalars == want.scalars and got.histogram == want.histogram
    for key in want.vertex:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-12, atol=0, err_msg=key)


def test_an_output_keeps_whole_rows(tmp_path):
    graph, labels = _islands(False)
    part = make_partition(graph, labels, int(labels.max()) + 1, method="given", seed=0, imbalance=1.0, seconds=0.0)
    plan = make_plan(graph, SolveOptions(backend="numpy", stats=True, output="memory", quiet=True), comm=SerialComm(),
                     partition=part)
    assert plan.whole_rows
    d = execute(plan, graph, comm=SerialComm()).result
    assert np.isinf(d[40:45, 45:]).all() and np.isfinite(d[40:45, 40:45]).all()
