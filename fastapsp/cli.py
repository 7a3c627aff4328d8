"""The ``fastapsp`` command: ``solve``, ``partition`` and ``info``.

Errors end the run with one line on standard error and a non-zero exit on
every rank; ``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from ._version import __version__
from .errors import FastAPSPError

__all__ = ["main"]

EXIT_ERROR = 1
EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors in one line."""

    def error(self, message):
        raise _UsageError(f"{self.prog}: {message}")


class _UsageError(Exception):
    pass


def _build_parser() -> argparse.ArgumentParser:
    from .cost import SSSP_METHODS
    from .io import FORMATS
    from .partition import AUTO, PARTITIONERS, REFINEMENTS
    from .options import PARALLEL_PARTITION

    parser = _Parser(prog="fastapsp", description="Exact all-pairs shortest paths of large sparse graphs "
                     "(FastAPSP), on CPUs or GPUs, one process or many under MPI.")
    parser.add_argument("--version", action="version", version=f"fastapsp {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def graph_args(p):
        p.add_argument("graph", nargs="?", help="graph file (.mtx, .graph, .txt, .cedge, .gr; gzip ok)")
        p.add_argument("--format", choices=FORMATS, default=None, help="file format (default: from the extension)")
        p.add_argument("--undirected", action="store_true", default=None, help="treat every arc as an edge")
        p.add_argument("--graph-cache", dest="graph_cache", default=None, metavar="auto|none|DIR",
                       help="binary copy of a large parsed graph, mapped by the next read (default auto: beside it)")
        p.add_argument("-k", type=int, default=None, help="number of components (default: chosen by the cost model, see the report's k_choice)")
        p.add_argument("--partitioner", choices=[AUTO, *PARTITIONERS], default=None,
                       help="default: auto (jet on the GPU from 524,288 vertices on, else metis); "
                            "NAME+b adds the boundary refinement")
        p.add_argument("--refine", choices=REFINEMENTS, default=None,
                       help="boundary: move vertices to lower the boundary vertex count (default: none)")
        p.add_argument("--seed", type=int, default=None, help="partitioner seed (default 42)")
        p.add_argument("--imbalance", type=float, default=None, help="allowed imbalance (default 0.03)")
        p.add_argument("--report", default=None, metavar="FILE.json", help="write a JSON report")
        p.add_argument("--debug", action="store_true", help="show tracebacks")

    solve = sub.add_parser("solve", help="compute all-pairs shortest paths")
    graph_args(solve)
    solve.add_argument("--backend", choices=("auto", "numpy", "cupy"), default=None, help="default: auto")
    solve.add_argument("--output", default=None, metavar="PATH.npy|none|memory",
                       help="dense n x n result file (default: none, compute and discard)")
    solve.add_argument("--dtype", choices=("auto", "float32", "float64", "uint16", "uint8"), default=None,
                       help="distance type (default auto: float32 when exact, float64 when whole-number "
                            "distances could pass 2**24); uint16/uint8 for unweighted graphs (largest value = unreachable)")
    solve.add_argument("--parallel-partition", dest="parallel_partition", choices=PARALLEL_PARTITION, default=None,
                       help="under several ranks, each partitions a piece of the graph (default auto: from "
                            "2,097,152 vertices on)")
    solve.add_argument("--partition-file", dest="partition_file", default=None, metavar="F",
                       help="reuse the partition saved in F, or save it there")
    solve.add_argument("--plan", default=None, metavar="FILE",
                       help="reuse the plan (k, partition) saved in FILE, or make it and save it there")
    solve.add_argument("--config", default=None, metavar="RUN.yaml", help="settings file; flags override it")
    solve.add_argument("--sssp-method", dest="sssp_method", choices=SSSP_METHODS, default=None,
                       help="where the boundary rows come from: frontier SSSP over the whole graph, or the "
                            "boundary graph (dense, weight-blind); default auto: the cost model picks")
    solve.add_argument("--tile", type=int, default=None, help="Floyd-Warshall tile of the host path (default 64)")
    solve.add_argument("--block-mb", dest="block_mb", type=float, default=None,
                       help="cap on one row block in MiB (default: from free memory)")
    solve.add_argument("--stats", default=None, metavar="PREFIX",
                       help="reduce every row block on the device: write PREFIX.json and PREFIX.npz")
    solve.add_argument("--sources", default=None, metavar="SPEC",
                       help="only the rows of these vertices: a file of ids, a range a:b, or random:N[:SEED]")
    solve.add_argument("--sources-method", dest="sources_method", choices=("auto", "pipeline", "sssp"), default=None,
                       help="how --sources rows are computed (default: auto, by a cost model)")
    solve.add_argument("--verify", type=int, default=None, metavar="N",
                       help="recompute N sampled rows with SciPy's Dijkstra; a mismatch fails the run")
    solve.add_argument("--predecessors", action="store_true", default=None,
                       help="also write PATH.predecessors.npy (int32, -9999 for none) beside --output PATH.npy")
    solve.add_argument("--dry-run", dest="dry_run", action="store_true", default=None,
                       help="print per rank the memory each stage needs, the output size and a time estimate; exit")
    solve.add_argument("--quiet", action="store_true", default=None, help="no progress bar and no summary line")

    path = sub.add_parser("path", help="print a shortest path from a solved result")
    path.add_argument("result", help="distance file written by solve --predecessors --output RESULT.npy")
    path.add_argument("source", type=int)
    path.add_argument("target", type=int)
    path.add_argument("--debug", action="store_true", help="show tracebacks")

    part = sub.add_parser("partition", help="partition a graph and print its metrics")
    graph_args(part)
    part.add_argument("--output", default=None, metavar="parts.npy", help="save one int label per vertex")

    sub.add_parser("info", help="versions, MPI library, ranks, GPUs and the kernel cache")

    kernels = sub.add_parser("build-kernels", help="compile every GPU kernel variant into the kernel cache "
                             "(once per machine; a GPU run does it by itself when needed), or with --aot into "
                             "binaries by nvcc, without a GPU")
    kernels.add_argument("--jobs", type=int, default=None, metavar="N",
                         help="compiling processes (default: the usable cores, at most 16)")
    kernels.add_argument("--force", action="store_true", help="compile even when the cache (or the --aot "
                         "folder) says it is built")
    kernels.add_argument("--aot", action="store_true", help="compile with nvcc into fatbins that every GPU run "
                         "loads (needs the CUDA toolkit, not a GPU)")
    kernels.add_argument("--arch", default=None, metavar="sm_XY,...",
                         help="with --aot: the architectures (default sm_80,sm_90; the PTX of the highest too)")
    kernels.add_argument("--out", default=None, metavar="DIR",
                         help="with --aot: the folder of the binaries (default: fastapsp/kernels/prebuilt of "
                              "this installation)")
    kernels.add_argument("--only", default=None, metavar="FILE[,FILE]",
                         help="with --aot: build the modules of these kernel files only (e.g. jet.cu)")
    kernels.add_argument("--debug", action="store_true", help="show tracebacks")
    return parser


def run() -> None:
    """Entry point of the ``fastapsp`` console script and of ``python -m fastapsp``: :func:`main`,
    then the process ends (see :func:`_end_process`)."""
    _end_process(main())


def _end_process(status: int) -> None:
    """End the process with ``status`` once everything is written.

    A single process (no MPI) skips the interpreter's teardown with ``os._exit``:
    after a GPU run that teardown frees the memory pool and the CUDA context
    one allocation at a time (a few tenths of a second), which the operating
    system does at once.
    Output files are closed by then (every sink commits or aborts inside
    :func:`main`), and the standard streams are flushed here.  Under Open MPI
    each rank finalises MPI first, then ends the same way.  Under any other MPI
    (under MPICH a rank that finalised and then called ``os._exit`` was now
    and then killed) or with another thread still running, the normal exit
    runs (mpi4py finalises MPI).
    """
    import threading

    mpi = sys.modules.get("mpi4py.MPI")
    under_mpi = mpi is not None and mpi.Is_initialized() and not mpi.Is_finalized()
    busy = any(t is not threading.main_thread() and t.is_alive() and not t.daemon for t in threading.enumerate())
    open_mpi = under_mpi and mpi.get_vendor()[0] == "Open MPI"
    if (under_mpi and not open_mpi) or busy:
        sys.exit(status)
    if open_mpi:
        mpi.Finalize()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed or broken pipe: nothing more can be said there
        pass
    os._exit(status)


def main(argv=None) -> int:
    """The command line; returns the exit status (:func:`run` is the console script's entry)."""
    try:
        args = _build_parser().parse_args(argv)
    except _UsageError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_USAGE
    debug = getattr(args, "debug", False)
    comm = None
    restore = None
    job = None
    try:
        from .comm import get_comm
        from .watch import JobStatus, supervise

        if args.command == "solve":
            supervise()  # under a launcher the rest runs in a child, so that its death can be reported
        comm = get_comm()
        restore = _install_handlers(comm)
        if args.command == "solve" and comm.size > 1:
            job = JobStatus(comm)
        if args.command == "info":
            return _info(comm)
        if args.command == "build-kernels":
            return _build_kernels(args, comm)
        if args.command == "partition":
            return _partition(args, comm)
        if args.command == "path":
            from .paths import path_command

            if comm.rank == 0:
                print(path_command(args.result, args.source, args.target))
            return 0
        return _solve(args, comm)
    except (FastAPSPError, ValueError, OSError, MemoryError, KeyError) as exc:
        if debug:
            raise
        # Every rank sees the failure (run_phase); rank 0 alone reports it.
        if (comm is None and os.environ.get("SLURM_PROCID", "0") == "0") or (comm is not None and comm.rank == 0):
            print(f"fastapsp: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:  # a bug: say where, and make sure no rank is left waiting
        if debug:
            raise
        rank = 0 if comm is None else comm.rank
        line = (f"fastapsp: internal error on rank {rank}: {type(exc).__name__}: {_one_line(exc)} "
                "(rerun with --debug for the traceback)")
        if comm is not None and comm.size > 1:
            from .sink import remove_temporary_files
            from .watch import abort_job, end_job, tell

            remove_temporary_files()
            end_job()
            tell(line)
            abort_job(comm, EXIT_ERROR)
            return EXIT_ERROR
        print(line, file=sys.stderr)
        return EXIT_ERROR
    finally:
        if job is not None:
            job.close()
        if restore is not None:
            restore()


def _install_handlers(comm):
    """Warnings as one line on rank 0; SIGINT, SIGTERM and SIGHUP remove temporary files and stop every rank.

    Returns a function that puts the previous handlers back.
    """
    import signal
    import threading
    import warnings

    from .sink import remove_temporary_files
    from .watch import abort_job, end_job, failed_peer, tell

    previous_show = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if comm.rank == 0:
            print(f"fastapsp: warning: {_one_line(message)}", file=sys.stderr, flush=True)

    def stop(signum, frame):
        # A second signal (a launcher signals the process group, the supervisor passes it on too) must not
        # interrupt this one halfway through its clean-up.
        for sig in handlers:
            signal.signal(sig, signal.SIG_IGN)
        # Open MPI's mpirun sends SIGTERM to every rank when one died: name that one, once, instead.
        dead = failed_peer()
        removed = remove_temporary_files()
        end_job()
        name = signal.Signals(signum).name
        note = f"; removed {', '.join(removed)}" if removed else ""
        if dead is None:
            tell(f"fastapsp: stopped by {name} on rank {comm.rank}{note}")
        elif dead:
            tell(f"fastapsp: error: {dead}")
        if comm.size > 1:
            abort_job(comm, 128 + signum)  # the other ranks may be deep in their work or in a collective
            os._exit(128 + signum)  # MPI_Abort may return before the launcher kills this process
        raise SystemExit(128 + signum)

    warnings.showwarning = show
    handlers = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            handlers[sig] = signal.signal(sig, stop)

    def restore():
        warnings.showwarning = previous_show
        for sig, handler in handlers.items():
            signal.signal(sig, handler)

    return restore


def _one_line(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    if isinstance(exc, OSError) and exc.filename and exc.strerror:
        text = f"{exc.filename}: {exc.strerror}"
    return " ".join(text.split())


def _solve(args, comm) -> int:
    from .config import load_run_file, merge_options
    from .options import SolveOptions
    from .pipeline import solve_job
    from .timing import StageTimer

    file_settings = load_run_file(args.config) if args.config else {}
    opts = merge_options(SolveOptions, file_settings, vars(args))
    if str(opts.output) == "device":
        raise ValueError("output: 'device' keeps the result on the GPU of a Python process (fastapsp.solve(..., "
                         "output='device')); the command line takes none, memory or PATH.npy")
    StageTimer.synchronise = bool(args.debug)  # a failing kernel is then named by the stage that ran it
    report, _ = solve_job(opts, comm=comm, log=_say if comm.rank == 0 else (lambda line: None))
    if opts.dry_run:
        if comm.rank == 0:
            _print_dry_run(report)
            if opts.report:
                _write_json(opts.report, report)
        return 0
    if comm.rank == 0 and opts.report:
        _write_json(opts.report, report)
    if comm.rank == 0 and not opts.quiet:
        print(f"{report['graph']}: n={report['n']} m={report['m']} k={report['k']} {report['partitioner']} "
              f"boundary={report['boundary_vertices']} cut={report['edge_cut']} ranks={report['ranks']} "
              f"{report['backend']}: {report['total_seconds']:.2f} s -> {opts.output}"
              + (f"; verified {report['verified_rows']} rows" if "verified_rows" in report else ""))
        if "stats" in report:
            st = report["stats"]
            print(f"stats: diameter {st['diameter']}, radius {st['radius']}, average shortest path "
                  f"{st['average_shortest_path_length']:.6g} over {st['reachable_pairs']} reachable pairs, "
                  f"strongly connected: {'yes' if st['strongly_connected'] else 'no'} -> {opts.stats}.json, "
                  f"{opts.stats}.npz")
    return 0


def _print_dry_run(report) -> None:
    gib = 2**30
    plan = report["plan"]
    print(f"plan: k={plan['k']} ({plan['k_choice'].get('rule')}) partitioner={plan['partitioner']} "
          f"boundary={plan['boundary_vertices']} boundary_rows={plan['boundary_rows']} "
          f"source_rows={plan['source_rows']} dtype={plan['dtype']}->{plan['output_dtype']} "
          f"each_pair_once={plan['each_pair_once']} close_everywhere={plan['close_everywhere']} "
          f"components_per_rank={plan['components_per_rank']}")
    print(f"  dtype: {plan['dtype_reason']}")
    predicted = (plan.get("predicted_seconds") or {}).get(plan["boundary_rows"] or "")
    if predicted:
        print("  predicted seconds: " + " ".join(f"{key}={value:.3g}" for key, value in predicted.items()))
    if plan.get("upper_levels"):
        print("  upper levels: " + "; ".join(f"{lev['level']}: {lev['vertices']} vertices in {lev['groups']} groups "
                                            f"(largest {lev['largest_group']}), boundary {lev['boundary']}"
                                            for lev in plan["upper_levels"]))
    print("  seconds spent planning: " + " ".join(f"{key}={value:.3g}" for key, value in plan["plan_seconds"].items()))
    print(f"{report['graph']}: n={report['n']} m={report['m']} k={report['k']} ranks={report['ranks']} "
          f"{report['backend']} dtype={report['dtype']}: output {report['output']} "
          f"{report['output_bytes'] / gib:.3f} GiB")
    for rank in report["dry_run"]:
        stages = rank.get("device_bytes_per_stage", {})
        detail = " ".join(f"{k}={v / gib:.3f}" for k, v in stages.items() if v)
        eta = f" est {rank['estimated_seconds']:.1f} s" if "estimated_seconds" in rank else ""
        print(f"  rank {rank['rank']}: {rank['rows']} rows, device peak {rank['device_peak_bytes'] / gib:.3f} GiB"
              f"{' (' + detail + ' GiB)' if detail else ''}, host {rank['host_bytes'] / gib:.3f} GiB{eta}")


def _say(line: str) -> None:
    """One line on standard error, for notes and warnings during a run."""
    print(f"fastapsp: {line}", file=sys.stderr, flush=True)


def _partition(args, comm) -> int:
    from .comm import SerialComm, run_phase
    from .io import read_graph
    from .options import SolveOptions
    from .partition import save_partition
    from .planning import make_plan

    if not args.graph:
        raise ValueError("graph: no graph file given")
    if args.output is not None and not str(args.output).endswith(".npy"):
        raise ValueError(f"--output: {args.output!r} must end in .npy")
    settings = {key: getattr(args, key) for key in ("k", "partitioner", "refine", "seed", "imbalance", "format")
                if getattr(args, key) is not None}
    # The labels file is written like a partition file: its paths are checked against the report's.
    opts = SolveOptions(graph=args.graph, undirected=bool(args.undirected), dry_run=True, quiet=True,
                        partition_file=args.output, report=args.report, **settings)
    opts.check()
    opts.partition_file = None  # computed here, never loaded

    def work():
        if comm.rank != 0:
            return None
        start = time.perf_counter()
        graph = read_graph(args.graph, format=args.format, undirected=bool(args.undirected),
                           cache=args.graph_cache or "auto")
        part = make_plan(graph, opts, comm=SerialComm()).partition  # k and partition as a solve would choose them
        if args.output:
            save_partition(args.output, graph, part)
        metrics = part.metrics()
        metrics.update(graph=graph.name, n=graph.n, m=graph.num_edges, directed=graph.directed,
                       total_seconds=time.perf_counter() - start)
        if args.report:
            _write_json(args.report, metrics)
        return metrics

    metrics = run_phase(comm, "partitioning", work)
    if comm.rank == 0:
        before = metrics.get("boundary_vertices_before_refine")
        refined = "" if before is None else f" (before refinement {before})"
        print(f"{metrics['graph']}: n={metrics['n']} k={metrics['k']} {metrics['partitioner']} "
              f"cut={metrics['edge_cut']} boundary={metrics['boundary_vertices']}{refined} "
              f"ratio={metrics['boundary_ratio']:.4f} imbalance={metrics['imbalance']:.4f} "
              f"{metrics['partition_seconds']:.2f} s")
    return 0


def _write_json(path, data) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2)
        fh.write("\n")
    os.replace(tmp, path)


def _info(comm) -> int:
    from .backend import gpu_count, gpu_name, gpu_total_bytes
    from .comm import launched_under_mpi

    lines = [f"fastapsp {__version__}", f"python {sys.version.split()[0]}"]
    for name in ("numpy", "scipy", "yaml", "pymetis", "kahip", "mpi4py", "cupy"):
        try:
            module = __import__(name)
            lines.append(f"{name} {getattr(module, '__version__', 'installed')}")
        except Exception:
            lines.append(f"{name} not installed")
    lines.append(f"MPI library: {_mpi_library()}")
    lines.append(f"launched under MPI: {'yes' if launched_under_mpi() else 'no'}; ranks: {comm.size}")
    count = gpu_count()
    lines.append(f"GPUs visible: {count}")
    if count:
        for d in range(count):
            memory = gpu_total_bytes(d)
            lines.append(f"  cuda:{d} {gpu_name(d)}, {memory / 2**30:.1f} GiB")
        lines.append(_kernel_cache_line())
    lines.append(_prebuilt_line(count))
    if comm.rank == 0:
        print("\n".join(lines))
    return 0


def _kernel_cache_line() -> str:
    from .kernels.catalog import cache_dir, kernel_cache_bytes, stamp_path

    try:
        built = "built" if os.path.exists(stamp_path()) else "not built (fastapsp build-kernels)"
        return f"kernel cache: {cache_dir()} ({kernel_cache_bytes() / 2**20:.1f} MiB); kernels {built}"
    except Exception as exc:  # noqa: BLE001 - info reports, it does not fail
        return f"kernel cache: unknown ({type(exc).__name__}: {_one_line(exc)})"


def _prebuilt_line(gpus: int) -> str:
    """The prebuilt kernel binaries: their folder, architectures and how many variants they cover (those GPU 0
    runs, when there is a GPU)."""
    from .kernels.binaries import coverage
    from .kernels.catalog import prebuilt, variants

    try:
        every = variants()
        held = prebuilt(0) if gpus else coverage([v.key() for v in every])
        index = held["index"]
        if index is None:
            return f"prebuilt kernels: none in {held['folder']} (fastapsp build-kernels --aot)"
        if not gpus:
            where = "built from these sources"
        elif held["runs"]:
            where = f"for GPU 0 (it runs {held['runs']})"
        else:
            where = "for GPU 0 (none of these architectures runs on it)"
        return (f"prebuilt kernels: {held['folder']} ({', '.join(index['architectures'])} and PTX {index['ptx']}; "
                f"nvcc {index['nvcc']}): {len(held['covered'])} of {len(every)} variants {where}")
    except Exception as exc:  # noqa: BLE001 - info reports, it does not fail
        return f"prebuilt kernels: unknown ({type(exc).__name__}: {_one_line(exc)})"


def _build_kernels_aot(args, comm) -> int:
    """Compile every module with nvcc into fatbins (rank 0 alone: the folder is one for all)."""
    from .comm import run_phase
    from .kernels.aot import DEFAULT_ARCHITECTURES, build_aot, parse_architectures

    architectures = parse_architectures(args.arch if args.arch is not None else DEFAULT_ARCHITECTURES)
    only = None if args.only is None else [f.strip() for f in args.only.split(",") if f.strip()]

    def on_rank_zero():
        return build_aot(architectures, out=args.out, jobs=args.jobs, only=only, force=args.force) \
            if comm.rank == 0 else None

    info = run_phase(comm, "building the kernels with nvcc", on_rank_zero)
    if comm.rank == 0:
        built = f"compiled {info['compiled']}" + (f", kept {info['kept']}" if info["kept"] else "")
        modules = f"{info['modules']} kernel module{'s' if info['modules'] != 1 else ''}"
        print(f"fastapsp: {modules} for {','.join(info['architectures'])} and PTX {info['ptx']} by nvcc "
              f"{info['nvcc']} ({built}) in {info['seconds']:.1f} s with {info['jobs']} processes; "
              f"index {info['index']}")
    return 0


def _build_kernels(args, comm) -> int:
    """Compile the kernel variants on every rank's device (ranks of one node wait for one builder)."""
    from .backend import gpu_count
    from .comm import run_phase, select_device
    from .errors import BackendError, ConfigError
    from .kernels.catalog import build, kernel_cache_bytes

    if args.jobs is not None and args.jobs < 1:
        raise ValueError(f"--jobs: {args.jobs} is not a positive number of processes")
    if args.aot:
        return _build_kernels_aot(args, comm)
    for name in ("arch", "out", "only"):
        if getattr(args, name) is not None:
            raise ConfigError(f"--{name}: only with --aot (the kernel cache is built for this machine's GPU)")
    if not gpu_count():
        raise BackendError("build-kernels: no usable GPU (CuPy missing or no CUDA device visible); the kernels "
                           "are compiled for the GPU that will run them")
    select_device(comm)
    info = run_phase(comm, "building the kernels", build, jobs=args.jobs, force=args.force)
    if comm.rank == 0:
        size = kernel_cache_bytes() / 2**20
        if info["built"]:
            warm = "" if info["warm_up"] == "done" else f"; warm-up solves {info['warm_up']}"
            if info["compiled"] == 0:
                print(f"fastapsp: the {info['variants']} kernel variants for {info['architecture']} are prebuilt "
                      f"({info['prebuilt_dir']}); CuPy's own kernels warmed up in {info['seconds']:.1f} s; cache "
                      f"{info['cache_dir']} ({size:.1f} MiB){warm}")
            else:
                held = f" ({info['prebuilt']} more prebuilt)" if info["prebuilt"] else ""
                print(f"fastapsp: built {info['compiled']} kernel variants{held} for {info['architecture']} in "
                      f"{info['seconds']:.1f} s with {info['jobs']} processes; cache {info['cache_dir']} "
                      f"({size:.1f} MiB){warm}")
        else:
            print(f"fastapsp: the {info['variants']} kernel variants for {info['architecture']} are built; "
                  f"cache {info['cache_dir']} ({size:.1f} MiB; --force compiles again)")
    return 0


def _mpi_library() -> str:
    try:
        import mpi4py

        mpi4py.rc.initialize = False
        mpi4py.rc.finalize = False
        from mpi4py import MPI

        return MPI.Get_library_version().strip().splitlines()[0]
    except Exception as exc:
        return f"none usable ({type(exc).__name__}: {_one_line(exc)})"


if __name__ == "__main__":  # pragma: no cover
    run()
