"""Stage 1, second method: the boundary rows from the boundary graph.

The frontier method (:func:`fastapsp.stages.boundary_sssp`) walks the whole
graph from every boundary vertex.  This method reaches the same distances with
dense, weight-blind work only:

* **Local closure.**  ``L_q``: the distances inside the subgraph induced by
  component ``q`` (Floyd-Warshall on the component's own arcs).
* **Boundary graph H.**  Its vertices are the boundary vertices ``B`` of all
  components; its arcs are the cut arcs of the graph plus, inside every
  component, an arc ``b -> b'`` of weight ``L_q(b, b')``.  A shortest path
  between two boundary vertices splits into stretches inside one component
  between boundary vertices, joined by cut arcs, so ``d_G = d_H`` on ``B``.
* **Boundary rows.**  For ``v`` in component ``q``, a path from ``b`` to ``v``
  enters ``q`` for the last time at some ``b'`` in ``B_q`` (``b' = b`` when it
  never leaves), so ``d(b, v) = min_{b'} d_H(b, b') + L_q(b', v)``: a min-plus
  product grouped by component (``grouped_min_plus.cu``).

``d_H`` itself is found the same way, one *level* up: the components are
gathered into super-groups (METIS on the graph of components), H is the graph
of the next level, and so on until the boundary of a level is small enough for
one dense Floyd-Warshall (the *top* level: one group, no boundary).

Vertices of every level are numbered in *level order*: group by group, the
group's boundary vertices first.  Level 0 uses the order of
:meth:`fastapsp.partition.Partition.component`.  The boundary vertices of a
level, numbered group by group (the *boundary index*), are the vertices of the
next level.

**Several ranks.**  Given a communicator, the closures of each upper level are
shared out (:func:`assign_closures`): every super-group is closed by one rank
(a greedy by cost ``c_s**3``, largest first, to the least loaded rank, or to a
rank that makes the super-group's rows when that keeps the level within its
lower bound ``max(sum / ranks, largest)``), and besides its share a rank
closes each super-group whose rows it makes when that fits in the time it
would wait for the level's slowest rank, and each super-group whose closure
costs less than receiving it (``receive_cost``: on the GPUs of one host,
where rows are staged through the host, a level of super-groups of a few
thousand vertices is closed by every rank and nothing travels).  The top level, one group, is so
closed by every rank that makes rows: one rank closing it would make the
others wait for the closure and then for its ``c_top**2`` distances, however
large it is.  Then, once per level, each rank sends every other rank what it
lacks, point to point, in one message per pair of ranks
(device arrays travel as host copies, as the components' rows do, or GPU to
GPU where the ranks share a node: :mod:`fastapsp.peers`).
For the super-groups ``s`` of a level (``c_s`` vertices, ``nb_s`` of them on
its boundary), ``K_r`` those rank ``r`` closes and ``N_r`` those whose rows it
makes (the ancestors of its components), rank ``r`` receives::

    itemsize * ( sum over s not in K_r          of nb_s * c_s
               + sum over s in N_r, not in K_r   of (c_s - nb_s) * c_s )

bytes: the rows ``L_s[:nb_s]`` of every super-group (the grouped product of
the level spans all its vertices, and the next level is closed from them),
and the interior rows ``L_s[nb_s:]`` of the super-groups whose rows it makes.
Nothing of the top level travels.  Every closure is made by the same code
from the same bytes on whichever rank makes it, so every rank holds what the
one-rank run holds, bit for bit.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..backend import array_module, available_bytes, gpu_warm
from ..graph import distinct, stable_order
from .build import build_component_matrix
from .floyd_warshall import DEFAULT_TILE, blocked_floyd_warshall, close_many
from .min_plus import Packing, min_plus

__all__ = ["BoundaryGraph", "LevelTree", "assign_closures", "close_components", "closes_by_searches",
           "prepare_local_closures",
           "closure_batch_limit", "closure_budget",
           "levels_bytes", "batch_rows",
           "pack_boundary_rows", "DENSE_LIMIT", "SUPER_SIZE", "WEIGHTED_GROUPS", "CLOSURE_BATCH_BYTES", "BATCH_ROWS",
           "BATCH_BYTES"]

# Largest boundary closed by one dense Floyd-Warshall (|B|^2 distances), per backend.
DENSE_LIMIT = {"cupy": 16384, "numpy": 1536}
# Vertices aimed at per super-group when a level is too large for the dense closure.
SUPER_SIZE = {"cupy": 2048, "numpy": 256}
# Whether the groups are gathered into super-groups by the arcs between them (METIS's edge weights: the
# next level's boundary follows the arcs cut) rather than by which pairs of groups touch.  At the host's
# limits (many small levels) that closed the upper levels with 16-91% fewer relaxations on every road
# network and mesh of more than one level tried, and took a NumPy solve of a 65,536-vertex Delaunay
# graph from 123 to 111-115 s.  At the GPU's (few large levels, the top set by the last split), on one
# H100 over seven Jet partitions of del20-unit (four seeds), del20-euclid and del21-unit (two seeds):
# the upper levels and the boundary rows together 59.4 s unweighted against 56.2 s weighted, faster on
# five (by up to 1.2 s on del21-unit), 0.01 and 0.10 s slower on two; the road networks' trees the same
# or smaller, their seconds the same (benchmarks/results/weighted-groups/).  The default of LevelTree.
WEIGHTED_GROUPS = True
# Boundary rows of several groups made by one grouped min-plus (BoundaryGraph._row_batches), and at most
# this many bytes of them (fewer rows on graphs of many vertices), or a sixteenth of the memory available.
# Batches of 512 rather than 128 rows (2 GiB rather than 512 MiB) took del20-euclid's boundary rows from
# 3.59 to 3.33 s on one H100: a 2^20-vertex Delaunay graph's component has ~100 boundary vertices, so
# 128 rows held one component, and its last 64-row tile of the product a third empty (docs/performance.md).
BATCH_ROWS = 512
BATCH_BYTES = 2 << 30
_BY_COLUMNS_ALIGN = 8  # rows of a batch stored by columns are padded to this many (BoundaryGraph._grouped_min_plus)
CLOSURE_BATCH_BYTES = 1 << 30  # component matrices closed together (on the GPU they share their launches)
# Upper-level closures batched together when the smallest has at least this share of the largest's tiles.
SIMILAR_TILES = 0.7
_MESSAGE_LIMIT = 1 << 30  # elements of one point-to-point message of the upper levels; longer ones go in pieces
_EXCHANGE_TAG = 24
# Clique entries of an upper level's groups placed together (BoundaryGraph._place_cliques): each takes
# about 70 bytes of index arrays while they are placed, so a super-group's cliques go in runs of groups
# of at most this many entries, and a larger clique alone.
CLIQUE_ENTRIES = 1 << 22


def close_components(indptr, indices, weights, partition, components, *, dtype, unit_weights: bool = False,
                     host_csr=None, local_on_device: bool | None = None):
    """Distances inside every component of ``components``, over its own arcs only.

    Returns ``{p: L_p}`` with ``L_p`` of shape (c_p, c_p) in the component's
    vertex order (boundary first), on the array module of ``indptr``.  On the
    GPU, where every arc weighs 1 (``unit_weights``) and no component has more
    vertices than a block's shared memory holds (:func:`closes_by_searches`),
    the closures are breadth-first searches from every vertex (c (c + arcs)
    steps against Floyd-Warshall's c^3);
    elsewhere the blocked Floyd-Warshall.  The searches read the arcs from
    ``host_csr``, the graph's ``(indptr, indices)`` in host memory (without
    it, Floyd-Warshall), their CSR of local ids made on the device in a
    process already warm on its GPU (:func:`fastapsp.backend.gpu_warm`) and on
    the host in a fresh one: the dozen CuPy kernels of the device's form took
    0.4-0.6 s to load at their first use there (the command line, one H100),
    while the host's form cost roadNY 45-60 ms and roadFLA 100-160 ms a run in
    a warm process.  A rank that loaded them while it waited for the partition
    (:func:`prepare_local_closures`) makes it on the device too.
    ``local_on_device`` decides instead where given.
    """
    xp = array_module(indptr, indices, weights)
    if xp is not np:  # one launch builds them all (the matrices are views of one buffer)
        from ._cuda import build_local_batch_cuda

        largest = max((int(partition.sizes[p]) for p in components), default=0)
        searches = host_csr is not None and closes_by_searches(largest, unit_weights=unit_weights)
        if local_on_device is None:
            local_on_device = gpu_warm() or _device_form_loaded()
        closed = build_local_batch_cuda(indptr, indices, weights, partition, components, dtype, searches=searches,
                                        host_csr=host_csr, local_on_device=local_on_device)
        if not searches:
            close_many(closed.values())
        return closed
    n = indptr.shape[0] - 1
    no_rows = xp.empty((0, n), dtype=dtype)
    closed = {}
    for p in components:
        vertices, _ = partition.component(p)
        if vertices.size == 0:
            continue
        closed[p] = build_component_matrix(indptr, indices, weights, xp.asarray(vertices), 0, no_rows, dtype=dtype)
    close_many(closed.values())  # on the GPU: the same launches for all of them
    return closed


# The thread of prepare_local_closures, and whether it loaded the device form's kernels.
_DEVICE_FORM: dict = {"thread": None, "loaded": False}


def prepare_local_closures(graph, dtype, local_rank: int):
    """Load, in a thread, the CuPy kernels with which :func:`close_components` makes the searches' CSR on
    the GPU, by closing a small graph of ``graph``'s index type that way on GPU ``local_rank mod visible
    devices``; once they are loaded, this process makes that CSR on the device as a process warm on its
    GPU does.  For a rank that waits while rank 0 partitions (under MPI every rank but 0 has not used its
    GPU when the components are closed): the second of two ranks sharing one H100, making that CSR on the
    host, closed its half of del21-unit's components in 0.52 s against rank 0's 0.16 s, and rank 0 waited
    for it (benchmarks/results/two-ranks-one-gpu-370aace/).
    Only where the closures are searches (every arc weighs 1).  Returns the thread (None where nothing is
    started); it never raises: where loading fails the host makes the CSR, as without it.
    """
    import threading

    if _DEVICE_FORM["thread"] is not None or gpu_warm() or not graph.unit_weights:
        return None
    toy, part = _toy_components(graph.indptr.dtype)

    def load():
        try:
            import cupy as cp

            device = cp.cuda.Device(local_rank % cp.cuda.runtime.getDeviceCount())
            with device:
                arrays = [cp.asarray(a) for a in (toy.indptr, toy.indices, toy.weights)]
                close_components(*arrays, part, [0, 1], dtype=dtype, unit_weights=True,
                                 host_csr=(toy.indptr, toy.indices), local_on_device=True)
                device.synchronize()
            _DEVICE_FORM["loaded"] = True
        except Exception:  # noqa: BLE001 - the host then makes the CSR, as it would without this thread
            pass

    thread = threading.Thread(target=load, name="fastapsp-closure-warmup", daemon=True)
    _DEVICE_FORM["thread"] = thread
    thread.start()
    return thread


def _toy_components(itype):
    """A graph of index type ``itype`` and unit weights, two paths of four vertices joined by one arc, and its
    partition into the two paths (each with one boundary vertex): what :func:`prepare_local_closures` closes."""
    from ..graph import Graph
    from ..partition.base import make_partition

    tails = np.array([0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7])
    heads = np.array([1, 0, 2, 1, 3, 2, 4, 3, 5, 4, 6, 5, 7, 6])
    toy = Graph(np.searchsorted(tails, np.arange(9)).astype(itype), heads.astype(itype), np.ones(tails.size),
                directed=False)
    return toy, make_partition(toy, np.repeat(np.array([0, 1], dtype=np.int32), 4), 2, method="toy", seed=0,
                               imbalance=0.0, seconds=0.0)


def _device_form_loaded() -> bool:
    """Whether :func:`prepare_local_closures` has finished loading the device form (never waits for it)."""
    thread = _DEVICE_FORM["thread"]
    return bool(_DEVICE_FORM["loaded"]) and thread is not None and not thread.is_alive()


def closes_by_searches(largest: int, *, unit_weights: bool) -> bool:
    """Whether :func:`close_components` closes on the GPU components of at most ``largest`` vertices by
    breadth-first searches from every vertex: where every arc weighs 1 and the largest fits the kernel's
    shared memory (:func:`fastapsp.stages._cuda.bfs_closure_max`)."""
    from . import _cuda

    return bool(unit_weights) and largest <= _cuda.bfs_closure_max()


def levels_bytes(tree, partition, itemsize: int, packed: bool = False) -> int:
    """Bytes the boundary graph holds besides the kept closures: every component's ``L_p[:nb_p]`` (level 0)
    and, with ``tree`` (:class:`LevelTree`), its upper levels and the rows made from them
    (:meth:`LevelTree.upper_items`, :meth:`LevelTree.row_items`).  ``packed``: the grouped products
    may run in 16 bits (GPU, whole-number distances), which keep every level's blocks encoded too."""
    nb, sizes = partition.boundary_per_part.astype(np.int64), partition.sizes.astype(np.int64)
    level0 = int((nb * sizes).sum())
    upper = tree.upper_items() + tree.row_items() if tree is not None else 0
    encoded = 0
    if packed:
        from ._cuda import grouped_u16_bytes

        encoded = grouped_u16_bytes(nb, sizes)
        if tree is not None:
            encoded += sum(grouped_u16_bytes(nb_l, sizes_l) for _, sizes_l, nb_l in tree._upper_levels())
    return (level0 + upper) * int(itemsize) + encoded


def closure_budget(available: int, reserve: int = 0) -> int:
    """Bytes of local closures kept for the components' turn: a third of ``available``, and no more than
    what ``reserve`` (the boundary graph's levels, :func:`levels_bytes`) leaves of it; the closures not
    kept are closed again when needed."""
    return max(0, min(available // 3, available - reserve))


def closure_batch_limit(budget: int) -> int:
    """Bytes of component matrices closed together when ``budget`` bytes may hold closures:
    ``CLOSURE_BATCH_BYTES``, and at most a quarter of the budget."""
    return max(1, min(CLOSURE_BATCH_BYTES, budget // 4))


def batch_rows(n: int, itemsize: int, available: int | None = None) -> int:
    """Boundary rows of ``n`` columns that one batch of groups may hold (:meth:`BoundaryGraph._row_batches`):
    ``BATCH_ROWS``, fewer when they would pass ``BATCH_BYTES`` or a sixteenth of ``available`` bytes (the
    batch and its reordered copy are held at once), at least one (a larger group is made alone)."""
    budget = BATCH_BYTES if available is None else min(BATCH_BYTES, available // 16)
    return max(1, min(BATCH_ROWS, budget // max(1, n * itemsize)))


def pack_boundary_rows(closed: dict, partition) -> dict:
    """``{p: L_p[:nb_p]}`` as host arrays: what every rank needs from the others."""
    packed = {}
    for p, matrix in closed.items():
        nb = int(partition.boundary_per_part[p])
        rows = matrix[:nb]
        packed[p] = rows.get() if hasattr(rows, "get") else np.array(rows)
    return packed


@dataclass
class _Level:
    """One level: ``n`` vertices in level order, ``k`` groups, the closure of each group."""

    n: int
    starts: np.ndarray  # int64 (k + 1): group g owns positions starts[g]:starts[g+1]
    nb: np.ndarray  # int64 (k): boundary vertices of every group (they come first)
    lb: object  # the rows L_g[:nb_g] of all groups, flattened one after another (xp)
    lb_offset: np.ndarray  # int64 (k): where L_g[:nb_g] starts in lb
    inner: dict = field(default_factory=dict)  # g -> L_g[nb_g:] (xp), of the groups whose rows are made here
    super_of: np.ndarray | None = None  # group -> group of the next level (None: top level)
    next_pos: np.ndarray | None = None  # boundary index -> position at the next level
    _device: dict = field(default_factory=dict)

    @property
    def k(self) -> int:
        return int(self.nb.size)

    @property
    def bstart(self) -> np.ndarray:
        return _bstart(self.nb)

    def boundary_block(self, g: int):
        """``L_g[:nb_g]`` (nb_g x c_g) as a view of ``lb``."""
        nb, c = int(self.nb[g]), int(self.starts[g + 1] - self.starts[g])
        off = int(self.lb_offset[g])
        return self.lb[off : off + nb * c].reshape(nb, c)


def _runs_within(items: np.ndarray, sizes: np.ndarray, limit: int):
    """``items`` in consecutive runs whose ``sizes`` add up to at most ``limit`` (an item larger alone).

    >>> [run.tolist() for run in _runs_within(np.arange(5), np.array([3, 3, 9, 1, 1]), 6)]
    [[0, 1], [2], [3, 4]]
    """
    start, total = 0, 0
    for at, size in enumerate(sizes.tolist()):
        if at > start and total + size > limit:
            yield items[start:at]
            start, total = at, 0
        total += size
    if start < len(items):
        yield items[start:]


def _similar_sizes(matrices: list, ratio: float = SIMILAR_TILES) -> list:
    """``matrices`` in batches closed together: largest first, each batch's smallest at least ``ratio``
    of its largest in Floyd-Warshall tiles (one batch's grid fits its largest; a much smaller matrix would
    leave most of its blocks idle)."""
    ordered = sorted(matrices, key=lambda m: -m.shape[0])
    batches: list = []
    for matrix in ordered:
        tiles = -(-matrix.shape[0] // DEFAULT_TILE)
        if batches and tiles >= ratio * -(-batches[-1][0].shape[0] // DEFAULT_TILE):
            batches[-1].append(matrix)
        else:
            batches.append([matrix])
    return batches


def _marked(size: int, *where) -> np.ndarray:
    """A mask of ``size`` entries, True at every index of the arrays ``where``."""
    mask = np.zeros(size, dtype=bool)
    for at in where:
        mask[at] = True
    return mask


def _bstart(nb: np.ndarray) -> np.ndarray:
    """Where each group's boundary vertices start in the boundary index (k + 1 entries)."""
    out = np.zeros(nb.size + 1, dtype=np.int64)
    np.cumsum(nb, out=out[1:])
    return out


def _boundary_index(starts: np.ndarray, nb: np.ndarray, positions: np.ndarray, group=None) -> np.ndarray:
    """Boundary index of the level positions ``positions`` (boundary positions only); ``group``: their
    groups where the caller knows them (else found by a search of ``starts``)."""
    if group is None:
        group = np.searchsorted(starts, positions, side="right") - 1
    return _bstart(nb)[group] + positions - starts[group]


@dataclass
class _Step:
    """How the groups of one level gather into the groups of the next (shape only, no distances)."""

    super_of: np.ndarray  # int64 (k): group -> group of the next level
    next_pos: np.ndarray  # int64 (boundary vertices of the level): boundary index -> next-level position
    starts: np.ndarray  # int64 (k2 + 1): the next level's groups
    nb: np.ndarray  # int64 (k2): the next level's boundary vertices per group
    inner: tuple  # (rows, cols, weights, group) of the arcs inside a next-level group, next-level positions


class LevelTree:
    """The shape of the boundary graph's levels: which groups gather into each
    super-group, level by level up to the dense top, and where every boundary
    vertex sits at the level above.

    It depends on the graph and the partition only (no distances), so it is
    made before anything is closed (under MPI by rank 0, and broadcast): the
    schedule then gives each rank whole runs of
    components of the same super-groups (:meth:`order`), and each rank makes
    the upper rows of its own super-groups only.

    Parameters
    ----------
    graph, partition : Graph, Partition
    dense_limit, super_size : int
        Largest boundary closed densely, and vertices per super-group above it.
    seed : int
        Seed of the METIS calls that form super-groups.
    widen : bool
        When super-groups of ``super_size`` vertices would leave a level
        about as large as it was (the upper levels of a mesh: most of a
        group's vertices are on its boundary), try half as many, twice as
        large super-groups, and so on, before closing the whole level densely.
        Without widening such a level becomes the dense top whatever its
        size, tens of thousands of vertices on a large mesh (docs/kernels.md).
    weighted : bool
        Gather groups by the number of arcs between them (METIS's edge
        weights), not only by which pairs of groups touch (default
        ``WEIGHTED_GROUPS``, on both backends).
    """

    def __init__(self, graph, partition, *, dense_limit: int, super_size: int, seed: int = 42, widen: bool = True,
                 weighted: bool = WEIGHTED_GROUPS):
        if dense_limit < 1 or super_size < 2:
            raise ValueError(f"dense_limit {dense_limit} must be >= 1 and super_size {super_size} >= 2")
        self.dense_limit, self.super_size, self.seed = int(dense_limit), int(super_size), int(seed)
        self.widen, self.weighted = bool(widen), bool(weighted)
        self.n, self.k = graph.n, partition.k
        self.position = np.empty(graph.n, dtype=np.int64)  # original vertex -> level-0 position
        self.position[partition.order] = np.arange(graph.n, dtype=np.int64)
        starts = np.array(partition.starts, dtype=np.int64)
        nb = partition.boundary_per_part.astype(np.int64)
        self.starts, self.nb = [starts], [nb]  # of every level
        # Cut arcs in level-0 boundary index (in the order of arcs()).
        src, at = partition.leaving_arcs(graph)
        dst = graph.indices[at]
        bs = _boundary_index(starts, nb, self.position[src], partition.labels[src])
        bd = _boundary_index(starts, nb, self.position[dst], partition.labels[dst])
        self.steps: list[_Step] = []
        self._build(bs, bd, graph.weights[at])

    @property
    def level_sizes(self) -> list[int]:
        return [int(s[-1]) for s in self.starts]

    def _build(self, bs, bd, w) -> None:
        while True:
            nb = self.nb[-1]
            k = nb.size
            total = int(nb.sum())
            if total == 0:
                return  # no boundary at all: every boundary row is empty
            group_of = np.repeat(np.arange(k), nb)
            super_of, k2 = None, 1
            wanted = -(-total // self.super_size)  # super-groups of about super_size vertices
            while total > self.dense_limit and wanted >= 2:
                super_of, k2 = self._super_groups(k, nb, group_of[bs], group_of[bd], wanted)
                crossing = super_of[group_of[bs]] != super_of[group_of[bd]]
                on_boundary = _marked(total, bs[crossing], bd[crossing])  # of the next level
                if k2 < k and np.count_nonzero(on_boundary) < 0.9 * total:
                    break
                super_of, k2 = None, 1  # no smaller level to be had this way
                if not self.widen:
                    break
                wanted = min(wanted, k) // 2  # fewer, larger super-groups; below 2: close this level densely
            if super_of is None:
                super_of = np.zeros(k, dtype=np.int64)
                crossing = np.zeros(bs.size, dtype=bool)
                on_boundary = np.zeros(total, dtype=bool)
            sup = super_of[group_of]
            # By super-group, its boundary vertices first, each run in position order.
            order = stable_order(sup * 2 + ~on_boundary, 2 * k2)
            next_pos = np.empty(total, dtype=np.int64)
            next_pos[order] = np.arange(total, dtype=np.int64)
            starts2 = np.zeros(k2 + 1, dtype=np.int64)
            np.cumsum(np.bincount(sup, minlength=k2), out=starts2[1:])
            nb2 = np.bincount(sup[on_boundary], minlength=k2).astype(np.int64)
            inner = ~crossing
            self.steps.append(_Step(super_of, next_pos, starts2, nb2,
                                    (next_pos[bs[inner]], next_pos[bd[inner]], w[inner], sup[bs[inner]])))
            self.starts.append(starts2)
            self.nb.append(nb2)
            if k2 == 1:
                return
            bs, bd, w = (_boundary_index(starts2, nb2, next_pos[bs[crossing]], sup[bs[crossing]]),
                         _boundary_index(starts2, nb2, next_pos[bd[crossing]], sup[bd[crossing]]), w[crossing])

    def _super_groups(self, k: int, nb: np.ndarray, gs, gd, k2: int):
        """Gather the ``k`` groups into about ``k2`` super-groups of equal boundary vertices."""
        from ..partition.metis import metis

        k2 = max(2, int(k2))
        if k2 >= k:
            return np.arange(k, dtype=np.int64), k
        # The distinct pairs of groups joined by a cut arc, as one integer key each (np.unique over the
        # columns of a 2-row array sorts structured records, far slower; int32 keys, where k * k fits,
        # sort in about half the time of int64): each pair once, with the arcs between them, then both
        # ways, sorted (the adjacency METIS reads, row by row).
        key = np.int32 if k * k <= np.iinfo(np.int32).max else np.int64
        low, high = np.minimum(gs, gd).astype(key), np.maximum(gs, gd).astype(key)
        each = np.sort(low * key(k) + high)
        each = each[each // k != each % k]
        first = np.flatnonzero(np.diff(each, prepend=-1) != 0)
        once, arcs = each[first].astype(np.int64), np.diff(np.append(first, each.size))
        both = np.concatenate([once, (once % k) * k + once // k])
        order = np.argsort(both, kind="stable")
        keys = both[order]
        pairs = np.stack([keys // k, keys % k])
        counts = np.bincount(pairs[0], minlength=k)
        xadj = np.zeros(k + 1, dtype=np.int64)
        np.cumsum(counts, out=xadj[1:])
        eweights = np.concatenate([arcs, arcs])[order] if self.weighted else None
        labels = metis(xadj, pairs[1], int(k2), seed=self.seed, imbalance=0.03, vweights=np.maximum(nb, 1),
                       eweights=eweights)
        # Renumber the super-groups that received groups 0..k2'-1 (METIS may leave some empty).
        used, labels = np.unique(np.asarray(labels, dtype=np.int64), return_inverse=True)
        return labels.astype(np.int64), int(used.size)

    def _upper_levels(self):
        """``(level, sizes, nb)`` of every upper level: its super-groups' vertices and boundary vertices (int64)."""
        for level in range(1, len(self.starts)):
            yield level, np.diff(self.starts[level]).astype(np.int64), self.nb[level].astype(np.int64)

    def shape(self) -> list[dict]:
        """Every upper level as plain values: its vertices, super-groups, the largest of them and the
        boundary vertices it leaves to the level above (what ``--dry-run`` prints)."""
        return [{"level": level, "vertices": int(sizes.sum()), "groups": int(sizes.size),
                 "largest_group": int(sizes.max()) if sizes.size else 0, "boundary": int(nb.sum())}
                for level, sizes, nb in self._upper_levels()]

    def upper_items(self) -> int:
        """Distances the upper levels hold at once when one process closes them all: each super-group's
        closure (its interior rows stay for the rows of the components below) and each upper level's
        boundary rows, ``L_s[:nb_s]`` of every super-group."""
        return sum(int((sizes * sizes).sum()) + int((nb * sizes).sum()) for _, sizes, nb in self._upper_levels())

    def row_items(self) -> int:
        """Distances held while boundary rows are made from the levels: at every upper level the full rows
        of one super-group (its vertices to all of the level's, kept for the groups below it) and their
        columns put in the level below's order, at most the largest super-group's of each level."""
        return sum(2 * int(sizes.max()) * int(sizes.sum()) for _, sizes, _ in self._upper_levels() if sizes.size)

    def ordinals(self) -> list[np.ndarray]:
        """For every level, each group's place in the tree's depth-first order: groups
        of the same super-group are consecutive, and so, level by level, up to the top."""
        # The last level: one group, or several that no arc joins (no boundary left).
        ordinal = [np.arange(self.nb[-1].size, dtype=np.int64)] if self.steps else []
        for step in reversed(self.steps):
            order = np.lexsort((np.arange(step.super_of.size), ordinal[0][step.super_of]))
            place = np.empty(order.size, dtype=np.int64)
            place[order] = np.arange(order.size, dtype=np.int64)
            ordinal.insert(0, place)
        return ordinal if ordinal else [np.arange(self.k, dtype=np.int64)]

    def order(self) -> np.ndarray:
        """The components (level-0 groups) in the tree's depth-first order."""
        return np.argsort(self.ordinals()[0], kind="stable")


def assign_closures(sizes, need, boundary=None, receive_cost: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Which ranks close each super-group of one upper level.

    Parameters
    ----------
    sizes : array of int, shape (k,)
        Vertices of every super-group; closing one costs ``sizes**3``.
    need : bool array, shape (ranks, k)
        ``need[r, s]``: rank ``r`` makes the rows of super-group ``s``.
    boundary : array of int, shape (k,), optional
        Boundary vertices ``nb_s`` of every super-group (needed with ``receive_cost``).
    receive_cost : int, optional
        Relaxations of a closure that take as long as receiving one distance
        from another rank (:func:`fastapsp.cost.receive_relaxations`); 0: a
        transfer costs nothing, only the balance of the closures counts.

    Returns
    -------
    owner : int64 array, shape (k,)
        The rank that closes ``s`` for the ranks that do not (it sends them
        what they need of it).
    closes : bool array, shape (ranks, k)
        Every rank's closures: the owner's, and on a rank that needs ``s``
        also ``s`` when it fits in the time that rank would otherwise wait.

    The rule, a pure function of its arguments (the same on every rank):
    super-groups by decreasing cost (then by index) go to the least loaded
    rank (the lowest of equals), or to the least loaded rank that needs it
    when that keeps its load within ``max(lower bound, what the least loaded
    rank would reach)``, the lower bound of the level's time being
    ``max(total / ranks, largest)``.  Then each rank, by decreasing cost,
    closes also the super-groups it needs and does not close, while its load
    stays within the largest load: that costs it no time and spares their
    transfer.  A level of one group is thus closed by every rank that needs it.
    Last, a rank closes every super-group it would receive when the closure
    costs less than the transfer, ``c_s**3 <= receive_cost * rows * c_s`` with
    ``rows`` the rows it would receive (``c_s`` where it makes the rows of
    ``s``, else ``nb_s``): where moving a distance between ranks costs tens
    of thousands of relaxations (the GPUs of one host, rows staged through
    the host) every rank closes whole levels of super-groups of a few
    thousand vertices itself and nothing travels.

    Examples
    --------
    Rank 0 makes the rows of super-groups 0 and 1, rank 1 those of 2 and 3;
    super-group 1 goes to rank 1 all the same (rank 0 would pass the bound):

    >>> owner, closes = assign_closures([4, 3, 3, 2], np.array([[1, 1, 0, 0], [0, 0, 1, 1]], dtype=bool))
    >>> owner.tolist(), closes.astype(int).tolist()
    ([0, 1, 1, 1], [[1, 0, 0, 0], [0, 1, 1, 1]])

    The top level: every rank that needs it closes it.

    >>> assign_closures([900], np.array([[True], [True], [False]]))[1].ravel().tolist()
    [True, True, False]

    Receiving a distance costs as much as 10 relaxations: every rank closes
    the super-group of 3 vertices itself (27 relaxations against 10 x 1
    boundary row x 3 distances), the one of 9 only its owner (729 against
    10 x 2 x 9):

    >>> need = np.zeros((3, 2), dtype=bool)
    >>> assign_closures([9, 3], need, [2, 1], receive_cost=10)[1].astype(int).tolist()
    [[1, 1], [0, 1], [0, 1]]
    """
    need = np.asarray(need, dtype=bool)
    ranks, k = need.shape
    sizes = [int(c) for c in np.asarray(sizes).tolist()]
    cost = [c**3 for c in sizes]  # exact integers: equal on every rank
    if len(cost) != k:
        raise ValueError(f"sizes: {len(cost)} super-groups, need: {k}")
    receive_cost = int(receive_cost)
    if receive_cost and (boundary is None or len(boundary) != k):
        raise ValueError(f"boundary: the boundary vertices of the {k} super-groups are needed with receive_cost")
    load = [0] * ranks
    owner = np.zeros(k, dtype=np.int64)
    by_cost = sorted(range(k), key=lambda s: (-cost[s], s))
    bound = max(-(-sum(cost) // ranks), max(cost, default=0))
    for s in by_cost:
        least = min(range(ranks), key=lambda r: (load[r], r))
        pick = least
        wanting = [r for r in range(ranks) if need[r, s]]
        if wanting:
            best = min(wanting, key=lambda r: (load[r], r))
            if load[best] + cost[s] <= max(bound, load[least] + cost[s]):
                pick = best
        owner[s] = pick
        load[pick] += cost[s]
    closes = np.zeros((ranks, k), dtype=bool)
    closes[owner, np.arange(k)] = True
    span = max(load, default=0)
    for r in range(ranks):
        for s in by_cost:
            if need[r, s] and not closes[r, s] and load[r] + cost[s] <= span:
                closes[r, s] = True
                load[r] += cost[s]
    if receive_cost:
        nb = [int(b) for b in np.asarray(boundary).tolist()]
        for r in range(ranks):
            for s in range(k):
                rows = sizes[s] if need[r, s] else nb[s]
                if not closes[r, s] and cost[s] <= receive_cost * rows * sizes[s]:
                    closes[r, s] = True
    return owner, closes


def _needed(tree: LevelTree, components) -> list[np.ndarray]:
    """For every upper level, which of its groups have their rows made on the way to the
    boundary rows of ``components`` (a group's rows need those of its super-group, up to
    the top, until a group without boundary vertices)."""
    groups = np.zeros(tree.k, dtype=bool)
    groups[np.asarray(components, dtype=np.int64)] = True
    out = []
    for nb, step in zip(tree.nb, tree.steps):
        up = np.zeros(step.nb.size, dtype=bool)
        up[step.super_of[groups & (nb > 0)]] = True
        out.append(up)
        groups = up
    return out


def _send_receive(sends: list, counts: list, *, comm, dtype) -> list:
    """Each rank sends every other rank its own flat host array and receives one from each.

    ``sends[r]`` (1-d, ``dtype``, on the host) goes to rank ``r``; ``counts[r]``
    elements come from rank ``r``, which must be the size of what rank ``r``
    sends here (both sides derive it from the same plan).  Pairs with
    nothing to say exchange no message; longer messages than MPI's int counts
    allow go in pieces.  All sends and receives are posted at once, so no order
    of the ranks can deadlock.  Returns the received arrays, ``[r]`` for rank
    ``r`` (an empty array for this rank itself).
    """
    dtype = np.dtype(dtype)
    me = comm.rank
    received = [np.empty(0 if r == me else int(counts[r]), dtype=dtype) for r in range(comm.size)]
    if comm.size == 1:
        return received
    from mpi4py import MPI

    requests, outgoing = [], []  # the buffers stay referenced until every request is done
    for r in range(comm.size):
        if r == me:
            continue
        for first in range(0, received[r].size, _MESSAGE_LIMIT):
            requests.append(comm.Irecv(received[r][first : first + _MESSAGE_LIMIT], source=r, tag=_EXCHANGE_TAG))
    for r in range(comm.size):
        if r == me:
            continue
        send = np.ascontiguousarray(sends[r], dtype=dtype)
        outgoing.append(send)
        for first in range(0, send.size, _MESSAGE_LIMIT):
            requests.append(comm.Isend(send[first : first + _MESSAGE_LIMIT], dest=r, tag=_EXCHANGE_TAG))
    MPI.Request.Waitall(requests)
    return received


def _by_columns_ld(rows: int) -> int:
    """Elements between the columns of ``rows`` boundary rows stored by columns: whole 32-byte sectors."""
    return -(-rows // _BY_COLUMNS_ALIGN) * _BY_COLUMNS_ALIGN


class BoundaryGraph:
    """The levels of the boundary-graph method for one partitioned graph.

    Parameters
    ----------
    graph : Graph
    partition : Partition
    boundary_rows : dict
        ``{p: L_p[:nb_p]}`` for every component with vertices (host or device
        arrays), from :func:`pack_boundary_rows` (gathered from all ranks).
    xp : module
        ``numpy`` or ``cupy``: where the levels live and the work runs.
    dtype : dtype
        Distance dtype.
    dense_limit, super_size : int, optional
        Largest boundary closed densely, and vertices per super-group above it
        (defaults per backend: ``DENSE_LIMIT``, ``SUPER_SIZE``).
    seed : int
        Seed of the METIS calls that form super-groups.
    tree : LevelTree, optional
        The levels' shape when already made (by the schedule, see
        :func:`fastapsp.schedule.schedule_in_order`); its limits and seed then hold.
    comm : communicator, optional
        The ranks that share the closures of the upper levels (see the module
        docstring: what each rank closes, what travels).  Collective: every
        rank of ``comm`` builds its BoundaryGraph from the same tree and
        boundary rows.  A rank that fails here leaves the others waiting for
        its part of a level: run it where a failure ends the job
        (:func:`fastapsp.comm.run_or_abort`).  None: this process closes
        every super-group.
    components : sequence of int, optional
        The components whose rows :meth:`boundary_rows` will be asked for on
        this rank (default: all).  Only the upper rows they need are kept.
    packing : Packing, optional
        The run's decision whether products run in packed 16-bit arithmetic
        (:class:`~fastapsp.stages.min_plus.Packing`), shared with the
        components' products; by default one of its own.
    receive_cost : int, optional
        With ``comm``: relaxations of a closure that take as long as receiving
        one distance from another rank (:func:`fastapsp.cost.receive_relaxations`);
        a rank closes itself what costs it less than receiving it
        (:func:`assign_closures`).  0, the default: only the balance counts.
    on_device : bool
        With ``comm``: the closures travel through :func:`fastapsp.peers.share_on_device`,
        GPU to GPU (every rank of ``comm`` on one node, as :func:`fastapsp.peers.peer_rate`
        found), not through the host.

    Examples
    --------
    >>> from fastapsp.graph import Graph
    >>> from fastapsp.partition import make_partition
    >>> g = Graph.from_edges(4, [0, 1, 2], [1, 2, 3], [1.0, 5.0, 2.0], directed=False)
    >>> part = make_partition(g, np.array([0, 0, 1, 1]), 2, method="given", seed=0, imbalance=0, seconds=0)
    >>> closed = close_components(g.indptr, g.indices, g.weights, part, [0, 1], dtype=np.float64)
    >>> bg = BoundaryGraph(g, part, pack_boundary_rows(closed, part), np, np.float64)
    >>> [(p, rows.tolist()) for p, rows in bg.boundary_rows([0])]
    [(0, [[1.0, 0.0, 5.0, 7.0]])]
    """

    def __init__(self, graph, partition, boundary_rows: dict, xp, dtype, *, dense_limit: int | None = None,
                 super_size: int | None = None, seed: int = 42, tree: LevelTree | None = None, comm=None,
                 components=None, packing: Packing | None = None, receive_cost: int = 0, on_device: bool = False):
        self.xp = xp
        self.receive_cost = int(receive_cost)
        self.on_device = bool(on_device)
        self.dtype = np.dtype(dtype)
        if tree is None:
            backend = "numpy" if xp is np else "cupy"
            tree = LevelTree(graph, partition, dense_limit=DENSE_LIMIT[backend] if dense_limit is None else dense_limit,
                             super_size=SUPER_SIZE[backend] if super_size is None else super_size, seed=seed)
        elif tree.n != graph.n or tree.k != partition.k:
            raise ValueError(f"tree: made for {tree.n} vertices and {tree.k} components, "
                             f"not {graph.n} and {partition.k}")
        self.tree = tree
        self.n = graph.n
        # Whole-number distances: packed 16-bit products on the GPU where they fit (the run's one decision).
        self.packing = Packing.for_run(graph, xp) if packing is None else packing
        self._kept_rows: dict = {}  # level -> (group, its full rows), see _full_rows
        self.position = tree.position
        # Level order is vertex order where the run's vertices were renamed to it (each pair once,
        # fastapsp.planning.renamed_by_component): the boundary rows need no reordering then.
        self._in_vertex_order = bool(np.array_equal(self.position, np.arange(graph.n)))
        self._position_dev = None if self._in_vertex_order else \
            xp.asarray(self.position, dtype=np.int64) if xp is not np else self.position
        self._ordinal = tree.ordinals()  # groups of every level in depth-first order (_row_batches)
        for p in range(partition.k):
            if partition.sizes[p] and p not in boundary_rows:
                raise ValueError(f"boundary_rows: the rows of component {p} are missing")
        self.announced = np.ones(partition.k, dtype=bool)  # components whose rows may be asked for here
        if components is not None:
            components = distinct(np.asarray(list(components), dtype=np.int64))
            bad = components[(components < 0) | (components >= partition.k)]
            if bad.size:
                raise ValueError(f"components: {bad[:5].tolist()} not in 0..{partition.k - 1}")
            self.announced[:] = False
            self.announced[components] = True
        self.received_bytes: list[int] = []  # per upper level, what this rank received from the others
        self.closed: list[np.ndarray] = []  # per upper level, the super-groups this rank closed
        # Per upper level, where this rank's time went: its super-groups, how many this rank closed, the
        # largest, the seconds closing them, exchanging with the other ranks and making the level's rows.
        self.upper_seconds: list[dict] = []
        self.levels = [self._make_level(graph.n, tree.starts[0], tree.nb[0], lambda g: boundary_rows.get(g))]
        self._build_upper_levels(comm)

    @property
    def level_sizes(self) -> list[int]:
        """Vertices of every level (level 0: the graph's)."""
        return self.tree.level_sizes

    # ---------------------------------------------------------------- levels
    def _make_level(self, n, starts, nb, rows_of) -> _Level:
        xp = self.xp
        sizes = np.diff(starts)
        offsets = np.zeros(sizes.size, dtype=np.int64)
        if sizes.size > 1:
            np.cumsum((nb * sizes)[:-1], out=offsets[1:])
        # One concatenation (one copy kernel on CuPy) rather than a copy per group.
        pieces = [xp.asarray(rows_of(g), dtype=self.dtype).ravel() for g in range(sizes.size) if nb[g] and sizes[g]]
        lb = xp.concatenate(pieces) if pieces else xp.empty(0, dtype=self.dtype)
        return _Level(int(n), starts.astype(np.int64), nb.astype(np.int64), lb, offsets)

    def _build_upper_levels(self, comm) -> None:
        """Levels 1, 2, ... up to the dense top: the closure of every super-group of the tree,
        shared out among the ranks of ``comm`` (see :func:`assign_closures`)."""
        ranks, rank = (1, 0) if comm is None else (comm.size, comm.rank)
        mine = np.flatnonzero(self.announced)
        every = [mine] if ranks == 1 else comm.allgather(mine)
        needs = [_needed(self.tree, components) for components in every]
        wait = (lambda: None) if self.xp is np else self.xp.cuda.get_current_stream().synchronize
        for i, step in enumerate(self.tree.steps):
            t0 = time.perf_counter()
            lev = self.levels[-1]
            lev.super_of, lev.next_pos = step.super_of, step.next_pos
            sizes = np.diff(step.starts)
            need = np.array([per_rank[i] for per_rank in needs])
            if ranks == 1:  # alone: every super-group, its rows for the next level, its interior where needed
                owner, closes = np.zeros(sizes.size, dtype=np.int64), np.ones((1, sizes.size), dtype=bool)
            else:
                owner, closes = assign_closures(sizes, need, step.nb, self.receive_cost)
            closed = self._close_supers(lev, np.flatnonzero(closes[rank]), step)
            wait()  # (the exchange waits for the closures anyway)
            t1 = time.perf_counter()
            received = {} if ranks == 1 else self._exchange(comm, step, owner, closes, need, closed)
            t2 = time.perf_counter()
            self.closed.append(np.flatnonzero(closes[rank]))
            nxt = self._make_level(int(lev.nb.sum()), step.starts, step.nb,
                                   lambda s: closed[s][: step.nb[s]] if s in closed else received[s][0])
            for s in np.flatnonzero(need[rank]).tolist():
                nxt.inner[s] = closed[s][step.nb[s]:] if s in closed else received[s][1]
            self.levels.append(nxt)
            wait()
            self.upper_seconds.append({
                "level": i + 1, "super_groups": int(sizes.size), "closed_here": len(closed),
                "largest": int(sizes.max()) if sizes.size else 0, "close": round(t1 - t0, 6),
                "exchange": round(t2 - t1, 6), "make": round(time.perf_counter() - t2, 6),
                "received_bytes": self.received_bytes[-1] if ranks > 1 else 0})

    def _exchange(self, comm, step: _Step, owner, closes, need, closed: dict) -> dict:
        """What this rank lacks of one level's closures, from the ranks that closed them.

        Rank ``o`` sends rank ``d`` (``o != d``), for every super-group ``s`` it owns
        and ``d`` does not close, ``L_s[:nb_s]``, followed by ``L_s[nb_s:]`` when ``d``
        makes the rows of ``s``: the first ``nb_s`` or all ``c_s`` rows of the closure,
        one message per pair of ranks (every rank derives every count from the same
        arguments).  Returns ``{s: (L_s[:nb_s], L_s[nb_s:] or None)}`` of the
        super-groups received.
        """
        xp, ranks, me = self.xp, comm.size, comm.rank
        sizes = np.diff(step.starts)

        def parts(o, d):  # (s, rows of L_s sent) from rank o to rank d, in order
            return [(s, int(sizes[s]) if need[d, s] else int(step.nb[s]))
                    for s in np.flatnonzero(owner == o).tolist() if not closes[d, s]]

        pieces = [[closed[s][:rows] for s, rows in parts(me, d)] if d != me else [] for d in range(ranks)]
        counts = [0 if o == me else sum(rows * int(sizes[s]) for s, rows in parts(o, me)) for o in range(ranks)]
        got = None
        if self.on_device:  # one buffer of everything this rank sends; each rank copies its segment
            from ..peers import share_on_device

            lengths = [sum(int(piece.size) for piece in mine) for mine in pieces]
            starts = np.concatenate([[0], np.cumsum(lengths)])
            got = share_on_device(comm, [piece for mine in pieces for piece in mine],
                                  [(int(starts[d]), lengths[d]) for d in range(ranks)], counts, self.dtype)
        if got is None:  # through the host (or no room on some GPU for the copy)
            sends = [xp.concatenate([piece.ravel() for piece in mine]) if mine else xp.empty(0, dtype=self.dtype)
                     for mine in pieces]
            got = _send_receive([send.get() if hasattr(send, "get") else send for send in sends], counts, comm=comm,
                                dtype=self.dtype)
        self.received_bytes.append(sum(counts) * self.dtype.itemsize)
        received = {}
        for o in range(ranks):
            if o == me or not counts[o]:
                continue
            flat, offset = xp.asarray(got[o]), 0
            for s, rows in parts(o, me):
                c, nb = int(sizes[s]), int(step.nb[s])
                block = flat[offset : offset + rows * c].reshape(rows, c)
                offset += rows * c
                received[s] = (block[:nb], block[nb:].copy() if rows == c else None)
        return received

    def _close_supers(self, lev, supers, step: _Step) -> dict:
        """``{s: L_s}``: the Floyd-Warshall closures of the groups ``supers`` of the next level.

        Every matrix is made first (:meth:`_super_matrix`), then, on the GPU, closed
        together with those of a similar size in the same launches
        (:func:`~fastapsp.stages.floyd_warshall.close_many`, the kernels of one closure
        run per matrix): a level of a hundred super-groups of two thousand vertices
        takes three launches per 64 rows instead of three per 64 rows and super-group.
        The matrices are all held at once either way (the level keeps every closure
        until the next level is made).
        """
        group = step.inner[3]
        order = np.argsort(group, kind="stable")  # each super-group's arcs, found once for the level
        bounds = np.searchsorted(group[order], np.concatenate([supers, supers + 1]))
        arcs = {int(s): order[bounds[i] : bounds[supers.size + i]] for i, s in enumerate(supers)}
        matrices = {int(s): self._super_matrix(lev, int(s), step, arcs[int(s)]) for s in supers}
        if self.xp is np:
            for matrix in matrices.values():
                blocked_floyd_warshall(matrix)
            return matrices
        for batch in _similar_sizes(list(matrices.values())):
            close_many(batch)
        return matrices

    def _super_matrix(self, lev, s, step: _Step, arcs):
        """Group ``s`` of the next level before its closure: the cliques of its groups (their
        ``L_g`` on boundary vertices) plus the arcs between them (``arcs``: their places in
        ``step.inner``)."""
        xp = self.xp
        first = int(step.starts[s])
        c = int(step.starts[s + 1]) - first
        matrix = xp.full((c, c), np.inf, dtype=self.dtype)
        groups = np.flatnonzero(step.super_of == s)
        groups = groups[lev.nb[groups] > 0]
        position = self._next_pos_dev(lev) if xp is not np else lev.next_pos
        bstart = lev.bstart
        for chunk in _runs_within(groups, lev.nb[groups] ** 2, CLIQUE_ENTRIES):
            # Operations with a scalar as functions on the GPU path (DEVELOPERS.md says why).
            local = xp.subtract(position[bstart[chunk[0]] : bstart[chunk[-1] + 1]], first)
            self._place_cliques(matrix, lev, chunk, local, bstart[chunk] - bstart[chunk[0]])
        rows, cols, weights, _ = step.inner
        if arcs.size:
            matrix[xp.asarray(rows[arcs] - first), xp.asarray(cols[arcs] - first)] = \
                xp.asarray(weights[arcs], dtype=self.dtype)
        idx = xp.arange(c)
        matrix[idx, idx] = 0
        return matrix

    def _place_cliques(self, matrix, lev, groups, local, offsets) -> None:
        """Write the cliques ``L_g[:nb_g, :nb_g]`` of ``groups`` into ``matrix`` at their boundary vertices'
        places ``local`` (theirs one group after another; ``offsets`` where each group's start there).

        Several groups: one gather and one scatter of all their entries.  One group: its rows and columns
        by broadcasting (a clique too large for the entries' index arrays, see :data:`CLIQUE_ENTRIES`)."""
        xp = self.xp
        nb = lev.nb[groups]
        if groups.size == 1:
            ids = local[: int(nb[0])]
            matrix[ids[:, None], ids[None, :]] = lev.boundary_block(int(groups[0]))[:, : int(nb[0])]
            return
        width = lev.starts[groups + 1] - lev.starts[groups]
        ends = np.cumsum(nb * nb)
        entry = xp.arange(int(ends[-1]), dtype=np.int64)
        which = xp.searchsorted(xp.asarray(ends), entry, side="right")
        within = entry - xp.asarray(ends - nb * nb)[which]
        nb_of = xp.asarray(nb)[which]
        i = within // nb_of
        j = within - i * nb_of
        source = xp.asarray(lev.lb_offset[groups])[which] + i * xp.asarray(width)[which] + j
        base = xp.asarray(offsets)[which]
        c = matrix.shape[0]
        matrix.reshape(-1)[xp.multiply(local[base + i], c) + local[base + j]] = lev.lb[source]

    # ------------------------------------------------------------------ rows
    def visit_order(self, components, level: int = 0) -> list:
        """``components`` (groups of ``level``) in the order :meth:`boundary_rows` yields them: super-group
        by super-group, in the tree's depth-first order."""
        return sorted((int(g) for g in components), key=lambda g: int(self._ordinal[level][g]))

    def boundary_rows(self, components, *, level_order: bool = False):
        """Yield ``(p, rows)``: distances from the boundary vertices of component ``p``
        to every vertex (original vertex order), for the components asked for.

        Components are visited grouped by their super-group, so each
        super-group's rows are made once; the order may differ from the one given.
        ``level_order``: the rows' columns in level order instead, for :meth:`vertex_order`
        to put in vertex order where the caller wants them (a row block's first rows); on the GPU they
        may then be stored by columns (a view of another layout), which only :meth:`vertex_order` reads.
        """
        components = [int(p) for p in components]
        unknown = [p for p in components if not (0 <= p < self.announced.size and self.announced[p])]
        if unknown:
            raise ValueError(f"components: {unknown[:5]} were not among those this BoundaryGraph was made for "
                             f"({int(self.announced.sum())} of {self.announced.size})")
        if len(self.levels) == 1:  # no boundary anywhere
            for p in components:
                yield p, self.xp.empty((0, self.n), dtype=self.dtype)
            return
        # On the GPU, rows that vertex_order must reorder are made stored by columns: its gather then reads
        # whole sectors (a column of 32 rows is 128 contiguous bytes in float32) where a gather of
        # row-major rows reads one value a sector, at random.
        by_columns = self.xp is not np and not self._in_vertex_order
        for batch, rows in self._row_batches(0, components, by_columns=by_columns):
            if not level_order:
                rows = self.vertex_order(rows)  # once for the batch
            for g, first, last in batch:
                yield g, rows[first:last]

    def vertex_order(self, rows, out=None):
        """Rows of level-0 columns (:meth:`boundary_rows` with ``level_order``) in the original vertex
        order, into ``out`` where given (an array of their shape, e.g. a view of a row block)."""
        if not self._in_vertex_order:
            if self.xp is not np:
                from ._cuda import gather_by_columns_cuda, stored_by_columns

                if stored_by_columns(rows) is not None:
                    return gather_by_columns_cuda(rows, self._position_dev, out=out)
            return self.xp.take(rows, self._position_dev, axis=1, out=out)
        if out is None:
            return rows
        out[...] = rows
        return out

    def _rows_by_group(self, level: int, groups):
        """``(g, rows)`` of the boundary vertices of each group, level order of ``level``."""
        for batch, rows in self._row_batches(level, groups):
            for g, first, last in batch:
                yield g, rows[first:last]

    def _row_batches(self, level: int, groups, *, by_columns: bool = False):
        """``(batch, rows)``: the boundary rows of several groups of one super-group, made together.

        ``batch`` lists ``(g, first, last)``: group ``g``'s rows are ``rows[first:last]``
        (level order of ``level``).  Groups are visited by super-group; consecutive
        ones of the same super-group share one grouped min-plus of up to
        ``BATCH_ROWS`` rows (a road network's component has ~20 boundary
        vertices: alone they would fill a third of the product's 64-row tiles), and
        of at most :func:`batch_rows`'s bytes; a group with more rows is made alone.
        ``by_columns`` (GPU): ``rows`` stored by columns (:meth:`_grouped_min_plus`).
        """
        lev, nxt = self.levels[level], self.levels[level + 1]
        xp = self.xp
        bstart = lev.bstart
        groups = self.visit_order(groups, level)  # super-group by super-group
        current, rows_s = None, None
        most = batch_rows(lev.n, self.dtype.itemsize, available_bytes(xp))
        i = 0
        while i < len(groups):
            g = groups[i]
            s = int(lev.super_of[g])
            if lev.nb[g] == 0:
                yield [(g, 0, 0)], xp.empty((0, lev.n), dtype=self.dtype)
                i += 1
                continue
            if s != current:
                # The super-group's rows with their columns put in this level's boundary index, once
                # for all its groups: each batch then takes its groups' rows alone (whole rows).
                current, rows_s = s, None
                rows_s = xp.take(self._full_rows(level + 1, s), self._next_pos_dev(lev), axis=1)
            batch, count = [], 0
            while i < len(groups):
                h = groups[i]
                nb = int(lev.nb[h])
                if int(lev.super_of[h]) != s or nb == 0 or (batch and count + nb > most):
                    break
                batch.append((h, count, count + nb))
                count += nb
                i += 1
            local = np.concatenate([lev.next_pos[bstart[h] : bstart[h] + last - first] for h, first, last in batch])
            yield batch, self._grouped_min_plus(lev, xp.take(rows_s, xp.asarray(local - nxt.starts[s]), axis=0),
                                                by_columns=by_columns)

    def _next_pos_dev(self, lev: _Level):
        if "next_pos" not in lev._device:
            lev._device["next_pos"] = self.xp.asarray(lev.next_pos, dtype=np.int64)
        return lev._device["next_pos"]

    def _full_rows(self, level: int, s: int):
        """Distances from every vertex of group ``s`` of ``level`` (>= 1) to all of the level's vertices.

        The last group's rows of every level are kept: groups below are visited
        in the order of their super-groups, so consecutive ones share them.
        """
        lev = self.levels[level]
        inner = lev.inner[s]
        if lev.super_of is None:  # the last level (no boundary): the dense closure is the answer
            if lev.k == 1:
                return inner
            # Several groups that no arc joins (a disconnected graph): nothing outside s is reached.
            rows = self.xp.full((inner.shape[0], lev.n), np.inf, dtype=self.dtype)
            rows[:, int(lev.starts[s]) : int(lev.starts[s + 1])] = inner
            return rows
        kept = self._kept_rows.get(level)
        if kept is not None and kept[0] == s:
            return kept[1]
        rows = self._make_full_rows(level, s, lev, inner)
        self._kept_rows[level] = (s, rows)
        return rows

    def _make_full_rows(self, level: int, s: int, lev, inner):
        """The rows of group ``s``'s boundary vertices from the level above, and of its interior
        vertices ``inner`` (``L_s[nb_s:]``) through them: ``min(L_s[i, b] + d(b, x), L_s[i, x])``."""
        xp = self.xp
        nb = int(lev.nb[s])
        c = nb + inner.shape[0]
        rows = xp.empty((c, lev.n), dtype=self.dtype)
        (_, brows), = self._rows_by_group(level, [s])
        rows[:nb] = brows
        if c > nb:
            min_plus(inner[:, :nb], brows, out=rows[nb:], integer=self.packing(brows))
            g0, g1 = int(lev.starts[s]), int(lev.starts[s + 1])
            xp.minimum(rows[nb:, g0:g1], inner, out=rows[nb:, g0:g1])
        return rows

    def _grouped_min_plus(self, lev: _Level, a, *, by_columns: bool = False):
        """``out[i, x] = min_t a[i, bstart_q + t] + L_q[t, x - starts_q]`` for x in group q.

        ``by_columns`` (GPU): ``out`` stored by columns, ``out[i, x]`` at ``x * ld + i`` with ``ld`` the
        rows rounded up to 8 (whole 32-byte sectors in float32), a view of shape (rows, n) like the other.
        On the GPU the products of whole numbers run packed in 16 bits where the run's products do
        (:attr:`packing`).
        """
        xp = self.xp
        rows = a.shape[0]
        if by_columns:  # decided once, by boundary_rows
            out = xp.empty((lev.n, _by_columns_ld(rows)), dtype=self.dtype)[:, :rows].T
        else:
            out = xp.empty((rows, lev.n), dtype=self.dtype)
        if xp is np:
            out.fill(np.inf)
            bstart = lev.bstart
            for q in range(lev.k):
                if lev.nb[q] and lev.starts[q + 1] > lev.starts[q]:
                    block = lev.boundary_block(q)
                    min_plus(a[:, bstart[q] : bstart[q + 1]], block,
                             out=out[:, lev.starts[q] : lev.starts[q + 1]])
            return out
        from ._cuda import grouped_min_plus_cuda

        return grouped_min_plus_cuda(a, lev, out, integer=self.packing(a))
