"""Refinement that moves vertices between parts to cut the number of boundary vertices.

FastAPSP's cost follows the boundary vertices (SSSP sources and min-plus
width), not the edge cut that partitioners minimise.  A vertex ``v`` is a
boundary vertex exactly when its closed neighbourhood ``N[v]`` spans two
parts, so the count is the *cut-net* objective of the hypergraph whose nets
are the closed neighbourhoods.  The refinement has two stages, each of which
never raises the count, and no part grows past ``ceil((1 + imbalance) * n / k)``
vertices:

1. **Pairwise minimum cuts** (on the host, NumPy and SciPy's maximum flow,
   also for CuPy inputs).  For every pair of adjacent parts, a corridor of
   vertices on both sides of their border may change sides and the exact
   minimum of boundary vertices over all labellings of the corridor is found
   as a minimum cut of Lawler's network of the nets (the section "pairwise
   flows" below says how); of the minimum cuts, the most balanced one that
   keeps both parts within the bound is taken.  A cut may move many vertices
   at once and swap vertices between two full parts, which single moves
   cannot.  Passes over all pairs repeat while they remove boundary vertices.
   The cuts of a pass run in parallel (section "parallel cuts" below) with
   the labels of the sequential pass, whatever the number of workers.
2. **Cluster moves**: single-vertex moves rarely lower the count on a mesh (a
   vertex leaving its part exposes its interior neighbours), so this stage
   moves connected groups of vertices of one part, from groups of up to
   ``2**levels`` vertices down to single vertices, and also between three or
   more parts at once, which the pairwise cuts leave alone.

From METIS's partitions at k = n/1800, with the defaults, the refinement
removes about a tenth to a sixth of the boundary vertices of road and
Delaunay graphs, every part within the bound, and the parallel cuts take a
third or more off the time of one process (benchmarks/refine_bench.py; the
measurements: docs/kernels.md).

The cluster moves are written once for NumPy and CuPy (``xp`` is taken from
the arrays) with sorts, cumulative sums, ``searchsorted`` and ``bincount`` on
integers only, so the same moves are made on the host in CI and on the GPU.
Operations between an array and a scalar are function calls
(``xp.greater(a, 0)``); DEVELOPERS.md says why.

Clusters
    Built once from the starting partition by the heavy-edge and two-hop
    matching of :mod:`fastapsp.partition.jet` on the graph without its cut
    arcs, repeated ``levels`` times with a size cap of ``2**level``; so every
    cluster lies in one part, and the clusters of a level are unions of those
    of the level below.  Moving whole clusters keeps that true.
One round, on the clusters of one level
    1. Candidates: clusters holding a boundary vertex, with every part that one
       of their vertices has a neighbour in as a possible target.
    2. The exact gain of moving cluster ``C`` to part ``b`` (boundary vertices
       removed): only the ends of arcs that leave ``C`` can change status, and
       each is rechecked against its neighbours' labels as they would be.
       Each cluster keeps its best target (largest gain, then smallest part).
    3. Moves with a positive gain are candidates, and so are moves of gain 0
       (of clusters not moved in the round before) until ``patience`` rounds
       in a row at this level have not lowered the count.
    4. Moves must not interact: a move's gain depends on the labels within two
       hops of its cluster, so a candidate moves only when its priority (gain,
       then a seeded hash) is the largest among the candidate clusters within
       two hops.  With no two movers within two hops, the gains add up.
    5. Each target part accepts its highest-priority movers up to the bound.
    6. The boundary count is recomputed; a round that would raise it is undone
       and the refinement stops (step 4 rules it out; the check guards the
       guarantee).  So the count never rises, round by round.
The levels run from the largest clusters down to single vertices; a level
ends when a round finds nothing to move.  Further passes (``cycles``, one by
default) build new clusters from the refined labels and run the levels again;
each new clustering offers moves the last one did not, so more passes raise
the gain of the cluster moves alone.  After the pairwise cuts they add little
(larger clusters and more passes a little more, for time in proportion), so
the default is one pass with clusters of up to 512 vertices (the
measurements: docs/kernels.md).
"""

from __future__ import annotations

import time

import numpy as np

from ..graph import arc_rows, count_values, distinct
from ._arrays import _array_module, _hash32, _stable_argsort, max_part_size
from .jet import _contract, _Level, _match
from .workers import ForkedWorkers, worker_count

__all__ = ["refine_boundary", "boundary_count", "max_part_size"]

DEFAULT_MAX_ROUNDS = 2000
DEFAULT_CYCLES = 1
DEFAULT_PATIENCE = 3
DEFAULT_LEVELS = 9
CLUSTER_SHRINK = 0.9  # stop building cluster levels when one keeps more than this share of clusters
DEFAULT_FLOW_PASSES = 4
DEFAULT_FLOW_ALPHA = 8.0
FLOW_MIN_ROOM = 0.01  # a corridor may hold alpha times this share of a part's average size, even next to a full part
FLOW_TRIES = 4
FLOW_TRIAL_PASSES = 2  # passes from each start before the better one goes on (after one, delaunay_n17 picks wrong)
FLOW_PARALLEL_MIN = 20000  # graphs with fewer vertices: the cuts run in the calling process (a fork costs more)
DEFAULT_LAYOUT_RESTART = True
LAYOUT_PIECE = 64  # vertices per piece of the coarse graph the coordinates come from
LAYOUT_PIECES_PER_PART = 8  # fewer pieces than this per part: no centroidal restart
LAYOUT_WEAK = 0.3  # pieces joined by fewer arcs than this share of the median are not neighbours
LAYOUT_BLOCKS = 16  # METIS blocks that are split into pieces apart, on graphs of LAYOUT_BLOCKS_MIN vertices or more
LAYOUT_BLOCKS_MIN = 500_000  # below: one METIS call; above, blocks are several times faster (docs/kernels.md)
LAYOUT_PIVOTS = 16
LAYOUT_SMOOTHING = 30  # rounds of averaging with the neighbours
LAYOUT_SAMPLE = 0.125  # share of the points Lloyd's iteration runs on
LAYOUT_LLOYD = 100
LAYOUT_BALANCE_ROUNDS = 40
LAYOUT_STALL = 8  # balancing rounds without a smaller largest cell before giving up
LAYOUT_NEAREST = 8  # centres looked at per point
LAYOUT_STEP = 0.8  # share of the estimated weight change applied per round


def _unique(xp, a):
    """Sorted distinct values of a 1-d integer array (on NumPy :func:`~fastapsp.graph.distinct`)."""
    return distinct(a) if xp is np else xp.unique(a)


def _foreign_arcs(xp, rows, indices, labels, n: int):
    """Number of arcs of every vertex that lead into another part."""
    cut = labels[rows] != labels[indices]
    return count_values(xp, rows[cut], n)


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
    rows = arc_rows(xp, indptr, int(indices.shape[0]))
    return int(xp.count_nonzero(_foreign_arcs(xp, rows, indices, labels, n)))


def _expand(xp, starts, lengths):
    """For segments ``starts[i] .. starts[i] + lengths[i] - 1``: the segment of every position, and the position."""
    if xp is np:  # np.repeat takes the lengths as an array (CuPy's does not)
        segment = np.repeat(np.arange(lengths.shape[0], dtype=np.int64), lengths)
        return segment, np.arange(segment.shape[0], dtype=np.int64) - (np.cumsum(lengths) - lengths)[segment] \
            + starts[segment]
    total = int(lengths.sum()) if lengths.shape[0] else 0
    ends = xp.cumsum(lengths)
    place = xp.arange(total, dtype=xp.int64)
    segment = xp.searchsorted(ends, place, side="right")
    return segment, place - (ends - lengths)[segment] + starts[segment]


def _spread_max(xp, rows, indices, values):
    """For every vertex, the largest of the non-negative ``values`` over itself and its neighbours.

    Only arcs leaving a vertex with a positive value are looked at (a sort of
    ``target * (top + 1) + value`` keeps the largest per target), so the cost
    follows the candidates, not the graph.
    """
    out = values.copy()
    arcs = xp.flatnonzero(xp.greater(values[rows], 0))
    if arcs.shape[0] == 0:
        return out
    top = int(values.max()) + 1
    key = xp.sort(xp.add(xp.multiply(indices[arcs], top), values[rows[arcs]]))
    target = xp.floor_divide(key, top)
    last = xp.ones(key.shape[0], dtype=bool)
    last[:-1] = target[1:] != target[:-1]
    target, value = target[last], key[last] - xp.multiply(target[last], top)
    out[target] = xp.maximum(out[target], value)
    return out


def _cluster_maps(xp, indptr, rows, indices, labels, *, levels: int, seed: int):
    """Nested clusterings inside the parts: ``[(cluster of every vertex, cluster count), ...]``, finest first.

    Level ``l`` is the matching of level ``l - 1``'s clusters (heavy-edge, then
    two-hop, as Jet coarsens) on the graph without its cut arcs, with clusters of
    at most ``2**l`` vertices; it stops early when a level hardly shrinks.
    """
    n = int(indptr.shape[0]) - 1
    same = labels[rows] == labels[indices]
    inner_indptr = xp.zeros(n + 1, dtype=xp.int64)
    inner_indptr[1:] = xp.cumsum(count_values(xp, rows[same], n))
    inner = indices[same]
    g = _Level(xp, inner_indptr, inner, xp.ones(inner.shape[0], dtype=xp.int64), xp.ones(n, dtype=xp.int64))
    cluster = xp.arange(n, dtype=xp.int64)
    maps = [(cluster, n)]
    for level in range(1, levels + 1):
        coarse = _contract(xp, g, _match(xp, g, 2 ** level, seed, level))
        if coarse.n > CLUSTER_SHRINK * g.n:
            break
        cluster = g.coarse_map[cluster]
        maps.append((cluster, coarse.n))
        g = coarse
    return maps


def _best_moves(xp, indptr, rows, indices, labels, foreign, cluster, c: int, k: int):
    """Best move of every cluster holding a boundary vertex: (cluster, target part, gain), one row per cluster.

    The gain is the exact drop of the boundary count when only that cluster moves.
    """
    n = int(indptr.shape[0]) - 1
    candidate = xp.zeros(c, dtype=bool)
    candidate[cluster[xp.greater(foreign, 0)]] = True
    arcs = xp.flatnonzero(candidate[cluster[rows]])
    r, u = rows[arcs], indices[arcs]
    cut = labels[r] != labels[u]
    if not bool(cut.any()):
        empty = xp.zeros(0, dtype=xp.int64)
        return empty, empty, empty
    # (cluster, target part) pairs, sorted by cluster.
    pair = _unique(xp, xp.multiply(cluster[r[cut]], k) + labels[u[cut]].astype(xp.int64))
    pair_cluster, pair_part = xp.floor_divide(pair, k), xp.remainder(pair, k)
    # Vertices whose status a move of the cluster can change: both ends of the arcs leaving it, sorted by cluster.
    leave = cluster[r] != cluster[u]
    owner = cluster[r[leave]]
    touched = _unique(xp, xp.concatenate([xp.multiply(owner, n) + r[leave], xp.multiply(owner, n) + u[leave]]))
    touched_cluster = xp.floor_divide(touched, n)
    touched_vertex = touched - xp.multiply(touched_cluster, n)
    first = xp.searchsorted(touched_cluster, pair_cluster, side="left")
    last = xp.searchsorted(touched_cluster, pair_cluster, side="right")
    p, t = _expand(xp, first, last - first)
    w = touched_vertex[t]
    moving, part = pair_cluster[p], pair_part[p]
    # Every neighbour x of every touched w: does it keep a label other than w's after the move?
    degree = indptr[1:] - indptr[:-1]
    q, a = _expand(xp, indptr[w], degree[w])
    x = indices[a]
    label_w = xp.where(cluster[w] == moving, part, labels[w].astype(xp.int64))
    label_x = xp.where(cluster[x] == moving[q], part[q], labels[x].astype(xp.int64))
    boundary_after = xp.greater(count_values(xp, q[label_w[q] != label_x], w.shape[0]), 0)
    boundary_before = xp.greater(foreign[w], 0)
    gain = (count_values(xp, p[boundary_before & ~boundary_after], pair.shape[0])
            - count_values(xp, p[boundary_after & ~boundary_before], pair.shape[0]))
    # Per cluster: largest gain, then smallest part (pairs come sorted by cluster, then part).
    order = _stable_argsort(xp, -gain)
    order = order[_stable_argsort(xp, pair_cluster[order])]
    pair_cluster, pair_part, gain = pair_cluster[order], pair_part[order], gain[order]
    first = xp.ones(pair_cluster.shape[0], dtype=bool)
    first[1:] = pair_cluster[1:] != pair_cluster[:-1]
    return pair_cluster[first], pair_part[first], gain[first]


def _independent(xp, rows, indices, cluster, c: int, movers, priority):
    """Mask of ``movers`` (clusters) whose priority is the largest among the movers within two hops."""
    rank = xp.zeros(c, dtype=xp.int64)
    rank[movers[_stable_argsort(xp, priority)]] = xp.arange(1, movers.shape[0] + 1, dtype=xp.int64)
    mine = rank[cluster]
    reach = _spread_max(xp, rows, indices, _spread_max(xp, rows, indices, mine))
    beaten = xp.greater(count_values(xp, cluster[reach != mine], c), 0)
    return ~beaten[movers], rank


def _fit(xp, movers, parts, weights, rank, room):
    """Mask of ``movers`` that fit: each part takes its highest-ranked movers while ``room`` lasts."""
    order = _stable_argsort(xp, -rank[movers])
    order = order[_stable_argsort(xp, parts[order])]
    part, weight = parts[order], weights[order]
    total = xp.cumsum(weight)
    first = xp.searchsorted(part, part, side="left")
    before = total - weight - xp.where(xp.greater(first, 0), total[xp.maximum(xp.subtract(first, 1), 0)], 0)
    fits = xp.zeros(movers.shape[0], dtype=bool)
    fits[order] = before + weight <= room[part]
    return fits


# ------------------------------------------------------------------ parallel cuts
#
# The cut between parts a and b reads the labels of the vertices of a and b, whether every other
# vertex is in a, in b or elsewhere, the arcs into other parts of the vertices of a and b, and the
# sizes of a and b; it changes labels inside a and b only.  A cut between two other parts c and d
# changes none of what it reads: a vertex of a next to c stays next to another part whether that
# neighbour ends in c or in d.  So two pairs that share no part commute, and a pass in a seeded
# order runs as rounds (_rounds: each pair in the round after the last one holding one of its
# parts), each round's cuts solved at once by forked workers that hold a copy of the state
# (fastapsp.partition.workers.ForkedWorkers: the CSR structure shared copy-on-write, the changes
# of a round sent to every worker), the results applied in the pass's order.  The labels are
# those of the sequential pass for any number of workers (tests/test_refine_workers.py).  The
# workers are FASTAPSP_REFINE_WORKERS, else one per CPU this process may use; inside an
# initialised MPI process (the partitioner runs on rank 0 only) 1 unless the variable is set,
# as forking an MPI rank is not safe with every MPI library and transport.  Graphs below
# FLOW_PARALLEL_MIN vertices run in-process.  The centroidal restart's layout runs in a forked
# process of its own while the cuts from the given partition run, and splits its METIS blocks
# into pieces with the same workers.


# ------------------------------------------------------------------ pairwise flows (on the host)
#
# For two adjacent parts a and b, the vertices of a within reach of their common border (a
# corridor grown breadth-first, up to a size that the balance bound allows) and those of b may
# change sides; the rest of a is the source, the rest of b the sink.  Every vertex v of a and b
# whose status can change is a net: the vertex and its neighbours (v is a boundary vertex exactly
# when its net spans both sides).  A vertex with a neighbour in a third part stays a boundary
# vertex whatever a and b do, so its net is left out.  Lawler's network (a net of three pins or
# more becomes an arc of capacity 1 between two new nodes, joined to its pins by arcs of
# unbounded capacity; a net of two pins becomes an arc of capacity 1 each way) makes every
# minimum cut a labelling of the corridor with the fewest boundary vertices; the minimum cut
# used is the most balanced one that keeps both parts within the bound.


def _corridor(indptr, indices, labels, members, foreign, seen, a: int, b: int, limit: int):
    """Up to ``limit`` vertices of part ``a``, breadth-first from those next to part ``b``.

    ``foreign`` counts every vertex's arcs into other parts (only the boundary
    vertices of ``a`` are looked at for the start).
    """
    if limit <= 0:
        return np.zeros(0, dtype=np.int64)
    va = members[a]
    va = va[foreign[va] > 0]
    owner, arcs = _expand(np, indptr[va], indptr[va + 1] - indptr[va])
    front = distinct(va[owner[labels[indices[arcs]] == b]])
    layers, total = [], 0
    while front.shape[0] and total < limit:
        front = front[: limit - total]
        seen[front] = True
        layers.append(front)
        total += front.shape[0]
        owner, arcs = _expand(np, indptr[front], indptr[front + 1] - indptr[front])
        nxt = indices[arcs]
        front = distinct(nxt[(labels[nxt] == a) & ~seen[nxt]])
    region = np.concatenate(layers) if layers else np.zeros(0, dtype=np.int64)
    seen[region] = False
    return region


def _pair_network(indptr, indices, labels, node, region, a: int, b: int):
    """Lawler's network of the nets that the corridor ``region`` can change.

    ``node`` maps the vertices of ``a`` outside the corridor to the source
    (``r``), those of ``b`` to the sink (``r + 1``), the corridor to ``0..r-1``
    and every other vertex to -1.  Returns the capacity matrix and how many
    nets are cut now.
    """
    from scipy import sparse

    r = region.shape[0]
    source, sink, width = r, r + 1, r + 2
    # Net centres: the corridor and its neighbours in a and b.
    owner, arcs = _expand(np, indptr[region], indptr[region + 1] - indptr[region])
    near = indices[arcs]
    centres = distinct(np.concatenate([region, near[node[near] >= 0]]))
    owner, arcs = _expand(np, indptr[centres], indptr[centres + 1] - indptr[centres])
    net = np.concatenate([np.arange(centres.shape[0]), owner])
    pin = node[np.concatenate([centres, indices[arcs]])]
    outside = np.zeros(centres.shape[0], dtype=bool)
    outside[net[pin < 0]] = True  # a neighbour in a third part: a boundary vertex whatever happens
    keep = ~outside[net]
    key = distinct(net[keep] * width + pin[keep])  # distinct pins, sorted by net
    net, pin = key // width, key % width
    nets = centres.shape[0]
    pins = count_values(np, net, nets)
    at_source = count_values(np, net[pin == source], nets) > 0
    at_sink = count_values(np, net[pin == sink], nets) > 0
    live = (pins >= 2) & ~(at_source & at_sink)  # else never cut or always cut
    # Cut now: the pins' current parts differ.
    side = np.where(pin == source, a, np.where(pin == sink, b, labels[region[np.minimum(pin, r - 1)]]))
    first = np.searchsorted(net, net, side="left")
    cut_now = count_values(np, net[side != side[first]], nets) > 0
    current = int(np.count_nonzero(cut_now & live))
    use = live[net]
    net, pin = net[use], pin[use]
    renumber = np.cumsum(live) - 1
    net = renumber[net]
    sizes = pins[live]
    first = np.searchsorted(net, np.arange(sizes.shape[0]), side="left")
    pair = np.flatnonzero(sizes == 2)
    u, v = pin[first[pair]], pin[first[pair] + 1]
    large = np.flatnonzero(sizes > 2)
    hub = np.full(sizes.shape[0], -1, dtype=np.int64)
    hub[large] = width + 2 * np.arange(large.shape[0])
    big = sizes[net] > 2
    tail, head = pin[big], hub[net[big]]
    total = width + 2 * large.shape[0]
    unbounded = int(sizes.shape[0]) + 1  # more than every net together
    src = np.concatenate([u, v, tail, head + 1, hub[large]])
    dst = np.concatenate([v, u, head, tail, hub[large] + 1])
    cap = np.concatenate([np.ones(2 * u.shape[0], dtype=np.int32),
                          np.full(2 * tail.shape[0], unbounded, dtype=np.int32),
                          np.ones(large.shape[0], dtype=np.int32)])
    graph = sparse.csr_array((cap, (src, dst)), shape=(total, total))
    graph.sum_duplicates()
    return graph, current


def _balanced_cut(residual, r: int, source: int, sink: int, base_a: int, lo: int, hi: int, total: int):
    """Source side of a minimum cut whose part ``a`` gets between ``lo`` and ``hi`` vertices.

    The minimum cuts are the sets closed under residual arcs between the
    vertices the source reaches and those that do not reach the sink; adding
    the strongly connected components of the rest in reverse topological
    order walks through them.  Returns the most balanced feasible one, or
    "a" / "b" naming the part that comes out too large in all of them.
    """
    from scipy.sparse.csgraph import breadth_first_order, connected_components

    n = residual.shape[0]
    from_source = np.zeros(n, dtype=bool)
    from_source[breadth_first_order(residual, source, directed=True, return_predecessors=False)] = True
    to_sink = np.zeros(n, dtype=bool)
    to_sink[breadth_first_order(residual.T.tocsr(), sink, directed=True, return_predecessors=False)] = True
    smallest = base_a + int(np.count_nonzero(from_source[:r]))
    middle = np.flatnonzero(~from_source & ~to_sink)
    sizes = np.array([smallest])
    order = comp = None
    if middle.shape[0]:
        sub = residual[middle][:, middle].tocoo()
        count, comp = connected_components(sub, directed=True, connection="strong")
        cu, cv = comp[sub.row], comp[sub.col]
        key = distinct(cu[cu != cv] * count + cv[cu != cv])
        cu, cv = key // count, key % count
        # Kahn's order from the sinks of the component graph: a component comes after all it reaches.
        waiting = count_values(np, cu, count)
        by_head = _stable_argsort(np, cv)
        starts = np.searchsorted(cv[by_head], np.arange(count + 1), side="left")
        tails = cu[by_head]
        layers = []
        ready = np.flatnonzero(waiting == 0)
        while ready.shape[0]:
            layers.append(ready)
            _, arcs = _expand(np, starts[ready], starts[ready + 1] - starts[ready])
            done = tails[arcs]
            np.subtract.at(waiting, done, 1)
            done = distinct(done)
            ready = done[waiting[done] == 0]
        order = np.concatenate(layers)
        weight = count_values(np, comp[middle < r], count)
        sizes = smallest + np.concatenate([[0], np.cumsum(weight[order])])
    fits = (sizes >= lo) & (sizes <= hi)
    if not fits.any():
        return "a" if sizes[0] > hi else "b"
    spread = np.where(fits, np.abs(2 * sizes - total), np.iinfo(np.int64).max)
    j = int(np.argmin(spread))
    side = from_source
    if j:
        taken = np.zeros(int(comp.max()) + 1, dtype=bool)
        taken[order[:j]] = True
        side[middle[taken[comp]]] = True
    return side


class _PairFlows:
    """Labels, part sizes and members of the parts, kept up to date as pairs of parts are refined."""

    def __init__(self, indptr, indices, labels, k: int, bound: int):
        self.indptr, self.indices = indptr, indices
        self.labels = labels.astype(np.int64)
        self.k, self.bound = k, bound
        self.sizes = count_values(np, self.labels, k)
        order = _stable_argsort(np, self.labels)
        starts = np.searchsorted(self.labels[order], np.arange(k + 1), side="left")
        self.members = [order[starts[p]:starts[p + 1]] for p in range(k)]
        n = labels.shape[0]
        self.foreign = _foreign_arcs(np, arc_rows(np, indptr, indices.shape[0]), indices, self.labels, n)
        self.node = np.full(n, -1, dtype=np.int64)
        self.seen = np.zeros(n, dtype=bool)

    def _recount(self, changed):
        """Arcs into other parts again, for the vertices in ``changed`` and their neighbours."""
        _, arcs = _expand(np, self.indptr[changed], self.indptr[changed + 1] - self.indptr[changed])
        again = distinct(np.concatenate([changed, self.indices[arcs]]))
        owner, arcs = _expand(np, self.indptr[again], self.indptr[again + 1] - self.indptr[again])
        other = self.labels[self.indices[arcs]] != self.labels[again[owner]]
        self.foreign[again] = count_values(np, owner[other], again.shape[0])

    def pairs(self):
        """Pairs ``a < b`` of parts joined by an arc, as keys ``a * k + b``."""
        rows = arc_rows(np, self.indptr, self.indices.shape[0])
        la, lb = self.labels[rows], self.labels[self.indices]
        return distinct(la[la < lb] * self.k + lb[la < lb])

    def corridors(self, a: int, b: int, limit_a: int, limit_b: int):
        """The corridors of ``a`` towards ``b`` and of ``b`` towards ``a``.

        Each leaves at least one vertex of its part out, so that the source and
        the sink hold a vertex and a minimum cut cannot simply empty a part.
        """
        args = (self.indptr, self.indices, self.labels, self.members, self.foreign, self.seen)
        return (_corridor(*args, a, b, min(limit_a, int(self.sizes[a]) - 1)),
                _corridor(*args, b, a, min(limit_b, int(self.sizes[b]) - 1)))

    def _cut(self, a: int, b: int, limit_a: int, limit_b: int):
        """One minimum cut between parts ``a`` and ``b``, not applied.

        Returns ``(changed vertices, their new labels, boundary vertices removed)``,
        None when the cut removes none, or "a" / "b" naming the part that came
        out too large.  Reads the labels of ``a`` and ``b`` and whether every
        other vertex is in ``a``, in ``b`` or elsewhere, and the arcs into other
        parts of the vertices of ``a`` and ``b``: a cut between two other parts
        changes none of them.
        """
        from scipy.sparse.csgraph import maximum_flow

        region_a, region_b = self.corridors(a, b, limit_a, limit_b)
        region = np.concatenate([region_a, region_b])
        r = region.shape[0]
        if r == 0:
            return None
        node = self.node
        node[self.members[a]] = r
        node[self.members[b]] = r + 1
        node[region] = np.arange(r)
        try:
            graph, current = _pair_network(self.indptr, self.indices, self.labels, node, region, a, b)
        finally:
            node[self.members[a]] = -1
            node[self.members[b]] = -1
        if current == 0:
            return None
        flow = maximum_flow(graph, r, r + 1)
        if flow.flow_value >= current:
            return None
        residual = graph - flow.flow
        residual.data = (residual.data > 0).astype(np.int8)
        residual.eliminate_zeros()
        size_a, size_b = int(self.sizes[a]), int(self.sizes[b])
        total = size_a + size_b
        # Both parts stay non-empty and within the bound (or not above their size, when above it).
        hi = min(max(self.bound, size_a), total - 1)
        lo = max(total - max(self.bound, size_b), 1)
        side = _balanced_cut(residual, r, r, r + 1, size_a - region_a.shape[0], lo, hi, total)
        if isinstance(side, str):
            return side
        new = np.where(side[:r], a, b)
        moved = new != self.labels[region]
        return region[moved], new[moved], current - int(flow.flow_value)

    def solve(self, a: int, b: int, limit_a: int, limit_b: int):
        """The cut between ``a`` and ``b`` that :meth:`_cut` finds, with the corridor of the side that came out
        too large halved up to ``FLOW_TRIES`` times; ``(changed, new labels, removed)`` or None.  Changes nothing."""
        for _ in range(FLOW_TRIES):
            got = self._cut(a, b, limit_a, limit_b)
            if not isinstance(got, str):
                return got
            if got == "a":
                limit_b //= 2
            else:
                limit_a //= 2
        return None

    def apply(self, a: int, b: int, changed, new) -> None:
        """Give the vertices ``changed`` (of parts ``a`` and ``b``) their ``new`` labels (``a`` or ``b``)."""
        self.labels[changed] = new
        self._recount(changed)
        to_a = int(np.count_nonzero(new == a))
        self.sizes[a] += 2 * to_a - changed.shape[0]
        self.sizes[b] -= 2 * to_a - changed.shape[0]
        both = np.concatenate([self.members[a], self.members[b]])
        self.members[a] = both[self.labels[both] == a]
        self.members[b] = both[self.labels[both] == b]

    def refine(self, a: int, b: int, limit_a: int, limit_b: int):
        """One minimum cut between ``a`` and ``b``, applied: boundary vertices removed, or the part that came
        out too large."""
        got = self._cut(a, b, limit_a, limit_b)
        if got is None or isinstance(got, str):
            return got or 0
        changed, new, removed = got
        self.apply(a, b, changed, new)
        return removed


def _rounds(keys, k: int) -> list:
    """The pairs ``keys`` (``a * k + b``, in the order of a sequential pass) in rounds of pairs that share no part.

    A pair goes in the round after the last one holding either of its parts,
    so two pairs that share a part keep their order and a round's pairs can be
    solved at once: running the rounds one after the other gives the labels of
    the sequential pass.
    """
    last = np.full(k, -1, dtype=np.int64)
    place = np.empty(keys.shape[0], dtype=np.int64)
    for i, key in enumerate(keys.tolist()):
        a, b = divmod(key, k)
        place[i] = max(last[a], last[b]) + 1
        last[a] = last[b] = place[i]
    order = _stable_argsort(np, place)
    ends = np.searchsorted(place[order], np.arange(int(place.max()) + 1 if keys.shape[0] else 0), side="right")
    return [keys[order[start:end]] for start, end in zip(np.concatenate([[0], ends[:-1]]), ends)]


def _flow_refine(indptr, indices, labels, k: int, bound: int, *, passes: int, alpha: float, seed: int,
                 workers: int = 1, timings: dict | None = None):
    """Pairwise minimum cuts over all pairs of adjacent parts, ``passes`` times; labels and boundary vertices removed.

    Each pass visits the pairs in a seeded order; after the first, only pairs
    with a part that changed in the pass before.  The corridor on each side
    holds up to ``alpha`` times the room left in the other part (at least
    ``FLOW_MIN_ROOM`` of a part's average size); when no minimum cut is balanced,
    the corridor of the side that came out too large is halved, up to
    ``FLOW_TRIES`` times.  A pass runs as rounds of pairs that share no part
    (:func:`_rounds`), each round's cuts solved by ``workers`` processes
    (:class:`fastapsp.partition.workers.ForkedWorkers`) and applied in the
    pass's order: the labels are those of the sequential pass, whatever the
    number of workers.  ``timings``, when given, gets ``round_seconds`` (per
    round: seconds of all its cuts and of the longest) and ``broadcast_seconds``
    added to it.
    """
    state = _PairFlows(indptr, indices, labels, k, bound)
    floor = max(1, int(FLOW_MIN_ROOM * labels.shape[0] / k))
    removed = 0
    active = np.ones(k, dtype=bool)
    with ForkedWorkers(state, workers if labels.shape[0] >= FLOW_PARALLEL_MIN else 1) as pool:
        for p in range(passes):
            keys = state.pairs()
            keys = keys[active[keys // k] | active[keys % k]]
            keys = keys[_stable_argsort(np, _hash32(np, keys, seed * 0x9E3779B1 + p))]
            changed = np.zeros(k, dtype=bool)
            gained = 0
            for round_keys in _rounds(keys, k):
                tasks = []
                for key in round_keys.tolist():
                    a, b = divmod(key, k)
                    tasks.append((a, b, int(alpha * max(bound - int(state.sizes[b]), floor)),
                                  int(alpha * max(bound - int(state.sizes[a]), floor))))
                updates = []
                for (a, b, _, _), got in zip(tasks, pool.map(tasks)):
                    if got is None:
                        continue
                    moved, new, gain = got
                    state.apply(a, b, moved, new)
                    updates.append((a, b, moved, new))
                    gained += gain
                    changed[a] = changed[b] = True
                pool.broadcast(updates)
            removed += gained
            active = changed
            if gained == 0:
                break
    if timings is not None:
        timings.setdefault("round_seconds", []).extend(pool.round_seconds)
        timings["broadcast_seconds"] = timings.get("broadcast_seconds", 0.0) + pool.broadcast_seconds
    return state.labels.astype(np.int32), removed


# ------------------------------------------------------------------ centroidal restart (on the host)
#
# METIS's parts are locally good but their arrangement is not: on the Delaunay meshes the pairwise
# cuts from a METIS start stop about 3 points short of where they stop from the centroidal
# (Lloyd) cells of the true point coordinates.  The coordinates are not known, so they are
# recovered from the graph: METIS cuts it into pieces of about LAYOUT_PIECE vertices; the pieces
# joined by few arcs are taken apart (a long edge, like the hull edges of a Delaunay mesh, joins
# two pieces by one or two arcs, pieces next to each other by many), PivotMDS (Brandes and Pich,
# 2006) places the pieces in the plane from their hop distances to LAYOUT_PIVOTS pivots, and every
# vertex starts at its piece and is smoothed towards its neighbours.  Centroidal cells in that
# plane (power cells whose weights keep every part within the bound), started from the centres of
# the given parts, are a second start for the pairwise cuts.


class _BlockPieces:
    """METIS pieces of about ``LAYOUT_PIECE`` vertices inside the blocks of a coarser METIS partition."""

    def __init__(self, indptr, indices, block, seed: int):
        self.indptr, self.indices, self.block, self.seed = indptr, indices, block, seed

    def solve(self, b: int, pieces: int):
        """Pieces of block ``b``: its vertices and the piece (``0..pieces-1``) of each."""
        from .metis import metis

        vertices = np.flatnonzero(self.block == b)
        if pieces < 2:
            return vertices, np.zeros(vertices.shape[0], dtype=np.int64)
        owner, arcs = _expand(np, self.indptr[vertices], self.indptr[vertices + 1] - self.indptr[vertices])
        head = self.indices[arcs]
        inside = self.block[head] == b
        local = np.full(self.block.shape[0], -1, dtype=np.int64)  # a scratch array per call: blocks are few
        local[vertices] = np.arange(vertices.shape[0])
        sub_indptr = np.zeros(vertices.shape[0] + 1, dtype=np.int64)
        sub_indptr[1:] = np.cumsum(count_values(np, owner[inside], vertices.shape[0]))
        piece = metis(sub_indptr, local[head[inside]], pieces, seed=self.seed, imbalance=0.03)
        return vertices, piece.astype(np.int64)


def _pieces(indptr, indices, seed: int, workers: int):
    """Pieces of about ``LAYOUT_PIECE`` vertices: the piece of every vertex and their number.

    On ``LAYOUT_BLOCKS_MIN`` vertices or more, METIS splits the graph into
    ``LAYOUT_BLOCKS`` blocks and then each block into pieces (one METIS call
    on all ``n / LAYOUT_PIECE`` pieces of a large graph takes several times
    longer than the blocks, which are split by ``workers`` processes at once); on
    fewer, one METIS call makes the pieces.  The pieces do not depend on
    ``workers``.
    """
    from .metis import metis

    n = indptr.shape[0] - 1
    if n < max(LAYOUT_BLOCKS_MIN, LAYOUT_BLOCKS * LAYOUT_PIECE * 8):
        pieces = n // LAYOUT_PIECE
        return metis(indptr, indices, pieces, seed=seed, imbalance=0.03).astype(np.int64), pieces
    block = metis(indptr, indices, LAYOUT_BLOCKS, seed=seed, imbalance=0.03).astype(np.int64)
    counts = np.maximum(np.rint(count_values(np, block, LAYOUT_BLOCKS) / LAYOUT_PIECE).astype(np.int64), 1)
    state = _BlockPieces(indptr, indices, block, seed)
    with ForkedWorkers(state, min(workers, LAYOUT_BLOCKS)) as pool:
        split = pool.map([(b, int(counts[b])) for b in range(LAYOUT_BLOCKS)])
    offsets = np.concatenate([[0], np.cumsum(counts)])
    piece = np.empty(n, dtype=np.int64)
    for b, (vertices, local) in enumerate(split):
        piece[vertices] = offsets[b] + local
    return piece, int(offsets[-1])


def _coordinates(indptr, indices, seed: int, workers: int = 1):
    """Plane coordinates of every vertex recovered from the graph, shape (n, 2).

    None for a graph in more than one piece, and when the pieces joined by
    many arcs fall apart.
    """
    from scipy import sparse
    from scipy.sparse.csgraph import connected_components, dijkstra

    n = indptr.shape[0] - 1
    graph = sparse.csr_array((np.ones(indices.shape[0]), indices, indptr), shape=(n, n))
    if connected_components(graph, directed=False)[0] != 1:
        return None
    piece, pieces = _pieces(indptr, indices, seed, workers)
    rows = arc_rows(np, indptr, indices.shape[0])
    tail, head = piece[rows], piece[indices]
    cut = tail != head
    key, weight = np.unique(tail[cut] * pieces + head[cut], return_counts=True)
    key = key[weight >= LAYOUT_WEAK * np.median(weight)]
    near = sparse.csr_array((np.ones(key.shape[0]), (key // pieces, key % pieces)), shape=(pieces, pieces))
    if connected_components(near, directed=False)[0] != 1:
        return None
    distance = np.empty((pieces, LAYOUT_PIVOTS))
    nearest = np.full(pieces, np.inf)
    pivot = int(_hash32(np, np.arange(1), seed)[0]) % pieces
    for j in range(LAYOUT_PIVOTS):  # each pivot the piece farthest from those before
        distance[:, j] = dijkstra(near, directed=False, indices=pivot, unweighted=True)
        nearest = np.minimum(nearest, distance[:, j])
        pivot = int(np.argmax(nearest))
    centred = distance ** 2
    centred -= centred.mean(axis=0)
    centred -= centred.mean(axis=1)[:, None]
    _, vectors = np.linalg.eigh(centred.T @ centred)
    xy = (centred @ vectors[:, -2:])[piece]
    degree = np.maximum(indptr[1:] - indptr[:-1], 1)[:, None]
    for _ in range(LAYOUT_SMOOTHING):
        xy = 0.5 * xy + 0.5 * (graph @ xy) / degree
    return xy


def _power_cells(points, centres, weights, workers: int = 1):
    """Index of the power cell of every point: the smallest ``|p - c|**2 - w`` among its nearest centres.

    ``workers`` threads share the nearest-centre queries (the answer does not depend on them).
    """
    from scipy.spatial import cKDTree

    near = min(LAYOUT_NEAREST, centres.shape[0])
    dist, which = cKDTree(centres).query(points, k=near, workers=workers)
    if near == 1:
        return which.astype(np.int64)
    return which[np.arange(points.shape[0]), np.argmin(dist ** 2 - weights[which], axis=1)].astype(np.int64)


def _weight_step(points, cell, centres, sizes, target: float):
    """Weight changes that bring every cell towards ``target`` points.

    Raising a cell's weight by ``d`` moves each of its sides out by ``d``
    over twice the distance to the neighbour's centre, about ``1.73 d`` of
    area for a hexagonal cell whatever its size; a cell's area is about 6.25
    times the mean squared distance of its points to its centre.
    """
    k = centres.shape[0]
    spread = np.bincount(cell, ((points - centres[cell]) ** 2).sum(axis=1), minlength=k) / np.maximum(sizes, 1)
    spread[sizes == 0] = spread[sizes > 0].mean()
    return LAYOUT_STEP * (target - sizes) * 6.25 * spread / (1.73 * np.maximum(sizes, 1))


def _centroidal_labels(xy, labels, k: int, bound: int, seed: int, workers: int = 1):
    """Balanced centroidal cells of the points ``xy`` started from the centres of the parts; None if not balanced."""
    n = xy.shape[0]
    sizes = count_values(np, labels, k)
    if (sizes == 0).any():
        return None
    centres = np.stack([np.bincount(labels, xy[:, 0], minlength=k), np.bincount(labels, xy[:, 1], minlength=k)],
                       axis=1) / sizes[:, None]
    weights = np.zeros(k)
    sample = xy[(_hash32(np, np.arange(n), seed) % 1000) < 1000 * LAYOUT_SAMPLE]
    for _ in range(LAYOUT_LLOYD):  # Lloyd's iteration on a sample of the points
        cell = _power_cells(sample, centres, weights, workers)
        counts = count_values(np, cell, k)
        full = counts > 0
        for axis in range(2):
            centres[full, axis] = np.bincount(cell, sample[:, axis], minlength=k)[full] / counts[full]
        weights += _weight_step(sample, cell, centres, counts, sample.shape[0] / k)
    lowest, since = n + 1, 0
    for _ in range(LAYOUT_BALANCE_ROUNDS):  # then the weights alone, on all points, until balanced
        cell = _power_cells(xy, centres, weights, workers)
        counts = count_values(np, cell, k)
        if counts.max() <= bound and counts.min() > 0:
            return cell.astype(np.int32)
        lowest, since = (int(counts.max()), 0) if counts.max() < lowest else (lowest, since + 1)
        if since == LAYOUT_STALL:  # the largest cell stopped shrinking (uneven density, as on road maps)
            return None
        weights += _weight_step(xy, cell, centres, counts, n / k)
    return None


def _centroidal_start(indptr, indices, labels, k: int, bound: int, seed: int, workers: int = 1):
    """The second start of the pairwise cuts: centroidal cells seeded by ``labels``' parts, or None.

    None when the graph is too small for the pieces (fewer than
    ``LAYOUT_PIECES_PER_PART`` pieces a part), when the pieces joined by many
    arcs fall apart, or when the cells cannot be balanced.
    """
    if indptr.shape[0] - 1 < LAYOUT_PIECE * LAYOUT_PIECES_PER_PART * k:
        return None
    xy = _coordinates(indptr, indices, seed, workers)
    if xy is None:
        return None
    return _centroidal_labels(xy, labels.astype(np.int64), k, bound, seed, workers)


class _Restart:
    """The centroidal start (:func:`_centroidal_start`) as a call for :class:`ForkedWorkers`."""

    def __init__(self, indptr, indices, labels, k: int, bound: int, seed: int, workers: int):
        self.args = (indptr, indices, labels, k, bound, seed, workers)

    def solve(self):
        return _centroidal_start(*self.args)


def _flows_then_recount(xp, indptr, indices, rows, labels, k: int, bound: int, count: int, *, passes: int,
                        alpha: float, seed: int, workers: int, timings: dict):
    """The pairwise flows on the host for labels on ``xp``: labels, boundary count, vertices moved.

    The count is recomputed from the new labels; should it ever exceed
    ``count`` (the flows rule that out), the labels are kept as they were.
    """
    host = (lambda a: a) if xp is np else (lambda a: a.get())
    flowed, _ = _flow_refine(host(indptr), host(indices), host(labels), k, bound, passes=passes, alpha=alpha,
                             seed=seed, workers=workers, timings=timings)
    flowed = xp.asarray(flowed)
    new_count = int(xp.count_nonzero(_foreign_arcs(xp, rows, indices, flowed, int(labels.shape[0]))))
    if new_count > count:
        return labels, count, 0
    return flowed, new_count, int(xp.count_nonzero(flowed != labels))


def refine_boundary(indptr, indices, labels, k: int, *, imbalance: float, seed: int = 0,
                    max_rounds: int = DEFAULT_MAX_ROUNDS, patience: int = DEFAULT_PATIENCE,
                    levels: int = DEFAULT_LEVELS, cycles: int = DEFAULT_CYCLES,
                    flow_passes: int = DEFAULT_FLOW_PASSES, flow_alpha: float = DEFAULT_FLOW_ALPHA,
                    layout_restart: bool = DEFAULT_LAYOUT_RESTART, workers: int | None = None,
                    stats: dict | None = None):
    """Move vertices and clusters between parts to lower the number of boundary vertices.

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
        Seed of the order of the pairs, of the clustering and of the
        tie-breaking priorities; the result is a function of the inputs and
        the seed (the same on NumPy and CuPy).
    max_rounds : int
        Stop the cluster moves after this many rounds in all (levels
        together), even if moves with a gain remain; 0: no cluster moves.
    patience : int
        Rounds in a row, per level, that may move clusters without a gain
        (moves of gain 0 let a boundary drift until moves with a gain appear;
        a cluster moved in one round does not move in the next).  0: positive
        gains only.
    levels : int
        Cluster levels above single vertices (clusters of up to ``2**levels``
        vertices); 0 moves single vertices only.
    cycles : int
        Passes over the levels, each with clusters built anew from the labels
        it starts from (with seed ``seed + pass``); a pass that lowers nothing
        ends the refinement.
    flow_passes : int
        Passes of pairwise minimum cuts before the cluster moves (on the host,
        also for CuPy arrays, which are copied there and back); 0: none.
    flow_alpha : float
        A pair's corridor on each side holds up to ``flow_alpha`` times the
        room left in the other part (and at least ``flow_alpha`` times 1% of
        the average part size).
    layout_restart : bool
        Also run the pairwise cuts from centroidal cells seeded by the parts
        of ``labels`` (coordinates recovered from the graph; on the host): two
        passes from each start, and the other passes from whichever of the two
        has fewer boundary vertices after them.  Skipped
        for graphs with fewer than ``64 * 8 * k`` vertices and where the
        coordinates or balanced cells cannot be found.
    workers : int, optional
        Processes that solve the pairwise cuts (forked; rounds of pairs that
        share no part are solved at once) and threads of the restart's
        nearest-centre queries; the labels do not depend on it.  Default:
        :func:`fastapsp.partition.workers.worker_count` (the variable
        ``FASTAPSP_REFINE_WORKERS``, else the CPUs this process may use, else
        1 inside an initialised MPI process); 1 runs everything in this
        process.
    stats : dict, optional
        Filled with ``boundary_before``, ``boundary_after_flows``,
        ``boundary_after``, ``restarted`` (the centroidal start won),
        ``rounds`` (cluster rounds), ``moves`` (vertices moved), ``levels``
        (cluster levels built), ``workers`` and ``timings``: seconds of the
        restart's layout (``layout_seconds``), of the pairwise cuts after it
        (``flow_seconds``; ``round_seconds`` holds the seconds of every round's
        cuts together and of its longest, ``broadcast_seconds`` the sending of
        the changes to the workers) and of the cluster moves
        (``cluster_seconds``).

    Returns
    -------
    ndarray of int32, shape (n,)
        The refined labels, on the array module of the inputs.  Their boundary
        count is never above that of ``labels``, and no part grows beyond the
        bound (or beyond its starting size, when it started above it).

    Raises
    ------
    ValueError
        When ``labels`` has the wrong shape or labels outside ``0..k-1``,
        ``imbalance``, ``levels`` or ``flow_passes`` is negative, ``cycles`` is
        below 1, ``flow_alpha`` is not positive or ``workers`` is below 1.
    fastapsp.partition.workers.WorkerError
        When a worker process of the pairwise cuts raises or dies (the
        other workers are ended first).

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
    if levels < 0:
        raise ValueError(f"levels: {levels} is negative")
    if cycles < 1:
        raise ValueError(f"cycles: {cycles} is below 1")
    if flow_passes < 0:
        raise ValueError(f"flow_passes: {flow_passes} is negative")
    if not flow_alpha > 0:
        raise ValueError(f"flow_alpha: {flow_alpha} is not positive")
    workers = worker_count(workers)
    labels = xp.asarray(labels).astype(xp.int32)
    if n and (int(labels.min()) < 0 or int(labels.max()) >= k):
        raise ValueError(f"labels: must lie in 0..{k - 1}, found {int(labels.min())}..{int(labels.max())}")
    if n >= 2 ** 31:
        raise ValueError(f"indptr: {n} vertices, the refinement handles up to 2**31 - 1")
    indptr = indptr.astype(xp.int64)
    indices = indices.astype(xp.int64)
    rows = arc_rows(xp, indptr, m)
    bound = max_part_size(n, k, imbalance)
    sizes = count_values(xp, labels, k)
    foreign = _foreign_arcs(xp, rows, indices, labels, n)
    count = int(xp.count_nonzero(foreign))
    before, rounds, moved = count, 0, 0
    restarted = False
    timings: dict = {}
    clock = time.perf_counter()
    if flow_passes > 0 and k > 1 and count:
        host = (lambda a: a) if xp is np else (lambda a: a.get())
        # FLOW_TRIAL_PASSES passes from each start; the passes left go on from the one with fewer
        # boundary vertices (a tie keeps the given partition's).
        trial = min(FLOW_TRIAL_PASSES, flow_passes)
        best, best_count = labels, count
        state = fork = None
        if layout_restart:
            state = _Restart(host(indptr), host(indices), host(labels), k, bound, seed, workers)
            fork = workers > 1 and n >= max(FLOW_PARALLEL_MIN, LAYOUT_PIECE * LAYOUT_PIECES_PER_PART * k)
        with ForkedWorkers(state, 1, fork=bool(fork)) as restart:
            if layout_restart:  # the restart's layout runs in a process of its own during the first trial
                restart.start(())
            start = labels
            for i in range(2):  # the given partition, then the centroidal cells (when there are)
                start_count = int(xp.count_nonzero(_foreign_arcs(xp, rows, indices, start, n)))
                flowed, flowed_count, _ = _flows_then_recount(xp, indptr, indices, rows, start, k, bound,
                                                              start_count, passes=trial, alpha=flow_alpha,
                                                              seed=seed, workers=workers, timings=timings)
                if flowed_count < best_count:
                    best, best_count, restarted = flowed, flowed_count, i > 0
                cells = restart.finish() if layout_restart and i == 0 else None
                timings["layout_seconds"] = restart.finish_seconds
                if cells is None:
                    break
                start = xp.asarray(cells)
        if flow_passes > trial:
            best, best_count, _ = _flows_then_recount(xp, indptr, indices, rows, best, k, bound, best_count,
                                                      passes=flow_passes - trial, alpha=flow_alpha, seed=seed + 1,
                                                      workers=workers, timings=timings)
        moved = int(xp.count_nonzero(best != labels))
        labels, count = best, best_count
        sizes = count_values(xp, labels, k)
        foreign = _foreign_arcs(xp, rows, indices, labels, n)
    after_flows = count
    timings["flow_seconds"] = time.perf_counter() - clock
    clock = time.perf_counter()
    built = 0
    stopped = n == 0
    for cycle in range(cycles):
        if stopped:
            break
        at_start = count
        maps = _cluster_maps(xp, indptr, rows, indices, labels, levels=levels, seed=seed + cycle)
        built = max(built, len(maps) - 1)
        for cluster, c in reversed(maps):
            weights = count_values(xp, cluster, c)
            stall = 0
            moved_last = xp.zeros(c, dtype=bool)
            while rounds < max_rounds and not stopped:
                v, b, gain = _best_moves(xp, indptr, rows, indices, labels, foreign, cluster, c, k)
                room = xp.subtract(bound, sizes)
                drift = xp.bitwise_and(xp.equal(gain, 0), stall < patience) & ~moved_last[v]
                keep = (weights[v] <= room[b]) & (xp.greater(gain, 0) | drift)
                v, b, gain = v[keep], b[keep], gain[keep]
                if v.shape[0] == 0:
                    break
                # Priorities: gain * 2**32 + hash fit an int64 for any gain below 2**30.
                priority = xp.multiply(gain, 1 << 32) + _hash32(xp, v, seed * 0x9E3779B1 + rounds).astype(xp.int64)
                alone, rank = _independent(xp, rows, indices, cluster, c, v, priority)
                v, b = v[alone], b[alone]
                fits = _fit(xp, v, b, weights[v], rank, room)
                v, b = v[fits], b[fits]
                if v.shape[0] == 0:
                    break
                target = xp.full(c, -1, dtype=xp.int64)
                target[v] = b
                target = target[cluster]
                moving = xp.greater_equal(target, 0)
                new_labels = labels.copy()
                new_labels[moving] = target[moving].astype(xp.int32)
                new_foreign = _foreign_arcs(xp, rows, indices, new_labels, n)
                new_count = int(xp.count_nonzero(new_foreign))
                if new_count > count:  # cannot happen for independent moves; keep the guarantee anyway
                    stopped = True
                    break
                rounds += 1
                stall = stall + 1 if new_count == count else 0
                moved_last = xp.zeros(c, dtype=bool)
                moved_last[v] = True
                sizes = count_values(xp, new_labels, k)
                labels, foreign, count = new_labels, new_foreign, new_count
                moved += int(xp.count_nonzero(moving))
        if count == at_start or rounds >= max_rounds:
            break
    if stats is not None:
        if xp is not np:
            xp.cuda.Device().synchronize()
        timings["cluster_seconds"] = time.perf_counter() - clock
        stats.update(boundary_before=before, boundary_after=count, rounds=rounds, moves=moved, levels=built,
                     boundary_after_flows=after_flows, restarted=restarted, workers=workers, timings=timings)
    return labels
