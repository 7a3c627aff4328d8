"""The Python doors of fastapsp: :func:`plan`, :func:`load_plan`, :func:`solve` and :func:`stats`.

Each makes (or reuses) a plan with :func:`fastapsp.planning.make_plan` and runs
it with :func:`fastapsp.execute.execute`: the engine of the command line.
"""

from __future__ import annotations

from .graph import Graph

__all__ = ["plan", "load_plan", "solve", "stats"]


# Keywords of the Python doors and their defaults; a plan given with ``plan=`` supplies those not passed.
_DEFAULTS = {"k": None, "partitioner": "auto", "refine": "none", "backend": "auto", "seed": 42, "imbalance": 0.03,
             "dtype": "auto", "sources": None, "sources_method": "auto", "sssp_method": "auto", "output": "memory",
             "return_predecessors": False, "result_dtype": None}


def plan(graph: Graph, *, k: int | None = None, partitioner: str = "auto", refine: str = "none",
         backend: str = "auto", seed: int = 42, imbalance: float = 0.03, dtype="auto", sources=None,
         sources_method: str = "auto", sssp_method: str = "auto", output: str = "memory", stats: bool = False,
         return_predecessors: bool = False, partition=None, comm=None):
    """Every decision of a run, made once: a :class:`fastapsp.planning.Plan` to pass to :func:`solve` or :func:`stats`.

    Takes the keywords of :func:`solve` (and ``stats=True`` for a plan of
    :func:`stats`).  Repeated calls with the plan skip the k choice, the
    partitioning and every other decision; ``plan.save(path, graph)`` keeps it
    for another process (:func:`load_plan`, ``fastapsp solve --plan FILE``).
    ``print(plan.describe())`` shows what was decided.

    Examples
    --------
    >>> import fastapsp
    >>> g = fastapsp.Graph.from_edges(4, [0, 1, 2], [1, 2, 3], directed=False)
    >>> p = fastapsp.plan(g, k=2, backend="numpy")
    >>> p.k, p.boundary_rows
    (2, 'boundary-graph')
    >>> fastapsp.solve(g, plan=p)[0].tolist()
    [0.0, 1.0, 2.0, 3.0]
    """
    settings = dict(k=k, partitioner=partitioner, refine=refine, backend=backend, seed=seed, imbalance=imbalance,
                    dtype=dtype, sources=sources, sources_method=sources_method, sssp_method=sssp_method,
                    output="none" if stats and output == "memory" else output,
                    return_predecessors=return_predecessors)
    return _make(graph, _options(settings, stats=stats), partition=partition, comm=comm)


def load_plan(path, graph: Graph, **settings):
    """The plan saved at ``path`` (:meth:`Plan.save`, ``--plan``) for ``graph``, with the keywords of :func:`plan`.

    The partition and the k choice come from the file (its graph checksum must
    match ``graph``); the other decisions are made for ``settings``.
    """
    from .planning import load_plan as _load

    stats_wanted = bool(settings.pop("stats", False))
    merged = dict(_DEFAULTS, **settings)
    if stats_wanted and "output" not in settings:
        merged["output"] = "none"
    return _make(graph, _options(merged, stats=stats_wanted), saved=_load(path, graph))


def solve(graph: Graph, *, k: int | None = None, partitioner: str = "auto", refine: str = "none",
          backend: str = "auto", seed: int = 42, imbalance: float = 0.03, dtype="auto", partition=None,
          sources=None, sources_method: str = "auto", sssp_method: str = "auto", output: str = "memory",
          return_predecessors: bool = False, result_dtype=None, plan=None, comm=None):
    """All-pairs shortest-path distances of ``graph`` in this process, by the same engine as the command line.

    Parameters
    ----------
    graph : Graph
        The graph (see :func:`read_graph` and :meth:`Graph.from_edges`).
    k : int, optional
        Number of components (default: chosen by the cost model, see :func:`fastapsp.cost.auto_k`).
    partitioner : str
        ``auto`` (default: ``jet`` on the GPU from 524,288 vertices on, or from 65,536 once this
        process has finished work on its GPU, else ``metis``: :func:`fastapsp.partition.auto_partitioner`),
        or a name
        of ``fastapsp.partition.PARTITIONERS`` (``metis``, ``metis-vol``,
        ``kahip-{fast,eco,strong,fastsocial,ecosocial,strongsocial}``, ``kaminpar``, ``jet``, each
        also with ``+b`` for the boundary refinement).
    refine : {"none", "boundary"}
        Boundary refinement after partitioning.
    backend : {"auto", "numpy", "cupy"}
        ``auto`` takes the GPU when one is visible.
    seed, imbalance : int, float
        Partitioner seed and allowed imbalance.
    dtype : {"auto", "float32", "float64", "uint16", "uint8"}
        Distance dtype.  ``auto`` (the default, as ``--dtype`` of the command
        line): float32 when every weight is a whole number and no finite
        distance can exceed 2**24 (float32 is exact), float64 when whole-number
        distances could pass 2**24, float32 for weights that are not whole
        numbers (rounded to about 7 significant digits; ask for float64 for
        about 16).  An explicit dtype that cannot be exact for this graph gives
        a :class:`~fastapsp.errors.PrecisionWarning` (see :mod:`fastapsp.precision`).
        ``uint16``/``uint8`` (unweighted graphs): half or a quarter of float32's
        memory, the type's largest value meaning unreachable.
    partition : Partition, optional
        Use this partition instead of computing one.
    sources : str or array_like of int, optional
        Compute only these rows: vertex ids (any order, repeats allowed), or a
        ``--sources`` spec (``a:b``, ``random:N[:SEED]``, a file; sorted ids).
    sources_method : {"auto", "pipeline", "sssp"}
        How the rows of ``sources`` are computed (see :mod:`fastapsp.sources`).
    sssp_method : {"auto", "frontier", "boundary-graph"}
        Where the boundary rows come from; ``auto`` lets the cost model choose.
    output : {"memory", "device"}
        ``memory``: a NumPy array in host memory.  ``device``: a CuPy array that
        never leaves the GPU (needs the cupy backend, and the matrix must fit
        in the GPU's free memory: else use :func:`stats`, ``sources`` or
        :func:`fastapsp.cli` with ``--output FILE.npy``).
    return_predecessors : bool
        Also return the predecessors, carried through the stages (the boundary
        rows then come from the frontier SSSP).
    result_dtype : {None, "float32", "float64"}
        The returned array's dtype when it should differ from the one computed
        in: e.g. ``float64`` (as SciPy returns) from an exact float32 run,
        widened where the rows are made (on the GPU for ``output="device"``).
    plan : Plan, SavedPlan or str, optional
        A plan from :func:`plan` (reused as it is when the other keywords
        passed agree with it; else its partition is reused), or the path of a
        saved plan.
    comm : optional
        A communicator (mpi4py); each rank then holds its own rows.

    Returns
    -------
    ndarray (NumPy or CuPy), shape (n, n) or (len(sources), n)
        ``d[i, j]`` is the length of a shortest path from ``i`` (``sources[i]``)
        to ``j``; ``inf`` when there is none.
    ndarray of int32, same shape
        With ``return_predecessors``: the vertex before ``j`` on a shortest path
        (``-9999`` for ``i`` itself and unreachable ``j``); see :func:`reconstruct_path`.

    Raises
    ------
    ValueError
        For a bad ``k``, partitioner, backend or dtype, or a device result that does not fit.
    """
    settings = dict(k=k, partitioner=partitioner, refine=refine, backend=backend, seed=seed, imbalance=imbalance,
                    dtype=dtype, sources=sources, sources_method=sources_method, sssp_method=sssp_method,
                    output=output, return_predecessors=return_predecessors,
                    result_dtype=None if result_dtype is None else _dtype_name(result_dtype, "result_dtype",
                                                                               "float32, float64"))
    if output not in ("memory", "device"):
        raise ValueError(f"output: {output!r} is not 'memory' or 'device' (files: fastapsp solve --output PATH.npy)")
    early = _EarlyResult()  # a device result starts allocating while the plan is made
    the_plan = _plan_for(graph, settings, plan, partition, comm, stats=False, on_output=early)
    outcome = _run(the_plan, graph, comm, made=the_plan is not plan, allocation=early.allocation)
    dist, pred = outcome.result, outcome.predecessors
    if (comm is None or comm.size == 1) and not outcome.complete:  # every vertex lies in one component
        raise RuntimeError("solve: some rows of the distance matrix were not computed")
    given = the_plan.options.sources
    if given is not None and not isinstance(given, str):  # the rows in the order (and repeats) asked for
        import numpy as np

        order = np.searchsorted(the_plan.sources, np.asarray(given, dtype=np.int64))
        if not np.array_equal(order, np.arange(the_plan.sources.size)):
            xp = _array_module(dist)
            dist = dist[xp.asarray(order)]
            pred = None if pred is None else pred[xp.asarray(order)]
    return (dist, pred) if the_plan.options.predecessors else dist


def stats(graph: Graph, *, k: int | None = None, partitioner: str = "auto", refine: str = "none",
          backend: str = "auto", seed: int = 42, imbalance: float = 0.03, dtype="auto", partition=None,
          sssp_method: str = "auto", plan=None, comm=None):
    """Statistics of the distance matrix of ``graph``, reduced block by block (never held whole).

    The same engine and decisions as ``fastapsp solve --stats``: every row
    block is reduced where it is made (on the GPU with CuPy) to O(n) numbers,
    and on an undirected graph each pair of vertices is computed once; see
    :mod:`fastapsp.reductions` for the definitions.

    Parameters
    ----------
    graph : Graph
        The graph.
    k, partitioner, refine, backend, seed, imbalance, dtype, partition, sssp_method, plan, comm
        As for :func:`solve` (``dtype`` default ``auto``: float32 where it is exact).

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
    settings = dict(k=k, partitioner=partitioner, refine=refine, backend=backend, seed=seed, imbalance=imbalance,
                    dtype=dtype, sources=None, sources_method="auto", sssp_method=sssp_method, output="none",
                    return_predecessors=False)
    the_plan = _plan_for(graph, settings, plan, partition, comm, stats=True)
    return _run(the_plan, graph, comm, made=the_plan is not plan).stats


def _options(settings: dict, *, stats: bool):
    """The :class:`~fastapsp.options.SolveOptions` of a Python call (its keywords as run settings)."""
    from .options import SolveOptions

    settings = dict(settings)
    dtype = settings.pop("dtype")
    if dtype is not None and not (isinstance(dtype, str) and dtype == "auto"):
        dtype = _dtype_name(dtype, "dtype", "auto, float32, float64, uint16, uint8")
    opts = SolveOptions(graph="<in memory>", dtype=None if dtype == "auto" else dtype, stats=True if stats else None,
                        predecessors=bool(settings.pop("return_predecessors")), quiet=True, **settings)
    opts.check(need_graph=False)
    return opts


def _make(graph, opts, *, partition=None, saved=None, comm=None, on_output=None):
    from .backend import gpu_count
    from .comm import SerialComm
    from .planning import make_plan

    if opts.backend != "numpy" and gpu_count():  # kernels compile (once per machine) while the plan is made
        from .kernels.catalog import ensure_built

        ensure_built(background=True)
    return make_plan(graph, opts, comm=SerialComm() if comm is None else comm, partition=partition, saved=saved,
                     on_output=on_output)


def _plan_for(graph, settings: dict, plan, partition, comm, *, stats: bool, on_output=None):
    """The plan of a call: ``plan`` itself when it was made for these settings, else one made now
    (reusing ``plan``'s partition or the saved plan's)."""
    from .planning import Plan, SavedPlan, load_plan as _load

    if plan is None:
        return _make(graph, _options(settings, stats=stats), partition=partition, comm=comm, on_output=on_output)
    if isinstance(plan, (str, bytes)) or hasattr(plan, "__fspath__"):
        plan = _load(plan, graph)
    if isinstance(plan, SavedPlan):
        return _make(graph, _options(settings, stats=stats), saved=plan, comm=comm, on_output=on_output)
    if not isinstance(plan, Plan):
        raise TypeError(f"plan: expected a fastapsp Plan, a saved plan or its path, found {type(plan).__name__}")
    plan.check_graph(graph)
    # Keywords left at their defaults take the plan's values; those passed must agree with it.
    base = plan.options
    inherited = {"k": base.k, "partitioner": base.partitioner, "refine": base.refine, "backend": base.backend,
                 "seed": base.seed, "imbalance": base.imbalance, "dtype": base.dtype or "auto",
                 "sources": base.sources, "sources_method": base.sources_method, "sssp_method": base.sssp_method,
                 "output": base.output, "return_predecessors": base.predecessors, "result_dtype": base.result_dtype}
    merged = {key: (inherited[key] if _is_default(key, value) else value) for key, value in settings.items()}
    if stats:
        merged["output"] = "none"
    opts = _options(merged, stats=stats)
    if partition is not None:
        return _make(graph, opts, partition=partition, comm=comm, on_output=on_output)
    if _same_run(opts, base):
        return plan
    for key in ("k", "partitioner", "refine", "seed", "imbalance"):  # what the plan's partition was made with
        made = plan.k if key == "k" else getattr(base, key)
        asked = getattr(opts, key)
        replaced = key == "k" and asked == base.k  # the plan was asked for this k and the cost model replaced it
        if asked != made and not (key == "k" and asked is None) and not replaced:
            raise ValueError(f"plan: made with {key}={made!r}, the call asks for {key}={asked!r}; make another "
                             f"plan or leave {key} out")
    return _make(graph, opts, partition=plan.partition, comm=comm, on_output=on_output)


def _is_default(key, value) -> bool:
    default = _DEFAULTS.get(key)
    if value is None or default is None:
        return value is default
    return isinstance(value, type(default)) and value == default


def _same_run(opts, base) -> bool:
    """Whether two settings lead to the same plan (names of files and reports aside)."""
    import dataclasses

    ignore = {"graph", "report", "quiet", "dry_run", "plan", "partition_file"}
    for f in dataclasses.fields(opts):
        if f.name in ignore:
            continue
        a, b = getattr(opts, f.name), getattr(base, f.name)
        if f.name == "sources" and not isinstance(a, (str, type(None))):
            import numpy as np

            if isinstance(b, (str, type(None))) or not np.array_equal(np.asarray(a), np.asarray(b)):
                return False
        elif a != b:
            return False
    return True


def _run(the_plan, graph, comm, *, made: bool, allocation=None):
    """Execute ``the_plan``; ``made``: it was made in this call (its seconds count in the report);
    ``allocation``: the device result's, started while the plan was made."""
    from .comm import SerialComm
    from .execute import execute

    return execute(the_plan, graph, comm=SerialComm() if comm is None else comm,
                   seconds=the_plan.spent() if made else None, allocation=allocation)


class _EarlyResult:
    """``make_plan``'s ``on_output``: starts allocating a device result as soon as its size is known."""

    def __init__(self) -> None:
        self.allocation = None

    def __call__(self, output, rows: int, n: int, dtype) -> None:
        if output == "device":
            from .sink import DeviceAllocation

            self.allocation = DeviceAllocation((rows, n), dtype)


def _dtype_name(dtype, setting: str, allowed: str) -> str:
    """The NumPy name of ``dtype`` (``np.float32`` -> ``"float32"``); a ``ValueError`` naming ``setting`` else
    (the names themselves are checked with the other settings: :meth:`SolveOptions.check`)."""
    import numpy as np

    try:
        return str(np.dtype(dtype))
    except TypeError:
        raise ValueError(f"{setting}: {dtype!r} is not one of {allowed}") from None


def _array_module(array):
    from .backend import array_module

    return array_module(array)
