"""Run a :class:`~fastapsp.planning.Plan`: the one executor behind the command line and the Python API.

:func:`execute` makes the output (a ``.npy`` file shared by the ranks, host
memory, a CuPy array on the GPU, or nothing), the device-side consumers
(``--stats`` reductions, ``--verify`` samples, the progress bar), runs this
rank's share of the plan (:mod:`fastapsp.components`, with the boundary
graph's inputs from :mod:`fastapsp.distributed`), checks, commits and
reports (:mod:`fastapsp.report`).  It decides nothing: every choice is the plan's.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass

import numpy as np

from .backend import mark_gpu_warm
from .comm import max_over_ranks, run_or_abort, run_phase
from .components import run_components, run_sssp_rows
from .distributed import boundary_graph_inputs
from .errors import ConfigError
from .paths import ids_path, predecessors_path
from .progress import make_progress
from .reductions import ProductStats, StatsAccumulator, finish_stats
from .report import result_metadata, run_report
from .sink import make_sink
from .smalldist import SMALL_DTYPES, SmallIntSink
from .sources import RowSubsetSink, SourceRows
from .stages.predecessors import NO_PREDECESSOR
from .timing import StageTimer
from .verify import RowSampler, chain, pick_rows, verify_rows

__all__ = ["execute", "Outcome", "PLANNING"]

# The stages of making a plan (Plan.seconds), reported beside the executor's when the plan was made for the run.
PLANNING = ("read", "backend", "choose_k", "partition", "plan")


@dataclass
class Outcome:
    """What a run gives back: its report, the output (``result``/``predecessors`` for ``memory`` and
    ``device``; None otherwise) and the statistics (``--stats``)."""

    report: dict
    result: object = None
    predecessors: object = None
    stats: object = None
    complete: bool = True  # every row of an in-memory result written (by this rank)


def execute(plan, graph, *, comm, seconds: dict | None = None, startup: float = 0.0,
            started: float | None = None, allocation=None) -> Outcome:
    """Compute what ``plan`` says for ``graph`` on every rank of ``comm``.

    ``seconds`` (what the caller spent before: the read, the plan's choice of
    k and partition when the plan was made for this run) and ``startup``
    (process start to the job's start) go into the report beside the stages'.
    ``started`` (``time.perf_counter()`` when the job began) makes the
    report's total the job's; without it the total is this call's and the
    ``seconds`` given.  ``allocation``: a device result's
    (:class:`fastapsp.sink.DeviceAllocation`) already started.
    """
    start = time.perf_counter()
    plan.check_graph(graph)
    if plan.ranks != comm.size:
        raise ConfigError(f"plan: made for {plan.ranks} rank(s), run on {comm.size}; make the plan with this "
                          "communicator")
    opts = plan.options
    seconds = dict(seconds or {})
    if plan.backend == "cupy":  # every kernel variant compiled (once per machine), outside the timed stages
        from .kernels.catalog import ensure_built

        seconds["compile"] = ensure_built()
    backend, sources, partition = plan.backend, plan.sources, plan.partition
    run_graph, run_partition = plan.run_graph, plan.run_partition
    block_bytes = opts.block_bytes
    rows = None if sources is None else int(sources.size)
    sink = base_sink = make_sink(plan.output, graph.n, plan.out_dtype, comm=comm, rows=rows, allocation=allocation)
    pred_sink = pred_base = None
    if opts.predecessors:  # int32 beside the output (fastapsp/stages/predecessors.py)
        target = predecessors_path(plan.output) if plan.output.endswith(".npy") else plan.output
        pred_sink = pred_base = make_sink(target, graph.n, np.int32, comm=comm, rows=rows)
    if opts.dtype in SMALL_DTYPES:
        sink = SmallIntSink(sink, opts.dtype)
    if sources is not None:
        positions = _positions(sources, graph.n)
        sink = RowSubsetSink(sink, positions)
        if pred_sink is not None:
            pred_sink = RowSubsetSink(pred_sink, positions)

    def cleanup():  # this rank alone, before it ends the job
        base_sink.discard()
        if pred_base is not None:
            pred_base.discard()

    accumulator = feed = None
    if opts.stats:
        accumulator = StatsAccumulator.for_graph(graph, backend)
        feed = accumulator.update
        if plan.each_pair_once:  # the run's vertex i is the graph's order[i]; each pair counts both ways
            accumulator.vertex_order = plan.order
            feed = functools.partial(accumulator.update, pairs=True)
    sampler = None
    if opts.verify:
        sampler = RowSampler(pick_rows(np.arange(graph.n) if sources is None else sources, opts.verify), graph.n)
    selection = None if sources is None or partition is None else SourceRows(partition, sources)
    work = None  # rows of each of rank 0's components (with pairs: rows times the share of columns it covers)
    if plan.source_rows != "sssp":
        first = np.concatenate([[0], np.cumsum(run_partition.sizes)])  # a component's first vertex (pairs)
        work = [run_partition.sizes[p] * (1.0 if not plan.each_pair_once else (graph.n - first[p]) / graph.n)
                for p in plan.schedule[0]]
    progress = make_progress(work if work is not None else [sources.size], graph.n, rank=comm.rank,
                             quiet=opts.quiet)
    on_block = chain(feed, sampler, progress)
    # Each pair once on the GPU: past a component's own columns its rows go to the statistics as a product,
    # reduced as it is made where the kernel allows (fastapsp/reductions.py ProductStats).
    products = ProductStats(accumulator, progress) if plan.each_pair_once and backend == "cupy" else None
    verified: dict = {}
    closures = None  # boundary-graph method: who closes which components
    stage_seconds: dict = {}
    timer = None  # the components' stage timer: its notes go to the report
    try:
        # A failing rank ends the job at once (Abort) instead of waiting for the others' components.
        if plan.source_rows == "sssp":
            stage_seconds = run_or_abort(comm, "computing the source rows", run_sssp_rows, graph,
                                         sources[comm.rank :: comm.size], backend=backend, sink=sink,
                                         dtype=plan.dtype, block_bytes=block_bytes, on_block=on_block,
                                         pred_sink=pred_sink, cleanup=cleanup)
        else:
            extra, timer = {}, StageTimer(np if backend != "cupy" else __import__("cupy"))
            mine = plan.schedule[comm.rank]
            if plan.boundary_rows == "boundary-graph":
                keep = None  # --sources: the closures this rank's wanted interior rows need, no others
                if selection is not None:
                    keep = selection.closures_needed() & np.isin(np.arange(partition.k), mine)
                everywhere = bool(plan.close_everywhere)
                closures = "every rank closes every component" if everywhere else "each rank closes its share"
                if everywhere:  # and keeps the closures of its own components only
                    own = np.isin(np.arange(partition.k), mine)
                    keep = own if keep is None else keep & own
                spread = [list(s) for s in plan.spread]
                extra, timer, seconds["share_rows"] = boundary_graph_inputs(
                    run_graph, run_partition, spread, backend, plan.dtype, comm=comm,
                    cleanup=base_sink.discard, keep=keep, share=not everywhere, tree=plan.tree,
                    peer_rate=plan.peer_rate)
            components = functools.partial(run_components, comm=comm)  # (run_or_abort takes comm= itself)
            stage_seconds = run_or_abort(comm, "computing the components", components, run_graph, run_partition,
                                         list(mine), backend=backend, sink=sink, dtype=plan.dtype,
                                         tile=opts.tile, block_bytes=block_bytes, on_block=on_block, rows=selection,
                                         boundary_rows=plan.boundary_rows, seed=opts.seed, tree=plan.tree,
                                         timer=timer, cleanup=cleanup, pred_sink=pred_sink,
                                         pairs=plan.each_pair_once, whole_rows=plan.whole_rows, products=products,
                                         peer_rate=plan.peer_rate,
                                         **extra)
        if sampler is not None:  # before the output is committed: a wrong result is not left behind
            verified = verify_rows(graph, sampler, plan.dtype, comm=comm)
        if partition is not None and base_sink.certified:  # checksums of the graph and labels: a file's only
            base_sink.metadata = result_metadata(graph, partition, opts, plan.precision)
        sink.commit()
        if backend == "cupy":
            mark_gpu_warm()  # the next run of this process finds its GPU started (auto_partitioner)
        if sources is not None and sink.path:
            run_phase(comm, "saving the source ids",
                      (lambda: np.save(ids_path(sink.path), sources)) if comm.rank == 0 else (lambda: None))
        if pred_base is not None:
            pred_base.metadata = dict(getattr(base_sink, "metadata", {}), content="predecessors",
                                      no_predecessor=NO_PREDECESSOR)
            pred_sink.commit()
    except BaseException:
        sink.abort()
        if pred_sink is not None:
            pred_sink.abort()
        raise
    finally:
        if progress is not None:
            progress.close()
    seconds.update(stage_seconds)
    stats = None
    if accumulator is not None:
        stats = finish_stats(accumulator, opts.stats if isinstance(opts.stats, str) else None, comm=comm)
    if started is not None:
        seconds["total"] = time.perf_counter() - started
    else:
        seconds["total"] = time.perf_counter() - start + sum(seconds.get(key, 0.0) for key in PLANNING)
    # What the components' stages noted beside their seconds, every rank's (collective): the boundary
    # graph's upper levels level by level, whether the products were packed in 16 bits.
    notes = comm.allgather(dict(timer.notes) if timer is not None else {})
    upper = [part.get("upper_levels") for part in notes]
    each: list = []
    seconds = max_over_ranks(comm, dict(seconds, startup=startup), each=each)
    startup = seconds.pop("startup")
    report = run_report(graph, plan, seconds)
    report["startup_seconds"] = round(startup, 6)  # process start to this job's start (imports, MPI), slowest rank
    if comm.size > 1:  # the stages above are each the slowest rank's: every rank's own, to see the balance
        report["rank_seconds"] = [{key: round(value, 6) for key, value in part.items()} for part in each]
    if closures is not None:
        report["local_closures"] = closures
        if comm.size > 1:  # how the closures travel: GPU to GPU at this rate, or through the host (None)
            report["peer_bytes_per_second"] = None if plan.peer_rate is None else round(plan.peer_rate)
    if any(upper):
        report["upper_levels"] = upper if comm.size > 1 else upper[0]
    packed = [part.get("packed_16bit") for part in notes]
    if any(value is not None for value in packed):  # each rank decides at its first product
        report["packed_16bit"] = packed if comm.size > 1 else packed[0]
    report.update(verified)
    if stats is not None:  # the scalars (the histogram and per-vertex arrays are in PREFIX.json / .npz)
        report["stats"] = {key: value for key, value in stats.to_json_dict().items()
                           if key not in ("histogram", "per_vertex")}
        report["stats_each_pair_once"] = plan.each_pair_once
    result = getattr(base_sink, "result", None)
    predecessors = None if pred_base is None else getattr(pred_base, "result", None)
    written = getattr(base_sink, "rows_written", None)
    complete = written is None or bool(written.all())
    return Outcome(report, result, predecessors, stats, complete)


def _positions(sources, n: int) -> np.ndarray:
    """Output row of every vertex (-1 for those not among ``sources``)."""
    position = np.full(n, -1, dtype=np.int64)
    position[sources] = np.arange(sources.size)
    return position

