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
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..backend import array_module
from ..graph import arc_positions, distinct
from .build import build_component_matrix
from .floyd_warshall import blocked_floyd_warshall, close_many
from .min_plus import min_plus

__all__ = ["BoundaryGraph", "LevelTree", "close_components", "closure_batch_limit", "batch_rows", "pack_boundary_rows",
           "DENSE_LIMIT", "SUPER_SIZE", "CLOSURE_BATCH_BYTES", "BATCH_ROWS", "BATCH_BYTES"]

# Largest boundary closed by one dense Floyd-Warshall (|B|^2 distances), per backend.
DENSE_LIMIT = {"cupy": 16384, "numpy": 1536}
# Vertices aimed at per super-group when a level is too large for the dense closure.
SUPER_SIZE = {"cupy": 2048, "numpy": 256}
_TILE = 64  # column tile of grouped_min_plus.cu
BATCH_ROWS = 128  # boundary rows of several groups made by one grouped min-plus (BoundaryGraph._row_batches),
BATCH_BYTES = 512 << 20  # and at most this many bytes of them (fewer rows on graphs of many vertices)
CLOSURE_BATCH_BYTES = 1 << 30  # component matrices closed together (on the GPU they share their launches)


def close_components(indptr, indices, weights, partition, components, *, dtype):
    """Distances inside every component of ``components``, over its own arcs only.

    Returns ``{p: L_p}`` with ``L_p`` of shape (c_p, c_p) in the component's
    vertex order (boundary first), on the array module of ``indptr``.
    """
    xp = array_module(indptr, indices, weights)
    if xp is not np:  # one launch builds them all (the matrices are views of one buffer)
        from ._cuda import build_local_batch_cuda

        closed = build_local_batch_cuda(indptr, indices, weights, partition, components, dtype)
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


def closure_batch_limit(budget: int) -> int:
    """Bytes of component matrices closed together when ``budget`` bytes may hold closures:
    ``CLOSURE_BATCH_BYTES``, and at most a quarter of the budget."""
    return max(1, min(CLOSURE_BATCH_BYTES, budget // 4))


def batch_rows(n: int, itemsize: int) -> int:
    """Boundary rows of ``n`` columns that one batch of groups may hold (:meth:`BoundaryGraph._row_batches`):
    ``BATCH_ROWS``, fewer when they would pass ``BATCH_BYTES``, at least one (a larger group is made alone)."""
    return max(1, min(BATCH_ROWS, BATCH_BYTES // max(1, n * itemsize)))


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
    local: dict = field(default_factory=dict)  # g -> closed L_g (xp), kept where needed
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


def _bstart(nb: np.ndarray) -> np.ndarray:
    """Where each group's boundary vertices start in the boundary index (k + 1 entries)."""
    out = np.zeros(nb.size + 1, dtype=np.int64)
    np.cumsum(nb, out=out[1:])
    return out


def _boundary_index(starts: np.ndarray, nb: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Boundary index of the level positions ``positions`` (boundary positions only)."""
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
        size: 35,205 vertices (4.4e13 relaxations, 5 GB) for the 2^21
        Delaunay graph at k = 2,435.
    """

    def __init__(self, graph, partition, *, dense_limit: int, super_size: int, seed: int = 42, widen: bool = True):
        if dense_limit < 1 or super_size < 2:
            raise ValueError(f"dense_limit {dense_limit} must be >= 1 and super_size {super_size} >= 2")
        self.dense_limit, self.super_size, self.seed = int(dense_limit), int(super_size), int(seed)
        self.widen = bool(widen)
        self.n, self.k = graph.n, partition.k
        self.position = np.empty(graph.n, dtype=np.int64)  # original vertex -> level-0 position
        self.position[partition._order] = np.arange(graph.n, dtype=np.int64)
        starts = np.zeros(partition.k + 1, dtype=np.int64)
        np.cumsum(partition.sizes, out=starts[1:])
        nb = partition.boundary_per_part.astype(np.int64)
        self.starts, self.nb = [starts], [nb]  # of every level
        # Cut arcs in level-0 boundary index.  A cut arc leaves a boundary vertex, so only the arcs of
        # boundary vertices are looked at (on the 2^21 Delaunay graph 12% of them; same order as arcs()).
        tails = np.flatnonzero(partition.boundary)
        at, counts = arc_positions(graph.indptr, tails)
        src, dst, w = np.repeat(tails, counts), graph.indices[at], graph.weights[at]
        cut = partition.labels[src] != partition.labels[dst]
        bs = _boundary_index(starts, nb, self.position[src[cut]])
        bd = _boundary_index(starts, nb, self.position[dst[cut]])
        self.steps: list[_Step] = []
        self._build(bs, bd, w[cut])

    @property
    def level_sizes(self) -> list[int]:
        return [int(s[-1]) for s in self.starts]

    def _build(self, bs, bd, w) -> None:
        while True:
            starts, nb = self.starts[-1], self.nb[-1]
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
                shrinks = distinct(np.concatenate([bs[crossing], bd[crossing]])).size < 0.9 * total
                if k2 < k and shrinks:
                    break
                super_of, k2 = None, 1  # no smaller level to be had this way
                if not self.widen:
                    break
                wanted = min(wanted, k) // 2  # fewer, larger super-groups; below 2: close this level densely
            if super_of is None:
                super_of = np.zeros(k, dtype=np.int64)
                crossing = np.zeros(bs.size, dtype=bool)
            on_boundary = np.zeros(total, dtype=bool)
            on_boundary[bs[crossing]] = True
            on_boundary[bd[crossing]] = True
            sup = super_of[group_of]
            order = np.lexsort((np.arange(total), ~on_boundary, sup))
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
            bs, bd, w = (_boundary_index(starts2, nb2, next_pos[bs[crossing]]),
                         _boundary_index(starts2, nb2, next_pos[bd[crossing]]), w[crossing])

    def _super_groups(self, k: int, nb: np.ndarray, gs, gd, k2: int):
        """Gather the ``k`` groups into about ``k2`` super-groups of equal boundary vertices."""
        import pymetis

        k2 = max(2, int(k2))
        if k2 >= k:
            return np.arange(k, dtype=np.int64), k
        # The distinct pairs of groups joined by a cut arc, both ways, sorted: as one int64 key each
        # (np.unique over the columns of a 2-row array sorts structured records: 0.6 s on the levels
        # of the 2^20 Delaunay graph, on the H100 host).
        keys = distinct(np.concatenate([gs * k + gd, gd * k + gs]).astype(np.int64, copy=False))
        pairs = np.stack([keys // k, keys % k])
        pairs = pairs[:, pairs[0] != pairs[1]]
        counts = np.bincount(pairs[0], minlength=k)
        xadj = np.zeros(k + 1, dtype=np.int64)
        np.cumsum(counts, out=xadj[1:])
        options = pymetis.Options(seed=self.seed, ufactor=30)
        if hasattr(pymetis, "CSRAdjacency"):
            graph = {"adjacency": pymetis.CSRAdjacency(xadj, pairs[1])}
        else:  # pragma: no cover - pymetis before 2025
            graph = {"xadj": xadj, "adjncy": pairs[1]}
        _, labels = pymetis.part_graph(int(k2), **graph, vweights=np.maximum(nb, 1), options=options,
                                       recursive=False)
        # Renumber the super-groups that received groups 0..k2'-1 (METIS may leave some empty).
        used, labels = np.unique(np.asarray(labels, dtype=np.int64), return_inverse=True)
        return labels.astype(np.int64), int(used.size)

    def ordinals(self) -> list[np.ndarray]:
        """For every level, each group's place in the tree's depth-first order: groups
        of the same super-group are consecutive, and so, level by level, up to the top."""
        ordinal = [np.zeros(1, dtype=np.int64)] if self.steps else []
        for step in reversed(self.steps):
            order = np.lexsort((np.arange(step.super_of.size), ordinal[0][step.super_of]))
            place = np.empty(order.size, dtype=np.int64)
            place[order] = np.arange(order.size, dtype=np.int64)
            ordinal.insert(0, place)
        return ordinal if ordinal else [np.arange(self.k, dtype=np.int64)]

    def order(self) -> np.ndarray:
        """The components (level-0 groups) in the tree's depth-first order."""
        return np.argsort(self.ordinals()[0], kind="stable")


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
                 super_size: int | None = None, seed: int = 42, tree: LevelTree | None = None):
        self.xp = xp
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
        self.integer = graph.integer_weights  # whole-number distances: packed 16-bit products on the GPU
        self._kept_rows: dict = {}  # level -> (group, its full rows), see _full_rows
        self.position = tree.position
        self._position_dev = xp.asarray(self.position, dtype=np.int64) if xp is not np else self.position
        self._ordinal = tree.ordinals()  # groups of every level in depth-first order (_row_batches)
        for p in range(partition.k):
            if partition.sizes[p] and p not in boundary_rows:
                raise ValueError(f"boundary_rows: the rows of component {p} are missing")
        self.levels = [self._make_level(graph.n, tree.starts[0], tree.nb[0], lambda g: boundary_rows.get(g))]
        self._build_upper_levels()

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
        total = int((nb * sizes).sum())
        lb = xp.empty(total, dtype=self.dtype)
        for g in range(sizes.size):
            if nb[g] and sizes[g]:
                block = rows_of(g)
                lb[offsets[g] : offsets[g] + nb[g] * sizes[g]] = xp.asarray(block, dtype=self.dtype).ravel()
        return _Level(int(n), starts.astype(np.int64), nb.astype(np.int64), lb, offsets)

    def _build_upper_levels(self) -> None:
        """Levels 1, 2, ... up to the dense top: the closure of every super-group of the tree."""
        for step in self.tree.steps:
            lev = self.levels[-1]
            lev.super_of, lev.next_pos = step.super_of, step.next_pos
            k2 = step.nb.size
            local = {s: self._close_super(lev, s, step) for s in range(k2)}
            nxt = self._make_level(int(lev.nb.sum()), step.starts, step.nb, lambda s: local[s][: step.nb[s]])
            nxt.local = local
            self.levels.append(nxt)

    def _close_super(self, lev, s, step: _Step):
        """Floyd-Warshall closure of group ``s`` of the next level: the cliques of its groups
        (their ``L_g`` on boundary vertices) plus the arcs between them."""
        xp = self.xp
        first = int(step.starts[s])
        c = int(step.starts[s + 1]) - first
        matrix = xp.full((c, c), np.inf, dtype=self.dtype)
        bstart = lev.bstart
        for g in np.flatnonzero(step.super_of == s):
            nb = int(lev.nb[g])
            if nb == 0:
                continue
            local_ids = xp.asarray(step.next_pos[bstart[g] : bstart[g] + nb] - first)
            matrix[local_ids[:, None], local_ids[None, :]] = lev.boundary_block(g)[:, :nb]
        rows, cols, weights, group = step.inner
        mine = group == s
        if mine.any():
            matrix[xp.asarray(rows[mine] - first), xp.asarray(cols[mine] - first)] = \
                xp.asarray(weights[mine], dtype=self.dtype)
        idx = xp.arange(c)
        matrix[idx, idx] = 0
        return blocked_floyd_warshall(matrix)

    # ------------------------------------------------------------------ rows
    def boundary_rows(self, components):
        """Yield ``(p, rows)``: distances from the boundary vertices of component ``p``
        to every vertex (original vertex order), for the components asked for.

        Components are visited grouped by their super-group, so each
        super-group's rows are made once; the order may differ from the one given.
        """
        components = [int(p) for p in components]
        if len(self.levels) == 1:  # no boundary anywhere
            for p in components:
                yield p, self.xp.empty((0, self.n), dtype=self.dtype)
            return
        for batch, rows in self._row_batches(0, components):
            rows = self.xp.take(rows, self._position_dev, axis=1)  # vertex order, once for the batch
            for g, first, last in batch:
                yield g, rows[first:last]

    def _rows_by_group(self, level: int, groups):
        """``(g, rows)`` of the boundary vertices of each group, level order of ``level``."""
        for batch, rows in self._row_batches(level, groups):
            for g, first, last in batch:
                yield g, rows[first:last]

    def _row_batches(self, level: int, groups):
        """``(batch, rows)``: the boundary rows of several groups of one super-group, made together.

        ``batch`` lists ``(g, first, last)``: group ``g``'s rows are ``rows[first:last]``
        (level order of ``level``).  Groups are visited by super-group; consecutive
        ones of the same super-group share one grouped min-plus of up to
        ``BATCH_ROWS`` rows (a road network's component has ~20 boundary
        vertices: alone they would fill a third of the product's 64-row tiles), and
        of at most ``BATCH_BYTES``; a group with more rows is made alone.
        """
        lev, nxt = self.levels[level], self.levels[level + 1]
        xp = self.xp
        bstart = lev.bstart
        groups = sorted(groups, key=lambda g: int(self._ordinal[level][g]))  # super-group by super-group
        current, rows_s = None, None
        most = batch_rows(lev.n, self.dtype.itemsize)
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
            yield batch, self._grouped_min_plus(lev, xp.take(rows_s, xp.asarray(local - nxt.starts[s]), axis=0))

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
        matrix = lev.local[s]
        if lev.super_of is None:  # top level: the dense closure is the answer
            return matrix
        kept = self._kept_rows.get(level)
        if kept is not None and kept[0] == s:
            return kept[1]
        rows = self._make_full_rows(level, s, lev, matrix)
        self._kept_rows[level] = (s, rows)
        return rows

    def _make_full_rows(self, level: int, s: int, lev, matrix):
        xp = self.xp
        nb = int(lev.nb[s])
        c = matrix.shape[0]
        rows = xp.empty((c, lev.n), dtype=self.dtype)
        (_, brows), = self._rows_by_group(level, [s])
        rows[:nb] = brows
        if c > nb:
            min_plus(matrix[nb:, :nb], brows, out=rows[nb:], integer=self.integer)
            g0, g1 = int(lev.starts[s]), int(lev.starts[s + 1])
            xp.minimum(rows[nb:, g0:g1], matrix[nb:], out=rows[nb:, g0:g1])
        return rows

    def _grouped_min_plus(self, lev: _Level, a):
        """``out[i, x] = min_t a[i, bstart_q + t] + L_q[t, x - starts_q]`` for x in group q."""
        xp = self.xp
        rows = a.shape[0]
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

        return grouped_min_plus_cuda(a, lev, out)
