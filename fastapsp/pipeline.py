"""One ``fastapsp solve`` job on every rank: read the graph, make the plan, run it.

The decisions are :func:`fastapsp.planning.make_plan`'s, the work is
:func:`fastapsp.execute.execute`'s; this module only joins them for the
command line (reading the graph under MPI, ``--plan FILE``, ``--dry-run``).
"""

from __future__ import annotations

import hashlib
import json
import os
import time

from .backend import start_gpu_warmup
from .comm import process_age, run_phase
from .errors import ConfigError
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
        # One reader per node; the others map its cache or receive the arrays (fastapsp/io/nodes.py).
        graph = read_graph(opts.graph, format=opts.format, undirected=opts.undirected, comm=comm,
                           cache=opts.graph_cache)
        seconds["read"] = time.perf_counter() - t
        return graph

    if comm.size > 1:
        run_phase(comm, "checking that the ranks agree", ranks_agree, opts, comm.allgather(_run_mark(opts)))
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


_MARK_BYTES = 1 << 20  # bytes hashed at each end of the graph file


def _run_mark(opts: SolveOptions) -> tuple:
    """What must be the same on every rank: the settings (the graph's path aside) and the graph file's
    size and the hash of its first and last MiB (None when it cannot be read: reading reports that)."""
    settings = {key: value for key, value in opts.to_dict().items() if key != "graph"}
    try:
        size = os.path.getsize(opts.graph)
        digest = hashlib.sha256()
        with open(opts.graph, "rb") as fh:
            digest.update(fh.read(_MARK_BYTES))
            if size > _MARK_BYTES:
                fh.seek(max(_MARK_BYTES, size - _MARK_BYTES))
                digest.update(fh.read(_MARK_BYTES))
        graph = (size, digest.hexdigest())
    except OSError:
        graph = None
    return json.dumps(settings, sort_keys=True, default=str), graph, str(opts.graph)


def ranks_agree(opts: SolveOptions, marks: list) -> None:
    """Raise on every rank (the same error) when the ranks were given other settings or another graph file.

    Under ``mpiexec -n 2 ... A : -n 1 ... B`` the ranks would each read a share of a different file
    and compute a result that matches neither graph.
    """
    first_settings, first_graph, first_path = marks[0]
    for rank, (settings, graph, path) in enumerate(marks[1:], 1):
        if settings != first_settings:
            a, b = json.loads(first_settings), json.loads(settings)
            key = next(k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k))
            raise ConfigError(f"{key}: rank 0 has {a.get(key)!r}, rank {rank} has {b.get(key)!r}; every rank of a "
                              "run needs the same settings")
        if graph is not None and first_graph is not None and graph != first_graph:
            raise ConfigError(f"graph: rank 0 reads {first_path} ({first_graph[0]} bytes), rank {rank} reads {path} "
                              f"({graph[0]} bytes), another file; every rank of a run needs the same graph")
