"""Refinement that moves vertices to cut the number of boundary vertices.

FastAPSP's cost follows the boundary vertices (SSSP sources and min-plus
width), not the edge cut that partitioners minimise.  This refinement starts
from any partition and moves single vertices to a neighbouring part when the
move removes boundary vertices, never letting a part grow past
``ceil((1 + imbalance) * n / k)`` vertices.

The code is written once for NumPy and CuPy (``xp`` is taken from the
arrays) with sorts, cumulative sums and ``bincount`` only, so the same
rounds run on the host in CI and on the GPU.

One round
---------
1. For every vertex ``u``: ``foreign[u]``, its arcs to other parts (``u`` is a
   boundary vertex when it is > 0).
2. For every vertex ``v`` (in part ``a``) and neighbouring part ``b``: the gain
   of moving ``v`` to ``b``, the boundary vertices it removes::

       [every neighbour of v is in b]                      v stops being boundary
     + #{u in N(v) in b : foreign[u] == 1}                 v was u's one foreign arc
     - #{u in N(v) in a : foreign[u] == 0}                 u becomes boundary

   (exact for a symmetric structure without duplicate arcs).
3. Each vertex keeps its best move (largest gain, then smallest part); moves
   with a positive gain whose target part is below the size bound are
   candidates.  So are moves of gain 0 (of vertices not moved in the round
   before), until ``patience`` rounds in a row have not lowered the count:
   they shift a boundary without cost and often open moves with a gain.
4. Moves must not interact: the gain of ``v`` depends on the labels within two
   hops of ``v``, so the moved vertices form an independent set of the
   square of the graph.  A candidate moves when its priority (gain, then a
   seeded hash of the vertex) is the largest among the candidates within two
   hops.  With no two movers within two hops, the gains simply add up.
5. Each target part accepts its highest-priority movers up to the size bound.
6. The boundary count is recomputed; a round that would raise it is undone
   and the refinement stops (this cannot happen by step 4, the check guards
   the guarantee).  So the count never rises, round by round.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["refine_boundary", "boundary_count", "max_part_size"]

DEFAULT_MAX_ROUNDS = 500
DEFAULT_PATIENCE = 8


def max_part_size(n: int, k: int, imbalance: float) -> int:
    """The balance bound, ``ceil((1 + imbalance) * n / k)`` vertices per part."""
    # The small tolerance keeps e.g. 1.03 * 100 / 1 = 103.00000000000001 at 103.
    return int(math.ceil((1.0 + imbalance) * n / k - 1e-9))


def _array_module(a):
    if type(a).__module__.startswith("cupy"):
        import cupy

        return cupy
    return np


def _stable_argsort(xp, a):
    """Stable argsort on NumPy and CuPy (CuPy sorts are always stable)."""
    if xp is np:
        return np.argsort(a, kind="stable")
    return xp.argsort(a)


def _arc_rows(xp, indptr, m: int):
    """Tail vertex of every arc of a CSR structure."""
    return (xp.searchsorted(indptr, xp.arange(m, dtype=indptr.dtype), side="right") - 1).astype(xp.int64)


def _count(xp, values, length: int):
    """``bincount`` with exactly ``length`` int64 bins, also for an empty ``values``.

    (CuPy's ``bincount`` takes the maximum of its input, which fails when it is empty.)
    """
    if values.shape[0] == 0:
        return xp.zeros(length, dtype=xp.int64)
    return xp.bincount(values, minlength=length).astype(xp.int64)


def _foreign_arcs(xp, rows, indices, labels, n: int):
    """Number of arcs of every vertex that lead into another part."""
    cut = labels[rows] != labels[indices]
    return _count(xp, rows[cut], n)


def boundary_count(indptr, indices, labels) -> int:
    """Vertices with an arc to a vertex of another part, for a symmetric CSR structure.

    Examples
    --------
    >>> import numpy as np
    >>> indptr = np.array([0, 1, 3, 5, 6]); indices = np.array([1, 0, 2, 1, 3, 2])  # path 0-1-2-3
    >>> boundary_count(indptr, indices, np.array([0, 0, 1, 1]))
    2
    """
    xp = _array_module(indptr)
    n = int(indptr.shape[0]) - 1
    rows = _arc_rows(xp, indptr, int(indices.shape[0]))
    return int(xp.count_nonzero(_foreign_arcs(xp, rows, indices, labels, n)))


def _hash32(xp, vertices, salt: int):
    """A seeded bijection of 32-bit vertex ids (xorshift-multiply), identical on NumPy and CuPy."""
    h = vertices.astype(xp.uint32) ^ xp.uint32(salt & 0xFFFFFFFF)
    h = h ^ (h >> xp.uint32(16))
    h = h * xp.uint32(0x7FEB352D)
    h = h ^ (h >> xp.uint32(15))
    h = h * xp.uint32(0x846CA68B)
    h = h ^ (h >> xp.uint32(16))
    return h


def _closed_neighbourhood_max(xp, indptr, rows, indices, values):
    """For every vertex, the largest of ``values`` over itself and its neighbours.

    ``values`` must be non-negative int64 below ``n``; the per-row maximum
    comes from one sort of ``row * n + value`` (rows stay where the CSR put them).
    """
    n = values.shape[0]
    out = values.copy()
    if indices.shape[0] == 0:
        return out
    keys = xp.sort(rows * n + values[indices])
    degree = indptr[1:] - indptr[:-1]
    has = degree > 0
    last = keys[indptr[1:][has] - 1] - xp.arange(n, dtype=xp.int64)[has] * n
    out[has] = xp.maximum(out[has], last)
    return out


def _best_moves(xp, rows, indices, labels, foreign, degree, n: int, k: int):
    """Best move of every vertex with a foreign arc: (vertex, target part, gain), one row per vertex."""
    same = labels[rows] == labels[indices]
    interior = foreign == 0
    # Interior neighbours in v's own part become boundary vertices when v leaves.
    lost = _count(xp, rows[same & interior[indices]], n)
    cut = ~same
    v = rows[cut]
    u = indices[cut]
    if v.shape[0] == 0:
        empty = xp.zeros(0, dtype=xp.int64)
        return empty, empty, empty
    key = v * k + labels[u].astype(xp.int64)
    order = _stable_argsort(xp, key)
    key = key[order]
    single = (foreign[u] == 1)[order]
    start = xp.ones(key.shape[0], dtype=bool)
    start[1:] = key[1:] != key[:-1]
    group = xp.cumsum(start) - 1
    groups = int(group[-1]) + 1
    arcs_to_b = _count(xp, group, groups)
    freed = _count(xp, group[single], groups)
    gkey = key[start]
    gv = gkey // k
    gb = gkey - gv * k
    gain = (arcs_to_b == degree[gv]).astype(xp.int64) + freed - lost[gv]
    # Per vertex: largest gain, then smallest part (groups come sorted by vertex, then part).
    order = _stable_argsort(xp, -gain)
    order = order[_stable_argsort(xp, gv[order])]
    gv, gb, gain = gv[order], gb[order], gain[order]
    first = xp.ones(gv.shape[0], dtype=bool)
    first[1:] = gv[1:] != gv[:-1]
    return gv[first], gb[first], gain[first]


def refine_boundary(indptr, indices, labels, k: int, *, imbalance: float, seed: int = 0,
                    max_rounds: int = DEFAULT_MAX_ROUNDS, patience: int = DEFAULT_PATIENCE,
                    stats: dict | None = None):
    """Move vertices between parts to lower the number of boundary vertices.

    Parameters
    ----------
    indptr, indices : ndarray (NumPy or CuPy)
        Symmetric CSR structure without self loops or duplicate arcs (as
        :meth:`fastapsp.graph.Graph.undirected_adjacency` gives).
    labels : ndarray of int, shape (n,)
        Starting partition, labels in ``0..k-1``; on the same array module as
        ``indptr``.  It is not modified.
    k : int
        Number of parts.
    imbalance : float
        Parts may hold up to ``ceil((1 + imbalance) * n / k)`` vertices; a part
        that starts above that only ever loses vertices.
    seed : int
        Seed of the tie-breaking priorities; the result is a function of the
        inputs and the seed (the same on NumPy and CuPy).
    max_rounds : int
        Stop after this many rounds even if moves with a gain remain.
    patience : int
        Rounds in a row that may move vertices without a gain (moves of gain
        0, which let a boundary drift until moves with a gain appear; a vertex
        moved in one round does not move in the next).  0: positive gains only.
    stats : dict, optional
        Filled with ``boundary_before``, ``boundary_after``, ``rounds`` and ``moves``.

    Returns
    -------
    ndarray of int32, shape (n,)
        The refined labels, on the array module of the inputs.  Their boundary
        count is never above that of ``labels``, and no part grows beyond the
        bound (or beyond its starting size, when it started above it).

    Raises
    ------
    ValueError
        When ``labels`` has the wrong shape or labels outside ``0..k-1``, or
        ``imbalance`` is negative.

    Examples
    --------
    >>> import numpy as np
    >>> indptr = np.array([0, 1, 3, 5, 6]); indices = np.array([1, 0, 2, 1, 3, 2])  # path 0-1-2-3
    >>> labels = refine_boundary(indptr, indices, np.array([0, 1, 0, 1]), 2, imbalance=0.5)
    >>> boundary_count(indptr, indices, np.array([0, 1, 0, 1])), boundary_count(indptr, indices, labels)
    (4, 2)
    """
    xp = _array_module(indptr)
    n = int(indptr.shape[0]) - 1
    m = int(indices.shape[0])
    k = int(k)
    if labels.shape != (n,):
        raise ValueError(f"labels: expected shape ({n},), found {labels.shape}")
    if imbalance < 0:
        raise ValueError(f"imbalance: {imbalance} is negative")
    labels = xp.asarray(labels).astype(xp.int32)
    if n and (int(labels.min()) < 0 or int(labels.max()) >= k):
        raise ValueError(f"labels: must lie in 0..{k - 1}, found {int(labels.min())}..{int(labels.max())}")
    if n > 0xFFFFFFFF:
        raise ValueError(f"indptr: {n} vertices, the refinement handles up to 2**32 - 1")
    rows = _arc_rows(xp, indptr, m)
    indices = indices.astype(xp.int64)
    degree = (indptr[1:] - indptr[:-1]).astype(xp.int64)
    bound = max_part_size(n, k, imbalance)
    sizes = _count(xp, labels, k)
    foreign = _foreign_arcs(xp, rows, indices, labels, n)
    count = int(xp.count_nonzero(foreign))
    before, rounds, moved, stall = count, 0, 0, 0
    moved_last = xp.zeros(n, dtype=bool)
    # Priorities: gain * 2**32 + hash fit an int64 for any degree below 2**30.
    for rounds in range(1, max_rounds + 1):
        v, b, gain = _best_moves(xp, rows, indices, labels, foreign, degree, n, k)
        keep = (sizes[b] < bound) & ((gain > 0) | ((gain == 0) & (stall < patience) & ~moved_last[v]))
        v, b, gain = v[keep], b[keep], gain[keep]
        if v.shape[0] == 0:
            rounds -= 1
            break
        priority = gain * (1 << 32) + _hash32(xp, v, seed * 0x9E3779B1 + rounds).astype(xp.int64)
        # Dense ranks 1..c of the candidates (0: not a candidate), for the two-hop maximum.
        rank = xp.zeros(n, dtype=xp.int64)
        rank[v[_stable_argsort(xp, priority)]] = xp.arange(1, v.shape[0] + 1, dtype=xp.int64)
        reach = _closed_neighbourhood_max(xp, indptr, rows, indices, rank)
        reach = _closed_neighbourhood_max(xp, indptr, rows, indices, reach)
        winner = reach[v] == rank[v]
        v, b, vrank = v[winner], b[winner], rank[v[winner]]
        # Each target part takes its highest-priority movers while room is left.
        order = _stable_argsort(xp, -vrank)
        order = order[_stable_argsort(xp, b[order])]
        v, b = v[order], b[order]
        place = xp.arange(v.shape[0], dtype=xp.int64)
        first = xp.searchsorted(b, b, side="left")
        fits = (place - first) < (bound - sizes[b])
        v, b = v[fits], b[fits]
        if v.shape[0] == 0:
            rounds -= 1
            break
        new_labels = labels.copy()
        new_labels[v] = b.astype(xp.int32)
        new_foreign = _foreign_arcs(xp, rows, indices, new_labels, n)
        new_count = int(xp.count_nonzero(new_foreign))
        if new_count > count:  # cannot happen for independent moves; keep the guarantee anyway
            rounds -= 1
            break
        stall = stall + 1 if new_count == count else 0
        moved_last = xp.zeros(n, dtype=bool)
        moved_last[v] = True
        sizes = sizes - _count(xp, labels[v], k) + _count(xp, b, k)
        labels, foreign, count = new_labels, new_foreign, new_count
        moved += int(v.shape[0])
    if stats is not None:
        stats.update(boundary_before=before, boundary_after=count, rounds=rounds, moves=moved)
    return labels
