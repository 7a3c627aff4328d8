"""Shared fixtures and reference helpers for the fastapsp tests.

Reference answers never come from fastapsp itself: SciPy's ``shortest_path`` on
the graph's CSR, and for small graphs a plain dense Floyd-Warshall built straight
from the raw edge list (so the dedupe / self-loop rules of ``Graph.from_edges``
are checked too).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fastapsp.graph import Graph

DATA = Path(__file__).parent / "data"


# ------------------------------------------------------------------ backends
def _cupy_usable() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


@pytest.fixture(params=["numpy", pytest.param("cupy", marks=pytest.mark.gpu)])
def xp(request):
    """The array module a stage test runs on: NumPy always, CuPy when a GPU is visible."""
    if request.param == "numpy":
        return np
    if not _cupy_usable():
        pytest.skip("CuPy with a visible CUDA device is not available")
    import cupy

    return cupy


def host(a) -> np.ndarray:
    """A NumPy view/copy of a NumPy or CuPy array, for comparisons."""
    if type(a).__module__.startswith("cupy"):
        return a.get()
    return np.asarray(a)


# ------------------------------------------------------------------ graphs
def random_edges(rng, n, m, *, weighted, zero_weights=False, self_loops=False, duplicates=False):
    """Raw arcs ``(src, dst, w)`` with integer-valued weights (exact in float32).

    Weights are 1..9 (0..9 with ``zero_weights``) when ``weighted``, else all 1.
    ``self_loops`` adds some ``u -> u`` arcs, ``duplicates`` repeats some arcs
    with other weights.
    """
    src = rng.integers(0, n, m) if n else np.zeros(0, np.int64)
    dst = rng.integers(0, n, m) if n else np.zeros(0, np.int64)
    if not self_loops:
        keep = src != dst
        src, dst = src[keep], dst[keep]
    else:
        loops = rng.integers(0, n, max(1, m // 10))
        src, dst = np.concatenate([src, loops]), np.concatenate([dst, loops])
    low = 0 if zero_weights else 1
    if weighted:
        w = rng.integers(low, 10, src.size).astype(np.float64)
    else:
        w = np.ones(src.size)
    if duplicates and src.size:
        pick = rng.integers(0, src.size, max(1, src.size // 4))
        extra = rng.integers(low, 10, pick.size).astype(np.float64) if weighted else np.ones(pick.size)
        src, dst, w = np.concatenate([src, src[pick]]), np.concatenate([dst, dst[pick]]), np.concatenate([w, extra])
        perm = rng.permutation(src.size)
        src, dst, w = src[perm], dst[perm], w[perm]
    return src.astype(np.int64), dst.astype(np.int64), w


def random_graph(rng, n, m, *, directed, weighted, zero_weights=False, self_loops=False, duplicates=False):
    """A seeded random :class:`Graph` with integer-valued weights (see :func:`random_edges`)."""
    src, dst, w = random_edges(rng, n, m, weighted=weighted, zero_weights=zero_weights,
                               self_loops=self_loops, duplicates=duplicates)
    return Graph.from_edges(n, src, dst, w if weighted else None, directed=directed, name="random")


def disconnected_graph(rng, sizes, *, directed, weighted, zero_weights=False):
    """Several random blobs with no arc between them (so some distances are inf)."""
    srcs, dsts, ws, offset = [], [], [], 0
    for size in sizes:
        s, d, w = random_edges(rng, size, 3 * size, weighted=True, zero_weights=zero_weights)
        srcs.append(s + offset)
        dsts.append(d + offset)
        ws.append(w if weighted else np.ones(s.size))
        offset += size
    return Graph.from_edges(offset, np.concatenate(srcs), np.concatenate(dsts), np.concatenate(ws),
                            directed=directed, name="disconnected")


def reference_apsp(graph) -> np.ndarray:
    """All-pairs distances from SciPy (Dijkstra on the graph's CSR, explicit zeros kept)."""
    from scipy.sparse.csgraph import shortest_path

    return shortest_path(graph.to_scipy(), method="D", directed=True)


def dense_floyd_warshall(d: np.ndarray) -> np.ndarray:
    """Textbook Floyd-Warshall on a copy of a dense float64 matrix."""
    d = np.array(d, dtype=np.float64)
    for t in range(d.shape[0]):
        np.minimum(d, d[:, t, None] + d[t], out=d)
    return d


def dense_reference(n, src, dst, w, *, directed) -> np.ndarray:
    """APSP from a raw arc list, independent of :class:`Graph`: loops ignored, lightest parallel arc."""
    d = np.full((n, n), np.inf)
    for u, v, x in zip(np.asarray(src).tolist(), np.asarray(dst).tolist(), np.asarray(w).tolist()):
        if u == v:
            continue
        d[u, v] = min(d[u, v], x)
        if not directed:
            d[v, u] = min(d[v, u], x)
    np.fill_diagonal(d, 0.0)
    return dense_floyd_warshall(d)


def share_on_host(comm, pieces, segments, counts, dtype):
    """``fastapsp.peers.share_on_device`` stood in on the host, for MPI tests without GPUs: each rank's
    pieces one after another in one flat array, gathered everywhere; every rank takes its segment of
    each other rank's array (checking it is the count it expects)."""
    flat = np.concatenate([np.asarray(piece, dtype=dtype).ravel() for piece in pieces]) if pieces else \
        np.empty(0, dtype)
    table = comm.allgather((flat, [tuple(map(int, segment)) for segment in segments]))
    got = []
    for o, (theirs, cuts) in enumerate(table):
        start, count = cuts[comm.rank]
        assert o == comm.rank or count == counts[o], (o, count, counts[o])
        got.append(np.empty(0, dtype) if o == comm.rank else theirs[start : start + count].copy())
    return got
