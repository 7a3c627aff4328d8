"""Every decision of a run, made once: :func:`make_plan` returns an immutable :class:`Plan`.

The command line (``solve``, ``--stats``, ``--sources``, ``--dry-run``, under MPI
or not), :func:`fastapsp.solve`, :func:`fastapsp.stats`,
:func:`fastapsp.shortest_path` and the benchmarks all make a plan here and run
it with :func:`fastapsp.execute.execute`.  What the plan decides, in order:

1. the backend and the device;
2. the distance dtype, and why (:mod:`fastapsp.precision`);
3. ``--sources``: whether their rows come from SSSP alone (no partition), decided
   before partitioning when that SSSP costs no more than the partitioner;
4. k (given, from a saved plan or partition, or by the cost model,
   :func:`fastapsp.cost.auto_k`, within the device's memory less the output
   kept there) and the partition (rank 0, heard by every rank); a given k
   predicted at ten times the cost model's k and a minute or more is replaced
   by it, with a note;
5. where the boundary rows come from (``frontier`` or ``boundary-graph``, by
   the cost model; ``frontier`` when predecessors are carried) and, for the
   sources, ``pipeline`` or ``sssp``;
6. whether each pair of vertices is computed once (``--stats`` of an undirected
   graph with nothing else needing the whole matrix), and the renaming that needs;
7. the schedule: which components each rank computes (largest first, or runs
   of the boundary graph's level tree), and whether every rank closes every
   component (no rows travel) or each its share;
8. that the output fits where it goes.

A plan can be saved (:meth:`Plan.save`, ``--plan FILE``) and loaded for the same
graph (its checksum is checked): the k choice and the partition are then taken
from the file, and every other decision is made again here for the run's own
settings (they cost milliseconds).
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from .backend import available_bytes, device_csr, gpu_name, gpu_warm, launcher_local_rank, resolve_backend
from .comm import run_phase, select_device
from .peers import peer_rate
from .cost import choose_boundary_rows, close_everywhere, default_k, predict
from .components import nonempty
from .distributed import choose_k_everywhere, partition_everywhere, tree_schedule
from .errors import ConfigError, PrecisionWarning
from .graph import Graph, arc_runs
from .options import SolveOptions
from .partition import save_partition
from .precision import choose_dtype
from .schedule import component_costs, schedule_components
from .sizing import check_output_fits, dry_run, output_bytes, sssp_memory
from .smalldist import SMALL_DTYPES, check_small_dtype
from .sources import SourceRows, choose_source_rows, parse_sources, pipeline_seconds, sssp_before_partition
from .stages.boundary_graph import DENSE_LIMIT, SUPER_SIZE, prepare_local_closures
from .stages.min_plus import Packing

__all__ = ["Plan", "SavedPlan", "make_plan", "load_plan", "renamed_by_component", "PLAN_KEYS"]

# Settings a saved plan fixes: a run that asks for other values of these cannot use it.
PLAN_KEYS = ("k", "partitioner", "refine", "seed", "imbalance", "undirected", "format")
# Decisions make_plan(force=...) may impose.
FORCEABLE = ("each_pair_once", "close_everywhere", "given_k")


@dataclass(frozen=True, eq=False)
class Plan:
    """The decisions of one run (see the module's text for the order they are made in).

    Attributes
    ----------
    options : SolveOptions
        The settings the plan was made for (a copy; changing it changes nothing).
    graph
        The graph it was made for; ``graph_name``, ``n``, ``m`` (stored arcs),
        ``directed`` and ``graph_checksum`` (computed when first asked: saving
        the plan, or checking it against another graph object) are its own.
    backend, device, ranks
        ``numpy`` or ``cupy``, the device's name, the number of ranks.
    k_choice : dict
        How k was set (``rule``: given, cost model, from the plan or partition file, none needed).
    partition : Partition or None
        None when the rows come from SSSP alone (``source_rows == "sssp"``).
    sources : ndarray of int64 or None
        The sorted distinct source ids of a ``sources`` run.
    source_rows : {"pipeline", "sssp"} or None
        How the rows of ``sources`` are computed.
    boundary_rows : {"frontier", "boundary-graph"} or None
        Where the boundary rows come from.
    precision : DtypeChoice
        The distance dtype, its reason and the distance bound.
    dtype, out_dtype : str
        The dtype computed in, and the one the output holds (``uint16``/``uint8`` for small integers).
    each_pair_once : bool
        Undirected ``--stats``: each pair of vertices computed once.
    whole_rows : bool
        Every distance of a row is needed (an output, ``--verify``, predecessors).  When not (``--stats``,
        or nothing kept), a component that no arc joins to another has only ``inf`` outside its own
        columns, and those columns are not computed: the statistics count finite distances only.
    close_everywhere : bool or None
        Boundary-graph method under several ranks: every rank closes every component.
    schedule, spread : tuple of tuples of int
        Per rank, the components whose rows it computes, and those it closes
        (boundary-graph method).
    prediction : dict or None
        Predicted seconds per stage of both boundary-row methods (:func:`fastapsp.cost.predict`).
    seconds : dict
        The fixed costs of making the plan: ``backend``, ``choose_k``, ``partition``, ``plan`` (the rest).
    """

    options: SolveOptions
    graph: object = field(repr=False)
    backend: str
    device: str
    ranks: int
    k_choice: dict
    partition: object
    sources: np.ndarray | None
    source_rows: str | None
    boundary_rows: str | None
    precision: object
    dtype: str
    out_dtype: str
    each_pair_once: bool
    whole_rows: bool
    close_everywhere: bool | None
    schedule: tuple | None
    spread: tuple | None
    prediction: dict | None
    seconds: dict
    # What the run itself computes on: with each_pair_once the graph and partition renamed so that every
    # component is a run of consecutive ids (``order[i]`` is the graph's vertex renamed i), else the graph's own.
    order: np.ndarray | None = field(default=None, repr=False)
    run_graph: object = field(default=None, repr=False)
    run_partition: object = field(default=None, repr=False)
    tree: object = field(default=None, repr=False)
    # Bytes per second of one rank copying closures from another's GPU (fastapsp.peers.peer_rate), or None:
    # they travel through the host.
    peer_rate: float | None = None

    @property
    def k(self) -> int:
        return 1 if self.partition is None else int(self.partition.k)

    @property
    def output(self) -> str:
        return str(self.options.output)

    @property
    def rows(self) -> int:
        """Rows of the output: n, or the number of sources."""
        return self.n if self.sources is None else int(self.sources.size)

    def spent(self) -> dict:
        """Seconds making the plan took, as report stages: ``backend`` (finding the GPU: on a fresh process the
        wait for CuPy's import and for the other ranks'), ``choose_k``, ``partition`` and ``plan`` (the rest,
        the level tree's shape included)."""
        return {key: value for key, value in self.seconds.items()
                if key in ("backend", "choose_k", "partition", "plan")}

    @property
    def graph_name(self) -> str:
        return self.graph.name

    @property
    def n(self) -> int:
        return self.graph.n

    @property
    def m(self) -> int:
        return self.graph.m

    @property
    def directed(self) -> bool:
        return self.graph.directed

    @property
    def graph_checksum(self) -> str:
        return self.graph.checksum()  # cached by the graph

    def matches(self, graph) -> bool:
        """Whether the plan was made for ``graph`` (same arcs, weights and direction)."""
        if graph is self.graph:
            return True
        return graph.n == self.n and graph.m == self.m and graph.checksum() == self.graph_checksum

    def check_graph(self, graph) -> None:
        """Refuse ``graph`` when the plan was made for another one (:class:`~fastapsp.errors.ConfigError`)."""
        if not self.matches(graph):
            raise ConfigError(f"plan: made for {self.graph_name!r} (n={self.n}, {self.m} arcs), given "
                              f"{graph.name!r} (n={graph.n}, {graph.m} arcs)")

    def estimate(self, *, block_bytes: int | None = None) -> list[dict]:
        """Per rank: device memory per stage, host memory and estimated seconds (see :mod:`fastapsp.sizing`)."""
        opts = self.options
        xp = np if self.backend != "cupy" else __import__("cupy")
        block_bytes = block_bytes if block_bytes is not None else opts.block_bytes
        common = dict(dtype=self.dtype, backend=self.backend, output=self.output, block_bytes=block_bytes,
                      available=available_bytes(xp), predecessors=bool(opts.predecessors))
        if self.partition is None:  # sources by SSSP, one batch of rows at a time
            return sssp_memory(self.run_graph, [self.sources[r :: self.ranks].size for r in range(self.ranks)],
                               **common)
        selection = None if self.sources is None else SourceRows(self.partition, self.sources)
        keep = None if selection is None else selection.closures_needed()
        spread = None if self.spread is None else [list(s) for s in self.spread]
        if self.boundary_rows == "boundary-graph" and self.close_everywhere:
            spread = [nonempty(self.run_partition)] * self.ranks
            keep = np.ones(self.k, dtype=bool) if keep is None else keep
        return dry_run(self.run_graph, self.run_partition, [list(s) for s in self.schedule], rows=self.rows,
                       method=self.boundary_rows or "frontier", stats=bool(opts.stats), closing=spread, keep=keep,
                       wanted=None if selection is None else selection.per_component,
                       interior=None if selection is None else selection.interior_per_component,
                       whole_rows=self.whole_rows, tree=self.tree, **common)

    def describe(self) -> dict:
        """The decisions as plain values (what ``--dry-run`` prints and a saved plan records)."""
        part = self.partition
        return {
            "graph": self.graph_name, "graph_checksum": self.graph_checksum, "n": self.n, "arcs": self.m,
            "directed": self.directed, "backend": self.backend, "device": self.device, "ranks": self.ranks,
            "k": self.k, "k_choice": self.k_choice,
            "partitioner": None if part is None else part.method,
            "boundary_vertices": None if part is None else int(part.boundary.sum()),
            "sources": None if self.sources is None else int(self.sources.size),
            "source_rows": self.source_rows, "boundary_rows": self.boundary_rows,
            "dtype": self.dtype, "output_dtype": self.out_dtype, "dtype_reason": self.precision.reason,
            "each_pair_once": self.each_pair_once, "whole_rows": self.whole_rows,
            "close_everywhere": self.close_everywhere,
            "peer_bytes_per_second": None if self.peer_rate is None else round(self.peer_rate),
            "components_per_rank": None if self.schedule is None else [len(s) for s in self.schedule],
            "upper_levels": None if self.tree is None else self.tree.shape(),
            "output": self.output,
            "predicted_seconds": None if self.prediction is None else
            {name: {key: round(value, 6) for key, value in stages.items()} for name, stages in self.prediction.items()},
            "plan_seconds": {key: round(value, 6) for key, value in self.seconds.items()},
        }

    def save(self, path, graph) -> None:
        """Write the plan to ``path`` (an ``.npz`` archive of the partition, with the plan in its sidecar).

        :func:`load_plan` (``--plan FILE``, ``fastapsp.load_plan``) takes it back for the same graph.
        """
        if self.partition is None:
            raise ConfigError(f"plan: {path}: a plan without a partition (rows by SSSP alone) has nothing to "
                              "save; it is made in milliseconds")
        self.check_graph(graph)
        settings = {key: getattr(self.options, key) for key in PLAN_KEYS}
        save_partition(os.fspath(path), graph, self.partition, compress=True,
                       extra={"plan": {"settings": settings, "k_choice": self.k_choice, "decided": self.describe()}})


@dataclass(frozen=True)
class SavedPlan:
    """What a plan file gives a new plan: the partition, how k was chosen, the settings it fixes."""

    path: str
    partition: object
    k_choice: dict
    settings: dict


def load_plan(path, graph) -> SavedPlan:
    """The saved plan at ``path``, checked against ``graph`` (its checksum: the exact arcs and weights).

    Raises
    ------
    ConfigError
        When the file is not a plan, or was made for another graph.
    """
    from .partition import load_partition
    from .sink import read_sidecar

    path = os.fspath(path)
    try:
        record = read_sidecar(path)
    except ValueError as exc:
        raise ConfigError(f"plan: {exc}") from None
    if record is None or "plan" not in record:
        raise ConfigError(f"plan: {path} is not a plan saved by fastapsp (no plan in its sidecar {path}.json)")
    if record.get("graph_checksum") != graph.checksum() or record.get("n") != graph.n:
        raise ConfigError(f"plan: {path} was made for graph {record.get('graph')!r} (n={record.get('n')}, checksum "
                          f"{record.get('graph_checksum')}), this run reads {graph.name!r} (n={graph.n}, checksum "
                          f"{graph.checksum()}); delete the file or pass another --plan")
    partition = load_partition(path, graph)
    saved = record["plan"]
    return SavedPlan(path, partition, dict(saved.get("k_choice") or {}), dict(saved.get("settings") or {}))


def _check_saved(saved: SavedPlan, opts: SolveOptions) -> None:
    """Refuse a saved plan whose fixed settings differ from those this run asks for explicitly."""
    defaults = SolveOptions()
    for key in PLAN_KEYS:
        asked, fixed = getattr(opts, key), saved.settings.get(key)
        # A plan made for -k K may hold the cost model's k instead (_judge_given_k): K still asks for it.
        if key == "k" and asked is not None and asked not in (saved.partition.k, fixed):
            raise ConfigError(f"plan: {saved.path} has k={saved.partition.k}, the run asks for k={asked}")
        if key != "k" and asked != getattr(defaults, key) and asked != fixed:
            raise ConfigError(f"plan: {saved.path} was made with {key}={fixed!r}, the run asks for {key}={asked!r}; "
                              "delete the file or pass another --plan")


def make_plan(graph, opts: SolveOptions, *, comm, log=None, saved: SavedPlan | None = None,
              partition=None, force: dict | None = None, on_output=None) -> Plan:
    """Every decision of a run of ``opts`` on ``graph``, on every rank of ``comm`` (the same on every rank).

    Parameters
    ----------
    graph : Graph
        The graph, read on every rank.
    opts : SolveOptions
        The run's settings (checked here).
    comm
        The communicator (:func:`fastapsp.comm.get_comm`).
    log : callable, optional
        Hears notes (why float64, a partition file without sidecar) as one line each; without it a
        precision problem is a :class:`~fastapsp.errors.PrecisionWarning`.
    saved : SavedPlan, optional
        A loaded plan (:func:`load_plan`): its partition and k choice are used.
    partition : Partition, optional
        Use this partition (Python API); k is its k.
    force : dict, optional
        Decisions imposed instead of made, for benchmarks and tests that compare a variant with the
        default: ``each_pair_once``, ``close_everywhere`` and ``given_k`` (bool; True keeps a given k
        that the cost model would replace, see :func:`_judge_given_k`).  Not a user setting.
    on_output : callable, optional
        Told ``(output, rows, n, dtype)`` once the output's size is known and fits, before k is chosen
        and the graph partitioned (the Python API starts allocating a device result there, so that the
        allocation overlaps that work).
    """
    force = dict(force or {})
    unknown = set(force) - set(FORCEABLE)
    if unknown:
        raise ConfigError(f"force: {sorted(unknown)} cannot be imposed; allowed: {', '.join(FORCEABLE)}")
    start = time.perf_counter()
    opts.check(need_graph=False)
    seconds: dict = {}
    requested = None if opts.dtype in (None, "auto") else opts.dtype
    t_dtype = time.perf_counter()
    precision = choose_dtype(graph, "float32" if requested in SMALL_DTYPES else requested)
    seconds["dtype"] = time.perf_counter() - t_dtype  # searches where the one-pass bound is loose
    t_backend = time.perf_counter()  # on the GPU the wait for CuPy, imported by the warm-up thread meanwhile
    backend = run_phase(comm, "choosing the backend", resolve_backend, opts.backend)
    seconds["backend"] = time.perf_counter() - t_backend
    if saved is not None:
        _check_saved(saved, opts)
        partition = saved.partition
    if partition is not None and partition.labels.shape != (graph.n,):
        raise ConfigError(f"partition: {partition.labels.size} labels for a graph of {graph.n} vertices")
    k = default_k(graph.n) if opts.k is None else opts.k
    if partition is not None:
        k = partition.k
    if k > max(1, graph.n):
        raise ConfigError(f"k: {k} is larger than the {graph.n} vertices of {graph.name}")
    out = str(opts.output)
    on_device = out == "device"
    if on_device and backend != "cupy":
        raise ConfigError("output: 'device' keeps the result in GPU memory and needs the cupy backend "
                          f"(backend {opts.backend!r} resolved to {backend!r}); use output='memory'")

    sources = source_rows = None
    if opts.sources is not None:
        sources = run_phase(comm, "reading the sources", parse_sources, opts.sources, graph.n)
        partitioned = partition is not None or bool(opts.partition_file and os.path.exists(opts.partition_file))
        # SSSP from the sources when asked, or when it costs no more than partitioning alone: then no partition
        # is made; otherwise the method is chosen once the components are known.
        cheap = opts.sources_method == "auto" and not partitioned and sssp_before_partition(
            sources.size, graph.n, graph.m, k, unit_weights=graph.unit_weights, backend=backend, dtype=precision.dtype)
        source_rows = "sssp" if opts.sources_method == "sssp" or cheap else None
    out_dtype = opts.dtype if opts.dtype in SMALL_DTYPES else (opts.result_dtype or precision.dtype)
    out_rows = graph.n if sources is None else int(sources.size)
    if not opts.dry_run:  # before k is chosen: an output that cannot fit is refused at once
        run_phase(comm, "checking the output size", check_output_fits, out, out_rows, graph.n, out_dtype,
                  extra=output_bytes(out_rows, graph.n, np.int32) if opts.predecessors else 0)
        if on_output is not None:
            on_output(out, out_rows, graph.n, out_dtype)

    if saved is not None:
        k_choice = {"rule": "from the plan file", "k": k, "made_by": saved.k_choice}
    elif partition is not None:
        k_choice = {"rule": "from the partition given", "k": k}
    elif opts.k is not None:
        k_choice = {"k": k, "rule": "given"}
    elif source_rows == "sssp":
        k_choice = {"rule": "none needed (source rows by SSSP)"}
    elif opts.partition_file and os.path.exists(opts.partition_file):
        k_choice = {"rule": "from the partition file"}
    else:
        t = time.perf_counter()
        reserve = output_bytes(out_rows, graph.n, out_dtype) if on_device else 0
        k_choice = choose_k_everywhere(graph, backend, precision.dtype, comm=comm, reserve=reserve,
                                       partitioner=opts.partitioner)
        k = k_choice["k"]
        seconds["choose_k"] = time.perf_counter() - t
    # A given k may be replaced by the cost model's (below) only where the partition is made here for it.
    replaceable = k_choice.get("rule") == "given" and partition is None and not opts.partition_file \
        and not force.get("given_k", False)
    if partition is None and source_rows != "sssp":
        t = time.perf_counter()
        if backend == "cupy" and comm.rank != 0:  # rank 0 partitions: meanwhile, the closures' GPU form loads here
            local = launcher_local_rank(comm.size)
            if local is not None:
                prepare_local_closures(graph, "float32" if opts.dtype in SMALL_DTYPES else precision.dtype, local)
        partition = partition_everywhere(graph, opts, k, backend, comm=comm, log=log,
                                         solve=k_choice.get("predicted_seconds", {}).get("solve"))
        seconds["partition"] = time.perf_counter() - t
    if partition is not None and k_choice.get("rule") == "from the partition file":
        k_choice["k"] = partition.k
    _tell_precision(precision, requested, log)  # after the checks of the partition file: a refusal is one line
    if sources is not None and source_rows is None:
        source_rows = choose_source_rows(partition, sources, graph.n, graph.m, opts.sources_method,
                                         unit_weights=graph.unit_weights, backend=backend, dtype=precision.dtype)

    t = time.perf_counter()
    device = "cpu"
    if backend == "cupy":
        device_id = select_device(comm)
        device = f"cuda:{device_id} {gpu_name(device_id)}"
    compute_dtype = "float32" if opts.dtype in SMALL_DTYPES else precision.dtype
    schedule = spread = None
    selection = costs = prediction = boundary_rows = None
    replanned = 0.0  # seconds of choosing k and partitioning again, reported as such rather than as "plan"
    if partition is not None and source_rows != "sssp":
        selection, costs, prediction, boundary_rows = _rows_method(graph, partition, sources, opts, backend,
                                                                   compute_dtype)
        if k_choice.get("rule") == "given":
            better = _judge_given_k(graph, k, prediction, boundary_rows, backend, compute_dtype, comm=comm, log=log,
                                    replace=replaceable)
            if better is not None:  # the cost model's k instead: partitioned again, every later choice for it
                t_again = time.perf_counter()
                seconds["choose_k"] = float(better["choice"].get("seconds", 0.0))
                k = better["k"]
                k_choice = {"k": k, "rule": "cost model, given k replaced",
                            "given": k_choice["k"], "given_predicted_seconds": round(better["given_seconds"], 1),
                            "cost_model": better["choice"]}
                partition = partition_everywhere(graph, opts, k, backend, comm=comm, log=log,
                                                 solve=better["choice"].get("predicted_seconds", {}).get("solve"))
                seconds["partition"] = seconds.get("partition", 0.0) + time.perf_counter() - t_again
                replanned = seconds["choose_k"] + time.perf_counter() - t_again
                selection, costs, prediction, boundary_rows = _rows_method(graph, partition, sources, opts, backend,
                                                                           compute_dtype)
    if boundary_rows is not None and opts.predecessors and boundary_rows == "boundary-graph":
        if log is not None and opts.sssp_method == "boundary-graph":
            log("note: --predecessors takes the boundary rows from the frontier SSSP (the boundary-graph "
                "method carries no predecessors)")
        boundary_rows = "frontier"
    if opts.dtype in SMALL_DTYPES:  # --dtype uint16/uint8: float32 on the device, converted at the sink
        run_phase(comm, "checking the distance type", check_small_dtype, graph, opts.dtype)

    # Each pair once: --stats of an undirected graph where nothing needs the whole matrix.
    each_pair_once = bool(opts.stats) and not graph.directed and boundary_rows is not None and out == "none" \
        and not opts.verify and not opts.predecessors and sources is None
    each_pair_once = each_pair_once and force.get("each_pair_once", True)
    order = None
    run_graph, run_partition = graph, partition
    if each_pair_once:
        order, run_graph, run_partition = renamed_by_component(graph, partition, _renaming_module(backend, graph))
    tree = None
    everywhere = peer = None
    if boundary_rows == "boundary-graph":
        t_tree = time.perf_counter()
        tree, schedule, spread = tree_schedule(run_graph, run_partition, costs, selection, backend, opts.seed,
                                               comm=comm)
        seconds["tree"] = time.perf_counter() - t_tree
        if backend == "cupy" and comm.size > 1:  # closures may travel GPU to GPU: how fast, measured once
            peer = run_phase(comm, "measuring the copies between the GPUs", peer_rate, comm)
        everywhere = close_everywhere(run_partition.sizes, run_partition.boundary_per_part, comm.size,
                                      backend=backend, dtype=compute_dtype, rate=peer)
        everywhere = bool(force.get("close_everywhere", everywhere)) and comm.size > 1
    elif boundary_rows is not None:
        schedule = schedule_components(costs, comm.size)
    # The level tree ("tree") and the dtype's searches ("dtype") included.
    seconds["plan"] = time.perf_counter() - t - replanned + seconds["dtype"]
    seconds["total"] = time.perf_counter() - start
    frozen = dataclasses.replace(opts)
    return Plan(options=frozen, graph=graph, backend=backend, device=device, ranks=comm.size, k_choice=k_choice,
                partition=partition, sources=sources, source_rows=source_rows, boundary_rows=boundary_rows,
                precision=precision, dtype=compute_dtype, out_dtype=str(out_dtype), each_pair_once=each_pair_once,
                whole_rows=_whole_rows(opts),
                close_everywhere=everywhere,
                schedule=None if schedule is None else tuple(tuple(int(p) for p in s) for s in schedule),
                spread=None if spread is None else tuple(tuple(int(p) for p in s) for s in spread),
                prediction=prediction, seconds=seconds, order=order, run_graph=run_graph,
                run_partition=run_partition, tree=tree, peer_rate=peer)


def permuted_with(graph, order, xp):
    """:meth:`Graph.permuted` computed with the array module ``xp`` (CuPy: on the GPU, from the graph's
    device CSR), the same graph as the host's.  The result's device CSR is kept for the run that
    follows (:func:`fastapsp.backend.device_csr`), so it is not uploaded again.

    Examples
    --------
    >>> from fastapsp.graph import Graph
    >>> g = Graph.from_edges(3, [0, 1], [1, 2], [5.0, 7.0], directed=True)
    >>> h = permuted_with(g, [2, 0, 1], np)
    >>> h.arcs()[0].tolist(), h.arcs()[1].tolist(), h.arcs()[2].tolist()
    ([1, 2], [2, 0], [5.0, 7.0])
    """
    order = np.asarray(order, dtype=np.int64)
    if xp is np:
        return graph.permuted(order)
    n = graph.n
    if order.shape != (n,):
        raise ValueError(f"order: expected a permutation of 0..{n - 1}, found shape {order.shape}")
    indptr, indices, weights = device_csr(graph, xp)
    moved = xp.asarray(order)
    if n and (int(moved.min()) < 0 or int(moved.max()) >= n or int(xp.bincount(moved, minlength=n).max()) != 1):
        raise ValueError(f"order: expected a permutation of 0..{n - 1}")
    rename = xp.empty(n, dtype=xp.int64)
    rename[moved] = xp.arange(n, dtype=xp.int64)
    source, rows, new_ptr = arc_runs(xp, indptr, moved)  # old position and new row of every new arc
    heads = rename[indices[source].astype(xp.int64)]
    # Heads ascending within each row: one sort by (row, head), which are distinct (no duplicate arcs).
    sort = xp.argsort(rows * max(n, 1) + heads)
    heads, source = heads[sort], source[sort]
    dtype = graph.indptr.dtype
    arrays = (new_ptr.astype(dtype), heads.astype(dtype), weights[source])
    renamed = Graph(*(xp.asnumpy(a) for a in arrays), directed=graph.directed, name=graph.name)
    renamed._cache[("csr", xp.cuda.Device().id)] = arrays
    return renamed


def renamed_by_component(graph, partition, xp=np):
    """``(order, graph', partition')``: the vertices renamed so that every component is a run of consecutive ids.

    ``order[i]`` is the vertex renamed ``i`` (:meth:`Graph.permuted`).  On an
    undirected graph ``d(u, v) = d(v, u)``, so a component's row block then
    needs only the columns from its own first vertex on: each pair of vertices
    is computed once, half the matrix in all (see
    :meth:`fastapsp.reductions.StatsAccumulator.update` with ``pairs``).
    ``xp``: the array module the graph is renamed with (:func:`permuted_with`; CuPy for a GPU run,
    where the renamed graph is wanted on the device anyway).
    """
    # The partition's own order: component by component, each one's boundary vertices first, each group
    # ascending.  Its per-component lists then carry over as runs of consecutive ids, and the boundary
    # graph's level order is the renamed graph's vertex order (its boundary rows need no reordering).
    order = partition.order
    renamed = permuted_with(graph, order, xp)
    new = np.empty(graph.n, dtype=np.int64)
    new[order] = np.arange(graph.n)
    part = dataclasses.replace(partition, labels=partition.labels[order], boundary=partition.boundary[order],
                               _order=new[partition._order])
    return order, renamed, part


# A given k predicted to take this long is compared with the cost model's own choice.
SLOW_K_SECONDS = 60.0
# ... and replaced by it when the cost model's k is predicted at least this many times faster.
SLOW_K_FACTOR = 10.0


# Device bytes a renaming on the GPU takes per arc (its int64 positions, rows, sort keys and order,
# the renamed arrays); above a quarter of the memory a row block may use (available_bytes) the host renames.
_RENAME_BYTES_PER_ARC = 64


def _renaming_module(backend: str, graph):
    """The array module that renames the graph for each-pair-once: CuPy on a GPU run where its
    temporaries fit (tens of times faster than the host on a million vertices), in a process that has
    already worked on its GPU (:func:`fastapsp.backend.gpu_warm`): at a process's first use its dozen
    CuPy kernels took 0.4-0.6 s to load (the command line's plan stage, luxembourg_osm and delaunay16r
    on one H100), more than the host's renaming of a million vertices.  Else NumPy."""
    if backend != "cupy" or not gpu_warm():
        return np
    import cupy

    return cupy if _RENAME_BYTES_PER_ARC * max(graph.m, graph.n) < available_bytes(cupy) // 4 else np


def _whole_rows(opts: SolveOptions) -> bool:
    """Whether every distance of a row is needed (see :attr:`Plan.whole_rows`)."""
    return str(opts.output) != "none" or bool(opts.verify) or bool(opts.predecessors)


def _rows_method(graph, partition, sources, opts, backend: str, dtype):
    """``(selection, costs, prediction, boundary_rows)`` of ``partition``: the rows each component must give
    (``--sources``), the components' relative costs, the predicted seconds of both boundary-row methods and
    the method chosen (before the predecessors' constraint)."""
    selection = None
    costs = component_costs(partition, graph.n, graph.m, whole_rows=_whole_rows(opts))
    if sources is not None:
        selection = SourceRows(partition, sources)
        costs = np.where(selection.needed(), costs, 0.0)
    prediction = predict(partition.sizes, partition.boundary_per_part, graph.n, graph.m,
                         unit_weights=graph.unit_weights, backend=backend, dtype=dtype,
                         dense_limit=DENSE_LIMIT[backend], super_size=SUPER_SIZE[backend],
                         whole_rows=_whole_rows(opts),
                         packed=Packing.possible(graph, dtype, backend == "cupy"))
    boundary_rows = choose_boundary_rows(prediction) if opts.sssp_method == "auto" else opts.sssp_method
    if sources is not None and opts.sssp_method == "auto":  # what the wanted rows alone cost by each method
        cost = pipeline_seconds(partition, sources, graph.n, graph.m, unit_weights=graph.unit_weights,
                                backend=backend, dtype=dtype)
        boundary_rows = min(cost, key=cost.get)
    return selection, costs, prediction, boundary_rows


def _judge_given_k(graph, k: int, prediction: dict, boundary_rows: str, backend: str, dtype, *, comm,
                   log=None, replace: bool = False) -> dict | None:
    """Say in one line when a given k is predicted to take ten times what the cost model's k would, and
    return ``{"k", "given_seconds", "choice"}`` when that k should be used instead (``replace``).

    A k that puts most vertices on the boundary (a star's leaves, a hub's neighbours) or makes components
    too large to close can turn minutes into hours: at k = 8 a star's leaves fill seven components that
    are each one dense closure of an eighth of the graph.  Such a k is replaced when the plan partitions
    for it (``replace``); a partition or plan file keeps its own k, and the line then says which k would
    be better.  Every rank decides the same: the prediction and the cost model's choice are the same
    everywhere.
    """
    given = float(prediction[boundary_rows]["total"])
    if given < SLOW_K_SECONDS:
        return None
    choice = choose_k_everywhere(graph, backend, dtype, comm=comm)
    best = float(choice.get("predicted_seconds", {}).get("total", math.inf))
    if best * SLOW_K_FACTOR > given or choice["k"] == k:
        return None
    line = f"k={k} is predicted to take {given:,.0f} s here, the cost model's k={choice['k']} {best:,.0f} s; "
    line += f"k={choice['k']} is used instead" if replace else "leave -k out to use it"
    if log is not None:
        log(f"note: {line}")
    else:
        warnings.warn(line, UserWarning, stacklevel=_outside_level())
    return {"k": int(choice["k"]), "given_seconds": given, "choice": choice} if replace else None


def _tell_precision(precision, requested, log) -> None:
    """Say in one line why float64 was chosen, or warn that the chosen dtype is not exact.

    The warning points at the first caller outside this package (the user's line).
    """
    if precision.warning is not None:
        if log is None:
            warnings.warn(precision.warning, PrecisionWarning, stacklevel=_outside_level())
        else:
            log(f"warning: {precision.warning}")
    elif requested in (None, "auto") and precision.dtype == "float64" and log is not None:
        log(f"note: {precision.reason}")


def _outside_level() -> int:
    """``stacklevel`` for a warning raised by this module's caller chain: the first frame outside fastapsp."""
    package = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package + os.sep):
        frame, level = frame.f_back, level + 1
    return level
