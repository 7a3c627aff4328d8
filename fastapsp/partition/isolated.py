"""Vertices that no arc touches get components of their own, and the partitioner sees only the rest.

An isolated vertex reaches nothing and nothing reaches it.  Placed by a
partitioner among connected vertices, it sits in a component that has
boundary vertices, and its row is computed through that boundary over all
``n`` columns although every distance in it is ``inf``; the partitioner
itself also pays for it (METIS spends far longer on a graph of mostly
isolated vertices than on its vertices that have arcs alone: docs/kernels.md).
Set apart, isolated vertices fill components that no arc joins to another:
they need no boundary rows and no min-plus, and when nothing needs whole rows
(``--stats``) only their own columns are computed.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["isolated_split", "balanced_split", "partition_apart"]


def isolated_split(n: int, isolated: int, k: int) -> tuple[int, int]:
    """``(k_rest, k_isolated)``: the components of the vertices with arcs and of the ``isolated`` ones.

    The isolated vertices get their share of the ``k`` components (rounded;
    none when they would not fill half a component, and then the partitioner
    places them as any vertex), every other vertex at least one component
    and at most one component per vertex.

    Examples
    --------
    >>> isolated_split(1000, 500, 8), isolated_split(1000, 10, 8), isolated_split(1000, 1000, 8)
    ((4, 4), (8, 0), (0, 8))
    """
    rest = n - isolated
    k_isolated = int(min(isolated, round(k * isolated / n))) if n else 0
    k_rest = k - k_isolated
    if rest and k_rest == 0:
        k_rest, k_isolated = 1, k - 1
    if k_rest > rest:
        k_rest, k_isolated = rest, k - rest
    return k_rest, k_isolated


def balanced_split(n: int, isolated: int, k: int, imbalance: float) -> tuple[int, int]:
    """``(k_rest, k_isolated)`` as :func:`partition_apart` makes them: :func:`isolated_split`, with
    components moved to the vertices with arcs while their partitioner would have less than half the room
    ``imbalance`` gives, and no components of their own (``k_isolated = 0``) where no split keeps every
    component within the bound.  The cost model weighs k by the same split.

    Examples
    --------
    >>> balanced_split(1000, 500, 8, 0.03), balanced_split(700, 634, 7, 0.03)
    ((4, 4), (7, 0))
    """
    k_rest, k_isolated = isolated_split(n, isolated, k)
    rest_count = n - isolated
    while k_isolated > 1:  # a partitioner needs some room; one component of the rest needs none
        room = _rest_imbalance(n, k, imbalance, rest_count, k_rest)
        if room >= 0 and (k_rest == 1 or room >= imbalance / 2):
            break
        k_rest, k_isolated = k_rest + 1, k_isolated - 1
    bound = math.ceil((1 + imbalance) * n / k - 1e-9)
    if k_isolated and (_rest_imbalance(n, k, imbalance, rest_count, k_rest) < 0
                       or -(-isolated // k_isolated) > bound):
        return k, 0  # no split keeps the balance: the partitioner places them as any vertex
    return k_rest, k_isolated


def _rest_imbalance(n: int, k: int, imbalance: float, rest: int, k_rest: int) -> float:
    """The imbalance the vertices with arcs may take in their ``k_rest`` components so that no component is
    larger than ``imbalance`` allows for the whole graph's ``k`` (the split's rounding changes the average)."""
    bound = math.ceil((1 + imbalance) * n / k - 1e-9)
    return bound * k_rest / rest - 1 if rest else imbalance


def partition_apart(indptr, indices, k: int, labels_of, *, imbalance: float) -> tuple[np.ndarray, dict]:
    """Labels of ``k`` components for the undirected adjacency ``(indptr, indices)``, isolated vertices apart.

    ``labels_of(indptr, indices, k, imbalance=...)`` partitions a graph (the
    vertices with arcs, renumbered in order).  The isolated vertices fill the
    last components in the order of their ids, as evenly as the count allows
    (:func:`isolated_split` says how many; components move to the vertices
    with arcs while the rounding would leave their partitioner less than half
    the room ``imbalance`` gives).  No component is larger than
    ``imbalance`` allows for ``k`` components of the whole graph.  Returns
    the labels and the details for the partition's record (empty when
    nothing was set apart).
    """
    indptr = np.asarray(indptr)
    n = indptr.size - 1
    alone = np.diff(indptr) == 0
    isolated = int(alone.sum())
    rest_count = n - isolated
    k_rest, k_isolated = balanced_split(n, isolated, k, imbalance)
    if k_isolated == 0:
        return np.asarray(labels_of(indptr, indices, k, imbalance=imbalance)), {}
    labels = np.empty(n, dtype=np.int32)
    rest = np.flatnonzero(~alone)
    if k_rest:
        renumber = np.cumsum(~alone) - 1  # a vertex with arcs -> its id among them
        sub_indptr = np.concatenate([[0], np.cumsum(np.diff(indptr)[rest])]).astype(indptr.dtype)
        sub_indices = renumber[np.asarray(indices)].astype(np.asarray(indices).dtype)
        rest_imbalance = min(imbalance, _rest_imbalance(n, k, imbalance, rest_count, k_rest))
        labels[rest] = 0 if k_rest == 1 else np.asarray(labels_of(sub_indptr, sub_indices, k_rest,
                                                                  imbalance=rest_imbalance))
    labels[alone] = k_rest + (np.arange(isolated, dtype=np.int64) * k_isolated) // isolated
    return labels, {"isolated_vertices": isolated, "isolated_components": k_isolated}
