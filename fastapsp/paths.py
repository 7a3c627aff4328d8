"""Predecessors and paths (``--predecessors``, ``fastapsp path``, :func:`reconstruct_path`).

Predecessors are derived from exact distance rows, not carried through the
stages: for a source s, an arc u -> v is *tight* when d(s, u) + w(u, v) equals
d(s, v) (to a relative 1e-12, or 1e-6 for float32 rows with real weights);
every arc of every shortest path is tight, and every path of tight arcs from s
is a shortest path.  A breadth-first search from s over the tight arcs gives a
shortest-path tree with the fewest arcs; its parents are the predecessors.
BFS order, not distance order, is what keeps zero-weight cycles from making a
cycle of predecessors.  Cost: O(m) per row on the CPU, after the distances.
"""

from __future__ import annotations

import os

import numpy as np

__all__ = ["NO_PREDECESSOR", "predecessors_from_distances", "reconstruct_path", "predecessors_path",
           "write_predecessors", "path_command"]

NO_PREDECESSOR = -9999  # as scipy.sparse.csgraph


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
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import breadth_first_order

    dist = np.asarray(dist)
    sources = np.asarray(sources, dtype=np.int64).reshape(-1)
    n = graph.n
    if dist.shape != (sources.size, n):
        raise ValueError(f"dist: expected shape {(sources.size, n)}, found {dist.shape}")
    src, dst, w = graph.arcs()
    src = src.astype(np.int64)
    rtol = 1e-6 if dist.dtype.itemsize <= 4 else 1e-12
    pred = np.full((sources.size, n), NO_PREDECESSOR, dtype=np.int32)
    small = np.issubdtype(dist.dtype, np.integer)  # --dtype uint16/uint8: the largest value is "unreachable"
    for i, s in enumerate(sources.tolist()):
        row = dist[i].astype(np.float64)
        if small:
            row[dist[i] == np.iinfo(dist.dtype).max] = np.inf
        through = row[src] + w
        target = row[dst]
        tight = np.isfinite(target) & (through <= target + rtol * np.abs(target))
        arcs = csr_matrix((np.ones(int(tight.sum()), dtype=np.int8), (src[tight], dst[tight])), shape=(n, n))
        _, parent = breadth_first_order(arcs, s, directed=True, return_predecessors=True)
        parent[s] = NO_PREDECESSOR
        pred[i] = parent
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


def predecessors_path(output: str) -> str:
    """Where the predecessors are saved beside an output file: ``X.npy`` -> ``X.predecessors.npy``."""
    output = os.fspath(output)
    return output[: -len(".npy")] + ".predecessors.npy"


def write_predecessors(graph, output: str, sources=None, *, rows_per_step: int = 256) -> str:
    """Derive the predecessors of the distance file ``output`` and save them beside it (int32).

    ``sources`` gives the vertex of every row (``--sources``); all vertices by
    default.  The file is written under a temporary name and renamed when complete.
    """
    dist = np.load(output, mmap_mode="r")
    sources = np.arange(graph.n) if sources is None else np.asarray(sources)
    path = predecessors_path(output)
    tmp = f"{path}.tmp{os.getpid()}"
    pred = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.int32, shape=dist.shape)
    try:
        for first in range(0, dist.shape[0], rows_per_step):
            last = min(dist.shape[0], first + rows_per_step)
            pred[first:last] = predecessors_from_distances(graph, dist[first:last], sources[first:last])
        pred.flush()
        del pred
        os.replace(tmp, path)
    except BaseException:
        del pred
        os.remove(tmp)
        raise
    return path


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
