"""Which float type holds the distances of a graph honestly.

float32 holds every whole number up to 2**24 = 16,777,216 exactly, float64 up
to 2**53; beyond that, and for weights that are not whole numbers, sums are
rounded.  A shortest path is simple, so it uses at most n - 1 arcs, each at
most once: no finite distance exceeds ``min((n - 1) * largest weight, sum of
all weights)`` (:func:`distance_bound`, one pass over the weights).  That bound
is loose: a 512 x 512 grid with travel times 1..100 has a weight sum of 26
million but no distance above 48,684 (twice the farthest from one vertex).  Where it alone would make whole-number
weights take float64, :func:`path_bound` tightens it with one or two
single-source searches, so such graphs keep float32 (about twice as fast on
the GPU, half the memory) wherever their distances allow it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["DTYPES", "DtypeChoice", "choose_dtype", "distance_bound", "path_bound"]

DTYPES = ("float32", "float64")
_EXACT = {"float32": 2**24, "float64": 2**53}


@dataclass(frozen=True)
class DtypeChoice:
    """The dtype to use, why, and a warning when the answer will not be exact."""

    dtype: str
    reason: str
    warning: str | None
    bound: float


def distance_bound(graph) -> float:
    """An upper bound on every finite distance of ``graph`` (float64; inf if even that overflows)."""
    w = graph.weights
    if w.size == 0 or graph.n < 2:
        return 0.0
    with np.errstate(over="ignore"):
        total = float(np.sum(w, dtype=np.float64))
        longest = float(graph.n - 1) * float(w.max())
    return min(total, longest)


def path_bound(graph, enough: float = 0.0) -> float:
    """An upper bound on every finite distance from a few single-source searches (never above
    :func:`distance_bound`).

    Undirected: twice the largest distance from one root per connected
    component, d(u, v) <= d(u, r) + d(r, v) (one search from a super root with
    a zero-weight arc to each component's root).  Directed and strongly
    connected: the largest distance to a root plus the largest from it.
    Otherwise :func:`distance_bound`.  The searches are breadth-first first,
    each hop counted as the heaviest arc; Dijkstra follows (weighted graphs)
    unless that bound is at most ``enough`` already, and gives up (the
    breadth-first bound stands) where a distance from the root passes what
    could still bound the distances by ``enough``.  Parallel arcs count with
    their total weight, which can only raise the bound.

    Examples
    --------
    >>> from fastapsp.graph import Graph
    >>> star = Graph.from_edges(5, [0, 0, 0, 0], [1, 2, 3, 4], [100.0] * 4, directed=False)
    >>> distance_bound(star), path_bound(star)  # the longest shortest path: leaf, centre, leaf
    (400.0, 200.0)
    """
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components, dijkstra, shortest_path

    cheap = distance_bound(graph)
    n = graph.n
    if n < 2 or graph.m == 0:
        return cheap
    src, dst, w = graph.arcs()
    w = np.asarray(w, dtype=np.float64)
    heaviest = float(np.max(w))
    csr = sp.csr_matrix((w, (src, dst)), shape=(n, n))
    if not graph.directed:
        _, labels = connected_components(csr, directed=False)
        roots = np.unique(labels, return_index=True)[1]
        # The super root n reaches every component's root by a zero-weight arc (one hop, taken off).
        grown = sp.csr_matrix((np.concatenate([w, np.zeros(roots.size)]),
                               (np.concatenate([src, np.full(roots.size, n)]), np.concatenate([dst, roots]))),
                              shape=(n + 1, n + 1))
        searches = [(grown, n, 1.0)]
    else:
        count, _ = connected_components(csr, directed=True, connection="strong")
        if count != 1:
            return cheap
        searches = [(csr, 0, 0.0), (csr.T.tocsr(), 0, 0.0)]
    twice = 2.0 if not graph.directed else 1.0
    reached = [shortest_path(m, unweighted=True, indices=root) for m, root, _ in searches]
    hops = sum(float(np.max(d[np.isfinite(d)])) - extra for d, (_, _, extra) in zip(reached, searches))
    bound = min(cheap, hops * heaviest * twice)
    if bound <= enough or graph.unit_weights:
        return bound
    # Dijkstra stops at what could still prove ``enough``: a vertex found beyond it means no proof,
    # and on a graph whose distances are far larger the search ends early.
    limit = enough / twice if enough > 0 else np.inf
    lengths = 0.0
    for d_hops, (m, root, _) in zip(reached, searches):
        d = dijkstra(m, indices=root, limit=limit)
        if np.any(np.isfinite(d_hops) & ~np.isfinite(d)):
            return bound
        lengths += float(np.max(d[np.isfinite(d)]))
    return min(bound, lengths * twice)


def choose_dtype(graph, requested: str | None = None) -> DtypeChoice:
    """Pick the distance dtype for ``graph``.

    Parameters
    ----------
    graph : Graph
        The graph to solve.
    requested : {None, "auto", "float32", "float64"}
        What the user asked for; ``None`` and ``"auto"`` let the graph decide:
        float32 when it is exact for whole-number weights (every distance at
        most 2**24) or when the weights are not whole numbers (float32 then
        rounds, as float64 would, only coarser: the reason says so), float64
        when whole-number distances could pass 2**24 or float32's range.

    Returns
    -------
    DtypeChoice
        ``warning`` is set when the chosen dtype may give inexact or
        overflowing distances (an explicit float32 that is not exact, or
        distances that could pass 2**53 or float64's range).

    Examples
    --------
    >>> from fastapsp.graph import Graph
    >>> g = Graph.from_edges(3, [0, 1], [1, 2], [16777216.0, 1.0], directed=True)
    >>> choose_dtype(g).dtype
    'float64'
    >>> choose_dtype(g, "float32").warning is not None
    True
    """
    if requested not in (None, "auto", *DTYPES):
        raise ValueError(f"dtype: {requested!r} is not one of auto, {', '.join(DTYPES)}")
    bound = distance_bound(graph)
    whole = graph.integer_weights  # cached by the graph; its other stages ask too
    if whole and np.isfinite(bound) and bound > _EXACT["float32"]:  # loose: the searches may prove float32 exact
        bound = path_bound(graph, enough=_EXACT["float32"])
    shown = f"{bound:.0f}" if whole and bound < 1e15 else f"{bound:.6g}"
    if not np.isfinite(bound) or bound > np.finfo(np.float64).max:
        problem = "distances could exceed the largest float64 and come out as inf (unreachable)"
        return DtypeChoice("float64", problem, f"{graph.name}: {problem}", bound)
    fits32 = bound <= float(np.finfo(np.float32).max)
    if requested in (None, "auto"):
        if whole and bound <= _EXACT["float32"]:
            return DtypeChoice("float32", f"whole-number weights, distances at most {shown} <= 2**24: "
                                          "float32 is exact", None, bound)
        if whole or not fits32:
            why = (f"whole-number weights with distances up to {shown} > 2**24, which float32 would round"
                   if fits32 else f"distances up to {shown} would overflow float32")
            reason = f"float64 chosen: {why}"
            if whole and bound >= _EXACT["float64"]:  # the float64 bound itself may have rounded down to 2**53
                reason += "; float64 is exact only up to 2**53, so the largest distances may be rounded"
                return DtypeChoice("float64", reason, f"{graph.name}: {reason}", bound)
            return DtypeChoice("float64", reason, None, bound)
        return DtypeChoice("float32", "weights are not whole numbers: float32 rounds every distance to "
                                      "about 7 significant digits (use --dtype float64 for about 16)", None, bound)
    dtype = requested
    exact_limit = _EXACT[dtype]
    if dtype == "float32" and not fits32:
        problem = f"distances up to {shown} overflow float32 and come out as inf; use --dtype float64"
        return DtypeChoice(dtype, f"asked for; {problem}", f"{graph.name}: {problem}", bound)
    if whole and (bound > exact_limit if dtype == "float32" else bound >= exact_limit):
        exp = 24 if dtype == "float32" else 53
        hint = "; use --dtype float64" if dtype == "float32" else ""
        problem = (f"whole-number distances up to {shown} pass 2**{exp}, so {dtype} rounds some of them"
                   f"{hint}")
        return DtypeChoice(dtype, f"asked for; {problem}", f"{graph.name}: {problem}", bound)
    if whole:
        return DtypeChoice(dtype, f"asked for; exact (whole-number distances at most {shown})", None, bound)
    return DtypeChoice(dtype, f"asked for; weights are not whole numbers, so {dtype} rounds distances", None,
                       bound)
