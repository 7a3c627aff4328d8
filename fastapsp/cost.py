"""The cost model: predicted seconds of each stage, to pick the boundary-row method and k.

Every stage is counted in *relaxations* (one ``a + b`` compared with a
running minimum) and divided by a rate measured for the backend.  The rates
come from benchmark runs (``benchmarks/``) on one H100 for ``cupy`` and on the
2-core development machine for ``numpy``; they give the order of
magnitude that choosing needs, not a promise.  The report holds the predicted
seconds beside the measured ones.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .graph import arc_positions, distinct
from .io.cache import keep_note, kept_note
from .stages._cuda import _SMALLK_MAX_K, _SMALLK_U16_K
from .stages.boundary_graph import DENSE_LIMIT, SUPER_SIZE
from .stages.min_plus import Packing
from .stages.floyd_warshall import SEARCH_NS

__all__ = ["RATES", "predict", "receive_relaxations", "choose_boundary_rows", "choose_k", "default_k", "sample_boundary", "auto_k",
           "least_regret_k", "growth_dimension", "KNOWN_LAWS", "LOW_GROWTH_LAWS", "LOW_GROWTH",
           "SAMPLE_SECONDS_PER_VERTEX", "SSSP_METHODS", "MINPLUS_KERNELS", "PARTITION_RATES",
           "COMPONENT_OVERHEAD", "partition_seconds", "pieces_seconds", "CUT_SECONDS_PER_ARC",
           "SHARE_RATE", "close_everywhere"]

SSSP_METHODS = ("auto", "frontier", "boundary-graph")

# Relaxations per second.  dense: Floyd-Warshall and min-plus kernels (float32;
# float64 runs at half the rate on the GPU).  frontier_unit / frontier_weighted:
# source-arc pairs per second of the frontier SSSP (BFS / Bellman-Ford on the
# GPU, SciPy's BFS / Dijkstra on the host).  row_bytes: bytes per second of
# writing the row blocks out (assembly).  level: relaxations per second of closing
# an upper level's super-groups (a few thousand vertices each, many small closures).
# rows: relaxations per second of the boundary rows' grouped min-plus, and
# boundary_row_bytes: bytes of boundary rows made per second beside it (the rows'
# gather into vertex order and their layout).  The local closures are priced as Floyd-Warshall
# even where the GPU makes them by breadth-first searches (unweighted graphs,
# fastapsp.stages.boundary_graph.closes_by_searches): priced at the searches' rate
# (about 1.4e10 entries a second, one H100) k fell from 153 to 91 on roadNY and from
# 1,045 to 439 on roadFLA, whose command-line runs were then 10-15% (roadNY) and up to
# 10% (roadFLA's min-plus) slower on one H100 (docs/kernels.md).
# The GPU's level, rows and boundary_row_bytes are least-squares fits to the stage seconds of whole
# runs at several k (del20 unit and Euclidean, del21-unit, grid1024-real; one H100, docs/kernels.md,
# "The cost model's rates"): the levels' closures at 1.6-3.4e12, the rows within 0.88-1.13 of the fit.
RATES = {
    "cupy": {"dense": 9.0e12, "frontier_unit": 5.0e9, "frontier_weighted": 3.5e8, "row_bytes": 1.0e12,
             "level": 2.2e12, "rows": 3.5e13, "boundary_row_bytes": 2.1e11},
    "numpy": {"dense": 2.0e9, "frontier_unit": 3.0e7, "frontier_weighted": 1.6e7, "row_bytes": 2.0e9,
              "level": 2.0e9, "rows": 2.0e9, "boundary_row_bytes": 1.0e9,
              # the closures by Dijkstra from every vertex: c (e + c) log2 c per second
              # (fastapsp.stages.floyd_warshall.SEARCH_NS, which also decides where they run)
              "search": 1e9 / SEARCH_NS},
}

# The min-plus kernels of the GPU (fastapsp.stages._cuda.min_plus_cuda), each as (relaxations a second,
# distances written a second) in float32: the wide products pay both, one after the other (time =
# relaxations / rate + distances / rate); the small-K kernels, whose inner dimension is the whole
# boundary of a component, are bound by the slower of the two.  Least-squares fits to the min-plus
# stage of whole runs on one H100 (docs/kernels.md, "The cost model's rates"): "tile" on del20-euclid
# and grid1024-real at k 1,218-3,444 (within 2.5%), "packed" on del20-unit and del21-unit at k
# 1,218-6,889 (within 1%), "smallk" on roadFLA, roadNY and roadBAY at k 80-2,200 (the packed small-K
# kernel; within 25%, the short runs of the smaller networks above).  The float32 small-K kernel was not
# fitted on its own: it is priced at the tile kernel's relaxations and the small-K kernels' writes.
MINPLUS_KERNELS = {"tile": (1.58e13, 6.2e11), "packed": (3.76e13, 5.9e11),
                   "smallk_packed": (2.14e13, 7.0e11), "smallk": (1.58e13, 7.0e11)}
# The boundary graph's dense limit and super-group size that predict() assumes unless told: the GPU's.
_DENSE_LIMIT, _SUPER_SIZE = DENSE_LIMIT["cupy"], SUPER_SIZE["cupy"]


def _rates(backend: str, dtype) -> dict:
    rates = dict(RATES[backend])
    if backend == "cupy" and np.dtype(dtype) == np.float64:
        rates["dense"] /= 2
    return rates


def predict(sizes, boundary, n: int, arcs: int, *, unit_weights: bool, backend: str, dtype=np.float32,
            dense_limit: int = _DENSE_LIMIT, super_size: int = _SUPER_SIZE, whole_rows: bool = True,
            counts=None, packed: bool = False) -> dict:
    """Predicted seconds of every stage for components of ``sizes`` with ``boundary`` vertices each.

    Returns ``{"frontier": {...}, "boundary-graph": {...}}``, each a dict of
    stage seconds with a ``"total"``.  Stages shared by both methods
    (min-plus, assembly) appear in both.  ``whole_rows=False`` (nothing needs
    every distance, see :attr:`fastapsp.planning.Plan.whole_rows`): a component
    without boundary vertices makes its own columns only.  ``counts``: how
    many components each entry stands for (default one each), so that k equal
    components cost one entry (:func:`choose_k` weighs hundreds of k).
    ``packed``: the GPU's products run in 16 bits (whole-number distances that
    fit, :class:`fastapsp.stages.min_plus.Packing`).
    """
    c = np.asarray(sizes, dtype=np.float64)
    seconds = _predict_arrays(c, np.asarray(boundary, dtype=np.float64),
                              np.ones(c.shape) if counts is None else np.asarray(counts, dtype=np.float64),
                              n, arcs, unit_weights=unit_weights, backend=backend, dtype=dtype,
                              dense_limit=dense_limit, super_size=super_size, whole_rows=whole_rows, packed=packed)
    return {method: {stage: float(v) for stage, v in stages.items()} for method, stages in seconds.items()}


def _predict_arrays(c, b, w, n: int, arcs: int, *, unit_weights: bool, backend: str, dtype,
                    dense_limit: int = _DENSE_LIMIT, super_size: int = _SUPER_SIZE, whole_rows: bool = True,
                    packed: bool = False) -> dict:
    """:func:`predict` of many partitions at once: ``c``, ``b``, ``w`` (sizes, boundary vertices, counts)
    of shape (..., entries); every stage's seconds of shape (...)."""
    rates = _rates(backend, dtype)
    total_b = (w * b).sum(axis=-1)
    itemsize = np.dtype(dtype).itemsize
    per_vertex = arcs / max(n, 1)
    fw = _closure_seconds(c, c * per_vertex, rates, w)
    minplus = _min_plus_seconds(c, b, w, n, rates, backend=backend, dtype=dtype, packed=packed)
    columns = np.full(c.shape, float(n)) if whole_rows else np.where(b > 0, float(n), c)
    assemble = (w * c * columns).sum(axis=-1) * itemsize / rates["row_bytes"]
    frontier_rate = rates["frontier_unit" if unit_weights else "frontier_weighted"]
    frontier = {
        "sssp": total_b * arcs / frontier_rate,
        # build + closure with the global boundary rows (a block of b x b entries more)
        "floyd_warshall": fw + _closure_seconds(c, c * per_vertex + b * b, rates, w),
        "min_plus": minplus,
        "assemble": assemble,
    }
    # Boundary graph: local closures once, then the upper levels and the grouped product.
    rows = total_b * (w * b * c).sum(axis=-1) / rates["rows"] + total_b * n * itemsize / rates["boundary_row_bytes"]
    mean_b = np.maximum(1.0, total_b / np.maximum(1.0, np.floor((w * (b > 0)).sum(axis=-1))))
    boundary_graph = {
        "local_fw": fw,
        "boundary_graph": _upper_levels_seconds(total_b, mean_b, rates, dense_limit, super_size),
        "boundary_rows": rows,
        "min_plus": minplus,
        "assemble": assemble,
    }
    for stages in (frontier, boundary_graph):
        stages["total"] = sum(stages.values())
    return {"frontier": frontier, "boundary-graph": boundary_graph}


def _upper_levels_seconds(total_b, mean_b, rates, dense_limit: int, super_size: int):
    """Seconds of the boundary graph's upper levels for ``total_b`` boundary vertices, ``mean_b`` a group.

    As :class:`fastapsp.stages.boundary_graph.LevelTree` makes them: while a
    level has more than ``dense_limit`` vertices, its super-groups of about
    ``super_size`` vertices are closed (``super_size**2`` relaxations a vertex,
    at the ``level`` rate) and their boundary vertices form the next level, a
    super-group of ``m`` groups keeping about ``sqrt(m)`` groups' worth (a
    perimeter); the first level that fits, or that would not shrink, is closed
    densely (the ``dense`` rate).
    """
    size = np.array(total_b, dtype=np.float64)
    group = np.array(mean_b, dtype=np.float64) * np.ones_like(size)
    closed = np.zeros_like(size)
    for _ in range(64):  # each level shrinks by at least a tenth
        shrink = np.sqrt(np.minimum(group / super_size, 1.0))
        more = (size > dense_limit) & (shrink < 0.9)
        if not more.any():
            break
        closed += np.where(more, size, 0.0) * float(super_size) ** 2
        size = np.where(more, size * shrink, size)
        group = np.where(more, np.sqrt(group * super_size), group)
    return closed / rates["level"] + size**3 / rates["dense"]


def _min_plus_seconds(c, b, w, n: int, rates, *, backend: str, dtype, packed: bool):
    """Seconds of the min-plus products of components of ``c`` vertices, ``b`` of them boundary, ``w`` each:
    ``(c - b) b n`` relaxations and ``(c - b) n`` distances written per component.  On the host at the
    ``dense`` rate; on the GPU by the kernel each inner dimension ``b`` takes (:data:`MINPLUS_KERNELS`)."""
    relax = w * (c - b) * b * n
    if backend != "cupy":
        return relax.sum(axis=-1) / rates["dense"]
    written = w * (c - b) * n
    dtype = np.dtype(dtype)
    packed = packed and dtype == np.float32
    smallk = (b >= _SMALLK_U16_K[0]) & (b <= _SMALLK_U16_K[1]) if packed else np.zeros(b.shape, dtype=bool)
    smallk_float = ~smallk & (b <= _SMALLK_MAX_K.get(dtype, 0))
    wide = "packed" if packed else "tile"
    slow = 2.0 if dtype == np.float64 else 1.0  # half the rate, twice the bytes
    seconds = np.where(smallk, _kernel_seconds("smallk_packed", relax, written, slow),
                       np.where(smallk_float, _kernel_seconds("smallk", relax, written, slow),
                                _kernel_seconds(wide, relax, written, slow)))
    return seconds.sum(axis=-1)


def _kernel_seconds(kernel: str, relax, written, slow: float = 1.0):
    relaxations, distances = MINPLUS_KERNELS[kernel]
    if kernel.startswith("smallk"):
        return np.maximum(relax / relaxations, written / distances) * slow
    return (relax / relaxations + written / distances) * slow


def _closure_seconds(c, finite, rates, counts=1.0):
    """Seconds of closing matrices of ``c`` vertices with ``finite`` finite entries off the diagonal, each
    ``counts`` times (summed over the last axis): the Floyd-Warshall's c^3, or on the host the searches
    where they cost less (``close_matrix``)."""
    dense = c**3 / rates["dense"]
    if "search" in rates:
        dense = np.minimum(dense, c * (finite + c) * np.log2(np.maximum(c, 2.0)) / rates["search"])
    return np.sum(counts * dense, axis=-1)


# Bytes per second of sharing the rows L_q[B_q, :] among the ranks of one host: copied to the host, one
# Allgatherv, copied back; from runs of benchmarks/gpu_pipeline.py under MPI (the runs: docs/kernels.md).
SHARE_RATE = 0.7e9


def _distance_price(backend: str, dtype, rate: float | None = None) -> float:
    """Relaxations of a closure that take as long as receiving one distance from another rank at
    ``rate`` bytes per second (default ``SHARE_RATE``, through the host): what :func:`close_everywhere`
    and :func:`receive_relaxations` weigh closing against."""
    return _rates(backend, dtype)["dense"] * np.dtype(dtype).itemsize / (SHARE_RATE if rate is None else rate)


def receive_relaxations(backend: str, dtype=np.float32, rate: float | None = None) -> int:
    """Relaxations of a closure that take as long as receiving one distance from another rank, as an
    integer: a rank closes an upper level's super-group itself where that costs less
    (:func:`fastapsp.stages.boundary_graph.assign_closures`).  Through the host (``SHARE_RATE``, the
    default) about 51,000 on the GPU and about 20 on the host; ``rate``: the bytes per second the ranks
    measured copying GPU to GPU (:func:`fastapsp.peers.peer_rate`)."""
    return int(_distance_price(backend, dtype, rate))


def close_everywhere(sizes, boundary, ranks: int, *, backend: str, dtype=np.float32,
                     rate: float | None = None) -> bool:
    """Whether every rank should close every component itself (nothing travels) rather than close
    its share and receive the rows ``L_q[B_q, :]`` of the others.

    Closing all costs each rank the closures of the other ranks' components,
    ``(1 - 1/ranks)`` of the predicted ``local_fw``; sharing costs the rows'
    bytes at ``rate`` (default ``SHARE_RATE``, through the host).  Through the
    host, on two GPUs, closing all saved time on del20-unit and on roadFLA
    (docs/kernels.md); on the CPU closures are slow and sharing wins.
    """
    if ranks < 2:
        return False
    c = np.asarray(sizes, dtype=np.float64)
    b = np.asarray(boundary, dtype=np.float64)
    closures = float((c**3).sum())  # relaxations
    shared = float((b * c).sum()) * _distance_price(backend, dtype, rate)  # the distances received, in relaxations
    return closures * (1 - 1 / ranks) < shared


def choose_boundary_rows(prediction: dict) -> str:
    """The method with the smaller predicted total."""
    if prediction["boundary-graph"]["total"] <= prediction["frontier"]["total"]:
        return "boundary-graph"
    return "frontier"


# Seconds of the partitioners per vertex and per component: METIS on the host (also taken for the other
# host partitioners) and Jet on the GPU, fitted to whole runs at several k (benchmarks/gpu_pipeline.py and
# the k sweeps of docs/kernels.md, "The cost model's rates": METIS on roadNY and roadBAY at k 80-400, Jet
# on del20, del21-unit, grid1024-real and roadFLA at k 600-6,889).
PARTITION_RATES = {"metis": {"per_vertex": 1.7e-6, "per_component": 1.0e-3},
                   "jet": {"per_vertex": 0.5e-6, "per_component": 1.8e-4}}


def partition_seconds(n: float, k, partitioner: str = "metis"):
    """Predicted seconds of cutting ``n`` vertices into ``k`` components with ``partitioner`` (a name of
    :data:`fastapsp.partition.PARTITIONERS`; Jet at Jet's rates, the others at METIS's)."""
    rates = PARTITION_RATES["jet" if str(partitioner).startswith("jet") else "metis"]
    return rates["per_vertex"] * n + rates["per_component"] * np.asarray(k, dtype=np.float64)


# Seconds per arc of the graph that one rank spends cutting out its piece (fastapsp/partition/pieces.py:
# two breadth-first searches and the induced structure per bisection, on the host), per bisection of the
# whole graph; a rank of R makes ceil(log2 R) of them on its path, each on half the last one's arcs.
# Measured 6.6-8.0e-8 on the 16-core host of an H100 (roadFLA and del20-unit, 2 / 4 / 8 pieces,
# benchmarks/results/h100-4a727f9/split/), about 1e-7 on the 2-core development machine.
CUT_SECONDS_PER_ARC = 8.0e-8


def pieces_seconds(n: int, arcs: int, k: int, ranks: int, partitioner: str = "metis",
                   solve: float | None = None) -> dict:
    """Predicted seconds of partitioning the whole graph on one rank and in ``ranks`` pieces side by side.

    ``whole``: :func:`partition_seconds`; ``pieces``: a rank's cut
    (:data:`CUT_SECONDS_PER_ARC`) and its piece's partition (the largest piece,
    within :data:`~fastapsp.partition.pieces.CUT_SLACK` of its share);
    ``added``: what the cut's boundary costs the stages after it, divided
    among the ranks: a fraction ``(ranks - 1) / sqrt(ranks k)`` more boundary
    vertices (recursive bisection of graphs that grow like a plane; measured
    +1.5-2.9% on two pieces, +4.0-4.7% on four, +8-9% on eight, docs/mpi.md)
    of ``solve``, the predicted seconds of the stages on one rank (0 when unknown).

    >>> p = pieces_seconds(1 << 22, 3 << 22, 3000, 8, "metis", solve=100.0)
    >>> p["pieces"] + p["added"] < p["whole"]
    True
    """
    from .partition.pieces import CUT_SLACK

    levels = max(0, math.ceil(math.log2(max(ranks, 1))))
    cut = CUT_SECONDS_PER_ARC * arcs * (2 - 2.0 ** (1 - levels)) if levels else 0.0
    piece = partition_seconds(n / ranks * (1 + CUT_SLACK), max(1.0, k / ranks), partitioner)
    added = (ranks - 1) / math.sqrt(ranks * max(k, 1)) * (solve or 0.0) / ranks
    return {"whole": float(partition_seconds(n, k, partitioner)), "pieces": float(cut + piece), "cut": cut,
            "added": added}


# Fixed seconds per component on top of its dense work (launches, host logic).
COMPONENT_OVERHEAD = {"cupy": 2.0e-4, "numpy": 2.0e-4}
# Predicted totals closer than this fraction are a tie for choose_k, which then takes the largest k: the
# sizes it weighs are 1.19 times apart, and measured over predicted seconds fell with k on the graphs
# swept (0.97 -> 0.94, 0.98 -> 0.93; docs/kernels.md, "The cost model's rates").
K_TIE = 0.01
# Component sizes considered by auto_k, and the vertices of the sampled region.
_SIZES = np.geomspace(256, 16384, 25)
# Smaller sizes, considered too where isolated vertices fill components of their own: those need no
# boundary rows, only their closure, which smaller components make cheaper: on a graph of mostly isolated
# vertices they made a --stats run several times faster (docs/kernels.md).
_SMALL_SIZES = np.geomspace(64, 256, 7)[:-1]
_SAMPLE = 50_000
# The sampled region grows with the graph, a tenth of it between these bounds: cutting it costs
# METIS time in proportion.  On road and Delaunay graphs regions of the lower bound led to the same k
# as regions of the upper one in a third to a half of the sampling time, while smaller regions
# misjudged k (docs/kernels.md).
_SAMPLE_RANGE = (25_000, _SAMPLE)
_SAMPLE_PARTS = (1600, 400)  # vertices per part of the two cuts of the sample (sample_boundary)


def sample_boundary(graph, *, sample: int = _SAMPLE, sizes=_SAMPLE_PARTS, seed: int = 0,
                    ball=None) -> tuple[float, float]:
    """``(alpha, beta)`` such that a component of ``c`` vertices has about ``alpha * c**beta`` boundary vertices.

    Measured, not assumed: a region of about ``sample`` vertices grown by
    breadth-first search from vertex 0 (over arcs in both directions) is cut
    by METIS into parts of about ``sizes[0]`` and ``sizes[1]`` vertices, and the
    boundary vertices per part of the two cuts fix the power law (planar
    graphs and road networks give ``beta`` near 1/2, expanders near 1).  The
    region's own rim does not count: only arcs inside the region can cut.
    ``ball``: that region, already grown (:func:`auto_k` grows it first).
    """
    from .graph import Graph
    from .partition import partition_graph

    n = graph.n
    # Vertices without arcs have components of their own (fastapsp/partition/isolated.py): the law is that of the rest.
    has_arcs = np.diff(graph.undirected_adjacency()[0]) > 0
    linked = int(np.count_nonzero(has_arcs))
    if linked > sample:  # a region of the graph (the list of every linked vertex is made only where needed)
        order = _ball(graph, int(np.argmax(has_arcs)), sample) if ball is None else ball
        if order.size < 4 * max(sizes):  # the first vertex sits in a small piece: the first ids instead
            order = np.flatnonzero(has_arcs)[:sample]
        order = np.sort(order)
    else:
        order = np.flatnonzero(has_arcs) if linked < n else np.arange(n)
    sub = graph.subgraph(order)
    indptr, indices = sub.indptr.astype(np.int64), sub.indices.astype(np.int64)
    # The rim: vertices that lost arcs to the cut-out region.  Parts touching it
    # lack the boundary they would have inside the graph, so they are not averaged.
    rim = np.diff(indptr) < np.diff(graph.indptr)[order]
    if graph.directed:  # arcs into the region count too
        rim |= np.bincount(indices, minlength=order.size) < np.bincount(graph.indices, minlength=n)[order]
    # The region of an undirected graph is symmetric already (no loops, no twins): its own structure is
    # what METIS reads, without the symmetrising sort a directed one needs.
    region = Graph(indptr, indices, np.ones(indices.size), directed=graph.directed)
    points = []
    for size in sizes:
        k = max(2, round(region.n / size))
        if k >= region.n:
            continue
        part = partition_graph(region, k, "metis", seed=seed)
        inner = np.ones(k, dtype=bool)
        inner[part.labels[rim]] = False  # the parts the rim touches
        per_part = part.boundary_per_part[inner] if inner.sum() >= 3 else part.boundary_per_part
        points.append((region.n / k, max(float(per_part.mean()), 1e-3)))
    if len(points) < 2 or points[0][0] == points[1][0]:
        return 1.0, 1.0
    (c0, b0), (c1, b1) = points
    beta = float(np.clip(math.log(b0 / b1) / math.log(c0 / c1), 0.25, 1.0))
    alpha = b0 / c0**beta
    return float(alpha), beta


def default_k(n: int) -> int:
    """Components of about 1,800 vertices (k = 64 for luxembourg_osm), at least 1: the rule for small graphs."""
    return max(1, min(n, round(n / 1800)))


def _ball(graph, start: int, size: int, *, levels: bool = False):
    """About ``size`` vertices nearest to ``start`` in hops (out-arcs; in-arcs too for directed graphs).

    Breadth-first search level by level, stopped as soon as enough vertices
    are reached: the cost follows the ball, not the graph.  ``levels``: also
    the number of vertices first reached at each hop (``(vertices, sizes)``).
    """
    csrs = [(graph.indptr, graph.indices)]
    if graph.directed:
        from scipy.sparse import csr_matrix

        t = csr_matrix((np.ones(graph.m, dtype=np.int8), graph.indices, graph.indptr),
                       shape=(graph.n, graph.n)).T.tocsr()
        csrs.append((t.indptr, t.indices))
    seen = np.zeros(graph.n, dtype=bool)
    seen[start] = True
    frontier, found = np.array([start]), [np.array([start])]
    total = 1
    while frontier.size and total < size:
        nxt = []
        for ptr, indices in csrs:
            at, _ = arc_positions(ptr, frontier)
            if at.size:
                nxt.append(indices[at])
        if not nxt:
            break
        frontier = distinct(np.concatenate(nxt))
        frontier = frontier[~seen[frontier]]
        seen[frontier] = True
        found.append(frontier)
        total += frontier.size
    ball = np.concatenate(found)[:size]
    return (ball, np.array([f.size for f in found if f.size])) if levels else ball


def growth_dimension(level_sizes) -> float:
    """How fast a breadth-first ball grows: ``log(vertices reached) / log(hops)``, about d (a little more
    for small balls) on a d-dimensional grid, and far more on expanders, whose balls take a few hops to
    reach everything; ``inf`` for a ball of one or two hops.

    Examples
    --------
    >>> round(growth_dimension([1, 4, 8, 12, 16, 20, 24, 28, 32, 36]), 2)  # a square grid, 10 hops
    2.26
    >>> growth_dimension([1, 100, 10_000])
    inf
    """
    sizes = np.asarray(level_sizes, dtype=np.float64)
    if sizes.size < 4:
        return math.inf
    return float(math.log(sizes.sum()) / math.log(sizes.size))


def choose_k(n: int, arcs: int, alpha: float, beta: float, *, unit_weights: bool, backend: str,
             dtype=np.float32, memory_bytes: float | None = None, sizes=_SIZES,
             isolated: int = 0, packed: bool = False, partitioner: str = "metis") -> tuple[int, dict]:
    """The k with the smallest predicted time, boundary ``b = alpha * c**beta`` for components of ``c``.

    The prediction adds the partitioner's time and a fixed cost per component
    to :func:`predict`'s stages (the cheaper of the two methods).  A k whose
    component matrix and boundary rows would not fit in ``memory_bytes`` is
    not considered.  ``isolated`` vertices (no arc) get their share of the
    components, without boundary, as the partition gives them
    (:func:`fastapsp.partition.isolated.balanced_split`); sizes below
    ``sizes`` are then considered too.  ``packed``: the products will run in
    16 bits (:func:`predict`); ``partitioner``: whose seconds
    (:func:`partition_seconds`).  Returns ``(k, predicted)`` with
    ``predicted`` the seconds of the chosen k by part.
    """
    if n <= 1:
        return 1, {"total": 0.0}
    candidates = list(_candidates(n, arcs, alpha, beta, unit_weights=unit_weights, backend=backend, dtype=dtype,
                                  memory_bytes=memory_bytes, sizes=sizes, isolated=isolated, packed=packed,
                                  partitioner=partitioner))
    if not candidates:
        return default_k(n), {"total": math.nan}
    fastest = min(parts["total"] for _, parts in candidates)
    # Among the k predicted within K_TIE of the fastest, the largest: the model cannot tell them apart, and
    # it overprices larger k slightly more than smaller (docs/kernels.md, "The cost model's rates").
    k, parts = max(((k, parts) for k, parts in candidates if parts["total"] <= fastest * (1 + K_TIE)),
                   key=lambda item: item[0])
    return int(k), parts


def _candidates(n: int, arcs: int, alpha: float, beta: float, *, unit_weights: bool, backend: str, dtype,
                memory_bytes: float | None, sizes, isolated: int, packed: bool = False, partitioner: str = "metis"):
    """``(k, predicted seconds by part)`` of every k :func:`choose_k` considers."""
    shapes = _candidate_shapes(n, isolated, tuple(float(c) for c in sizes))
    if not shapes:
        return
    k, k_rest, k_alone, size, alone, rest = (np.array(column, dtype=np.float64) for column in zip(*shapes))
    b = np.where(k_rest > 1, np.minimum(size, alpha * np.maximum(size, 0.0) ** beta), 0.0)
    keep = np.ones(k.size, dtype=bool)
    if memory_bytes is not None:
        largest = np.maximum(size, alone)
        keep = (3 * largest * largest + b * n + largest * n) * np.dtype(dtype).itemsize <= memory_bytes
    zeros = np.zeros(k.size)
    pred = _predict_arrays(np.stack([size, alone], axis=-1), np.stack([b, zeros], axis=-1),
                           np.stack([k_rest, k_alone], axis=-1), n, arcs, unit_weights=unit_weights, backend=backend,
                           dtype=dtype, packed=packed)
    partition = partition_seconds(rest, k_rest, partitioner)
    components = COMPONENT_OVERHEAD[backend] * k
    # The cheaper method, the frontier SSSP on a tie as min() over the dict picks it.
    frontier = pred["frontier"]["total"] <= pred["boundary-graph"]["total"]
    solve = np.where(frontier, pred["frontier"]["total"], pred["boundary-graph"]["total"])
    for i in np.flatnonzero(keep):
        parts = {"method": "frontier" if frontier[i] else "boundary-graph", "solve": float(solve[i]),
                 "partition": float(partition[i]), "components": float(components[i])}
        parts["total"] = parts["solve"] + parts["partition"] + parts["components"]
        yield int(k[i]), parts


@functools.lru_cache(maxsize=64)
def _candidate_shapes(n: int, isolated: int, sizes: tuple) -> tuple:
    """``(k, k_rest, k_alone, size, alone, rest)`` for each component size considered: the k, its
    components of the vertices with arcs and of the isolated ones (as the partition splits them), their
    sizes and the vertices with arcs.  Independent of the boundary law, so shared by every law weighed."""
    from .partition import DEFAULT_IMBALANCE
    from .partition.isolated import balanced_split, isolated_split

    sizes = np.asarray(sizes, dtype=np.float64)
    if isolated and isolated_split(n, isolated, max(2, round(n / float(np.min(sizes)))))[1]:
        sizes = np.concatenate([_SMALL_SIZES[_SMALL_SIZES < np.min(sizes)], sizes])
    shapes = []
    for c in sizes:
        k = max(1, min(n, round(n / c)))
        k_rest, k_alone = balanced_split(n, isolated, k, DEFAULT_IMBALANCE) if k > 1 else (1, 0)
        rest = n - isolated if k_alone else n
        size = rest / k_rest if k_rest else 0.0
        alone = isolated / k_alone if k_alone else 0.0
        shapes.append((k, k_rest, k_alone, size, alone, rest))
    return tuple(shapes)


# Boundary laws (alpha, beta of sample_boundary) measured on public graphs of three kinds: road
# networks (luxembourg_osm, roadNY, roadBAY, cal), meshes (delaunay_n14, delaunay_n17, delaunay16r,
# 4elt, wing, airfoil1) and a social and a vote graph (PGPgiantcompo, wiki-Vote), whose boundaries
# grow fastest (benchmarks/boundary_laws.py).  least_regret_k weighs a k against all of them.
KNOWN_LAWS = ((1.04, 0.40), (2.26, 0.34), (2.42, 0.30), (1.72, 0.28), (3.90, 0.46), (2.37, 0.56),
              (10.06, 0.25), (9.13, 0.28), (4.79, 0.55), (7.40, 0.25), (1.13, 0.65), (1.75, 0.84))
# The laws of the road networks and meshes, which auto_k weighs alone for a graph whose sampled region
# grows like a plane or slower (growth_dimension at most LOW_GROWTH).  benchmarks/boundary_laws.py records
# each graph's growth: 1.56-2.47 for the road networks and meshes but delaunay16r (2.83, so it is sampled
# itself; its law stays among these), 3.00 and 4.95 for the social and vote graphs.
LOW_GROWTH_LAWS = KNOWN_LAWS[:10]
LOW_GROWTH = 2.5
# Host seconds per vertex of the sampled region (sample_boundary: the region and its two METIS
# cuts), below the least measured over those graphs on the development machine (1.6-15.1 microseconds).
SAMPLE_SECONDS_PER_VERTEX = 1.5e-6
# The note beside a graph's binary cache that keeps what auto_k sampled (fastapsp.io.cache.keep_note), and
# the version of the sampling it holds: a change to _ball, growth_dimension or sample_boundary that alters
# what they give must raise it, so that no run reuses what the old code measured.
SAMPLING_NOTE = "k choice: sampled region"
SAMPLING_METHOD = 1


def least_regret_k(n: int, arcs: int, *, unit_weights: bool, backend: str, dtype=np.float32,
                   memory_bytes: float | None = None, isolated: int = 0, laws=KNOWN_LAWS,
                   limit: float = math.inf, packed: bool = False, partitioner: str = "metis") -> tuple[int, float, dict]:
    """``(k, regret, predicted)``: the k whose predicted time falls least short of the best k's under every
    law of ``laws`` (:data:`KNOWN_LAWS`), by how many seconds it may fall short (its regret), and its
    predicted seconds by part under the law that makes it slowest.

    Where the regret is smaller than measuring the graph's own law would cost
    (:func:`sample_boundary`), measuring cannot pay off: :func:`auto_k` takes
    this k.  That holds for small graphs on the GPU, where every k is fast.
    ``limit``: the laws are weighed the two most different first (the slowest
    and the fastest growing boundary); where their regret alone passes
    ``limit`` that regret is returned (more laws can only raise it).
    ``packed``, ``partitioner``: as :func:`choose_k`.
    """
    if n <= 1:
        return 1, 0.0, {"total": 0.0}
    extremes = (min(laws, key=lambda law: law[1]), max(laws, key=lambda law: law[1]))
    parts: list = []  # per law: {k: predicted seconds by part}
    for group in (extremes, [law for law in laws if law not in extremes]):
        for alpha, beta in group:
            parts.append(dict(_candidates(n, arcs, alpha, beta, unit_weights=unit_weights, backend=backend,
                                          dtype=dtype, memory_bytes=memory_bytes, sizes=_SIZES, isolated=isolated,
                                          packed=packed, partitioner=partitioner)))
        common = sorted(set.intersection(*(set(p) for p in parts)))
        if not common:
            return default_k(n), math.inf, {"total": math.nan}
        best = [min(p[k]["total"] for k in p) for p in parts]
        regret = {k: max(p[k]["total"] - b for p, b in zip(parts, best)) for k in common}
        k = min(common, key=lambda key: (regret[key], key))
        if regret[k] > limit:
            break
    slowest = max((p[k] for p in parts), key=lambda q: q["total"])
    return int(k), float(regret[k]), slowest


def auto_k(graph, *, backend: str, dtype=np.float32, memory_bytes: float | None = None, seed: int = 0,
           partitioner: str | None = None) -> dict:
    """The default k of a run: :func:`choose_k` on a boundary law measured by :func:`sample_boundary`, or,
    where measuring cannot pay off, :func:`least_regret_k` over the laws of known graphs.

    The products are priced in 16 bits where they may pack
    (:meth:`fastapsp.stages.min_plus.Packing.possible`: on the GPU, float32,
    whole-number weights; a graph whose distances then pass 16,383 runs them
    in float32, which the model does not know before the first boundary rows), the partition at
    ``partitioner``'s rates (default: the one ``auto`` stands for,
    :func:`fastapsp.partition.auto_partitioner`).

    Returns a dict for the report: ``k``, the rule, ``alpha`` and ``beta`` (or
    the regret and what sampling would have cost), the predicted seconds and
    the seconds spent choosing.
    """
    import time

    start = time.perf_counter()
    # Parts of the sample sized to the graph when it is small.
    degree = np.diff(graph.undirected_adjacency()[0])
    isolated = int(np.count_nonzero(degree == 0))
    linked = graph.n - isolated
    parts = _SAMPLE_PARTS if linked >= 4 * _SAMPLE_PARTS[0] else (max(2, linked // 4), max(2, linked // 16))
    sample = int(np.clip(linked // 10, *_SAMPLE_RANGE))
    extra = {"isolated": isolated} if isolated else {}
    # Small graphs on a GPU take milliseconds at any reasonable k; on the CPU even a small graph is
    # measured (one dense closure of a few thousand vertices takes seconds in NumPy): the regret says which.
    sampling = SAMPLE_SECONDS_PER_VERTEX * min(sample, max(linked, 0))
    if partitioner in (None, "auto"):
        from .partition import auto_partitioner

        partitioner = auto_partitioner(graph.n, backend)
    packed = Packing.possible(graph, dtype, backend == "cupy")
    common = dict(unit_weights=graph.unit_weights, backend=backend, dtype=dtype, memory_bytes=memory_bytes,
                  isolated=isolated, limit=sampling, packed=packed, partitioner=partitioner)

    def least_regret(k, regret, predicted, rule, **more):  # predicted_seconds: under the law that makes k slowest
        return {"k": k, "rule": rule, **extra, **more, "regret_seconds": round(regret, 6),
                "sampling_seconds": round(sampling, 6),
                "predicted_seconds": {key: (round(v, 4) if isinstance(v, float) else v)
                                      for key, v in predicted.items()},
                "seconds": round(time.perf_counter() - start, 4)}

    k, regret, predicted = least_regret_k(graph.n, graph.m, **common)
    if regret <= sampling:
        return least_regret(k, regret, predicted, "least regret over known boundary laws (sampling could not pay off)")
    # What the sampling below measures depends on the graph alone: kept beside its binary cache, a later run
    # of the same file reuses it (the same k) instead of growing and cutting the region again.
    how = {"sample": sample, "sizes": list(parts), "seed": seed, "method": SAMPLING_METHOD}
    kept = kept_note(graph, SAMPLING_NOTE)
    kept = kept if isinstance(kept, dict) and kept.get("how") == how else None
    measured = dict(kept or {}, how=how)
    # The region the sampling cuts, grown first: where it grows like a plane or slower (road networks, meshes),
    # only the laws of such graphs are weighed, which agree far more closely than all of them.
    ball = None
    if linked > sample:  # grown from the first vertex with arcs, as sample_boundary grows it
        if "growth" not in measured:
            ball, hops = _ball(graph, int(np.argmax(degree > 0)), sample, levels=True)
            measured.update(growth=growth_dimension(hops), whole=bool(ball.size >= 0.9 * sample))
        growth = measured["growth"]
        if measured["whole"] and growth <= LOW_GROWTH:
            k, regret, predicted = least_regret_k(graph.n, graph.m, laws=LOW_GROWTH_LAWS, **common)
            if regret <= sampling:
                _keep(graph, kept, measured)
                return least_regret(k, regret, predicted, "least regret over the boundary laws of road networks "
                                    "and meshes (its region grows like a plane; sampling could not pay off)",
                                    growth=round(growth, 3), **_reused(kept))
    if "alpha" not in measured:
        measured["alpha"], measured["beta"] = sample_boundary(graph, sample=sample, sizes=parts, seed=seed, ball=ball)
    _keep(graph, kept, measured)
    alpha, beta = measured["alpha"], measured["beta"]
    k, predicted = choose_k(graph.n, graph.m, alpha, beta, unit_weights=graph.unit_weights, backend=backend,
                            dtype=dtype, memory_bytes=memory_bytes, isolated=isolated, packed=packed,
                            partitioner=partitioner)
    return {"k": k, "rule": "cost model", "sample": min(sample, linked), **extra, "alpha": round(alpha, 4),
            "beta": round(beta, 4), **_reused(kept),
            "predicted_seconds": {key: (round(v, 4) if isinstance(v, float) else v) for key, v in predicted.items()},
            "seconds": round(time.perf_counter() - start, 4)}


def _keep(graph, kept, measured: dict) -> None:
    """Keep what the sampling measured beside the graph's cache, where it measured something new."""
    if measured != kept:
        keep_note(graph, SAMPLING_NOTE, measured)


def _reused(kept) -> dict:
    """The report's word that the region's growth and boundary law came from the graph's cache."""
    return {"sampled": "kept with the graph's binary cache"} if kept else {}
