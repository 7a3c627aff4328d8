"""Predecessors and paths (``--predecessors``, ``fastapsp path``, :func:`reconstruct_path`).

A solve with predecessors carries them through the stages
(:mod:`fastapsp.stages.predecessors`).  This module reads them back
(:func:`reconstruct_path`, ``fastapsp path``) and can also derive them from exact
distance rows after the fact (:func:`predecessors_from_distances`, a reference
and verifier): for a source s, an arc u -> v is *tight* when d(s, u) + w(u, v)
equals d(s, v) (exactly for whole-number weights; to a relative 1e-12, or 1e-6
for float32 rows, with real weights); every arc of every shortest path is tight,
and every path of tight arcs from s is a shortest path.  A breadth-first search
from s over the tight arcs (:func:`tight_tree`) gives a shortest-path tree with
the fewest arcs; its parents are the predecessors.  BFS order, not distance
order, is what keeps zero-weight cycles from making a cycle of predecessors.
"""

from __future__ import annotations

import os

import numpy as np

__all__ = ["NO_PREDECESSOR", "predecessors_from_distances", "tight_tree", "reconstruct_path", "predecessors_path", "ids_path",
           "path_command"]

NO_PREDECESSOR = -9999  # as scipy.sparse.csgraph


def tight_tree(arcs, row, source: int, n: int, rtol: float = 0.0):
    """Breadth-first search from ``source`` over the arcs tight in the distance row ``row``.

    Parameters
    ----------
    arcs : tuple of ndarray
        ``(src, dst, w)`` of every arc (float64 weights).
    row : ndarray of float64, shape (n,)
        Exact distances from ``source`` (``inf`` when unreachable).
    source, n : int
        The source and the number of vertices.
    rtol : float
        Relative slack of ``row[u] + w <= row[v]`` (0: exact).

    Returns
    -------
    hops, parent : ndarray of int32, shape (n,)
        Fewest arcs of a shortest path (``-1``: unreachable) and the vertex one
        arc nearer the source on one (``-9999`` for the source and unreachable ones).
    """
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import dijkstra

    src, dst, w = arcs
    target = row[dst]
    tight = np.isfinite(target)
    tight[tight] = row[src[tight]] + w[tight] <= target[tight] + rtol * target[tight]
    arcs_csr = csr_matrix((np.ones(int(tight.sum()), dtype=np.int8), (src[tight], dst[tight])), shape=(n, n))
    # Breadth-first: every parent is one arc nearer the source than its child.
    hops, parent = dijkstra(arcs_csr, directed=True, indices=source, unweighted=True, return_predecessors=True)
    return np.where(np.isfinite(hops), hops, -1).astype(np.int32), parent.astype(np.int32)


def predecessors_from_distances(graph, dist, sources) -> np.ndarray:
    """Predecessor matrix for the distance rows ``dist[i] = d(sources[i], .)``.

    Parameters
    ----------
    graph : Graph
        The graph the distances belong to.
    dist : ndarray, shape (len(sources), n)
        Exact distances (float32 or float64), ``inf`` for unreachable.
    sources : array_like of int
        The source of every row.

    Returns
    -------
    ndarray of int32, shape (len(sources), n)
        ``pred[i, v]``: the vertex before ``v`` on a shortest path from
        ``sources[i]``; ``-9999`` for the source itself and unreachable vertices.

    Examples
    --------
    >>> from fastapsp.graph import Graph
    >>> g = Graph.from_edges(3, [0, 1, 0], [1, 2, 2], [1.0, 1.0, 5.0], directed=True)
    >>> predecessors_from_distances(g, np.array([[0.0, 1.0, 2.0]]), [0]).tolist()
    [[-9999, 0, 1]]
    """
    dist = np.asarray(dist)
    sources = np.asarray(sources, dtype=np.int64).reshape(-1)
    n = graph.n
    if dist.shape != (sources.size, n):
        raise ValueError(f"dist: expected shape {(sources.size, n)}, found {dist.shape}")
    src, dst, w = graph.arcs()
    arcs = (src.astype(np.int64), dst.astype(np.int64), w)
    whole = bool(np.all(w == np.floor(w)))
    rtol = 0.0 if whole else (1e-6 if dist.dtype.itemsize <= 4 else 1e-12)
    pred = np.full((sources.size, n), NO_PREDECESSOR, dtype=np.int32)
    small = np.issubdtype(dist.dtype, np.integer)  # --dtype uint16/uint8: the largest value is "unreachable"
    for i, s in enumerate(sources.tolist()):
        row = dist[i].astype(np.float64)
        if small:
            row[dist[i] == np.iinfo(dist.dtype).max] = np.inf
        pred[i] = tight_tree(arcs, row, s, n, rtol)[1]
    return pred


def reconstruct_path(predecessors, source: int, target: int, *, sources=None) -> list[int]:
    """The vertices of a shortest path from ``source`` to ``target`` (empty when there is none).

    Parameters
    ----------
    predecessors : ndarray, shape (r, n)
        A predecessor matrix (:func:`fastapsp.shortest_path` with
        ``return_predecessors=True``, or the ``--predecessors`` file).
    source, target : int
        Vertex ids.
    sources : array_like of int, optional
        The source of every row, when the matrix holds only some rows (``--sources``).

    Raises
    ------
    ValueError
        When ``source`` has no row or an id is out of range.

    Examples
    --------
    >>> reconstruct_path(np.array([[-9999, 0, 1]]), 0, 2)
    [0, 1, 2]
    """
    predecessors = np.asarray(predecessors)
    r, n = predecessors.shape
    if not 0 <= target < n:
        raise ValueError(f"target: {target} is outside 0..{n - 1}")
    if sources is None:
        if not 0 <= source < r:
            raise ValueError(f"source: {source} is outside 0..{r - 1}")
        row = predecessors[source]
    else:
        sources = np.asarray(sources)
        hit = np.flatnonzero(sources == source)
        if hit.size == 0:
            raise ValueError(f"source: vertex {source} is not among the {sources.size} computed sources")
        row = predecessors[hit[0]]
    if source == target:
        return [source]
    path = [target]
    while path[-1] != source:
        step = int(row[path[-1]])
        if step < 0:
            return []
        path.append(step)
        if len(path) > n:
            raise ValueError("predecessors: the matrix has a cycle; it is not a predecessor matrix")
    return path[::-1]


def ids_path(output: str) -> str:
    """Where the source ids are saved beside an output file: ``X.npy`` -> ``X.sources.npy``."""
    return output[: -len(".npy")] + ".sources.npy"


def predecessors_path(output: str) -> str:
    """Where the predecessors are saved beside an output file: ``X.npy`` -> ``X.predecessors.npy``."""
    output = os.fspath(output)
    return output[: -len(".npy")] + ".predecessors.npy"


def path_command(result: str, source: int, target: int) -> str:
    """``fastapsp path RESULT SRC DST``: one line with the path and its length."""
    if not str(result).endswith(".npy") or not os.path.isfile(result):
        raise ValueError(f"RESULT: {result!r} is not an existing .npy distance file")
    preds = predecessors_path(result)
    if not os.path.isfile(preds):
        raise ValueError(f"RESULT: {preds} not found; solve with --predecessors and --output {result}")
    ids = result[: -len(".npy")] + ".sources.npy"
    sources = np.load(ids) if os.path.isfile(ids) else None
    pred = np.load(preds, mmap_mode="r")
    dist = np.load(result, mmap_mode="r")
    path = reconstruct_path(pred, source, target, sources=sources)
    if not path:
        return f"no path from {source} to {target}"
    row = source if sources is None else int(np.flatnonzero(sources == source)[0])
    return f"{' '.join(map(str, path))} (length {dist[row, target]:g}, {len(path) - 1} arcs)"
