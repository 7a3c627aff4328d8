"""Which float type holds the distances of a graph honestly.

float32 holds every whole number up to 2**24 = 16,777,216 exactly, float64 up
to 2**53; beyond that, and for weights that are not whole numbers, sums are
rounded.  A shortest path is simple, so it uses at most n - 1 arcs, each at
most once: no finite distance exceeds ``min((n - 1) * largest weight, sum of
all weights)``.  That bound, computed in one pass over the weights, decides.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["DTYPES", "DtypeChoice", "choose_dtype", "distance_bound"]

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
    w = graph.weights
    whole = bool(np.all(np.floor(w) == w))
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
