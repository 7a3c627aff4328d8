"""Statistics of the distance matrix, reduced from each row block where it is made.

A :class:`StatsAccumulator` is fed every row block of the distance matrix on the
device that computed it (NumPy or CuPy, the array module is taken from the
block), before anything is copied to the host.  It keeps O(n) numbers: per row
(out-going distances) and per column (in-coming distances) the sum of finite
distances, the reachable count, the sum of reciprocal distances and, per row,
the largest finite distance; and a histogram of all finite distances.  The
ranks' accumulators are combined with :meth:`StatsAccumulator.finalize`.

For an undirected graph a run may feed each pair of vertices once
(``update(pairs=True)``, :func:`fastapsp.planning.renamed_by_component`): a block entry
then stands for ``d(u, v)`` and ``d(v, u)``, adding to its row and its column
(the column's largest distance kept too) and counting twice in the histogram;
``finalize`` adds each vertex's row and column parts.

Definitions (``d(u, v)`` the distance, ``inf`` when ``v`` cannot be reached):

- ``reachable[v]``: vertices ``u != v`` with ``d(v, u)`` finite (``reachable_in``: ``d(u, v)``).
- ``sum_distances[v]``: sum of the finite ``d(v, u)`` (``sum_distances_in``: of ``d(u, v)``).
- ``eccentricity[v]``: ``max_u d(v, u)``, ``inf`` when ``v`` cannot reach every vertex.
- ``closeness`` and ``harmonic``: as :func:`networkx.closeness_centrality` (with the
  Wasserman-Faust correction) and :func:`networkx.harmonic_centrality` define them,
  which for directed graphs use in-coming distances; ``closeness_out`` and
  ``harmonic_out`` use out-going ones.
- ``diameter``, ``radius``: largest and smallest over ``v`` of the largest finite
  ``d(v, u)`` (equal to networkx's when ``strongly_connected``); ``center_size``
  and ``periphery_size`` count the vertices attaining them.
- ``reachable_pairs``: ordered pairs ``u != v`` with ``d(u, v)`` finite;
  ``sum_of_distances`` their total; ``average_shortest_path_length`` the mean;
  ``wiener_index`` as networkx (half the total for undirected graphs, ``inf`` unless
  strongly connected).
- The histogram counts the reachable ordered pairs ``u != v`` by distance: bin ``i``
  holds ``bin_width * i <= d < bin_width * (i + 1)``.  For integer weights the
  width is 1 (one bin per distance) unless the distances exceed 65,536, for real
  weights a power of two; the width doubles, merging pairs of bins, whenever a
  distance falls past the last bin, so counts stay exact per bin.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np

from .backend import array_module
from .graph import count_values

__all__ = ["StatsAccumulator", "ProductStats", "Stats", "finish_stats"]

# Elements of one row block reduced at once: bounds the temporaries (about 30 bytes each).
_CHUNK_ELEMENTS = 1 << 22
_INTEGER_BINS = 1 << 16
_REAL_BINS = 1 << 10
_VERTEX_ARRAYS = ("eccentricity", "closeness", "closeness_out", "harmonic", "harmonic_out", "sum_distances",
                  "sum_distances_in", "reachable", "reachable_in")


def _initial_bin_width(graph, integer: bool) -> float:
    """1 for integer weights; else a power of two, 1/64 of the largest weight (or 1 without arcs)."""
    if integer or graph.m == 0 or float(graph.weights.max()) == 0.0:
        return 1.0
    return 2.0 ** (math.floor(math.log2(float(graph.weights.max()))) - 6)


class StatsAccumulator:
    """Per-vertex and global reductions of the distance matrix, fed one row block at a time.

    Parameters
    ----------
    n : int
        Number of vertices (columns of every row).
    xp : module
        ``numpy`` or ``cupy``: where the accumulators live (the blocks' module).
    integer : bool
        True when distances are whole numbers: sums are then kept in int64,
        and the histogram starts with one bin per distance.
    directed : bool
        Whether the graph is directed (only the Wiener index depends on it).
    bin_width : float
        Initial histogram bin width (a power of two times 1 for exact merging).

    Examples
    --------
    >>> import numpy as np
    >>> acc = StatsAccumulator(2, integer=True, directed=False)
    >>> acc.update(np.array([0, 1]), 0, np.array([[0.0, 3.0], [3.0, 0.0]]))
    >>> s = acc.finalize()
    >>> s["diameter"], s["closeness"].tolist()
    (3, [0.3333333333333333, 0.3333333333333333])
    """

    def __init__(self, n: int, *, xp=np, integer: bool, directed: bool, bin_width: float = 1.0,
                 max_distance: float | None = None) -> None:
        if n < 0:
            raise ValueError(f"n: {n} is negative")
        if not bin_width > 0:
            raise ValueError(f"bin_width: {bin_width} must be > 0")
        self.n, self.xp, self.integer, self.directed = int(n), xp, bool(integer), bool(directed)
        total = np.int64 if integer else np.float64
        self.row_sum = xp.zeros(n, dtype=total)
        self.col_sum = xp.zeros(n, dtype=total)
        self.row_reach = xp.zeros(n, dtype=np.int64)
        self.col_reach = xp.zeros(n, dtype=np.int64)
        self.row_harm = xp.zeros(n, dtype=np.float64)
        self.col_harm = xp.zeros(n, dtype=np.float64)
        self.row_max = xp.zeros(n, dtype=np.float64)
        self.col_max = xp.zeros(n, dtype=np.float64)  # fed by pair blocks only (update(pairs=True))
        self.bins = _INTEGER_BINS if integer else _REAL_BINS
        self.base_width = float(bin_width)
        self.level = 0  # the bin width is base_width * 2**level
        self.hist = xp.zeros(self.bins, dtype=np.int64)
        # Host bookkeeping of the diagonal (d(v, v) = 0 is in some block of row v): removed at the end.
        self.diagonal = np.zeros(n, dtype=np.int64)
        self.max_distance = max_distance
        self._gpu = None  # the fused kernel's state (fastapsp/reductions_gpu.py), made at the first CuPy block
        # The run's vertex i is the graph's vertex vertex_order[i] (a run on Graph.permuted): finalize
        # gives the per-vertex arrays in the graph's own order.
        self.vertex_order = None

    @classmethod
    def for_graph(cls, graph, backend: str = "numpy") -> "StatsAccumulator":
        """An accumulator for ``graph``'s distances, on the ``numpy`` or ``cupy`` backend."""
        if backend == "cupy":
            import cupy as xp
        else:
            xp = np
        integer = graph.integer_weights
        from .precision import distance_bound

        return cls(graph.n, xp=xp, integer=integer, directed=graph.directed,
                   bin_width=_initial_bin_width(graph, integer), max_distance=distance_bound(graph))

    @property
    def bin_width(self) -> float:
        return self.base_width * 2.0**self.level

    # ------------------------------------------------------------------ feeding
    def update(self, rows, column_start: int, block, *, pairs: bool = False) -> None:
        """Add the distances ``block[a, j] = d(rows[a], column_start + j)``.

        Parameters
        ----------
        rows : ndarray of int, shape (r,)
            Vertex of every row (host or device); distinct within a block.
        column_start : int
            Vertex of the first column.
        block : ndarray, shape (r, w)
            Exact distances on the accumulator's array module, ``inf`` for unreachable.
        pairs : bool
            Undirected graphs, each pair fed once (``--stats`` computes half
            the matrix): ``rows`` are the consecutive vertices ``s .. e - 1``
            of one component, the block's columns start at ``s`` or later,
            columns below ``e`` (the component's own) stand for themselves and
            columns from ``e`` on for both ``d(rows[a], v)`` and ``d(v, rows[a])``,
            whose own blocks leave out the columns before them.
        """
        if pairs:
            self._update_pairs(rows, column_start, block)
            return
        xp = array_module(block)
        if xp is not self.xp:
            raise TypeError(f"block: a {type(block).__module__} array, but the accumulator lives on "
                            f"{self.xp.__name__}")
        r, w = block.shape
        rows_host = self._checked_rows(rows, column_start, block.shape)
        if r == 0 or w == 0:
            return
        inside = (rows_host >= column_start) & (rows_host < column_start + w)
        self.diagonal[rows_host[inside]] += 1
        self._add(rows, rows_host, column_start, block)

    def update_beyond(self, rows, column_start: int, block) -> None:
        """Add ``block[a, j] = d(rows[a], column_start + j)`` of an undirected graph, each entry for both
        orders: every column lies past the component of every row (what :meth:`update` with ``pairs``
        does with the columns from a component's end on, for rows that need not be consecutive)."""
        rows_host = self._checked_beyond("update_beyond", rows, column_start, block.shape)
        if block.size:
            self._add(rows, rows_host, column_start, block, pairs=True)

    def product_fuses(self, a, b) -> bool:
        """Whether :meth:`update_product` reduces the product ``a (x) b`` as it is made (one GPU kernel)."""
        if self.xp is np:
            return False
        from .reductions_gpu import product_supports

        return product_supports(self, a, b)

    def update_product(self, rows, column_start: int, a, b) -> None:
        """:meth:`update_beyond` with the block ``min_k a[i, k] + b[k, j]``, which is made and reduced by one
        kernel and never stored (``fastapsp/kernels/min_plus_stats.cu``); :meth:`product_fuses` must hold."""
        rows_host = self._checked_beyond("update_product", rows, column_start, (a.shape[0], b.shape[1]))
        if not self.product_fuses(a, b):
            raise ValueError(f"update_product: a {a.dtype} product of inner dimension {a.shape[1]} is not reduced "
                             "as it is made here; compute the block and use update_beyond")
        from .reductions_gpu import GpuStats

        if self._gpu is None:
            self._gpu = GpuStats(self, self.max_distance)
        self._gpu.update_product(rows, rows_host, column_start, a, b)

    def _checked_beyond(self, caller: str, rows, column_start: int, shape) -> np.ndarray:
        """:meth:`_checked_rows` for entries standing for both orders past the rows' component: an undirected
        graph, every row before ``column_start``."""
        rows_host = self._checked_rows(rows, column_start, shape)
        self._check_undirected()
        if rows_host.size and rows_host.max() >= column_start:
            raise ValueError(f"{caller}: row {int(rows_host.max())} is not before column {column_start}")
        return rows_host

    def _check_undirected(self) -> None:
        if self.directed:
            raise ValueError("pairs: each pair once is for undirected graphs (d(u, v) = d(v, u))")

    def _checked_rows(self, rows, column_start: int, shape) -> np.ndarray:
        """``rows`` on the host (int64), checked against a block of ``shape`` from ``column_start``."""
        r, w = shape
        rows_host = np.asarray(rows.get() if hasattr(rows, "get") else rows, dtype=np.int64)
        if rows_host.shape != (r,):
            raise ValueError(f"rows: expected {r} vertex ids, found shape {rows_host.shape}")
        if column_start < 0 or column_start + w > self.n:
            raise ValueError(f"column_start: columns {column_start}..{column_start + w - 1} leave 0..{self.n - 1}")
        return rows_host

    def _add(self, rows, rows_host, column_start: int, block, *, pairs: bool = False) -> None:
        """Add a checked, non-empty block: on the GPU by the fused kernel where it applies (no wait),
        else in chunks by array operations (``pairs``: see :meth:`_update_chunk`)."""
        if self.xp is not np:
            from .reductions_gpu import GpuStats, kernel_supports

            if kernel_supports(self, block):  # one fused kernel, no wait for the GPU
                if self._gpu is None:
                    self._gpu = GpuStats(self, self.max_distance)
                self._gpu.update(rows, rows_host, column_start, block, pairs=pairs)
                return
            if self._gpu is not None:  # the kernels add to the same arrays: after them
                self._gpu.after_kernels()
        rows_dev = self.xp.asarray(rows_host)
        step = max(1, _CHUNK_ELEMENTS // block.shape[1])
        for a0 in range(0, block.shape[0], step):
            self._update_chunk(rows_dev[a0 : a0 + step], column_start, block[a0 : a0 + step], pairs=pairs)

    def _update_pairs(self, rows, column_start: int, block) -> None:
        """update(pairs=True): the component's own columns as they are, the later ones for both orders."""
        self._check_undirected()
        rows_host = np.asarray(rows.get() if hasattr(rows, "get") else rows, dtype=np.int64)
        first = int(rows_host.min()) if rows_host.size else column_start
        end = int(rows_host.max()) + 1 if rows_host.size else column_start
        if rows_host.size and (end - first != rows_host.size or column_start < first):
            raise ValueError(f"pairs: rows must be consecutive vertices and the columns start at the first of "
                             f"them; found rows {first}..{end - 1} ({rows_host.size} ids), column_start "
                             f"{column_start}")
        own = max(0, min(block.shape[1], end - column_start))
        if own:
            self.update(rows_host, column_start, block[:, :own])
        if own == block.shape[1] or rows_host.size == 0:
            return
        self._add(rows, rows_host, column_start + own, block[:, own:], pairs=True)

    def _update_chunk(self, rows, column_start: int, x, *, pairs: bool = False) -> None:
        """Add block ``x``; with ``pairs`` its entries count for both orders (columns' sums and maxima kept)."""
        xp = self.xp
        cols = slice(column_start, column_start + x.shape[1])
        finite = xp.isfinite(x)
        z = xp.where(finite, x, 0).astype(np.float64)  # unreachable counts as 0 in sums and maxima
        row_sum = z.sum(axis=1)
        if self.integer:  # exact: each partial sum is an integer below 2**53
            row_sum = xp.rint(row_sum).astype(np.int64)
        self.row_sum[rows] += row_sum
        self.row_reach[rows] += finite.sum(axis=1)
        self.row_max[rows] = xp.maximum(self.row_max[rows], z.max(axis=1))
        # 0 for unreachable and zero distances, as networkx
        inverse = xp.divide(1.0, xp.where(xp.greater(z, 0), z, np.inf))
        self.row_harm[rows] += inverse.sum(axis=1)
        if self.directed or pairs:  # undirected: the columns' sums are the rows' (see finalize)
            col_sum = z.sum(axis=0)
            self.col_sum[cols] += xp.rint(col_sum).astype(np.int64) if self.integer else col_sum
            self.col_reach[cols] += finite.sum(axis=0)
            self.col_harm[cols] += inverse.sum(axis=0)
        if pairs:
            self.col_max[cols] = xp.maximum(self.col_max[cols], z.max(axis=0))
        del inverse
        top = float(z.max())
        while top >= self.bin_width * self.bins:
            self._double_width()
        index = xp.where(finite, xp.floor(xp.divide(z, self.bin_width)), self.bins).astype(np.int64)
        self.hist += xp.multiply(count_values(xp, index.ravel(), self.bins + 1)[: self.bins], 2 if pairs else 1)

    def _double_width(self) -> None:
        """Merge bins pairwise: bin i of the wider histogram is bins 2i and 2i+1 of this one."""
        xp = self.xp
        merged = self.hist.reshape(-1, 2).sum(axis=1)
        self.hist = xp.concatenate([merged, xp.zeros(self.bins - merged.size, dtype=np.int64)])
        self.level += 1

    # ----------------------------------------------------------------- combining
    def finalize(self, *, comm=None) -> "Stats":
        """Combine the accumulators of every rank of ``comm`` and compute the statistics.

        Collective when ``comm`` is given: every rank must call it, and every
        rank gets the same :class:`Stats`.  Each row of the matrix must have
        been fed exactly once, on one rank.
        """
        from .comm import SerialComm, run_phase

        comm = SerialComm() if comm is None else comm
        if self._gpu is not None:  # the fused kernel's histogram levels, merged at the width reached
            reached = run_phase(comm, "collecting the statistics", self._gpu.level_reached)
            self._merge_gpu_histogram(max(self.level, reached))
        level = max(comm.allgather(self.level))
        # Local work (device to host) first, in one phase, so a failure cannot strand a rank in a collective.
        # One process keeps its arrays where they are: the per-vertex arithmetic and the reordering (a
        # scatter of n values per array) run there, on the GPU milliseconds where the host took a tenth
        # of a second on a million vertices, and only the finished arrays come back.
        here = comm.size == 1 and self.xp is not np
        parts = run_phase(comm, "collecting the statistics", self._parts, level, here)
        col_max = parts.pop()
        if comm.size > 1:
            parts = [comm.allreduce(a) for a in parts]  # a row's sums and maximum are on one rank
            col_max = np.maximum.reduce(comm.allgather(col_max))  # a column's on several
        row_sum, col_sum, row_reach, col_reach, row_harm, col_harm, row_max, hist, diagonal = parts
        xp = array_module(row_sum)
        if not self.directed:  # d(u, v) = d(v, u): column v holds the distances of row v
            # Only pair blocks (update(pairs=True)) feed an undirected graph's columns: a vertex's row
            # holds part of its distances and its column the rest (zero without pair blocks).
            row_sum, row_reach, row_harm = row_sum + col_sum, row_reach + col_reach, row_harm + col_harm
            row_max = xp.maximum(row_max, col_max)
            col_sum, col_reach, col_harm = row_sum, row_reach, row_harm
        on_diagonal = xp.asarray(diagonal)  # one copy to the device where the arrays are there
        row_reach = row_reach - on_diagonal
        col_reach = col_reach - on_diagonal
        hist = hist.copy()
        if hist.size:
            hist[0] -= int(diagonal.sum())
        vertex = _vertex_arrays(xp, self.n, row_sum, col_sum, row_reach, col_reach, row_harm, col_harm, row_max)
        if self.vertex_order is not None:  # back to the graph's own vertex order
            order = xp.asarray(self.vertex_order)
            for key, values in vertex.items():
                original = xp.empty_like(values)
                original[order] = values
                vertex[key] = original
        if xp is not np:
            vertex = _to_host(vertex)
        return _compute(self.n, self.integer, self.directed, self.bin_width, vertex, hist)

    def _merge_gpu_histogram(self, level: int) -> None:
        """Fold the kernel's counts into ``hist`` (blocks the generic path reduced are there already)."""
        while self.level < level:
            self._double_width()
        self.hist = self.hist + self._gpu.collapse(level)
        self._gpu = None

    def _parts(self, level: int, on_device: bool) -> list:
        """The accumulators at histogram level ``level``: the histogram and the diagonal on the host, the
        per-vertex arrays where they are when ``on_device``, else copied to the host."""
        while self.level < level:
            self._double_width()
        def host(a):
            return a.get() if hasattr(a, "get") else np.array(a)

        vertex = host if not on_device else (lambda a: a)
        per_vertex = (self.row_sum, self.col_sum, self.row_reach, self.col_reach, self.row_harm, self.col_harm,
                      self.row_max)
        return [*map(vertex, per_vertex), host(self.hist), host(self.diagonal), vertex(self.col_max)]


def _to_host(vertex: dict) -> dict:
    """The per-vertex arrays copied to the host, those of one dtype in one copy."""
    import cupy

    out = {}
    for dtype in {str(v.dtype) for v in vertex.values()}:
        keys = [key for key, v in vertex.items() if str(v.dtype) == dtype]
        stacked = cupy.stack([vertex[key] for key in keys]).get()
        out.update({key: stacked[i] for i, key in enumerate(keys)})
    return {key: out[key] for key in vertex}


def _closeness(xp, total, reach, n):
    """networkx's closeness with the Wasserman-Faust correction, from sums and reachable counts."""
    total = total.astype(np.float64)
    reach = reach.astype(np.float64)
    if n <= 1:
        return xp.zeros(total.shape, dtype=np.float64)
    ok = xp.greater(total, 0)
    return xp.where(ok, reach / xp.where(ok, total, 1.0) * xp.divide(reach, n - 1), 0.0)


def _vertex_arrays(xp, n, row_sum, col_sum, row_reach, col_reach, row_harm, col_harm, row_max) -> dict:
    """The per-vertex statistics (elementwise, the same on NumPy and CuPy), and ``row_max`` for the scalars."""
    return {
        "eccentricity": xp.where(xp.equal(row_reach, n - 1), row_max, np.inf),
        "closeness": _closeness(xp, col_sum, col_reach, n),
        "closeness_out": _closeness(xp, row_sum, row_reach, n),
        "harmonic": col_harm,
        "harmonic_out": row_harm,
        "sum_distances": row_sum,
        "sum_distances_in": col_sum,
        "reachable": row_reach,
        "reachable_in": col_reach,
        "row_max": row_max,
    }


def _compute(n, integer, directed, width, vertex: dict, hist) -> "Stats":
    """The statistics from the per-vertex arrays of :func:`_vertex_arrays` (on the host, in the graph's order)."""
    row_max = vertex.pop("row_max")
    row_sum, row_reach = vertex["sum_distances"], vertex["reachable"]
    connected = bool(np.all(row_reach == n - 1))
    scalar = int if integer else float
    total = scalar(row_sum.sum()) if n else scalar(0)
    pairs = int(row_reach.sum()) if n else 0
    if n:
        diameter, radius = scalar(row_max.max()), scalar(row_max.min())
        center, periphery = int(np.count_nonzero(row_max == radius)), int(np.count_nonzero(row_max == diameter))
    else:
        diameter = radius = None
        center = periphery = 0
    if connected:
        wiener = total if directed else (total // 2 if integer else total / 2)
    else:
        wiener = math.inf
    last = int(np.flatnonzero(hist)[-1]) + 1 if np.any(hist) else 0
    counts = hist[:last].astype(np.int64)
    scalars = {
        "n": int(n),
        "directed": bool(directed),
        "strongly_connected": connected,
        "diameter": diameter,
        "radius": radius,
        "center_size": center,
        "periphery_size": periphery,
        "reachable_pairs": pairs,
        "sum_of_distances": total,
        "average_shortest_path_length": total / pairs if pairs else 0.0,
        "wiener_index": wiener,
    }
    histogram = {
        "bin_width": float(width),
        "exact_integer_bins": bool(integer and width == 1.0),
        "edges": (np.arange(last + 1, dtype=np.float64) * width).tolist(),
        "counts": counts.tolist(),
    }
    return Stats(scalars, histogram, vertex)


class ProductStats:
    """``--stats`` of an undirected graph, each pair once, past each component's own columns: the rows of
    a component there are its interior rows' product with its boundary rows, ``a (x) b``, and the
    boundary rows ``b`` themselves; where :meth:`fuses` holds, the product is reduced as it is made
    (:meth:`StatsAccumulator.update_product`) and no block of those columns is stored.

    Parameters
    ----------
    acc : StatsAccumulator
        The run's accumulator (its vertex order is the run's, see ``vertex_order``).
    progress : callable, optional
        :class:`fastapsp.progress.Progress`: told the distances done.
    """

    def __init__(self, acc: StatsAccumulator, progress=None) -> None:
        self.acc, self.progress = acc, progress

    def fuses(self, a, b) -> bool:
        """Whether :meth:`add` takes this product (see :meth:`StatsAccumulator.product_fuses`)."""
        return self.acc.product_fuses(a, b)

    def add(self, interior, boundary, column_start: int, a, b) -> None:
        """The distances from ``interior`` (through ``a (x) b``) and ``boundary`` (``b``) to the columns from
        ``column_start`` on, all past the rows' component."""
        self.acc.update_product(interior, column_start, a, b)
        self.acc.update_beyond(boundary, column_start, b)
        if self.progress is not None:
            self.progress.advance((len(interior) + len(boundary)) * b.shape[1])


@dataclass
class Stats:
    """The reductions of a distance matrix (see the module text for definitions).

    ``stats["diameter"]`` reads a scalar, ``stats["closeness"]`` a per-vertex
    array, ``stats.histogram`` holds ``edges`` and ``counts``.
    """

    scalars: dict
    histogram: dict
    vertex: dict

    def __getitem__(self, key):
        if key in self.scalars:
            return self.scalars[key]
        if key in self.vertex:
            return self.vertex[key]
        if key == "histogram":
            return self.histogram
        raise KeyError(f"{key!r} is not a statistic; known: {', '.join([*self.scalars, *self.vertex, 'histogram'])}")

    def to_json_dict(self) -> dict:
        """Scalars and histogram as strict JSON (``inf`` becomes ``null``)."""

        def clean(value):
            if isinstance(value, float) and not math.isfinite(value):
                return None
            return value

        data = {key: clean(value) for key, value in self.scalars.items()}
        data["histogram"] = self.histogram
        data["per_vertex"] = list(self.vertex)
        return data

    def save(self, prefix) -> tuple[str, str]:
        """Write ``PREFIX.json`` (scalars, histogram) and ``PREFIX.npz`` (per-vertex arrays)."""
        prefix = str(prefix)
        json_path, npz_path = f"{prefix}.json", f"{prefix}.npz"
        with open(json_path, "w", encoding="utf-8") as fh:
            json.dump(self.to_json_dict(), fh, indent=2, allow_nan=False)
            fh.write("\n")
        np.savez(npz_path, **self.vertex)
        return json_path, npz_path


def finish_stats(accumulator: StatsAccumulator, prefix, *, comm) -> Stats:
    """Combine every rank's accumulator (collective) and, on rank 0, write ``PREFIX.json`` and ``PREFIX.npz``."""
    from .comm import run_phase

    stats = accumulator.finalize(comm=comm)
    if prefix:
        run_phase(comm, "writing the statistics", (lambda: stats.save(prefix)) if comm.rank == 0 else (lambda: None))
    return stats
