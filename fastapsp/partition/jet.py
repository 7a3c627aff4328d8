"""Jet: multilevel k-way partitioning with coarsening and refinement on the GPU.

After Gilbert, Madduri, Boman and Rajamanickam, "Jet: Multilevel graph
partitioning on graphics processing units", SIAM J. Sci. Comput. 46(5), 2024,
written here from the paper's description for NumPy and CuPy alike (``xp``
comes from the arrays):

Coarsening
    Heavy-edge matching: every unmatched vertex proposes to its heaviest
    unmatched neighbour (ties by a seeded hash) and mutual proposals are
    matched, for a few passes.  When many vertices stay unmatched, two-hop
    matching pairs them anyway: *leaves* (degree-1 vertices of one
    neighbour), *twins* (same neighbour set, by a hash of it) and *relatives*
    (same heaviest neighbour).  Matched pairs are contracted (vertex weights
    add, parallel edges merge with their weights added) until the graph has
    about ``max(COARSEST_PER_PART * k, 1000)`` vertices or stops shrinking.
Initial partition
    METIS (pymetis, recursive bisection: on these small weighted graphs
    several times faster than its k-way, with a lower cut) on the coarsest
    graph, with its vertex and edge weights: its top bisections first, then
    up to eight pieces each on its own, side by side in forked processes or
    on the MPI ranks (:mod:`fastapsp.partition.initial`).
Uncoarsening
    At every level, from the projected labels, Jet's refinement iterates:
    while the partition is balanced, *Jetlp*, an unconstrained label
    propagation: each vertex's best other part by connection, candidates
    with a gain >= 0 or a loss below ``c * (connection to own part)``,
    vertices moved in the iteration before locked; the *afterburner* then
    recomputes each candidate's gain as if every candidate of higher priority
    (larger gain, then a seeded hash) had already moved, and only those still
    >= 0 move.  While it is not balanced, *Jetr*: overweight parts give up
    their cheapest vertices (smallest loss of connection, then a seeded hash)
    until their excess is covered, to their best-connected part below a soft
    limit (weak) or, for those next to no such part or that do not fit
    there, to the lightest parts (strong); no destination grows past the
    bound.  The best balanced partition of the level (lowest edge cut) is
    kept; a level ends after ``PATIENCE`` iterations without a better one.
    On coarse levels the bound is relaxed by the heaviest vertex of the
    level (a coarse vertex may weigh more than the slack of a part).

On CuPy (fastapsp/kernels/jet.cu) a matching pass is two kernels; a Jetlp
iteration two kernels (candidates with the edge cut and part weights of the
labels; afterburner with the moves) and one read of the statistics; a Jetr
iteration three kernels that keep, per overweight part, only the vertices
whose loss lies in the buckets that cover its excess, a copy of those rows to
the host, which chooses the moves (a small share of the vertices, quickly
sorted there: docs/kernels.md), and one kernel that applies them.
``kernels=False`` (of :func:`jet_partition` and the steps) runs the array-op
code of the NumPy path on CuPy instead (the reference the kernels are tested
against).

The balance bound is ``ceil((1 + imbalance) * n / k)`` vertices per part.
Everything is a function of the graph and the seed (integer arithmetic, fixed
tie-breaking), so labels are the same for the same seed, on NumPy and on CuPy.
Operations between an array and a scalar are function calls
(``xp.less(a, 0)``); DEVELOPERS.md says why.
"""

from __future__ import annotations

import numpy as np

from ..backend import mark_gpu_warm
from ..errors import BackendError
from ..graph import arc_rows, count_values
from ._arrays import _array_module, _hash32, _stable_argsort, max_part_size
from .initial import initial_labels

__all__ = ["jet", "jet_partition"]

HEM_PASSES = 4
TWO_HOP_BELOW = 0.75  # two-hop matching when fewer than this share of vertices are matched
SHRINK_AT_LEAST = 0.95  # stop coarsening when a level keeps more than this share of vertices
COARSEST_PER_PART = 30  # coarsen until about this many vertices per part
LP_FILTER_COARSE = 0.75  # Jetlp's c on coarse levels
LP_FILTER_FINEST = 0.25  # and on the input graph
PATIENCE = 4  # against 6 and 12: fewer iterations (each a host round trip on the GPU), about the same boundary (docs/kernels.md)
MAX_ITERATIONS = 300
SMALL_DEGREE = 16  # JET_SMALL_DEGREE of jet.cu: longer rows sum their connections in a scratch table


def jet(indptr: np.ndarray, indices: np.ndarray, k: int, *, seed: int, imbalance: float, helpers=None) -> np.ndarray:
    """Labels from Jet on the GPU, for a symmetric CSR structure (the ``jet`` partitioner).

    ``helpers``: who partitions the pieces of the coarsest graph besides this process
    (:class:`fastapsp.partition.initial.RankHelpers`), as :func:`jet_partition`.

    Raises
    ------
    BackendError
        When CuPy is not installed or sees no CUDA device.
    """
    try:
        import cupy
    except ImportError as exc:
        raise BackendError("partitioner 'jet' runs on a GPU and needs cupy: pip install 'fastapsp[gpu]' "
                           "(cupy-cuda13x) or 'fastapsp[gpu-cuda12]'") from exc
    try:
        devices = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as exc:  # no driver, no device
        raise BackendError(f"partitioner 'jet' runs on a GPU: cupy sees no CUDA device ({exc})") from None
    if devices < 1:
        raise BackendError("partitioner 'jet' runs on a GPU: cupy sees no CUDA device")
    labels = jet_partition(cupy.asarray(indptr), cupy.asarray(indices), k, seed=seed, imbalance=imbalance,
                           helpers=helpers)
    labels = cupy.asnumpy(labels).astype(np.int32)
    mark_gpu_warm()
    return labels


# ------------------------------------------------------------------ helpers
_BLOCK = 256  # a whole number of warps (jet_lp_candidates reduces over warps)
_MASK32 = 0xFFFFFFFF


def _kernels(xp, kernels: bool) -> bool:
    """Whether the kernels of jet.cu run: on CuPy, when ``kernels`` asks for them."""
    return xp is not np and bool(kernels)


def _launch(name: str, n: int, *args) -> None:
    """Run kernel ``name`` of ``fastapsp/kernels/jet.cu`` with one thread per each of ``n`` items."""
    from ..kernels import get_kernel

    if n > 0:
        get_kernel("jet.cu", name)((-(-n // _BLOCK),), (_BLOCK,), args)


def _host(a) -> np.ndarray:
    return a.get() if type(a).__module__.startswith("cupy") else np.asarray(a)


def _row_sums(xp, indptr, values):
    """Sum of ``values`` (one per arc) over every CSR row, exact for integers."""
    total = xp.zeros(values.shape[0] + 1, dtype=xp.int64)
    total[1:] = xp.cumsum(values.astype(xp.int64))
    return total[indptr[1:]] - total[indptr[:-1]]


def _group_starts(xp, sorted_keys):
    start = xp.ones(sorted_keys.shape[0], dtype=bool)
    start[1:] = sorted_keys[1:] != sorted_keys[:-1]
    return start


def _group_sums(xp, start, values):
    """Sums of ``values`` over runs that begin where ``start`` is True."""
    total = xp.zeros(values.shape[0] + 1, dtype=xp.int64)
    total[1:] = xp.cumsum(values.astype(xp.int64))
    first = xp.flatnonzero(start)
    last = xp.empty_like(first)
    last[:-1] = first[1:]
    last[-1:] = values.shape[0]
    return total[last] - total[first]


def _before_in_run(xp, keys, values):
    """For ``keys`` sorted into runs: the sum of ``values`` before each item within its run."""
    cum = xp.cumsum(values)
    first = xp.searchsorted(keys, keys, side="left")
    return cum - values - xp.where(first > 0, cum[xp.maximum(first - 1, 0)], 0)


def _first_per_key(xp, keys, *tiebreaks):
    """Order that sorts by ``keys`` then by each of ``tiebreaks`` (ascending), and the first-of-key mask."""
    order = xp.arange(keys.shape[0], dtype=xp.int64)
    for t in reversed(tiebreaks):
        order = order[_stable_argsort(xp, t[order])]
    order = order[_stable_argsort(xp, keys[order])]
    return order, _group_starts(xp, keys[order])


class _Level:
    """One graph of the hierarchy: CSR with edge weights, vertex weights, and the map to the next coarser one."""

    def __init__(self, xp, indptr, indices, eweights, vweights, rows=None):
        # Not copied when already int64: levels never change their arrays.
        self.indptr = indptr.astype(xp.int64, copy=False)
        self.indices = indices.astype(xp.int64, copy=False)
        self.eweights = eweights.astype(xp.int64, copy=False)
        self.vweights = vweights.astype(xp.int64, copy=False)
        self.n = int(indptr.shape[0]) - 1
        self.m = int(indices.shape[0])
        self.rows = arc_rows(xp, self.indptr, self.m) if rows is None else rows  # the row of every arc
        self.coarse_map = None
        self._tables = None

    def tables(self, xp):
        """Scratch of the kernels' connection tables (2 slots per arc when a row is longer than SMALL_DEGREE)."""
        if self._tables is None:
            longest = int((self.indptr[1:] - self.indptr[:-1]).max()) if self.n else 0
            slots = 2 * self.m if longest > SMALL_DEGREE else 1
            self._tables = (xp.full(slots, -1, dtype=xp.int32), xp.zeros(slots, dtype=xp.int64))
        return self._tables


# ------------------------------------------------------------------ coarsening
def _heaviest_neighbour(xp, g: _Level, allowed, salt: int, *, kernels: bool = True):
    """Per vertex: the neighbour over the heaviest allowed arc (ties: larger hash), or -1."""
    n = g.n
    if _kernels(xp, kernels):  # the same choice, one thread per vertex
        best = xp.empty(n, dtype=xp.int64)
        _launch("jet_heaviest_neighbour", n, g.indptr, g.indices, g.eweights, xp.ascontiguousarray(allowed),
                np.uint32(salt & _MASK32), np.int64(n), best)
        return best
    best = xp.full(n, -1, dtype=xp.int64)
    arcs = xp.flatnonzero(allowed)
    if arcs.shape[0] == 0:
        return best
    rows, cols, w = g.rows[arcs], g.indices[arcs], g.eweights[arcs]
    h = _hash32(xp, cols, salt).astype(xp.int64)
    order, first = _first_per_key(xp, rows, -w, -h)
    pick = order[first]
    best[rows[pick]] = cols[pick]
    return best


def _pair_by_key(xp, vertices, keys, mate, vweights, cap: int):
    """Match consecutive ``vertices`` of equal key (1st with 2nd, 3rd with 4th, ...) within the weight cap."""
    if vertices.shape[0] < 2:
        return
    order = _stable_argsort(xp, keys)
    vertices, keys = vertices[order], keys[order]
    place = xp.arange(vertices.shape[0], dtype=xp.int64)
    rank = place - xp.searchsorted(keys, keys, side="left")
    following = xp.add(place, 1)
    nxt = xp.minimum(following, vertices.shape[0] - 1)
    pair = (xp.equal(xp.remainder(rank, 2), 0) & xp.less(following, vertices.shape[0]) & (keys[nxt] == keys)
            & (nxt != place))
    a, b = vertices[pair], vertices[nxt[pair]]
    fits = xp.less_equal(vweights[a] + vweights[b], cap)
    a, b = a[fits], b[fits]
    mate[a] = b
    mate[b] = a


def _heavy_edge_matching(xp, g: _Level, cap: int, salt: int, *, kernels: bool = True):
    """Up to HEM_PASSES passes of mutual heaviest-neighbour proposals (salts ``salt + pass``).

    The passes stop after one that matches nobody.
    """
    n = g.n
    mate = xp.full(n, -1, dtype=xp.int64)
    if _kernels(xp, kernels):  # two kernels a pass; the stop is a flag on the device (no host round trip)
        go = xp.zeros(HEM_PASSES + 1, dtype=xp.int32)
        go[0] = 1
        want = xp.empty(n, dtype=xp.int64)
        for p in range(HEM_PASSES):
            _launch("jet_propose", n, g.indptr, g.indices, g.eweights, g.vweights, mate, go[p:p + 1], np.int64(cap),
                    np.uint32((salt + p) & _MASK32), np.int64(n), want)
            _launch("jet_mutual", n, want, np.int64(n), mate, go[p + 1:p + 2])
        return mate
    weight_ok = xp.less_equal(g.vweights[g.rows] + g.vweights[g.indices], cap)
    for p in range(HEM_PASSES):
        free = xp.less(mate, 0)
        allowed = weight_ok & free[g.rows] & free[g.indices]
        want = _heaviest_neighbour(xp, g, allowed, salt + p, kernels=kernels)
        has = xp.greater_equal(want, 0)
        mutual = xp.zeros(n, dtype=bool)
        mutual[has] = want[want[has]] == xp.arange(n, dtype=xp.int64)[has]
        if not bool(mutual.any()):
            break
        v = xp.flatnonzero(mutual)
        mate[v] = want[v]
    return mate


def _match(xp, g: _Level, cap: int, seed: int, level: int, *, kernels: bool = True):
    """Heavy-edge matching, then two-hop matching (leaves, twins, relatives) when too few are matched."""
    n = g.n
    mate = _heavy_edge_matching(xp, g, cap, seed * 7919 + level * 131, kernels=kernels)
    if int(xp.count_nonzero(xp.greater_equal(mate, 0))) >= TWO_HOP_BELOW * n:
        return mate
    degree = g.indptr[1:] - g.indptr[:-1]
    # Leaves: degree-1 vertices hanging from the same neighbour.
    free = xp.flatnonzero(xp.less(mate, 0) & xp.equal(degree, 1))
    _pair_by_key(xp, free, g.indices[g.indptr[free]], mate, g.vweights, cap)
    # Twins: same degree and same neighbour set (compared through a hash of the set).
    free_mask = xp.less(mate, 0)
    hashed = xp.bitwise_and(_row_sums(xp, g.indptr, _hash32(xp, g.indices, seed + 17).astype(xp.int64)),
                            (1 << 40) - 1)
    free = xp.flatnonzero(free_mask & xp.greater(degree, 1))
    _pair_by_key(xp, free, xp.multiply(degree[free], 1 << 40) + hashed[free], mate, g.vweights, cap)
    # Relatives: same heaviest neighbour, matched or not.
    hub = _heaviest_neighbour(xp, g, xp.ones(g.indices.shape[0], dtype=bool), seed * 31 + level, kernels=kernels)
    free = xp.flatnonzero(xp.less(mate, 0) & xp.greater_equal(hub, 0))
    _pair_by_key(xp, free, hub[free], mate, g.vweights, cap)
    return mate


def _contract(xp, g: _Level, mate, *, kernels: bool = True):
    """The coarse graph of a matching; sets ``g.coarse_map``.

    Coarse vertices are numbered in the order of their smaller fine vertex; a
    coarse row lists its neighbours in increasing order, each once, with the
    weights of the fine arcs between the two added up.
    """
    n = g.n
    if _kernels(xp, kernels) and n:  # five kernels, two sums, one sort, two reads of a size
        return _contract_kernels(xp, g, mate)
    me = xp.arange(n, dtype=xp.int64)
    mate = xp.where(xp.less(mate, 0), me, mate)
    leader = xp.minimum(me, mate)
    is_leader = leader == me
    cid = xp.subtract(xp.cumsum(is_leader.astype(xp.int64)), 1)
    cmap = cid[leader]
    nc = int(cid[-1]) + 1 if n else 0
    vw = xp.zeros(nc, dtype=xp.int64)
    lead = xp.flatnonzero(is_leader)
    vw[cmap[lead]] = g.vweights[lead] + xp.where(mate[lead] != lead, g.vweights[mate[lead]], 0)
    cu, cv = cmap[g.rows], cmap[g.indices]
    keep = cu != cv
    key = xp.multiply(cu[keep], nc) + cv[keep]
    order = _stable_argsort(xp, key)
    key = key[order]
    w = g.eweights[keep][order]
    if key.shape[0]:
        start = _group_starts(xp, key)
        weights = _group_sums(xp, start, w)
        gkey = key[start]
    else:
        weights = gkey = xp.zeros(0, dtype=xp.int64)
    crow = xp.floor_divide(gkey, max(nc, 1))
    ccol = gkey - xp.multiply(crow, nc)
    indptr = xp.zeros(nc + 1, dtype=xp.int64)
    indptr[1:] = xp.cumsum(count_values(xp, crow, nc))
    g.coarse_map = cmap
    return _Level(xp, indptr, ccol, weights, vw)


def _contract_kernels(xp, g: _Level, mate):
    """:func:`_contract` by the kernels of jet.cu: the same coarse graph."""
    n, m = g.n, g.m
    mate = xp.ascontiguousarray(mate, dtype=xp.int64)
    numbered = xp.empty(n, dtype=xp.int64)
    _launch("jet_leaders", n, mate, np.int64(n), numbered)
    numbered = xp.cumsum(numbered)
    nc = int(numbered[-1])
    cmap, vw = xp.empty(n, dtype=xp.int64), xp.empty(nc, dtype=xp.int64)
    _launch("jet_coarse_map", n, mate, numbered, g.vweights, np.int64(n), cmap, vw)
    key = xp.empty(m, dtype=xp.int64)
    _launch("jet_coarse_keys", m, g.rows, g.indices, cmap, np.int64(m), np.int64(nc), key)
    order = xp.argsort(key)  # equal keys need no order: their weights are added
    key, w = key[order], g.eweights[order]
    start = xp.empty(m, dtype=xp.int64)
    _launch("jet_coarse_starts", m, key, np.int64(m), start)
    start = xp.cumsum(start)
    arcs = int(start[-1]) if m else 0
    crow, ccol = xp.empty(arcs, dtype=xp.int64), xp.empty(arcs, dtype=xp.int64)
    weights, count = xp.zeros(arcs, dtype=xp.int64), xp.zeros(nc, dtype=xp.int64)
    _launch("jet_coarse_arcs", m, key, w, start, np.int64(m), np.int64(nc), crow, ccol, weights, count)
    indptr = xp.zeros(nc + 1, dtype=xp.int64)
    xp.cumsum(count, out=indptr[1:])
    g.coarse_map = cmap
    return _Level(xp, indptr, ccol, weights, vw, rows=crow)


# ------------------------------------------------------------------ refinement
def _connections(xp, g: _Level, labels, k: int, allowed_part=None):
    """Per vertex: best other part by connection (-1 if none), that connection, and the own-part connection.

    ``allowed_part`` (bool per part) limits the other parts considered.  (The
    array-op form of ``jet_connections_of`` in jet.cu.)
    """
    n = g.n
    same = labels[g.rows] == labels[g.indices]
    own = _row_sums(xp, g.indptr, xp.where(same, g.eweights, 0))
    best = xp.full(n, -1, dtype=xp.int64)
    conn = xp.zeros(n, dtype=xp.int64)
    other = ~same
    if allowed_part is not None:
        other &= allowed_part[labels[g.indices]]
    arcs = xp.flatnonzero(other)
    if arcs.shape[0] == 0:
        return best, conn, own
    key = xp.multiply(g.rows[arcs], k) + labels[g.indices[arcs]].astype(xp.int64)
    order = _stable_argsort(xp, key)
    key = key[order]
    start = _group_starts(xp, key)
    sums = _group_sums(xp, start, g.eweights[arcs][order])
    gkey = key[start]
    gv = xp.floor_divide(gkey, k)
    gp = gkey - xp.multiply(gv, k)
    order, first = _first_per_key(xp, gv, -sums, gp)
    pick = order[first]
    best[gv[pick]] = gp[pick]
    conn[gv[pick]] = sums[pick]
    return best, conn, own


def _lp_candidates(xp, g: _Level, labels, locked, sizes, k: int, c: float, stats=None, *, kernels: bool = True):
    """Jetlp's destination, gain and candidate mask of every vertex, and ``[2 * edge cut, *part weights]``.

    On the kernel path ``stats`` is a pair of rows of ``k + 1`` int64 on the
    device: the statistics go into the first (its element 0 is zero before),
    which is returned, and element 0 of the second is set to zero (the next
    call gets the rows the other way round).
    """
    n = g.n
    if _kernels(xp, kernels):
        dest, gain = xp.empty(n, dtype=xp.int64), xp.empty(n, dtype=xp.int64)
        cand = xp.empty(n, dtype=bool)
        keys, sums = g.tables(xp)
        _launch("jet_lp_candidates", max(n, k), g.indptr, g.indices, g.eweights, labels, locked, sizes, np.int64(k),
                np.float64(c), np.int64(n), keys, sums, dest, gain, cand, stats[0], stats[1])
        return dest, gain, cand, stats[0]
    dest, conn, own = _connections(xp, g, labels, k)
    gain = conn - own
    cand = (xp.greater_equal(dest, 0) & ~locked
            & (xp.greater_equal(gain, 0) | (-gain < xp.floor(xp.multiply(c, own)).astype(xp.int64))))
    foreign = (g.eweights.sum() - own.sum()).reshape(1)
    return dest, gain, cand, xp.concatenate([foreign, sizes]).astype(xp.int64)


def _lp_move(xp, g: _Level, labels, dest, gain, cand, sizes, salt: int, *, kernels: bool = True):
    """The afterburner and the moves of Jetlp: new labels, the moved mask and the new part weights.

    A candidate's gain is recomputed as if every candidate of higher priority
    (larger gain, then larger hash) had moved; it moves when that gain is >= 0.
    The kernel path updates ``sizes`` in place.
    """
    n = g.n
    if _kernels(xp, kernels):
        new, moved = xp.empty(n, dtype=xp.int32), xp.empty(n, dtype=bool)
        _launch("jet_lp_move", n, g.indptr, g.indices, g.eweights, g.vweights, labels, dest, gain, cand,
                np.uint32(salt & _MASK32), np.int64(n), new, moved, sizes)
        return new, moved, sizes
    h = _hash32(xp, xp.arange(n, dtype=xp.int64), salt).astype(xp.int64)
    r, u = g.rows, g.indices
    ahead = cand[u] & ((gain[u] > gain[r]) | ((gain[u] == gain[r]) & (h[u] > h[r])))
    where = xp.where(ahead, dest[u], labels[u].astype(xp.int64))
    delta = g.eweights * ((where == dest[r]).astype(xp.int64) - (where == labels[r]).astype(xp.int64))
    move = cand & xp.greater_equal(_row_sums(xp, g.indptr, delta), 0)
    v = xp.flatnonzero(move)
    new, sizes = _apply_moves(xp, g, labels, sizes, v, dest[v], k=sizes.shape[0], kernels=kernels)
    return new, move, sizes


def _apply_moves(xp, g: _Level, labels, sizes, vertices, to, *, k: int, kernels: bool = True):
    """Labels with ``vertices[i]`` moved to part ``to[i]`` (a copy) and the part weights after the moves.

    The kernel path updates ``sizes`` in place.
    """
    new = labels.copy()
    if _kernels(xp, kernels):
        _launch("jet_apply_moves", int(vertices.shape[0]), vertices, to, g.vweights, np.int64(vertices.shape[0]), new,
                sizes)
        return new, sizes
    w = g.vweights[vertices]
    sizes = sizes - _bin_weights(xp, labels[vertices], w, k) + _bin_weights(xp, to, w, k)
    new[vertices] = to.astype(labels.dtype)
    return new, sizes


def _loss_bucket(xp, loss):
    """``jet_loss_bucket`` of jet.cu: 0 for loss <= 0, the loss itself up to 63, then 57 + its bit length."""
    bits = xp.searchsorted(xp.asarray(_POWERS_OF_TWO), loss, side="right")  # the bit length for loss >= 1
    return xp.where(xp.less_equal(loss, 0), 0, xp.where(xp.less(loss, 64), loss, xp.add(57, bits))).astype(xp.int64)


_POWERS_OF_TWO = 1 << np.arange(63, dtype=np.int64)
BUCKETS = 89  # loss buckets 0..88


def _rebalance_rows(xp, g: _Level, labels, sizes, k: int, bound: int, soft: int, salt: int, scratch=None, *,
                    kernels: bool = True):
    """The rows ``(vertex, part, destination, key, weight)`` on the host, of the vertices that may rebalance.

    For a vertex of an overweight part: the best-connected part below ``soft``
    (-1 if none) and the key of its move, ``clip(loss, -2**31, 2**31 - 1) * 2**32
    + hash(v)`` (``loss``: own connection minus that part's).  Rows are kept for
    the vertices whose loss bucket is at most the first bucket at which the
    part's weight so far covers its excess: a superset of those
    :func:`_jetr_moves` takes, so the moves are those of all the vertices.
    Rows come in no particular order (the keys are distinct).  ``scratch`` is the
    kernel path's ``(hist, rows)`` buffers.
    """
    n = g.n
    if _kernels(xp, kernels):
        hist, rows = scratch
        dest, key = xp.empty(n, dtype=xp.int64), xp.empty(n, dtype=xp.int64)
        cutoff = xp.empty(k, dtype=xp.int64)
        count = xp.zeros(1, dtype=xp.uint64)
        keys, sums = g.tables(xp)
        _launch("jet_rebalance_candidates", n, g.indptr, g.indices, g.eweights, g.vweights, labels, sizes,
                np.int64(bound), np.int64(soft), np.uint32(salt & _MASK32), np.int64(BUCKETS), np.int64(n), keys, sums,
                dest, key, hist)
        _launch("jet_rebalance_cutoff", k, sizes, np.int64(bound), np.int64(BUCKETS), np.int64(k), hist, cutoff)
        _launch("jet_rebalance_rows", n, dest, key, labels, g.vweights, cutoff, np.int64(n), count, rows)
        return _host(rows[:int(_host(count)[0])])
    dest, conn, own = _connections(xp, g, labels, k, allowed_part=xp.less(sizes, soft))
    v = xp.flatnonzero(xp.greater(sizes[labels], bound))
    src = labels[v].astype(xp.int64)
    loss = xp.clip((own - conn)[v], -(1 << 31), (1 << 31) - 1)
    key = xp.multiply(loss, 1 << 32) + _hash32(xp, v, salt).astype(xp.int64)
    w = g.vweights[v]
    bucket = _loss_bucket(xp, loss)
    hist = _bin_weights(xp, xp.multiply(src, BUCKETS) + bucket, w, k * BUCKETS).reshape(k, BUCKETS)
    covered = xp.cumsum(hist, axis=1) >= xp.subtract(sizes, bound)[:, None]
    cutoff = xp.argmax(covered.astype(xp.int8), axis=1)  # the first True (rows of overweight parts have one)
    keep = bucket <= cutoff[src]
    return _host(xp.stack([v, src, dest[v], key, w], axis=1)[keep])


def _jetr_moves(rows, sizes, k: int, bound: int, soft: int):
    """One rebalancing step on the host: the vertices to move and their parts (NumPy arrays).

    Every overweight part gives up its cheapest vertices (by key: loss, then
    hash) until its excess is covered.  Weak moves: to the vertex's
    best-connected part below ``soft``, each destination admitting its movers
    in that order while it stays within ``bound``; strong moves: the others to
    the parts below ``soft``, the lightest first, none past ``bound``.
    """
    v, src, dest, key, w = (rows[:, i] for i in range(5))
    order = np.lexsort((key, src))
    v, src, dest, w = v[order], src[order], dest[order], w[order]
    take = _before_in_run(np, src, w) < (sizes - bound)[src]
    v, dest, w = v[take], dest[take], w[take]
    to = np.full(v.shape[0], -1, dtype=np.int64)
    # Weak: each destination admits its movers in order while it stays within the bound.
    near = np.flatnonzero(dest >= 0)
    near = near[np.argsort(dest[near], kind="stable")]
    dn, wn = dest[near], w[near]
    fits = near[_before_in_run(np, dn, wn) + wn <= bound - sizes[dn]]
    to[fits] = dest[fits]
    after = sizes + np.bincount(dest[fits], weights=w[fits], minlength=k).astype(np.int64)
    # Strong: the others fill the parts below soft one after the other (most room first), none past the bound.
    rest = np.flatnonzero(to < 0)
    parts = np.flatnonzero(after < soft)
    if rest.shape[0] and parts.shape[0]:
        parts = parts[np.argsort(after[parts], kind="stable")]
        capacity = np.cumsum(bound - after[parts])
        wr = w[rest]
        end = np.cumsum(wr)
        slot = np.searchsorted(capacity, end - wr, side="right")
        inside = np.minimum(slot, parts.shape[0] - 1)
        ok = (slot < parts.shape[0]) & (end <= capacity[inside])
        to[rest[ok]] = parts[inside[ok]]
    moving = np.flatnonzero(to >= 0)
    return v[moving], to[moving]


def _bin_weights(xp, bins, weights, k: int):
    """Sum of integer ``weights`` per bin ``0..k-1`` (exact: a sort and cumulative sums)."""
    out = xp.zeros(k, dtype=xp.int64)
    if bins.shape[0] == 0:
        return out
    if xp is np:
        return np.bincount(bins, weights=weights, minlength=k).astype(np.int64)  # exact below 2**53
    bins = bins.astype(xp.int64)
    order = _stable_argsort(xp, bins)
    b = bins[order]
    start = _group_starts(xp, b)
    out[b[start]] = _group_sums(xp, start, weights[order])
    return out


def _part_weights(xp, labels, vweights, k: int, *, kernels: bool = True):
    """Vertex weight of every part (integer atomics on the GPU: the same sums in any order)."""
    if not _kernels(xp, kernels):
        return _bin_weights(xp, labels, vweights, k)
    out = xp.zeros(k, dtype=xp.int64)
    _launch("jet_part_weights", int(labels.shape[0]), labels, vweights, np.int64(labels.shape[0]), out)
    return out


def _refine_level(xp, g: _Level, labels, k: int, bound: int, *, total: int, c: float, seed: int, level: int,
                  patience: int = PATIENCE, kernels: bool = True):
    """Jetlp while balanced, Jetr while not; the best balanced labels of the level (else the least unbalanced).

    One host round trip per Jetlp iteration (the cut and the part weights of
    the labels), three per Jetr iteration (those, the rows, the moves back).
    """
    kernels = _kernels(xp, kernels)
    labels = labels.astype(xp.int32)
    sizes = _part_weights(xp, labels, g.vweights, k, kernels=kernels)
    soft = max(1, (total + k * bound) // (2 * k))  # half-way from the average part to the bound
    locked = xp.zeros(g.n, dtype=bool)
    if kernels:
        stats = xp.zeros((2, k + 1), dtype=xp.int64)  # this iteration's statistics and the next's
        scratch = (xp.zeros(k * BUCKETS, dtype=xp.int64), xp.empty((g.n, 5), dtype=xp.int64))
    best, best_key = labels, None
    stall = 0
    for it in range(MAX_ITERATIONS):
        dest, gain, cand, row = _lp_candidates(xp, g, labels, locked, sizes, k, c,
                                               (stats[it % 2], stats[1 - it % 2]) if kernels else None,
                                               kernels=kernels)
        row = _host(row)
        sizes_now = row[1:]
        largest = int(sizes_now.max())
        key = (max(largest - bound, 0), int(row[0]) // 2)
        if best_key is None or key < best_key:
            if best_key is not None and key[0] == best_key[0] == 0 and key[1] >= 0.999 * best_key[1]:
                stall += 1  # better, but by too little to count as progress
            else:
                stall = 0
            best, best_key = labels, key
        else:
            stall += 1
        if stall >= patience:
            break
        salt = seed * 1_000_003 + level * 10_007 + it
        if largest > bound:
            rows = _rebalance_rows(xp, g, labels, sizes, k, bound, soft, salt, scratch if kernels else None,
                                   kernels=kernels)
            vertices, to = _jetr_moves(rows, sizes_now, k, bound, soft)
            labels, sizes = _apply_moves(xp, g, labels, sizes, xp.asarray(vertices), xp.asarray(to), k=k,
                                         kernels=kernels)
            locked = xp.zeros(g.n, dtype=bool)
        else:
            labels, locked, sizes = _lp_move(xp, g, labels, dest, gain, cand, sizes, salt, kernels=kernels)
    return best


# ------------------------------------------------------------------ driver
def jet_partition(indptr, indices, k: int, *, seed: int, imbalance: float, coarsest: int | None = None,
                  kernels: bool = True, helpers=None):
    """Jet on NumPy or CuPy arrays (the array module of ``indptr``); labels on that module.

    Parameters
    ----------
    indptr, indices : ndarray
        Symmetric CSR structure without self loops or duplicate arcs.
    k : int
        Number of parts, ``1 <= k <= n``.
    seed : int
        Seed of the matching and refinement ties and of METIS on the coarsest graph.
    imbalance : float
        Parts hold at most ``ceil((1 + imbalance) * n / k)`` vertices.
    coarsest : int, optional
        Coarsen until at most this many vertices (default ``max(COARSEST_PER_PART * k, 1000)``).
    kernels : bool
        On CuPy, run the per-vertex steps as the kernels of ``jet.cu`` (default)
        or, when False, as the array operations of the NumPy path: the same labels.
    helpers : callable, optional
        Who partitions the pieces of the coarsest graph: by default this
        process (forked workers where that pays); under MPI rank 0's
        :class:`fastapsp.partition.initial.RankHelpers`.  The same labels either way.

    Returns
    -------
    ndarray of int32, shape (n,)

    Examples
    --------
    >>> import numpy as np
    >>> indptr = np.array([0, 1, 3, 5, 7, 9, 10]); indices = np.array([1, 0, 2, 1, 3, 2, 4, 3, 5, 4])
    >>> labels = jet_partition(indptr, indices, 2, seed=1, imbalance=0.0)  # path of 6 vertices
    >>> bool(labels[0] == labels[1] == labels[2] != labels[3] == labels[4] == labels[5])
    True
    """
    xp = _array_module(indptr)
    n = int(indptr.shape[0]) - 1
    k = int(k)
    if not 1 <= k <= max(n, 1):
        raise ValueError(f"k: {k} is outside 1..{n}")
    if n > 0x7FFFFFFF:
        raise ValueError(f"indptr: {n} vertices, jet handles up to 2**31 - 1")
    if k == 1 or n == 0:
        return xp.zeros(n, dtype=xp.int32)
    bound = max_part_size(n, k, imbalance)
    target = max(COARSEST_PER_PART * k, 1000) if coarsest is None else int(coarsest)
    m = int(indices.shape[0])
    levels = [_Level(xp, indptr, indices, xp.ones(m, dtype=xp.int64), xp.ones(n, dtype=xp.int64))]
    while levels[-1].n > target:
        g = levels[-1]
        # No coarse vertex heavier than 1.5 times an average vertex of the coarsest graph.
        cap = max(2, int(1.5 * n / target))
        coarse = _contract(xp, g, _match(xp, g, cap, seed, len(levels), kernels=kernels), kernels=kernels)
        if coarse.n > SHRINK_AT_LEAST * g.n:
            g.coarse_map = None
            break
        levels.append(coarse)
    labels = _initial_partition(xp, levels[-1], k, seed=seed, imbalance=imbalance, helpers=helpers)
    for depth in range(len(levels) - 1, -1, -1):
        g = levels[depth]
        if depth < len(levels) - 1:
            labels = labels[g.coarse_map]
        # Coarse vertices may weigh more than the slack of a part: the bound there allows the heaviest one.
        level_bound = bound if depth == 0 else max(bound, n // k + int(g.vweights.max()))
        c = LP_FILTER_FINEST if depth == 0 else LP_FILTER_COARSE
        labels = _refine_level(xp, g, labels, k, level_bound, total=n, c=c, seed=seed, level=depth,
                               kernels=kernels)
    return labels.astype(xp.int32)


def _initial_partition(xp, g: _Level, k: int, *, seed: int, imbalance: float, helpers=None):
    """METIS on the coarsest graph, on the host (it is small), in pieces (:func:`~fastapsp.partition.initial.initial_labels`)."""
    labels = initial_labels(_host(g.indptr), _host(g.indices), int(k), seed=seed, imbalance=imbalance,
                            vweights=_host(g.vweights), eweights=_host(g.eweights), solve=helpers)
    return xp.asarray(labels)
