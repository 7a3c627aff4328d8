"""Partition a smaller graph: hanging trees and chains of degree-2 vertices taken out, labels put back.

Road networks have many vertices of degree 1 (dead ends, trees hanging off
the rest) and of degree 2 (points along a road).  Where a tree is cut or a
chain is cut does not change the edge cut a partitioner sees, so a
partitioner run on the graph without them finds as good a split, in less
time, when every kept vertex carries the weight of what it stands for:

1. *Trees*: degree-1 vertices are peeled, round after round (what remains is
   the 2-core).  A peeled vertex whose subtree (itself and what hangs from it)
   is at most ``cap`` vertices is taken out; it will take the label of the
   nearest kept vertex it hangs from.  Larger subtrees keep their top vertices,
   so that no kept vertex weighs more than the partitioner can balance.
2. *Chains*: among the kept vertices, those with two kept neighbours form
   paths between two other kept vertices ``u`` and ``v`` (``u == v`` for a loop
   through one vertex; a cycle with no other vertex keeps its smallest one).
   A chain becomes one edge ``u - v``, parallel ones one edge weighing their
   count (every one of them costs a cut edge when ``u`` and ``v`` part); a
   chain heavier than ``cap`` keeps a vertex each time its running weight
   passes a multiple of ``cap``.
3. *Weights*: a kept vertex weighs itself and its trees, plus half of every
   chain it ends (weights are doubled so that halves stay integers).
4. *Expansion*: a chain whose ends share a label takes it; a chain whose ends
   differ is cut at its middle by weight (any cut of a chain costs one cut
   edge and two boundary vertices; the middle keeps the halves its ends were
   weighed with); a taken-out tree takes the label of its kept vertex.

Every step is array operations over all trees or all chains at once (one loop
round per level of the deepest tree).  ``should_reduce`` is the one rule that
decides where the reduction runs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ._arrays import max_part_size

__all__ = ["REDUCE_FROM", "VERTEX_WEIGHTED", "should_reduce", "reduce_graph", "Reduction", "reduced_labels"]

# Reduce (partition_graph's reduce="auto") when at least this fraction of the vertices with arcs has
# degree 1 or 2: road networks have 0.31-0.89 (roadNY 0.31, roadFLA 0.42, luxembourg_osm 0.89), the
# Delaunay meshes and grids about 0 (only a grid's corners).  Measured at 91647c6 on the
# 2-core development machine, METIS seed 42, median of 3
# (benchmarks/results/partition-reduce/partition-reduce.json):
#   graph           k     seconds whole/reduced   boundary whole/reduced
#   luxembourg_osm  67    0.064 / 0.066           924 / 925
#   roadNY          153   0.185 / 0.186           5,432 / 5,728
#   roadBAY         187   0.215 / 0.216           4,878 / 5,008
#   roadFLA         1045  1.123 / 1.124           19,751 / 19,552
#   roadFLA         256   0.778 / 0.702           7,475 / 7,653
# METIS itself runs 1.5-2x faster on the reduced graph, but the reduction costs about what it saves
# (0.1 s on roadNY, 0.45 s on roadFLA), so partition_graph's default is reduce="never".
REDUCE_FROM = 0.25
# A taken-out subtree or a chain segment holds at most this share of the room the balance leaves a
# component (imbalance * n / k vertices), at least 1: heavier kept vertices cost boundary vertices
# (roadFLA, k = 1,045, 3 seeds: share 0.5 +2.3%, 0.25 +1.2%, 0.1 -0.5% against METIS on the whole graph).
CAP_SHARE = 0.1
# Base partitioners that take vertex and edge weights (partition_graph passes them on).
VERTEX_WEIGHTED = ("metis", "metis-vol")


def should_reduce(partitioner: str, indptr: np.ndarray, *, everywhere: bool = False) -> bool:
    """Whether ``partition_graph`` partitions the reduced graph: for a partitioner of
    ``VERTEX_WEIGHTED``, when at least ``REDUCE_FROM`` of the vertices with arcs have
    degree 1 or 2 (``everywhere``: always).

    Examples
    --------
    >>> import numpy as np
    >>> path = np.array([0, 1, 3, 5, 6])  # 0-1-2-3: every vertex of degree 1 or 2
    >>> should_reduce("metis", path), should_reduce("jet", path)
    (True, False)
    """
    if partitioner not in VERTEX_WEIGHTED:
        return False
    degree = np.diff(np.asarray(indptr))
    with_arcs = np.count_nonzero(degree)
    low = np.count_nonzero((degree == 1) | (degree == 2))
    return everywhere or (with_arcs > 0 and low >= REDUCE_FROM * with_arcs)


@dataclass(frozen=True)
class Reduction:
    """A reduced graph and what its expansion needs.

    Attributes
    ----------
    indptr, indices, eweights, vweights : ndarray
        The reduced graph: symmetric CSR, edge weights (chains and edges
        between the same two vertices), vertex weights (twice the vertices
        each one stands for).
    kept : ndarray of int64
        Original id of every reduced vertex (ascending).
    root : ndarray of int64, shape (n,)
        For a vertex of a taken-out tree, the vertex of the 2-core or of a
        chain whose label it takes; -1 for the others.
    left, right : ndarray of int64
        The two kept ends of every chain segment with at least one vertex.
    run, run_segment, run_own, run_left_weight : ndarray of int64
        Vertices of the segments in order, their segment, their weight (with
        their trees), and twice the weight before them in it plus their own
        (the cut position test).
    run_weight : ndarray of int64
        Weight of every segment's vertices.
    """

    indptr: np.ndarray
    indices: np.ndarray
    eweights: np.ndarray
    vweights: np.ndarray
    kept: np.ndarray
    root: np.ndarray
    left: np.ndarray
    right: np.ndarray
    run: np.ndarray
    run_segment: np.ndarray
    run_own: np.ndarray
    run_left_weight: np.ndarray
    run_weight: np.ndarray

    @property
    def n(self) -> int:
        """Vertex count of the original graph."""
        return self.root.size

    def expand(self, reduced: np.ndarray, bound: int | None = None) -> np.ndarray:
        """Labels of the original vertices from the labels ``reduced`` of the reduced ones.

        With ``bound``, components above ``bound`` vertices hand vertices of
        their cut segments, nearest the cut first, to the components on the
        other side that have room: the cut moves along the segment, the cut
        edges and boundary vertices stay as many.
        """
        labels = np.empty(self.n, dtype=np.int32)
        labels[self.kept] = reduced
        left, right = labels[self.left], labels[self.right]
        segment = self.run_segment
        # The vertex on the middle of a segment goes to the left end on even segments, to the right
        # one on odd segments: always one side would tilt the balance towards the ends that come first.
        middle = self.run_weight[segment]
        on_left = (self.run_left_weight < middle) | ((self.run_left_weight == middle) & (segment % 2 == 0))
        labels[self.run] = np.where(on_left, left[segment], right[segment])
        taken = np.flatnonzero(self.root >= 0)
        labels[taken] = labels[self.root[taken]]
        if bound is not None:
            self._rebalance(labels, left[segment], right[segment], int(bound))
        return labels

    def _rebalance(self, labels, left, right, bound: int, rounds: int = 8) -> None:
        """Move the cuts of segments out of components above ``bound`` (in place; see :meth:`expand`)."""
        k = int(max(labels.max(initial=0), left.max(initial=0), right.max(initial=0))) + 1
        segment = self.run_segment
        cut = np.flatnonzero(left != right)
        if cut.size == 0:
            return
        segment, left, right, run, own_weight = segment[cut], left[cut], right[cut], self.run[cut], self.run_own[cut]
        first = np.searchsorted(segment, segment)  # runs of one segment are consecutive, in order
        local = np.arange(cut.size) - first
        taken = np.flatnonzero(self.root >= 0)
        for _ in range(rounds):
            sizes = np.bincount(labels, minlength=k)
            excess = sizes - bound
            if excess.max() <= 0:
                return
            on_left = labels[run] == left
            count_left = np.bincount(segment, weights=on_left, minlength=segment[-1] + 1).astype(np.int64)[segment]
            rank = np.where(on_left, count_left - 1 - local, local - count_left)  # 0 next to the cut
            giver, taker = np.where(on_left, left, right), np.where(on_left, right, left)
            room = bound - sizes
            offer = np.flatnonzero((excess[giver] > 0) & (room[taker] > 0))
            if offer.size == 0:
                return
            # Per giver, the vertices nearest the cuts until its excess is covered; per taker, no more than its room.
            offer = offer[np.lexsort((segment[offer], rank[offer], giver[offer]))]
            offer = offer[_running_before(giver[offer], own_weight[offer]) < excess[giver[offer]]]
            offer = offer[np.lexsort((segment[offer], rank[offer], taker[offer]))]
            offer = offer[_running_before(taker[offer], own_weight[offer]) + own_weight[offer] <= room[taker[offer]]]
            if offer.size == 0:
                return
            labels[run[offer]] = taker[offer]
            labels[taken] = labels[self.root[taken]]


def _running_before(groups: np.ndarray, values: np.ndarray) -> np.ndarray:
    """For values sorted by group: the sum of the values before each one within its group."""
    total = np.cumsum(values) - values
    starts = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
    return total - np.repeat(total[starts], np.diff(np.r_[starts, groups.size]))


def _ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``concatenate([arange(s, s + c) for s, c in zip(starts, counts)])`` without the loop."""
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    ends = np.cumsum(counts)
    return np.repeat(starts - ends + counts, counts) + np.arange(total)


def _peel(indptr, indices, degree, cap: int):
    """Trees hanging off the graph: ``(removed, root)``.

    Degree-1 vertices are peeled round after round; ``removed`` marks a peeled
    vertex whose subtree has at most ``cap`` vertices, ``root`` (for removed
    vertices) the nearest kept vertex it hangs from.  Of two degree-1 vertices
    joined to each other (the last edge of a tree) the smaller id stays.
    """
    n = degree.size
    left = degree.astype(np.int64)
    parent = np.full(n, -1, dtype=np.int64)
    size = np.ones(n, dtype=np.int64)
    alive = np.ones(n, dtype=bool)
    frontier = np.flatnonzero(left == 1)
    while frontier.size:
        arcs = _ranges(indptr[frontier].astype(np.int64), degree[frontier].astype(np.int64))
        neighbour = indices[arcs]
        neighbour = neighbour[alive[neighbour]].astype(np.int64)  # exactly one per frontier vertex
        stays = (left[neighbour] == 1) & (frontier < neighbour)
        peeled, onto = frontier[~stays], neighbour[~stays]
        alive[peeled] = False
        parent[peeled] = onto
        np.add.at(size, onto, size[peeled])  # a peeled vertex's children were peeled in earlier rounds
        np.subtract.at(left, onto, 1)
        left[peeled] = 0
        touched = np.unique(onto)
        frontier = touched[left[touched] == 1]
    removed = (parent >= 0) & (size <= cap)
    root = np.full(n, -1, dtype=np.int64)
    taken = np.flatnonzero(removed)
    up = parent[taken]
    hop = np.arange(n, dtype=np.int64)
    while True:  # pointer jumping to the nearest kept ancestor (subtree sizes grow upwards)
        hop[taken] = up
        pending = removed[up]
        if not pending.any():
            break
        up = np.where(pending, hop[up], up)
    root[taken] = up
    return removed, root


def reduce_graph(indptr: np.ndarray, indices: np.ndarray, cap: int) -> Reduction:
    """The reduced graph of the symmetric CSR structure ``(indptr, indices)`` (no loops, no duplicates).

    ``cap`` (at least 1) bounds the vertices a taken-out subtree or a chain
    segment holds.  See the module's description.
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import breadth_first_order, connected_components

    indptr = np.asarray(indptr, dtype=np.int64)
    indices = np.asarray(indices, dtype=np.int64)
    n = indptr.size - 1
    degree = np.diff(indptr)
    removed, root = _peel(indptr, indices, degree, cap)
    kept = ~removed
    weight = np.bincount(np.where(removed, root, np.arange(n)), minlength=n)  # itself and its trees
    src = np.repeat(np.arange(n, dtype=np.int64), degree)
    both = kept[src] & kept[indices]
    kept_degree = np.bincount(src[both], minlength=n)
    interior = kept & (kept_degree == 2)
    src, dst = src[both], indices[both]
    while True:  # a cycle of interior vertices alone keeps its smallest one, then once more
        ids = np.flatnonzero(interior)
        local = np.full(n, -1, dtype=np.int64)
        local[ids] = np.arange(ids.size)
        pair = dst[interior[src]].reshape(-1, 2)  # the two kept neighbours, in CSR order
        inner = interior[pair]
        end = ~inner.all(axis=1)
        rows = np.repeat(np.arange(ids.size), 2)[inner.ravel()]
        cols = local[pair[inner]]
        chain_graph = coo_matrix((np.ones(rows.size, dtype=np.int8), (rows, cols)),
                                 shape=(ids.size + 1, ids.size + 1)).tocsr()
        count, chain = connected_components(chain_graph[:ids.size, :ids.size], directed=False)
        has_end = np.bincount(chain[end], minlength=count) > 0
        if has_end.all():
            break
        _, first = np.unique(chain, return_index=True)
        interior[ids[first[~has_end[chain[first]]]]] = False
    # One end per chain (its smallest), joined to an extra vertex: a breadth-first search from it
    # meets every chain's vertices in their order along the chain.
    ends = np.flatnonzero(end)
    _, first_end = np.unique(chain[ends], return_index=True)
    starts = ends[first_end]
    rows = np.concatenate([rows, np.full(starts.size, ids.size), starts])
    cols = np.concatenate([cols, starts, np.full(starts.size, ids.size)])
    chain_graph = coo_matrix((np.ones(rows.size, dtype=np.int8), (rows, cols)),
                             shape=(ids.size + 1, ids.size + 1)).tocsr()
    order = breadth_first_order(chain_graph, ids.size, directed=False, return_predecessors=False)[1:]
    order = order[np.argsort(chain[order], kind="stable")]
    length = np.bincount(chain, minlength=count)
    first = np.cumsum(length) - length
    last = first + length - 1
    head, tail = order[first], order[last]
    # The outer ends: the neighbour of the first vertex that is not the second (of a one-vertex
    # chain, its first neighbour), the neighbour of the last that is not the one before it.
    second = np.where(length > 1, ids[order[np.minimum(first + 1, order.size - 1)]], -1)
    before = np.where(length > 1, ids[order[np.maximum(last - 1, 0)]], -1)
    a = np.where(pair[head, 0] == second, pair[head, 1], pair[head, 0])
    b = np.where(length > 1, np.where(pair[tail, 0] == before, pair[tail, 1], pair[tail, 0]), pair[tail, 1])
    # The sequence a, chain..., b of every chain, with a kept vertex wherever the running weight
    # passes a multiple of cap.
    chain_weight = weight[ids[order]]
    running = np.cumsum(chain_weight)
    running -= np.repeat(running[first] - chain_weight[first], length)
    promoted = running // cap != (running - chain_weight) // cap
    offset = first + 2 * np.arange(count)
    total = order.size + 2 * count
    vertex = np.empty(total, dtype=np.int64)
    marks = np.zeros(total, dtype=bool)
    seq_weight = np.zeros(total, dtype=np.int64)
    position = np.repeat(offset + 1 - first, length) + np.arange(order.size)
    vertex[offset], vertex[offset + length + 1] = a, b
    marks[offset] = marks[offset + length + 1] = True
    vertex[position], marks[position], seq_weight[position] = ids[order], promoted, chain_weight
    anchors = np.flatnonzero(marks)
    cumulative = np.cumsum(seq_weight)
    # Consecutive anchors of one chain bound a segment (the last anchor of a chain and the first
    # of the next do not: a chain's b and the next chain's a are both anchors with no run between).
    owner = np.repeat(np.arange(count), length + 2)
    same = owner[anchors[:-1]] == owner[anchors[1:]]
    lo, hi = anchors[:-1][same], anchors[1:][same]
    left, right = vertex[lo], vertex[hi]
    run_weight = cumulative[hi - 1] - cumulative[lo]
    reduced = (kept & ~interior)
    reduced[vertex[marks]] = True
    reduced_ids = np.flatnonzero(reduced)
    rid = np.full(n, -1, dtype=np.int64)
    rid[reduced_ids] = np.arange(reduced_ids.size)
    vweights = 2 * weight[reduced_ids]
    vweights += np.bincount(rid[left], weights=run_weight, minlength=reduced_ids.size).astype(np.int64)
    vweights += np.bincount(rid[right], weights=run_weight, minlength=reduced_ids.size).astype(np.int64)
    direct = ~interior[src] & ~interior[dst]
    link = left != right
    rows = np.concatenate([rid[src[direct]], rid[left[link]], rid[right[link]]])
    cols = np.concatenate([rid[dst[direct]], rid[right[link]], rid[left[link]]])
    matrix = coo_matrix((np.ones(rows.size, dtype=np.int64), (rows, cols)),
                        shape=(reduced_ids.size, reduced_ids.size)).tocsr()
    matrix.sum_duplicates()
    matrix.sort_indices()
    # The runs: every non-anchor position of the sequence, with its segment and the cut test.
    runs = np.flatnonzero(~marks)
    segment_of_anchor = np.cumsum(same) - 1  # anchors[i] starts segment segment_of_anchor[i] when same[i]
    run_segment = segment_of_anchor[np.searchsorted(anchors, runs) - 1]
    before_run = cumulative[runs] - seq_weight[runs] - cumulative[lo[run_segment]]
    return Reduction(matrix.indptr.astype(np.int64), matrix.indices.astype(np.int64), matrix.data.astype(np.int64),
                     vweights, reduced_ids, root, left, right, vertex[runs], run_segment, seq_weight[runs],
                     2 * before_run + seq_weight[runs], run_weight)


def reduced_labels(indptr, indices, k: int, labels_of, *, imbalance: float, details: dict) -> np.ndarray:
    """Labels of ``k`` components from ``labels_of`` run on the reduced graph, expanded.

    ``labels_of(indptr, indices, k, imbalance=..., vweights=..., eweights=...)``
    partitions the reduced graph.  Falls back to ``labels_of`` on the whole
    graph when the reduced graph has fewer than ``k`` vertices or its
    partition leaves a component empty.  ``details`` receives
    ``reduced_vertices``, ``reduce_seconds`` (reduction and expansion) and,
    after a fallback, ``reduce_fallback``.
    """
    start = time.perf_counter()
    n = np.asarray(indptr).size - 1
    cap = max(1, int(CAP_SHARE * imbalance * n / k))
    reduction = reduce_graph(indptr, indices, cap)
    details["reduced_vertices"] = int(reduction.kept.size)
    spent = time.perf_counter() - start
    if reduction.kept.size >= k:
        reduced = labels_of(reduction.indptr, reduction.indices, k, imbalance=imbalance,
                            vweights=reduction.vweights, eweights=reduction.eweights)
        start = time.perf_counter()
        labels = reduction.expand(np.asarray(reduced, dtype=np.int32), max_part_size(n, k, imbalance))
        spent += time.perf_counter() - start
        details["reduce_seconds"] = spent
        sizes = np.bincount(labels, minlength=k)
        if np.count_nonzero(sizes) == k and sizes.max() <= max_part_size(n, k, imbalance):
            return labels
        details["reduce_fallback"] = "empty component" if np.count_nonzero(sizes) < k else "above the balance bound"
    else:
        details["reduce_seconds"] = spent
        details["reduce_fallback"] = "fewer reduced vertices than k"
    return np.asarray(labels_of(indptr, indices, k, imbalance=imbalance))
