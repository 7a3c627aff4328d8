"""Graphs and independent checks shared by the partitioner tests (test_jet.py, test_refine.py).

Edge sets, boundary counts, edge cuts and part sizes are computed here from
the raw edge lists with plain Python, never with fastapsp's helpers.
"""

from __future__ import annotations

import math

import numpy as np

from conftest import DATA
from fastapsp.graph import Graph


def edge_set(src, dst) -> set:
    """Undirected edges ``(min, max)`` of a raw arc list, self loops dropped."""
    return {(min(u, v), max(u, v)) for u, v in zip(np.asarray(src).tolist(), np.asarray(dst).tolist()) if u != v}


def random_case(seed: int, n: int = 300, m: int = 700):
    """A seeded random sparse graph and its edge set."""
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    return Graph.from_edges(n, src, dst, directed=False, name=f"random{seed}"), edge_set(src, dst)


def grid_case(side: int = 20):
    """A side x side grid with its diagonals one way (a triangulated mesh), and its edge set."""
    idx = np.arange(side * side).reshape(side, side)
    src = np.concatenate([idx[:, :-1].ravel(), idx[:-1, :].ravel(), idx[:-1, :-1].ravel()])
    dst = np.concatenate([idx[:, 1:].ravel(), idx[1:, :].ravel(), idx[1:, 1:].ravel()])
    return Graph.from_edges(side * side, src, dst, directed=False, name="grid"), edge_set(src, dst)


def minnesota_case():
    """The minnesota road graph of tests/data and its edge set."""
    from fastapsp.io import read_graph

    graph = read_graph(DATA / "minnesota.mtx.gz")
    src, dst, _ = graph.arcs()
    return graph, edge_set(src, dst)


def count_boundary(edges, labels) -> int:
    """Vertices with an edge to another part."""
    labels = np.asarray(labels).tolist()
    boundary = set()
    for u, v in edges:
        if labels[u] != labels[v]:
            boundary.update((u, v))
    return len(boundary)


def edge_cut(edges, labels) -> int:
    """Edges between different parts."""
    labels = np.asarray(labels).tolist()
    return sum(labels[u] != labels[v] for u, v in edges)


def check_valid(graph, labels, k: int, imbalance: float) -> None:
    """Every vertex labelled, labels in ``0..k-1``, no part above ``ceil((1 + imbalance) n / k)``."""
    labels = np.asarray(labels)
    assert labels.shape == (graph.n,)
    assert np.issubdtype(labels.dtype, np.integer)
    assert labels.min() >= 0 and labels.max() < k
    sizes = np.bincount(labels, minlength=k)
    assert sizes.max() <= math.ceil((1 + imbalance) * graph.n / k - 1e-9), (sizes.max(), graph.n, k)
