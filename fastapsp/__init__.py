"""fastapsp: exact all-pairs shortest paths of large sparse graphs (FastAPSP).

The graph is split into k components; for each component the distances from
its boundary vertices (single-source shortest paths over the whole graph), a
blocked Floyd-Warshall inside it and a min-plus product through its boundary
give the exact rows of all its vertices.  NumPy/SciPy is the reference path;
CuPy runs every stage on a GPU; MPI spreads the components over ranks.

>>> import fastapsp
>>> g = fastapsp.Graph.from_edges(3, [0, 1], [1, 2], [1.0, 2.0], directed=False)
>>> fastapsp.solve(g, k=2, backend="numpy").tolist()
[[0.0, 1.0, 3.0], [1.0, 0.0, 2.0], [3.0, 2.0, 0.0]]
"""

from __future__ import annotations

__version__ = "0.1.0"

from .errors import FastAPSPError, GraphFormatError, PartitionError  # noqa: E402
from .graph import Graph  # noqa: E402

__all__ = ["Graph", "read_graph", "solve", "stats", "shortest_path", "reconstruct_path", "partition_graph", "FastAPSPError", "GraphFormatError",
           "PartitionError", "__version__"]


def read_graph(path, *, format=None, undirected: bool = False) -> Graph:
    """Read a graph file (Matrix Market, the FastAPSP research format, METIS, SNAP, .cedge).

    See :func:`fastapsp.io.read_graph`.
    """
    from .io import read_graph as _read

    return _read(path, format=format, undirected=undirected)


def partition_graph(graph: Graph, k: int, partitioner: str = "metis", **kwargs):
    """Split ``graph`` into ``k`` components; see :func:`fastapsp.partition.partition_graph`."""
    from .partition import partition_graph as _partition

    return _partition(graph, k, partitioner, **kwargs)


def solve(graph: Graph, *, k: int | None = None, partitioner: str = "auto", backend: str = "auto",
          seed: int = 42, imbalance: float = 0.03, dtype="auto", partition=None, sources=None,
          sources_method: str = "auto", sssp_method: str = "auto", return_predecessors: bool = False):
    """All-pairs shortest-path distances of ``graph`` in this process.

    Parameters
    ----------
    graph : Graph
        The graph (see :func:`read_graph` and :meth:`Graph.from_edges`).
    k : int, optional
        Number of components (default: about one per 1,800 vertices).
    partitioner : str
        ``auto`` (default: ``jet`` on the GPU from 524,288 vertices on, else ``metis``), or a name
        of ``fastapsp.partition.PARTITIONERS`` (``metis``, ``metis-vol``,
        ``kahip-{fast,eco,strong,fastsocial,ecosocial,strongsocial}``, ``kaminpar``, ``jet``, each
        also with ``+b`` for the boundary refinement).
    backend : {"auto", "numpy", "cupy"}
        ``auto`` takes the GPU when one is visible.
    seed, imbalance : int, float
        Partitioner seed and allowed imbalance.
    dtype : {"auto", "float32", "float64"}
        Distance dtype.  ``auto`` (the default, as ``--dtype`` of the command
        line): float32 when every weight is a whole number and no finite
        distance can exceed 2**24 (float32 is exact), float64 when whole-number
        distances could pass 2**24, float32 for weights that are not whole
        numbers (rounded to about 7 significant digits; ask for float64 for
        about 16).  An explicit dtype that cannot be exact for this graph gives
        a :class:`~fastapsp.errors.PrecisionWarning` (see :mod:`fastapsp.precision`).
    partition : Partition, optional
        Use this partition instead of computing one.
    sources : str or array_like of int, optional
        Compute only these rows: vertex ids (any order, repeats allowed), or a
        ``--sources`` spec (``a:b``, ``random:N[:SEED]``, a file; sorted ids).
    sources_method : {"auto", "pipeline", "sssp"}
        How the rows of ``sources`` are computed (see :mod:`fastapsp.sources`).
    sssp_method : {"auto", "frontier", "boundary-graph"}
        Where the boundary rows come from; ``auto`` lets the cost model choose.
    return_predecessors : bool
        Also return the predecessors, carried through the stages (the boundary
        rows then come from the frontier SSSP).

    Returns
    -------
    numpy.ndarray, shape (n, n) or (len(sources), n)
        ``d[i, j]`` is the length of a shortest path from ``i`` (``sources[i]``)
        to ``j``; ``inf`` when there is none.
    numpy.ndarray of int32, same shape
        With ``return_predecessors``: the vertex before ``j`` on a shortest path
        (``-9999`` for ``i`` itself and unreachable ``j``); see :func:`reconstruct_path`.

    Raises
    ------
    ValueError
        For a bad ``k``, partitioner, backend or dtype.
    """
    import numpy as np

    from .backend import resolve_backend
    from .cost import SSSP_METHODS, choose_method, predict
    from .partition import partition_graph as _partition
    from .pipeline import run_components
    from .sink import MemorySink

    dtype = _resolve_dtype(graph, dtype)
    if sssp_method not in SSSP_METHODS:
        raise ValueError(f"sssp_method: {sssp_method!r} is not one of {', '.join(SSSP_METHODS)}")
    if sources is not None:
        return _solve_sources(graph, sources, sources_method, k=k, partitioner=partitioner, backend=backend,
                              seed=seed, imbalance=imbalance, dtype=dtype, partition=partition,
                              return_predecessors=return_predecessors, sssp_method=sssp_method)
    if partition is None:
        k = _default_k(graph, backend, dtype) if k is None else k
        partition = _partition(graph, k, partitioner, seed=seed, imbalance=imbalance, backend=backend)
    backend = resolve_backend(backend)
    sink = MemorySink(graph.n, dtype)
    pred_sink = MemorySink(graph.n, np.int32) if return_predecessors else None
    if return_predecessors:
        sssp_method = "frontier"  # the boundary-graph method carries no predecessors
    elif sssp_method == "auto":
        prediction = predict(partition.sizes, partition.boundary_per_part, graph.n, graph.m,
                             unit_weights=graph.unit_weights, backend=backend, dtype=dtype)
        sssp_method = choose_method(prediction)
    run_components(graph, partition, range(partition.k), backend=backend, sink=sink, dtype=dtype,
                   method=sssp_method, seed=seed, pred_sink=pred_sink)
    if not sink.rows_written.all():  # every vertex lies in exactly one component
        raise RuntimeError("solve: some rows of the distance matrix were not computed")
    return (sink.result, pred_sink.result) if return_predecessors else sink.result


def _resolve_dtype(graph: Graph, dtype) -> str:
    """The dtype :func:`solve` computes in: ``auto`` decided by the graph; a warning when not exact."""
    import numpy as np

    from .pipeline import DTYPES, _tell_precision
    from .precision import choose_dtype

    requested = None
    if dtype is not None and not (isinstance(dtype, str) and dtype == "auto"):
        try:
            requested = str(np.dtype(dtype))
        except TypeError:
            requested = repr(dtype)
        if requested not in DTYPES:
            raise ValueError(f"dtype: {dtype!r} is not one of auto, {', '.join(DTYPES)}")
    precision = choose_dtype(graph, requested)
    _tell_precision(precision, requested, None, stacklevel=4)
    return precision.dtype


def _solve_sources(graph, sources, method, *, k, partitioner, backend, seed, imbalance, dtype, partition,
                   return_predecessors=False, sssp_method="auto"):
    """The rows of ``sources`` (see :func:`solve`)."""
    import numpy as np

    from .backend import resolve_backend
    from .partition import partition_graph as _partition
    from .pipeline import run_components
    from .cost import default_k
    from .sink import MemorySink
    from .sources import (RowSubsetSink, SourceRows, choose_method, parse_sources, pipeline_seconds, run_sssp_rows,
                          sssp_before_partition)

    ids = parse_sources(sources, graph.n)
    order = None if isinstance(sources, str) else np.searchsorted(ids, np.asarray(sources, dtype=np.int64))
    if order is not None and np.array_equal(order, np.arange(ids.size)):
        order = None  # already sorted and distinct: the rows as computed, without a reordered copy
    backend = resolve_backend(backend)
    model = dict(unit_weights=graph.unit_weights, backend=backend, dtype=dtype)
    if method == "auto" and partition is None and sssp_before_partition(
            ids.size, graph.n, graph.m, default_k(graph.n) if k is None else k, **model):
        method = "sssp"  # cheaper than partitioning alone (see fastapsp.sources)
    if method != "sssp" and partition is None:
        k = _default_k(graph, backend, dtype) if k is None else k
        partition = _partition(graph, k, partitioner, seed=seed, imbalance=imbalance, backend=backend)
    method = "sssp" if method == "sssp" else choose_method(partition, ids, graph.n, graph.m, method, **model)
    position = np.full(graph.n, -1, dtype=np.int64)
    position[ids] = np.arange(ids.size)
    memory = MemorySink(graph.n, dtype, rows=ids.size)
    sink = RowSubsetSink(memory, position)
    pred_memory = pred_sink = None
    if return_predecessors:
        pred_memory = MemorySink(graph.n, np.int32, rows=ids.size)
        pred_sink = RowSubsetSink(pred_memory, position)
    if method == "sssp":
        run_sssp_rows(graph, ids, backend=backend, sink=sink, dtype=dtype, pred_sink=pred_sink)
    else:
        if return_predecessors:
            sssp_method = "frontier"  # the boundary-graph method carries no predecessors
        elif sssp_method == "auto":
            cost = pipeline_seconds(partition, ids, graph.n, graph.m, **model)
            sssp_method = min(cost, key=cost.get)
        run_components(graph, partition, range(partition.k), backend=backend, sink=sink, dtype=dtype,
                       rows=SourceRows(partition, ids), pred_sink=pred_sink, method=sssp_method)
    if not memory.rows_written.all():
        raise RuntimeError("solve: some rows of the chosen sources were not computed")
    dist = memory.result if order is None else memory.result[order]
    if not return_predecessors:
        return dist
    return dist, (pred_memory.result if order is None else pred_memory.result[order])


def stats(graph: Graph, *, k: int | None = None, partitioner: str = "auto", backend: str = "auto",
          seed: int = 42, imbalance: float = 0.03, dtype="float64", partition=None):
    """Statistics of the distance matrix of ``graph``, reduced block by block (never held whole).

    Every row block is reduced where it is made (on the GPU with CuPy) to
    O(n) numbers; see :mod:`fastapsp.reductions` for the definitions.

    Parameters
    ----------
    graph : Graph
        The graph.
    k, partitioner, backend, seed, imbalance, partition
        As for :func:`solve`.
    dtype : {"float64", "float32"}
        Distance dtype of the row blocks (float32 is exact for integer distances below 2**24).

    Returns
    -------
    fastapsp.reductions.Stats
        ``s["diameter"]``, ``s["closeness"]`` (per vertex), ``s.histogram``, ...;
        ``s.save(prefix)`` writes ``prefix.json`` and ``prefix.npz``.

    Examples
    --------
    >>> import fastapsp
    >>> g = fastapsp.Graph.from_edges(3, [0, 1], [1, 2], directed=False)
    >>> s = fastapsp.stats(g, k=1, backend="numpy")
    >>> s["diameter"], s["wiener_index"], s.histogram["counts"]
    (2, 4, [0, 4, 2])
    """
    import numpy as np

    from .backend import resolve_backend
    from .partition import partition_graph as _partition
    from .pipeline import DTYPES, pairs_run, run_components
    from .reductions import StatsAccumulator
    from .sink import NullSink

    if str(np.dtype(dtype)) not in DTYPES:
        raise ValueError(f"dtype: {dtype!r} is not one of {', '.join(DTYPES)}")
    if partition is None:
        k = _default_k(graph, backend, dtype) if k is None else k
        partition = _partition(graph, k, partitioner, seed=seed, imbalance=imbalance, backend=backend)
    backend = resolve_backend(backend)
    accumulator = StatsAccumulator.for_graph(graph, backend)
    paired = pairs_run(graph, partition, accumulator, backend=backend)  # undirected: each pair once
    run_graph, run_partition, feed = (graph, partition, accumulator.update) if paired is None else paired
    run_components(run_graph, run_partition, range(partition.k), backend=backend, sink=NullSink(), dtype=dtype,
                   on_block=feed, pairs=paired is not None)
    return accumulator.finalize()


def shortest_path(csgraph, method="auto", directed=True, return_predecessors=False, unweighted=False,
                  overwrite=False, indices=None, **kwargs):
    """``scipy.sparse.csgraph.shortest_path``'s call, computed by fastapsp; see :func:`fastapsp.api.shortest_path`."""
    from .api import shortest_path as _shortest_path

    return _shortest_path(csgraph, method=method, directed=directed, return_predecessors=return_predecessors,
                          unweighted=unweighted, overwrite=overwrite, indices=indices, **kwargs)


def reconstruct_path(predecessors, source: int, target: int, *, sources=None) -> list:
    """Vertices of a shortest path from a predecessor matrix; see :func:`fastapsp.paths.reconstruct_path`."""
    from .paths import reconstruct_path as _reconstruct

    return _reconstruct(predecessors, source, target, sources=sources)


def _default_k(graph, backend: str, dtype) -> int:
    """k chosen by the cost model (:func:`fastapsp.cost.auto_k`) for ``backend``."""
    from .backend import resolve_backend
    from .cost import auto_k

    return auto_k(graph, backend=resolve_backend(backend), dtype=dtype)["k"]
