"""Jet: multilevel k-way partitioning with coarsening and refinement on the GPU.

After Gilbert, Madduri, Boman and Rajamanickam, "Jet: Multilevel graph
partitioning on graphics processing units", SIAM J. Sci. Comput. 46(5), 2024,
written here from the paper's description for NumPy and CuPy alike (``xp``
comes from the arrays; sorts, cumulative sums and ``bincount`` only):

Coarsening
    Heavy-edge matching: every unmatched vertex proposes to its heaviest
    unmatched neighbour (ties by a seeded hash) and mutual proposals are
    matched, for a few passes.  When many vertices stay unmatched, two-hop
    matching pairs them anyway: *leaves* (degree-1 vertices of one
    neighbour), *twins* (same neighbour set, by a hash of it) and *relatives*
    (same heaviest neighbour).  Matched pairs are contracted (vertex weights
    add, parallel edges merge with their weights added) until the graph has
    about ``max(30 k, 1000)`` vertices or stops shrinking.
Initial partition
    METIS (pymetis) on the coarsest graph, with its vertex and edge weights.
Uncoarsening
    At every level, from the projected labels, Jet's refinement iterates:
    while the partition is balanced, *Jetlp*, an unconstrained label
    propagation: each vertex's best other part by connection, candidates
    with a gain >= 0 or a loss below ``c * (connection to own part)``,
    vertices moved in the iteration before locked; the *afterburner* then
    recomputes each candidate's gain as if every higher-priority candidate
    had already moved, and only those still >= 0 move.  While it is not
    balanced, *Jetr*: overweight parts give up their cheapest vertices
    (smallest loss of connection) until their excess is covered, to the
    best-connected part with room (weak) or, for vertices next to no part
    with room, to the parts with room by order of need (strong).  The best
    balanced partition of the level (lowest edge cut) is kept; a level ends
    after ``patience`` iterations without a better one.

The balance bound is ``ceil((1 + imbalance) * n / k)`` vertices per part.
Everything is a function of the graph and the seed, so labels are the same
for the same seed, and the same on NumPy and on CuPy.
"""

from __future__ import annotations

import os

import numpy as np

from ..errors import BackendError
from .refine import _count, _hash32, _stable_argsort, max_part_size

__all__ = ["jet", "jet_partition"]

HEM_PASSES = 4
TWO_HOP_BELOW = 0.75  # two-hop matching when fewer than this share of vertices are matched
SHRINK_AT_LEAST = 0.95  # stop coarsening when a level keeps more than this share of vertices
LP_FILTER_COARSE = 0.75  # Jetlp's c on coarse levels
LP_FILTER_FINEST = 0.25  # and on the input graph
PATIENCE = 12
MAX_ITERATIONS = 300


def jet(indptr: np.ndarray, indices: np.ndarray, k: int, *, seed: int, imbalance: float) -> np.ndarray:
    """Labels from Jet on the GPU, for a symmetric CSR structure (the ``jet`` partitioner).

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
    labels = jet_partition(cupy.asarray(indptr), cupy.asarray(indices), k, seed=seed, imbalance=imbalance)
    return cupy.asnumpy(labels).astype(np.int32)


# ------------------------------------------------------------------ helpers
_BLOCK = 256
# The kernels of fastapsp/kernels/jet.cu replace four array-op steps of the CuPy path.  They are
# opt-in (FASTAPSP_JET_KERNELS=1) until they have run on a GPU: the first device run of their
# tests did not finish in 200 s.  Without them the CuPy path is the array-op one, as measured
# in benchmarks/results/h100-partition.
_KERNELS = os.environ.get("FASTAPSP_JET_KERNELS") == "1"


def _launch(name: str, n: int, *args) -> None:
    """Run kernel ``name`` of ``fastapsp/kernels/jet.cu`` with one thread per each of ``n`` items."""
    from ..kernels import get_kernel

    get_kernel("jet.cu", name)((max(1, -(-n // _BLOCK)),), (_BLOCK,), args)


def _array_module(a):
    if type(a).__module__.startswith("cupy"):
        import cupy

        return cupy
    return np


def _rows(xp, indptr, m: int):
    return (xp.searchsorted(indptr, xp.arange(m, dtype=xp.int64), side="right") - 1).astype(xp.int64)


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


def _first_per_key(xp, keys, *tiebreaks):
    """Order that sorts by ``keys`` then by each of ``tiebreaks`` (ascending), and the first-of-key mask."""
    order = xp.arange(keys.shape[0], dtype=xp.int64)
    for t in reversed(tiebreaks):
        order = order[_stable_argsort(xp, t[order])]
    order = order[_stable_argsort(xp, keys[order])]
    return order, _group_starts(xp, keys[order])


class _Level:
    """One graph of the hierarchy: CSR with edge weights, vertex weights, and the map to the next coarser one."""

    def __init__(self, xp, indptr, indices, eweights, vweights):
        self.indptr = indptr.astype(xp.int64)
        self.indices = indices.astype(xp.int64)
        self.eweights = eweights.astype(xp.int64)
        self.vweights = vweights.astype(xp.int64)
        self.n = int(indptr.shape[0]) - 1
        self.rows = _rows(xp, self.indptr, int(indices.shape[0]))
        self.coarse_map = None


# ------------------------------------------------------------------ coarsening
def _heaviest_neighbour(xp, g: _Level, allowed, salt: int):
    """Per vertex: the neighbour over the heaviest allowed arc (ties: larger hash), or -1."""
    n = g.n
    if xp is not np and _KERNELS:  # the same choice, one thread per vertex
        best = xp.empty(n, dtype=xp.int64)
        _launch("jet_heaviest_neighbour", n, g.indptr, g.indices, g.eweights, xp.ascontiguousarray(allowed),
                np.uint32(salt & 0xFFFFFFFF), np.int64(n), best)
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
    nxt = xp.minimum(place + 1, vertices.shape[0] - 1)
    pair = (rank % 2 == 0) & (place + 1 < vertices.shape[0]) & (keys[nxt] == keys) & (nxt != place)
    a, b = vertices[pair], vertices[nxt[pair]]
    fits = vweights[a] + vweights[b] <= cap
    a, b = a[fits], b[fits]
    mate[a] = b
    mate[b] = a


def _match(xp, g: _Level, cap: int, seed: int, level: int):
    """Heavy-edge matching, then two-hop matching (leaves, twins, relatives) when too few are matched."""
    n = g.n
    mate = xp.full(n, -1, dtype=xp.int64)
    weight_ok = g.vweights[g.rows] + g.vweights[g.indices] <= cap
    for p in range(HEM_PASSES):
        free = mate < 0
        allowed = weight_ok & free[g.rows] & free[g.indices]
        want = _heaviest_neighbour(xp, g, allowed, seed * 7919 + level * 131 + p)
        has = want >= 0
        mutual = xp.zeros(n, dtype=bool)
        mutual[has] = want[want[has]] == xp.arange(n, dtype=xp.int64)[has]
        if not bool(mutual.any()):
            break
        v = xp.flatnonzero(mutual)
        mate[v] = want[v]
    if int(xp.count_nonzero(mate >= 0)) >= TWO_HOP_BELOW * n:
        return mate
    degree = g.indptr[1:] - g.indptr[:-1]
    # Leaves: degree-1 vertices hanging from the same neighbour.
    free = xp.flatnonzero((mate < 0) & (degree == 1))
    _pair_by_key(xp, free, g.indices[g.indptr[free]], mate, g.vweights, cap)
    # Twins: same degree and same neighbour set (compared through a hash of the set).
    free_mask = mate < 0
    hashed = _row_sums(xp, g.indptr, _hash32(xp, g.indices, seed + 17).astype(xp.int64)) & ((1 << 40) - 1)
    free = xp.flatnonzero(free_mask & (degree > 1))
    _pair_by_key(xp, free, degree[free] * (1 << 40) + hashed[free], mate, g.vweights, cap)
    # Relatives: same heaviest neighbour, matched or not.
    hub = _heaviest_neighbour(xp, g, xp.ones(g.indices.shape[0], dtype=bool), seed * 31 + level)
    free = xp.flatnonzero((mate < 0) & (hub >= 0))
    _pair_by_key(xp, free, hub[free], mate, g.vweights, cap)
    return mate


def _contract(xp, g: _Level, mate):
    """The coarse graph of a matching; sets ``g.coarse_map``."""
    n = g.n
    me = xp.arange(n, dtype=xp.int64)
    mate = xp.where(mate < 0, me, mate)
    leader = xp.minimum(me, mate)
    is_leader = leader == me
    cid = xp.cumsum(is_leader.astype(xp.int64)) - 1
    cmap = cid[leader]
    nc = int(cid[-1]) + 1 if n else 0
    vw = xp.zeros(nc, dtype=xp.int64)
    lead = xp.flatnonzero(is_leader)
    vw[cmap[lead]] = g.vweights[lead] + xp.where(mate[lead] != lead, g.vweights[mate[lead]], 0)
    cu, cv = cmap[g.rows], cmap[g.indices]
    keep = cu != cv
    key = cu[keep] * nc + cv[keep]
    order = _stable_argsort(xp, key)
    key = key[order]
    w = g.eweights[keep][order]
    if key.shape[0]:
        start = _group_starts(xp, key)
        weights = _group_sums(xp, start, w)
        gkey = key[start]
    else:
        weights = gkey = xp.zeros(0, dtype=xp.int64)
    crow = gkey // max(nc, 1)
    ccol = gkey - crow * nc
    indptr = xp.zeros(nc + 1, dtype=xp.int64)
    indptr[1:] = xp.cumsum(_count(xp, crow, nc))
    g.coarse_map = cmap
    return _Level(xp, indptr, ccol, weights, vw)


# ------------------------------------------------------------------ refinement
def _connections(xp, g: _Level, labels, k: int, allowed_part=None):
    """Per vertex: best other part by connection (-1 if none), that connection, and the own-part connection.

    ``allowed_part`` (bool per part) limits the other parts considered.
    """
    n = g.n
    if xp is not np and _KERNELS:  # the same sums and choice, one thread per vertex
        best, conn, own = (xp.empty(n, dtype=xp.int64) for _ in range(3))
        parts = xp.ones(k, dtype=bool) if allowed_part is None else xp.ascontiguousarray(allowed_part)
        _launch("jet_connections", n, g.indptr, g.indices, g.eweights, labels.astype(xp.int32), parts,
                np.int64(n), best, conn, own)
        return best, conn, own
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
    key = g.rows[arcs] * k + labels[g.indices[arcs]].astype(xp.int64)
    order = _stable_argsort(xp, key)
    key = key[order]
    start = _group_starts(xp, key)
    sums = _group_sums(xp, start, g.eweights[arcs][order])
    gkey = key[start]
    gv = gkey // k
    gp = gkey - gv * k
    order, first = _first_per_key(xp, gv, -sums, gp)
    pick = order[first]
    best[gv[pick]] = gp[pick]
    conn[gv[pick]] = sums[pick]
    return best, conn, own


def _jetlp(xp, g: _Level, labels, k: int, locked, c: float, salt: int):
    """One Jetlp iteration with the afterburner; returns the new labels and the moved mask."""
    n = g.n
    dest, conn, own = _connections(xp, g, labels, k)
    gain = conn - own
    cand = (dest >= 0) & ~locked & ((gain >= 0) | (-gain < xp.floor(c * own).astype(xp.int64)))
    if not bool(cand.any()):
        return labels, xp.zeros(n, dtype=bool)
    # Priority: gain, then a hash; dense ranks so that comparisons are exact.
    v = xp.flatnonzero(cand)
    h = _hash32(xp, v, salt).astype(xp.int64)
    order = _stable_argsort(xp, h)
    order = order[_stable_argsort(xp, gain[v][order])]
    rank = xp.zeros(n, dtype=xp.int64)
    rank[v[order]] = xp.arange(1, v.shape[0] + 1, dtype=xp.int64)
    gain2 = _afterburner(xp, g, labels, dest, cand, rank)
    move = cand & (gain2 >= 0)
    new = labels.copy()
    new[move] = dest[move].astype(labels.dtype)
    return new, move


def _afterburner(xp, g: _Level, labels, dest, cand, rank):
    """Gain of every candidate's move when all candidates of higher rank have moved (0 for the others)."""
    if xp is not np and _KERNELS:  # the same sums, one thread per vertex
        gain = xp.empty(g.n, dtype=xp.int64)
        _launch("jet_afterburner", g.n, g.indptr, g.indices, g.eweights, labels.astype(xp.int32), dest, cand, rank,
                np.int64(g.n), gain)
        return gain
    r, u = g.rows, g.indices
    ahead = cand[u] & (rank[u] > rank[r])
    where = xp.where(ahead, dest[u], labels[u].astype(xp.int64))
    delta = g.eweights * ((where == dest[r]).astype(xp.int64) - (where == labels[r]).astype(xp.int64))
    return xp.where(cand, _row_sums(xp, g.indptr, delta), 0)


def _jetr(xp, g: _Level, labels, k: int, bound: int, salt: int):
    """One rebalancing iteration (weak moves to adjacent parts with room, strong moves to any part with room)."""
    n = g.n
    sizes = _part_weights(xp, labels, g.vweights, k)
    total = int(g.vweights.sum())
    # Destinations stop somewhat short of the bound so that they are not the next overweight parts.
    soft = max(1, int(total / k + 0.5 * (bound - total / k)))
    room = xp.maximum(soft - sizes, 0)
    excess = xp.maximum(sizes - bound, 0)
    over = excess > 0
    if not bool(over.any()):
        return labels
    has_room = room > 0
    dest, conn, own = _connections(xp, g, labels, k, allowed_part=has_room)
    mine = over[labels]
    v = xp.flatnonzero(mine)
    loss = own[v] - conn[v]  # for vertices next to no part with room: all of their own connection
    src = labels[v].astype(xp.int64)
    h = _hash32(xp, v, salt).astype(xp.int64)
    order = _stable_argsort(xp, h)
    order = order[_stable_argsort(xp, loss[order])]
    order = order[_stable_argsort(xp, src[order])]
    v, src = v[order], src[order]
    w = g.vweights[v]
    # Each overweight part gives up its cheapest vertices until its excess is covered.
    cum = xp.cumsum(w)
    first = xp.searchsorted(src, src, side="left")
    before = cum - w - xp.where(first > 0, cum[xp.maximum(first - 1, 0)], 0)
    v, w = v[before < excess[src]], w[before < excess[src]]
    new = labels.copy()
    # Weak: to the best-connected adjacent part with room, each part filled up to its room.
    near = dest[v] >= 0
    vn, wn, dn = v[near], w[near], dest[v[near]]
    if vn.shape[0]:
        order = _stable_argsort(xp, dn)
        vn, wn, dn = vn[order], wn[order], dn[order]
        cum = xp.cumsum(wn)
        first = xp.searchsorted(dn, dn, side="left")
        before = cum - wn - xp.where(first > 0, cum[xp.maximum(first - 1, 0)], 0)
        fits = before + wn <= room[dn]
        new[vn[fits]] = dn[fits].astype(labels.dtype)
        room = room - _bin_weights(xp, dn[fits], wn[fits], k)
    # Strong: the others to parts with room, in order, none beyond its room.
    vf, wf = v[~near], w[~near]
    parts = xp.flatnonzero(room > 0)
    if vf.shape[0] and parts.shape[0]:
        capacity = xp.cumsum(room[parts])
        end = xp.cumsum(wf)
        slot = xp.searchsorted(capacity, end - wf, side="right")
        ok = slot < parts.shape[0]
        ok[ok] = end[ok] <= capacity[slot[ok]]
        new[vf[ok]] = parts[slot[ok]].astype(labels.dtype)
    return new


def _bin_weights(xp, bins, weights, k: int):
    """Sum of integer ``weights`` per bin ``0..k-1`` (exact: a sort and cumulative sums)."""
    out = xp.zeros(k, dtype=xp.int64)
    if bins.shape[0] == 0:
        return out
    bins = bins.astype(xp.int64)
    order = _stable_argsort(xp, bins)
    b = bins[order]
    start = _group_starts(xp, b)
    out[b[start]] = _group_sums(xp, start, weights[order])
    return out


def _part_weights(xp, labels, vweights, k: int):
    """Vertex weight of every part (integer atomics on the GPU: the same sums in any order)."""
    if xp is np or not _KERNELS:
        return _bin_weights(xp, labels, vweights, k)
    out = xp.zeros(k, dtype=xp.uint64)
    _launch("jet_part_weights", int(labels.shape[0]), labels.astype(xp.int32), vweights, np.int64(labels.shape[0]), out)
    return out.astype(xp.int64)


def _cut(xp, g: _Level, labels) -> int:
    return int(xp.sum(xp.where(labels[g.rows] != labels[g.indices], g.eweights, 0))) // 2


def _refine_level(xp, g: _Level, labels, k: int, bound: int, *, c: float, seed: int, level: int):
    """Jetlp while balanced, Jetr while not; the best balanced labels of the level (else the least unbalanced)."""
    locked = xp.zeros(g.n, dtype=bool)
    best, best_key = labels, None
    stall = 0
    for it in range(MAX_ITERATIONS):
        largest = int(_part_weights(xp, labels, g.vweights, k).max())
        key = (max(largest - bound, 0), _cut(xp, g, labels))
        if best_key is None or key[0] < best_key[0] or (key[0] == best_key[0] and key[1] < best_key[1]):
            if best_key is not None and key[0] == best_key[0] == 0 and key[1] >= 0.999 * best_key[1]:
                stall += 1  # better, but by too little to count as progress
            else:
                stall = 0
            best, best_key = labels, key
        else:
            stall += 1
        if stall >= PATIENCE:
            break
        salt = seed * 1_000_003 + level * 10_007 + it
        if largest > bound:
            labels = _jetr(xp, g, labels, k, bound, salt)
            locked = xp.zeros(g.n, dtype=bool)
        else:
            labels, locked = _jetlp(xp, g, labels, k, locked, c, salt)
    return best


# ------------------------------------------------------------------ driver
def jet_partition(indptr, indices, k: int, *, seed: int, imbalance: float, coarsest: int | None = None):
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
        Coarsen until at most this many vertices (default ``max(30 k, 1000)``).

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
    if n > 0xFFFFFFFF:
        raise ValueError(f"indptr: {n} vertices, jet handles up to 2**32 - 1")
    if k == 1 or n == 0:
        return xp.zeros(n, dtype=xp.int32)
    bound = max_part_size(n, k, imbalance)
    target = max(30 * k, 1000) if coarsest is None else int(coarsest)
    m = int(indices.shape[0])
    levels = [_Level(xp, indptr, indices, xp.ones(m, dtype=xp.int64), xp.ones(n, dtype=xp.int64))]
    while levels[-1].n > target:
        g = levels[-1]
        # No coarse vertex heavier than 1.5 times an average vertex of the coarsest graph.
        cap = max(2, int(1.5 * n / target))
        coarse = _contract(xp, g, _match(xp, g, cap, seed, len(levels)))
        if coarse.n > SHRINK_AT_LEAST * g.n:
            g.coarse_map = None
            break
        levels.append(coarse)
    labels = _initial_partition(xp, levels[-1], k, seed=seed, imbalance=imbalance)
    for depth in range(len(levels) - 1, -1, -1):
        g = levels[depth]
        if depth < len(levels) - 1:
            labels = labels[g.coarse_map]
        c = LP_FILTER_FINEST if depth == 0 else LP_FILTER_COARSE
        labels = _refine_level(xp, g, labels, k, bound, c=c, seed=seed, level=depth)
    return labels.astype(xp.int32)


def _initial_partition(xp, g: _Level, k: int, *, seed: int, imbalance: float):
    """METIS k-way on the coarsest graph (on the host: it is small)."""
    try:
        import pymetis
    except ImportError as exc:  # pragma: no cover - pymetis is a dependency
        raise BackendError("partitioner 'jet' partitions its coarsest graph with pymetis: pip install pymetis") \
            from exc
    if g.n <= k:
        return xp.arange(g.n, dtype=xp.int32) % k
    host = (lambda a: a.get()) if xp is not np else (lambda a: a)
    options = pymetis.Options(seed=int(seed), ufactor=max(1, int(round(imbalance * 1000))))
    xadj, adjncy = host(g.indptr), host(g.indices)
    if hasattr(pymetis, "CSRAdjacency"):
        graph = {"adjacency": pymetis.CSRAdjacency(xadj, adjncy)}
    else:  # pragma: no cover - pymetis before 2025
        graph = {"xadj": xadj, "adjncy": adjncy}
    _, labels = pymetis.part_graph(int(k), **graph, vweights=host(g.vweights), eweights=host(g.eweights),
                                   options=options, recursive=False)
    return xp.asarray(np.asarray(labels, dtype=np.int32))
