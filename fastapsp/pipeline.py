"""One ``fastapsp solve`` job on every rank: read the graph, make the plan, run it.

The decisions are :func:`fastapsp.planning.make_plan`'s, the work is
:func:`fastapsp.execute.execute`'s; this module only joins them for the
command line (reading the graph under MPI, ``--plan FILE``, ``--dry-run``).
"""

from __future__ import annotations

import os
import time

from .backend import start_gpu_warmup
from .comm import process_age, run_phase
from .execute import execute
from .io import read_graph
from .options import SolveOptions
from .planning import load_plan, make_plan
from .report import run_report
from .sizing import output_bytes

__all__ = ["solve_job", "SolveOptions"]


def solve_job(opts: SolveOptions, *, comm, log=None) -> tuple[dict, object]:
    """One whole ``fastapsp solve`` run on every rank of ``comm``.

    Returns the report (identical on every rank) and the
    :class:`~fastapsp.execute.Outcome` (``result``: the rows in host memory
    for ``output='memory'``; None for a dry run).  ``log`` (a
    callable taking one line) hears which dtype was chosen and why, when that
    is worth saying; without it a precision problem is raised as a
    :class:`~fastapsp.errors.PrecisionWarning`.
    """
    start = time.perf_counter()
    startup = process_age()
    opts.check()
    start_gpu_warmup(opts.backend, comm.size)  # CUDA starts while the graph is read (fastapsp/backend.py)
    seconds = {}

    def read():  # timed on this rank alone (run_phase then waits for the others: that is not reading)
        t = time.perf_counter()
        # The ranks parse a share of the lines each and gather them (fastapsp/io/share.py).
        graph = read_graph(opts.graph, format=opts.format, undirected=opts.undirected, comm=comm)
        seconds["read"] = time.perf_counter() - t
        return graph

    graph = run_phase(comm, "reading the graph", read)
    saved = None
    if opts.plan and os.path.exists(opts.plan):
        saved = run_phase(comm, "loading the plan", load_plan, opts.plan, graph)
    plan = make_plan(graph, opts, comm=comm, log=log, saved=saved)
    if opts.plan and saved is None and plan.partition is not None:
        run_phase(comm, "saving the plan", (lambda: plan.save(opts.plan, graph)) if comm.rank == 0 else (lambda: None))
    if opts.dry_run:  # the plan, its sizes and estimates only (fastapsp/sizing.py)
        report = run_report(graph, plan, dict(seconds, total=time.perf_counter() - start))
        report["plan"] = plan.describe()
        report["output_bytes"] = output_bytes(plan.rows, graph.n, plan.out_dtype)
        if opts.predecessors:
            report["predecessors_bytes"] = output_bytes(plan.rows, graph.n, "int32")
        report["dry_run"] = plan.estimate()
        return report, None
    seconds.update(plan.spent())
    outcome = execute(plan, graph, comm=comm, seconds=seconds, startup=startup, started=start)
    return outcome.report, outcome
