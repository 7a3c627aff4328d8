"""The one graph type of fastapsp: a validated CSR adjacency structure.

Row ``u`` of the CSR lists the heads ``v`` of the arcs ``u -> v`` with their
weights.  An undirected graph stores every edge as two arcs.  Self loops are
never stored (they cannot shorten a path), of parallel arcs only the lightest
is kept, and explicit zero weights stay edges.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Graph", "index_dtype", "distinct", "arc_positions", "arc_rows", "arc_runs", "stable_order", "count_values"]


def index_dtype(n: int, m: int) -> np.dtype:
    """Smallest index dtype (int32 or int64) that can hold vertex ids and offsets."""
    if max(n, m) < np.iinfo(np.int32).max:
        return np.dtype(np.int32)
    return np.dtype(np.int64)


def distinct(values) -> np.ndarray:
    """The distinct values of a 1-D integer array, ascending (as ``np.unique``).

    One sort and a comparison of neighbours: far faster than NumPy 2.4's
    ``np.unique`` on large int64 arrays (docs/kernels.md), and without its
    first call's import of ``numpy.ma`` (about 50 ms of a process's run).

    Examples
    --------
    >>> distinct(np.array([5, 1, 5, 3, 1])).tolist()
    [1, 3, 5]
    """
    values = np.sort(np.asarray(values).ravel())
    if values.size < 2:
        return values
    keep = np.empty(values.size, dtype=bool)
    keep[0] = True
    np.not_equal(values[1:], values[:-1], out=keep[1:])
    return values[keep]


def arc_positions(indptr, rows) -> tuple[np.ndarray, np.ndarray]:
    """Where the arcs of ``rows`` lie in a CSR structure's ``indices``: their positions, row after row
    (each row's in order), and each row's arc count.

    Examples
    --------
    >>> at, counts = arc_positions(np.array([0, 2, 2, 5]), np.array([2, 0]))
    >>> at.tolist(), counts.tolist()
    ([2, 3, 4, 0, 1], [3, 2])
    """
    first = indptr[rows].astype(np.int64)
    counts = indptr[rows + 1].astype(np.int64) - first
    # Row i's arcs are first[i] .. first[i] + counts[i] - 1: one run of consecutive positions each.
    at = np.repeat(first - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()), dtype=np.int64)
    return at, counts


def arc_rows(xp, indptr, m: int, dtype=np.int64):
    """The tail vertex (row) of every one of the ``m`` arcs of a CSR structure, as ``dtype``, on ``xp``.

    Examples
    --------
    >>> arc_rows(np, np.array([0, 2, 2, 5]), 5).tolist()
    [0, 0, 2, 2, 2]
    """
    # Operations with a scalar as functions on the GPU path (DEVELOPERS.md says why).
    return xp.subtract(xp.searchsorted(indptr, xp.arange(m, dtype=dtype), side="right"), 1).astype(dtype, copy=False)


def arc_runs(xp, indptr, rows):
    """:func:`arc_positions` with any array module (CuPy has no repeat by counts), with the row of every
    arc: ``(at, row, ptr)``, the arcs' positions, row after row, the index in ``rows`` of each one's row,
    and the offsets of each row's run in ``at`` (the CSR offsets of the rows taken in that order).

    Examples
    --------
    >>> at, row, ptr = arc_runs(np, np.array([0, 2, 2, 5]), np.array([2, 0]))
    >>> at.tolist(), row.tolist(), ptr.tolist()
    ([2, 3, 4, 0, 1], [0, 0, 0, 1, 1], [0, 3, 5])
    """
    rows = xp.asarray(rows, dtype=xp.int64)
    first = indptr[rows].astype(xp.int64)
    ptr = xp.zeros(rows.size + 1, dtype=xp.int64)
    # Operations with a scalar as functions on the GPU path (DEVELOPERS.md says why).
    xp.cumsum(indptr[xp.add(rows, 1)].astype(xp.int64) - first, out=ptr[1:])
    position = xp.arange(int(ptr[-1]), dtype=xp.int64)
    row = xp.subtract(xp.searchsorted(ptr, position, side="right"), 1)
    return first[row] + (position - ptr[row]), row, ptr


def count_values(xp, values, length: int):
    """``bincount(values, minlength=length)`` for values in ``0..length-1``, as int64 on ``xp``.

    On CuPy by a sort and a search: ``cupy.bincount`` checks its input with an
    operator between an array and a scalar, which CuPy hands to NumPy's ufunc
    dispatch, whose CuPy side imports ``cupyx`` and SciPy's sparse module (a
    few tenths of a second holding the interpreter lock; docs/performance.md).
    """
    if values.shape[0] == 0:  # an empty list becomes a float array, which bincount refuses
        return xp.zeros(length, dtype=xp.int64)
    if xp is np:
        return np.bincount(values, minlength=length).astype(np.int64, copy=False)
    ends = xp.searchsorted(xp.sort(values), xp.arange(length + 1, dtype=values.dtype), side="left")
    return (ends[1:] - ends[:-1]).astype(xp.int64, copy=False)


_KEY_LIMIT = 3_037_000_499  # largest n with n * n below 2**63: src * n + dst fits in int64


def _sorted_with_order(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(np.sort(key), order)`` for non-negative int64 keys, ``order`` the stable argsort.

    When a key and its position fit in one int64 together, the two are packed
    and sorted as plain numbers, several times faster than ``np.argsort`` on
    large graphs (docs/kernels.md).
    """
    bits = max(1, int(key.size).bit_length())
    if key.size == 0 or int(key.max()) >= 1 << (63 - bits):
        order = np.argsort(key, kind="stable")
        return key[order], order
    packed = (key << bits) | np.arange(key.size, dtype=np.int64)
    packed.sort()
    return packed >> bits, packed & ((1 << bits) - 1)


def stable_order(keys: np.ndarray, bound: int) -> np.ndarray:
    """The stable argsort of non-negative integer ``keys`` below ``bound``: by radix where they fit 16 bits
    (about twice as fast on a million keys as the merge sort of wider ones).

    Examples
    --------
    >>> stable_order(np.array([2, 0, 2, 1]), 3).tolist()
    [1, 3, 0, 2]
    """
    return np.argsort(keys.astype(np.uint16) if bound <= 1 << 16 else keys, kind="stable")


@dataclass(frozen=True, eq=False)
class Graph:
    """A weighted graph in CSR form.

    Parameters
    ----------
    indptr : ndarray of int32 or int64, shape (n + 1,)
        Row offsets: the arcs leaving ``u`` are ``indptr[u]:indptr[u + 1]``.
    indices : ndarray of the same dtype, shape (m,)
        Head vertex of every arc, sorted within each row, no duplicates.
    weights : ndarray of float64, shape (m,)
        Non-negative, finite arc weights.
    directed : bool
        False when every arc ``u -> v`` has its twin ``v -> u`` of equal weight.
    name : str
        Where the graph came from (a file name), used in reports and messages.

    Use :meth:`Graph.from_edges` to build one from an edge list; the constructor
    only checks the arrays it is given.
    """

    indptr: np.ndarray
    indices: np.ndarray
    weights: np.ndarray
    directed: bool
    name: str = ""
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        indptr, indices, weights = self.indptr, self.indices, self.weights
        if indptr.ndim != 1 or indptr.size < 1:
            raise ValueError(f"graph {self.name!r}: indptr must be 1-D with n + 1 >= 1 entries")
        if indices.dtype != indptr.dtype or indices.dtype not in (np.int32, np.int64):
            raise TypeError(
                f"graph {self.name!r}: indptr and indices must share dtype int32 or int64, "
                f"found {indptr.dtype} and {indices.dtype}"
            )
        if weights.dtype != np.float64 or weights.shape != indices.shape:
            raise TypeError(f"graph {self.name!r}: weights must be float64 with one entry per arc")
        if indptr[0] != 0 or indptr[-1] != indices.size or np.any(np.diff(indptr) < 0):
            raise ValueError(f"graph {self.name!r}: indptr is not a valid CSR offset array")
        n = indptr.size - 1
        if indices.size and (indices.min() < 0 or indices.max() >= n):
            raise ValueError(f"graph {self.name!r}: an arc head is outside 0..{n - 1}")
        if weights.size and not (np.all(np.isfinite(weights)) and weights.min() >= 0):
            raise ValueError(f"graph {self.name!r}: weights must be finite and non-negative")

    # ------------------------------------------------------------------ build
    @classmethod
    def from_edges(
        cls,
        n: int,
        src,
        dst,
        weights=None,
        *,
        directed: bool,
        name: str = "",
    ) -> "Graph":
        """Build a graph from arrays of arcs.

        Parameters
        ----------
        n : int
            Number of vertices; ids run over ``0..n-1``.
        src, dst : array_like of int
            Tail and head of every arc (0-based).
        weights : array_like of float, optional
            Arc weights; all 1 when omitted.  Must be finite and >= 0.
        directed : bool
            When False every arc is also stored reversed.
        name : str, optional
            Label used in messages and reports.

        Returns
        -------
        Graph
            Self loops dropped, of parallel arcs the lightest kept.

        Examples
        --------
        >>> g = Graph.from_edges(3, [0, 1, 1], [1, 2, 2], [4.0, 2.0, 1.0], directed=True)
        >>> g.n, g.m, g.weights.tolist()
        (3, 2, [4.0, 1.0])
        """
        if n < 0:
            raise ValueError(f"graph {name!r}: n must be >= 0, found {n}")
        src = np.asarray(src, dtype=np.int64).ravel()
        dst = np.asarray(dst, dtype=np.int64).ravel()
        if src.shape != dst.shape:
            raise ValueError(f"graph {name!r}: src and dst differ in length")
        if weights is None:
            w = np.ones(src.size, dtype=np.float64)
        else:
            w = np.asarray(weights, dtype=np.float64).ravel()
            if w.shape != src.shape:
                raise ValueError(f"graph {name!r}: weights and src differ in length")
        if src.size:
            if min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n:
                raise ValueError(f"graph {name!r}: a vertex id is outside 0..{n - 1}")
            if not np.all(np.isfinite(w)) or w.min() < 0:
                raise ValueError(f"graph {name!r}: weights must be finite and non-negative")
        keep = src != dst
        src, dst, w = src[keep], dst[keep], w[keep]
        if not directed:
            src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
            w = np.concatenate([w, w])
        # Sort by the one key src * n + dst (one sort of int64, several times faster
        # than sorting by three keys), then keep the lightest arc of each (src, dst) run.
        # Where every arc weighs the same (a pattern file) no weight follows its arc: the keys are
        # sorted alone, in place (del21-unit's 12.6 million arcs: about twice as fast as with the order).
        uniform = bool(w.size) and w.min() == w.max()
        if n <= _KEY_LIMIT and uniform:
            key = src * n + dst
            key.sort()
            src, dst = key // max(n, 1), key % max(n, 1)
        elif n <= _KEY_LIMIT:
            key, order = _sorted_with_order(src * n + dst)
            src, dst, w = key // max(n, 1), key % max(n, 1), w[order]
        else:
            order = np.lexsort((dst, src))
            src, dst, w = src[order], dst[order], w[order]
        first = np.ones(src.size, dtype=bool)
        first[1:] = (src[1:] != src[:-1]) | (dst[1:] != dst[:-1])
        if not first.all():
            src, dst = src[first], dst[first]
            w = w[: src.size] if uniform else np.minimum.reduceat(w, np.flatnonzero(first))
        itype = index_dtype(n, src.size)
        indptr = np.zeros(n + 1, dtype=itype)
        np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
        return cls(indptr, dst.astype(itype), w, bool(directed), name)

    # ------------------------------------------------------------ properties
    @property
    def n(self) -> int:
        """Number of vertices."""
        return self.indptr.size - 1

    @property
    def m(self) -> int:
        """Number of stored arcs (an undirected edge counts twice)."""
        return self.indices.size

    @property
    def num_edges(self) -> int:
        """Number of edges: arcs if directed, unordered pairs if undirected."""
        return self.m if self.directed else self.m // 2

    @property
    def unit_weights(self) -> bool:
        """True when every arc weighs 1, so breadth-first search gives distances."""
        if "unit" not in self._cache:
            self._cache["unit"] = bool(np.all(self.weights == 1.0))
        return self._cache["unit"]

    @property
    def integer_weights(self) -> bool:
        """True when every arc weight is a whole number, so every distance is one too."""
        if "integer" not in self._cache:  # unit weights (one comparison) spare the rounding of every weight
            self._cache["integer"] = self.unit_weights or bool(np.all(self.weights == np.floor(self.weights)))
        return self._cache["integer"]

    def checksum(self) -> str:
        """SHA-256 (hex, 32 digits) of n, direction, arcs and weights: ties a result to this exact graph."""
        if "checksum" not in self._cache:
            h = hashlib.sha256()
            h.update(np.array([self.n, int(self.directed)], dtype=np.int64).tobytes())
            h.update(self.indptr.astype(np.int64).tobytes())
            h.update(self.indices.astype(np.int64).tobytes())
            h.update(self.weights.astype(np.float64).tobytes())
            self._cache["checksum"] = h.hexdigest()[:32]
        return self._cache["checksum"]

    def loops(self) -> np.ndarray:
        """The vertices with an arc to themselves, ascending (cached).  The rows are looked at about 2**24
        arcs at a time, so that the temporaries stay small on large graphs."""
        if "loops" not in self._cache:
            found, first, indptr = [], 0, self.indptr
            while first < self.n:
                last = int(np.searchsorted(indptr, int(indptr[first]) + (1 << 24), side="right")) - 1
                last = min(self.n, max(first + 1, last))
                rows = np.repeat(np.arange(first, last, dtype=indptr.dtype), np.diff(indptr[first:last + 1]))
                found.append(rows[rows == self.indices[int(indptr[first]):int(indptr[last])]])
                first = last
            self._cache["loops"] = np.concatenate(found) if found else np.zeros(0, dtype=indptr.dtype)
        return self._cache["loops"]

    def degrees(self) -> np.ndarray:
        """Out-degree of every vertex."""
        return np.diff(self.indptr)

    def to_scipy(self):
        """The graph as a ``scipy.sparse.csr_matrix`` (explicit zeros kept)."""
        from scipy.sparse import csr_matrix

        return csr_matrix((self.weights, self.indices, self.indptr), shape=(self.n, self.n))

    def arcs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Tail, head and weight of every stored arc."""
        src = np.repeat(np.arange(self.n, dtype=self.indptr.dtype), self.degrees())
        return src, self.indices, self.weights

    def permuted(self, order) -> "Graph":
        """The same graph with vertex ``order[i]`` renamed ``i`` (arcs and weights kept, explicit zeros too).

        Examples
        --------
        >>> g = Graph.from_edges(3, [0, 1], [1, 2], [5.0, 7.0], directed=True)
        >>> h = g.permuted([2, 0, 1])
        >>> h.arcs()[0].tolist(), h.arcs()[1].tolist(), h.arcs()[2].tolist()
        ([1, 2], [2, 0], [5.0, 7.0])
        """
        order = np.asarray(order, dtype=np.int64)
        n = self.n
        if order.shape != (n,) or (n and (order.min() < 0 or order.max() >= n
                                          or np.bincount(order, minlength=n).max() != 1)):
            raise ValueError(f"order: expected a permutation of 0..{n - 1}, found shape {order.shape}")
        return self._rows_renamed(order, whole=True)

    def subgraph(self, vertices) -> "Graph":
        """The graph induced by the distinct ids ``vertices``, vertex ``vertices[i]`` renamed ``i``: the
        arcs between them with their weights (explicit zeros too), heads ascending in each row.

        Examples
        --------
        >>> g = Graph.from_edges(4, [0, 1, 2], [1, 2, 3], [5.0, 7.0, 9.0], directed=True)
        >>> h = g.subgraph([1, 2, 3])
        >>> h.n, h.arcs()[0].tolist(), h.arcs()[1].tolist(), h.arcs()[2].tolist()
        (3, [0, 1], [1, 2], [7.0, 9.0])
        """
        return self._rows_renamed(np.asarray(vertices, dtype=np.int64), whole=False)

    def _rows_renamed(self, vertices, *, whole: bool) -> "Graph":
        """The rows of ``vertices`` (distinct ids), vertex ``vertices[i]`` renamed ``i``, heads ascending in
        each row.  ``whole``: ``vertices`` is a permutation of every vertex, so no arc leaves them (the
        filter that :meth:`subgraph` needs is skipped: a third of a permutation's time on roadFLA)."""
        size = vertices.size
        rename = np.empty(self.n, dtype=np.int64) if whole else np.full(self.n, -1, dtype=np.int64)
        rename[vertices] = np.arange(size)
        source, counts = arc_positions(self.indptr, vertices)  # old position of every arc of the kept rows
        rows = np.repeat(np.arange(size, dtype=np.int64), counts)
        heads = rename[self.indices[source]]
        if not whole:
            inside = heads >= 0  # arcs to vertices left out go
            source, rows, heads = source[inside], rows[inside], heads[inside]
            counts = np.bincount(rows, minlength=size)
        # Heads ascending within each row.  A renaming keeps the order of most rows (all of a row's heads
        # renamed in the same order they had): only the rows with a descent are sorted, in place.
        descent = np.flatnonzero((heads[1:] < heads[:-1]) & (rows[1:] == rows[:-1]))
        if descent.size:
            unsorted = np.zeros(size, dtype=bool)
            unsorted[rows[descent]] = True
            at = np.flatnonzero(unsorted[rows])  # the arcs of those rows: whole runs, row after row
            _, sort = _sorted_with_order(rows[at] * size + heads[at])
            heads[at], source[at] = heads[at[sort]], source[at[sort]]
        indptr = np.zeros(size + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        dtype = self.indptr.dtype
        return Graph(indptr.astype(dtype), heads.astype(dtype), self.weights[source],
                     directed=self.directed, name=self.name)

    def undirected_adjacency(self) -> tuple[np.ndarray, np.ndarray]:
        """Symmetric CSR structure (no weights, no loops, no duplicates).

        This is how partitioners see the graph: an arc in either direction
        joins the two vertices.
        """
        if "undirected" not in self._cache:
            if self.directed:
                src, dst, _ = self.arcs()
                sym = Graph.from_edges(self.n, src, dst, directed=False)
                self._cache["undirected"] = (sym.indptr, sym.indices)
            else:
                self._cache["undirected"] = (self.indptr, self.indices)
        return self._cache["undirected"]

    def __repr__(self) -> str:
        kind = "directed" if self.directed else "undirected"
        return f"Graph({self.name!r}, n={self.n}, m={self.m} arcs, {kind})"
