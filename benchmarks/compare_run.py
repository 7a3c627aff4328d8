"""Measuring for ``benchmarks/compare.py``: partition (or reuse), solve, check rows, keep results.

:func:`run` goes over every configuration of an experiment and writes
``results.json``/``results.csv``, then the plots (:mod:`compare_plot`) and
the report (:mod:`compare_report`).
"""

from __future__ import annotations

import json
import math
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # _common and the compare_* modules
sys.path.insert(0, str(HERE.parent))  # measure this checkout's fastapsp, installed or not
import traceback
from datetime import datetime, timezone

import numpy as np

from _common import metadata, timed, write_json_atomic  # noqa: E402
from compare_experiment import (OLD_SETTINGS, PARTITIONED, RTOL, Config, Experiment, ExperimentError,  # noqa: E402
                                GraphEntry, configurations)
from compare_plot import write_plots  # noqa: E402
from compare_report import write_csv, write_report  # noqa: E402

from fastapsp.backend import device_csr  # noqa: E402
from fastapsp.errors import PartitionError  # noqa: E402
from fastapsp.partition import load_partition, make_partition, partition_graph, save_partition  # noqa: E402
from fastapsp.timing import STAGES  # noqa: E402
from fastapsp.components import run_components  # noqa: E402
from fastapsp.schedule import component_costs, schedule_components  # noqa: E402
from fastapsp.verify import RowSampler  # noqa: E402

# ------------------------------------------------------------------ measuring
class GraphData:
    """A graph read once, with its sampled rows and their SciPy reference distances."""

    def __init__(self, entry: GraphEntry, exp: Experiment) -> None:
        from fastapsp.io import read_graph

        self.graph = read_graph(entry.path, format=entry.format, undirected=entry.undirected)
        n = self.graph.n
        rng = np.random.default_rng(exp.seed)
        self.samples = np.sort(rng.choice(n, size=min(exp.check_samples, n), replace=False)).astype(np.int64)
        self.integer_weights = bool(np.all(self.graph.weights == np.round(self.graph.weights)))
        self._reference = None
        self.warm = False  # one untimed component computed on this graph

    @property
    def reference(self) -> np.ndarray:
        if self._reference is None:
            from scipy.sparse.csgraph import dijkstra

            # Explicit zeros of the CSR are zero-weight arcs for csgraph, as in fastapsp.
            self._reference = dijkstra(self.graph.to_scipy(), directed=True, indices=self.samples)
        return self._reference


def _available_host_bytes() -> int:
    from fastapsp.backend import host_available_bytes

    return host_available_bytes() or 1 << 62


_WARM = set()


def _warm_up(backend: str, dtype: str, method: str) -> None:
    """Run a tiny graph through every stage of ``method`` once (BFS and weighted paths), so no timed
    run pays for compiling CUDA kernels or for first-call costs (imports, caches) on the host."""
    if (backend, dtype, method) in _WARM:
        return
    from fastapsp.graph import Graph
    from fastapsp.sink import NullSink

    n = 64
    src, dst = np.arange(n - 1), np.arange(1, n)
    for w in (None, np.full(n - 1, 2.0)):
        g = Graph.from_edges(n, src, dst, w, directed=False, name="warm-up")
        part = make_partition(g, (np.arange(n) >= n // 2).astype(np.int32), 2, method="warm-up", seed=0,
                              imbalance=0.0, seconds=0.0)
        run_components(g, part, [0, 1], backend=backend, sink=NullSink(), dtype=dtype, boundary_rows=method)
    _WARM.add((backend, dtype, method))


def _warm_up_partitioner(name: str) -> None:
    """Partition a tiny graph once, so library loading is not counted as partitioning time."""
    if ("partitioner", name) in _WARM:
        return
    from fastapsp.graph import Graph

    n = 64
    try:
        partition_graph(Graph.from_edges(n, np.arange(n - 1), np.arange(1, n), directed=False), 2, name)
    except Exception:
        pass  # the real call reports the problem
    _WARM.add(("partitioner", name))


def partition_path(cfg: Config, exp: Experiment, folder: Path) -> Path:
    name = f"{cfg.graph.name}-k{cfg.k}-{cfg.partitioner}-seed{exp.seed}-eps{exp.imbalance:g}.npz"
    return folder / "partitions" / name


def _partition(cfg: Config, data: GraphData, exp: Experiment, folder: Path, force: bool,
               require: bool = False):
    """The configuration's partition: loaded from its file when there is one, else computed and saved
    (with ``require``, a missing or unusable file is a PartitionError instead)."""
    path = partition_path(cfg, exp, folder)
    problem = f"no saved partition {path}"
    if path.exists() and not force:
        try:
            part = load_partition(path, data.graph, cfg.k)
        except PartitionError as exc:  # another graph under this name, or a damaged file
            problem = str(exc)
            if not require:
                print(f"compare.py: warning: {exc}; partitioning again", file=sys.stderr)
        else:
            if (part.method == cfg.partitioner and part.seed == exp.seed
                    and math.isclose(part.imbalance, exp.imbalance)):
                return part, path, True
            problem = (f"{path} holds a {part.method} partition with seed {part.seed}, imbalance "
                       f"{part.imbalance:g}")
    if require:
        raise PartitionError(f"{problem} (--require-partitions: run with --partition-only first)")
    path.parent.mkdir(parents=True, exist_ok=True)
    _warm_up_partitioner(cfg.partitioner)
    part = partition_graph(data.graph, cfg.k, cfg.partitioner, seed=exp.seed, imbalance=exp.imbalance)
    # Saved partitions travel with the result folder (to the GPU machine, into git): compressed, their
    # labels take about a tenth of the space.
    save_partition(path, data.graph, part, compress=True)
    return part, path, False


def _compare_rows(computed: np.ndarray, reference: np.ndarray, integer: bool) -> tuple[bool, float]:
    """(exact, max abs error over entries finite in both); an inf/finite mismatch is an infinite error."""
    computed = computed.astype(np.float64)
    if np.isnan(computed).any():
        return False, math.inf  # a row or column never written
    inf_c, inf_r = np.isinf(computed), np.isinf(reference)
    if not np.array_equal(inf_c, inf_r):
        return False, math.inf
    finite = ~inf_r
    error = float(np.max(np.abs(computed[finite] - reference[finite]), initial=0.0))
    if integer:
        return bool(np.array_equal(computed, reference)), error
    return bool(np.allclose(computed[finite], reference[finite], rtol=RTOL, atol=0.0)), error


def partition_fields(cfg: Config, data: GraphData, part, part_path: Path, reused: bool, folder: Path) -> dict:
    """What a result says about the graph and the partition (no solve)."""
    graph = data.graph
    metrics = part.metrics()
    per_part = part.boundary_per_part
    return {
        "graph": cfg.graph.name,
        "path": cfg.graph.given,
        "n": graph.n,
        "m": graph.num_edges,
        "arcs": graph.m,
        "directed": graph.directed,
        "integer_weights": data.integer_weights,
        "k": cfg.k,
        "partitioner": cfg.partitioner,
        "seed": part.seed,
        "imbalance_allowed": part.imbalance,
        "edge_cut": metrics["edge_cut"],
        "boundary_vertices": metrics["boundary_vertices"],
        "boundary_max_per_part": int(per_part.max()) if per_part.size else 0,
        "boundary_vertices_before_refine": metrics.get("boundary_vertices_before_refine"),
        "refine_seconds": metrics.get("refine_seconds"),
        "boundary_ratio": metrics["boundary_ratio"],
        "interior_vertices": graph.n - metrics["boundary_vertices"],
        "largest_part": metrics["largest_part"],
        "imbalance": metrics["imbalance"],
        "partition_seconds": part.seconds,
        "partition_file": str(part_path.relative_to(folder)),
        "partition_reused": reused,
    }


def partition_configuration(cfg: Config, data: GraphData, exp: Experiment, folder: Path, force: bool) -> dict:
    """Partition (or reuse the saved partition) and measure it, without solving (--partition-only)."""
    part, part_path, reused = _partition(cfg, data, exp, folder, force)
    return partition_fields(cfg, data, part, part_path, reused, folder)


def run_configuration(cfg: Config, data: GraphData, exp: Experiment, backend: str, folder: Path,
                      force: bool, require: bool = False) -> dict:
    """Partition (or reuse the partition), solve ``repetitions`` times, check sampled rows; every
    solve with the graph's ``sssp_method``."""
    from fastapsp.sink import MemorySink, NullSink

    graph = data.graph
    method = cfg.graph.sssp_method
    part, part_path, reused = _partition(cfg, data, exp, folder, force, require)
    xp = np
    if backend == "cupy":
        import cupy as xp
    _warm_up(backend, exp.dtype, method)
    device_csr(graph, xp)  # the one upload of the graph to the GPU stays out of the first timed run
    plan = schedule_components(component_costs(part, graph.n, graph.m), 1)[0]
    if not data.warm and plan:
        # The first solve on a graph runs measurably slower (memory pools and the heap
        # grow to the graph's sizes): compute its largest component once, untimed.
        run_components(graph, part, plan[:1], backend=backend, sink=NullSink(), dtype=exp.dtype, boundary_rows=method)
        data.warm = True
    if exp.output == "memory":
        need = graph.n * graph.n * np.dtype(exp.dtype).itemsize
        if need > _available_host_bytes() // 2:
            raise MemoryError(f"output: memory needs {need / 2**30:.1f} GiB for the {graph.n} x {graph.n} "
                              f"matrix of {cfg.graph.name}; use output: none")
        sink = MemorySink(graph.n, exp.dtype)
    else:
        sink = NullSink()
    walls, stage_runs = [], []
    for _ in range(exp.repetitions):
        capture = RowSampler(data.samples, graph.n) if exp.output != "memory" else None  # the rows as made
        with timed(xp=xp) as t:
            stage_runs.append(run_components(graph, part, plan, backend=backend, sink=sink, dtype=exp.dtype,
                                             boundary_rows=method, on_block=capture))
        walls.append(t.seconds)
    stages = {s: float(np.median([run[s] for run in stage_runs])) for s in STAGES}
    solve = float(np.median(walls))

    exact, error, check_run = None, None, None
    if data.samples.size:
        if exp.output == "memory":
            rows = sink.result[data.samples]
            check_run = "last timed run"
        else:
            missing = np.full(graph.n, np.nan)  # a row never made fails the check
            rows = np.stack([capture.rows.get(int(v), missing) for v in data.samples])
            check_run = "last timed run (its blocks holding the rows copied as they were made)"
        exact, error = _compare_rows(rows, data.reference, data.integer_weights)
    del sink

    return {
        **partition_fields(cfg, data, part, part_path, reused, folder),
        "backend": backend,
        "sssp_method": method,
        "stages": stages,
        "solve_seconds": solve,
        "solve_seconds_runs": walls,
        "total_seconds": solve + part.seconds,
        "exact": exact,
        "max_abs_error": error,
        "checked_rows": int(data.samples.size),
        "check": None if exact is None else ("equal (integer weights)" if data.integer_weights
                                             else f"allclose rtol={RTOL:g}"),
        "check_run": check_run,
    }


# -------------------------------------------------------------------- results
def load_results(path: Path) -> list[dict]:
    if not path.exists():
        return []
    try:
        data = json.loads(path.read_text())
    except ValueError as exc:
        raise ExperimentError(f"{path}: not readable JSON ({exc}); move it away to start afresh") from None
    if not isinstance(data, list):
        raise ExperimentError(f"{path}: expected a list of results, found {type(data).__name__}")
    return data


def is_done(record: dict | None, settings: dict) -> bool:
    """A solved result made with these settings (a setting it lacks has its OLD_SETTINGS value)."""
    if not record or record.get("status") != "ok" or record.get("settings") is None:
        return False
    return {**OLD_SETTINGS, **record["settings"]} == settings


def is_partitioned(record: dict | None, settings: dict, folder: Path) -> bool:
    """A result (solved or --partition-only) whose partition, made with these seed and imbalance, is saved
    (whatever its sssp_method: a partition serves either method)."""
    if not record or record.get("status") not in ("ok", PARTITIONED) or not record.get("partition_file"):
        return False
    old = record.get("settings") or {}
    return (all(old.get(key) == settings[key] for key in ("seed", "imbalance"))
            and (folder / record["partition_file"]).is_file())


def describe(exc: BaseException) -> str:
    """``Type: message`` on one line."""
    message = " ".join(str(exc).split()) or type(exc).__name__
    return f"{type(exc).__name__}: {message}"


def error_record(cfg: Config, error: str) -> dict:
    """The result of a configuration that failed (status ``error``), retried on the next run."""
    return {"graph": cfg.graph.name, "path": cfg.graph.given, "k": cfg.k, "partitioner": cfg.partitioner,
            "status": "error", "error": error}


def _keep(records: list, index: dict, cfg: Config, record: dict, settings: dict, run_meta: dict | None,
          folder: Path) -> None:
    """Stamp ``record`` (settings, time, metadata, where its partition was made), put it in
    ``records`` in the place of ``cfg``'s old one and write results.json and results.csv."""
    old = records[index[cfg.key]] if cfg.key in index else None
    finished = datetime.now(timezone.utc).isoformat(timespec="seconds")
    record = {"key": cfg.key, **record, "settings": settings, "finished": finished}
    if run_meta is not None:
        record["metadata"] = {**run_meta, "date": finished}
    # Where the partition was made (and its seconds measured): here, or where it was made before.
    if record.get("status") == "error" or record.get("partition_reused"):
        carried = (old or {}).get("partition_metadata")
        if carried is None and (old or {}).get("status") == "ok" and old.get("partition_reused") is False:
            carried = old.get("metadata")
        if carried is not None:
            record["partition_metadata"] = carried
    elif run_meta is not None:
        record["partition_metadata"] = record["metadata"]
    if cfg.key in index:
        records[index[cfg.key]] = record
    else:
        index[cfg.key] = len(records)
        records.append(record)
    write_json_atomic(folder / "results.json", records)
    write_csv(folder / "results.csv", records)


# ------------------------------------------------------ partitions in parallel
# Partitioners that run on one CPU core and nothing else: these may run side by side
# (--jobs).  jet and the NAME+b refinements use the GPU or a process pool of their own and
# run one at a time after them.
def parallel_partitioner(name: str) -> bool:
    return not name.startswith("jet") and not name.endswith("+b")


# Single-core partitioners from the slowest to the quickest (benchmarks/results/scale-h100: kahip-strong
# takes ~25-60 s where metis takes 0.2-1.8 s); others after them.
_SLOWEST_FIRST = ("kahip-strong", "kahip-strongsocial", "kahip-ecosocial", "kahip-eco", "kahip-fastsocial",
                  "kaminpar", "kahip-fast", "metis-vol", "metis")


def _slowness(name: str) -> int:
    return _SLOWEST_FIRST.index(name) if name in _SLOWEST_FIRST else len(_SLOWEST_FIRST)


def _file_size(path) -> int:
    try:
        return Path(path).stat().st_size
    except (OSError, TypeError):
        return 0


_WORKER_GRAPHS: dict = {}


def _partition_task(experiment_file: str, position: int, folder: str, force: bool) -> dict:
    """One configuration of the experiment partitioned in a worker process (its graph kept for the next)."""
    from compare_experiment import load_experiment

    exp = load_experiment(experiment_file)
    cfg = configurations(exp)[position]
    data = _WORKER_GRAPHS.get(cfg.graph.name)
    if data is None:
        data = _WORKER_GRAPHS[cfg.graph.name] = GraphData(cfg.graph, exp)
    try:
        record = partition_configuration(cfg, data, exp, Path(folder), force)
        record.update(status=PARTITIONED)
    except Exception as exc:
        record = error_record(cfg, describe(exc))
    return record


def _partition_in_parallel(exp: Experiment, folder: Path, configs: list, records: list, index: dict,
                           jobs: int, deadline: float | None, force: bool) -> int:
    """--partition-only with ``jobs`` worker processes, for the configurations of single-core
    partitioners not partitioned yet; returns how many failed.

    Each worker reads a graph once and partitions on one core; the partitioning seconds of
    each configuration are its own (measured inside the worker) but taken with ``jobs``
    partitioners running at once (``partition_jobs`` in the result says how many).  A
    configuration not finished ``deadline`` seconds after the start is recorded as failed
    and its worker is stopped.
    """
    import concurrent.futures as futures
    import multiprocessing
    import time

    todo = [(i, cfg) for i, cfg in enumerate(configs)
            if parallel_partitioner(cfg.partitioner) and cfg.graph.path is not None
            and (force or not is_partitioned(records[index[cfg.key]] if cfg.key in index else None,
                                             exp.settings_for(cfg), folder))]
    if not todo:
        return 0
    # Big graphs and slow partitioners first, so the long ones start early (not queued behind quick ones
    # until the deadline); configurations of one graph stay together as far as that allows.
    todo.sort(key=lambda item: (-_file_size(item[1].graph.path), _slowness(item[1].partitioner), item[0]))
    run_meta = metadata()
    start = time.monotonic()
    failed = 0
    # Fresh worker processes (spawn): nothing of this process's state (a CUDA context, library thread
    # pools) is carried into them, as a fork would.
    pool = futures.ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"))
    try:
        pending = {pool.submit(_partition_task, str(exp.source), i, str(folder), force): cfg for i, cfg in todo}
        while pending:
            left = None if deadline is None else max(0.0, deadline - (time.monotonic() - start))
            done, _ = futures.wait(pending, timeout=left, return_when=futures.FIRST_COMPLETED)
            if not done:  # the deadline passed: what is still running or waiting fails
                for cfg in pending.values():
                    failed += 1
                    record = error_record(cfg, f"not partitioned within the {deadline:g} s deadline (--deadline)")
                    print(f"{cfg.graph.name} k={cfg.k} {cfg.partitioner}: FAILED: {record['error']}",
                          file=sys.stderr, flush=True)
                    _keep(records, index, cfg, record, exp.settings_for(cfg), run_meta, folder)
                break
            for future in done:
                cfg = pending.pop(future)
                try:
                    record = future.result()
                except Exception as exc:  # the worker died
                    record = error_record(cfg, describe(exc))
                record["partition_jobs"] = jobs
                prefix = f"{cfg.graph.name} k={cfg.k} {cfg.partitioner}:"
                if record["status"] == "error":
                    failed += 1
                    print(f"{prefix} FAILED: {record['error']}", file=sys.stderr, flush=True)
                else:
                    print(f"{prefix} cut={record['edge_cut']} boundary={record['boundary_vertices']} partition "
                          f"{record['partition_seconds']:.3g} s ({jobs} at once), not solved (--partition-only)",
                          file=sys.stderr, flush=True)
                _keep(records, index, cfg, record, exp.settings_for(cfg), run_meta, folder)
    finally:
        for process in list(getattr(pool, "_processes", {}).values()):  # stop what the deadline cut short
            if process.is_alive():
                process.kill()
        pool.shutdown(wait=True, cancel_futures=True)
    return failed


# ----------------------------------------------------------------------- main
def run(exp: Experiment, folder: Path, *, force: bool = False, debug: bool = False,
        partition_only: bool = False, require_partitions: bool = False, report_only: bool = False,
        jobs: int = 1, deadline: float | None = None) -> int:
    """Run every configuration not yet done; write results, report and plots. Returns the exit status.

    ``partition_only``: partition and measure, never solve (the backend is not even resolved);
    with ``jobs`` > 1 the single-core partitioners run ``jobs`` at a time first, and a
    configuration of theirs not done within ``deadline`` seconds fails
    (:func:`_partition_in_parallel`); then the others one at a time.
    ``require_partitions``: never partition, fail a configuration whose saved partition is unusable;
    ``report_only``: run nothing, write results.csv, report and plots from results.json.
    """
    from fastapsp.backend import resolve_backend

    if partition_only + require_partitions + report_only > 1:
        raise ExperimentError("--partition-only, --require-partitions and --report-only exclude each other")
    folder.mkdir(parents=True, exist_ok=True)
    if exp.source.resolve() != (folder / "experiment.yaml").resolve():
        shutil.copyfile(exp.source, folder / "experiment.yaml")
    for g in exp.missing:
        print(f"compare.py: warning: graph {g.name!r}: file {g.given} not found, skipped", file=sys.stderr)
    results_path = folder / "results.json"
    records = load_results(results_path)
    index = {r.get("key"): i for i, r in enumerate(records)}
    configs = configurations(exp)
    backend = None
    run_meta = None
    loaded: dict[str, GraphData | BaseException] = {}
    failed = 0
    if partition_only and jobs > 1:
        failed += _partition_in_parallel(exp, folder, configs, records, index, jobs, deadline, force)
        force = False  # what the workers just made is not made again below
    for i, cfg in enumerate(configs if not report_only else [], 1):
        prefix = f"[{i}/{len(configs)}] {cfg.graph.name} k={cfg.k} {cfg.partitioner}:"
        old = records[index[cfg.key]] if cfg.key in index else None
        settings = exp.settings_for(cfg)  # the graph's sssp_method with the experiment's others
        if not force and is_done(old, settings):
            print(f"{prefix} done (in results.json), skipped", file=sys.stderr, flush=True)
            continue
        if partition_only and not force and is_partitioned(old, settings, folder):
            print(f"{prefix} partitioned (in results.json), skipped", file=sys.stderr, flush=True)
            continue
        if partition_only and jobs > 1 and parallel_partitioner(cfg.partitioner):
            continue  # the workers had it (and a failure there is recorded)
        try:
            if run_meta is None:
                run_meta = metadata()
            if backend is None and not partition_only:
                backend = resolve_backend(exp.backend)
            data = loaded.get(cfg.graph.name)
            if data is None:
                # Drop the previous graph first: only one is held at a time.
                loaded.clear()
                try:
                    data = GraphData(cfg.graph, exp)
                except Exception as exc:
                    data = exc
                loaded[cfg.graph.name] = data
            if isinstance(data, BaseException):
                raise data
            if partition_only:
                record = partition_configuration(cfg, data, exp, folder, force)
                record.update(status=PARTITIONED)
                how = "reused" if record["partition_reused"] else "new"
                print(f"{prefix} cut={record['edge_cut']} boundary={record['boundary_vertices']} "
                      f"(max {record['boundary_max_per_part']}/part) partition {record['partition_seconds']:.3g} s "
                      f"({how}), not solved (--partition-only)", file=sys.stderr, flush=True)
            else:
                record = run_configuration(cfg, data, exp, backend, folder, force, require_partitions)
                record.update(status="ok")
                exact = {None: "not checked", True: "exact", False: "NOT EXACT"}[record["exact"]]
                print(f"{prefix} cut={record['edge_cut']} boundary={record['boundary_vertices']} "
                      f"(max {record['boundary_max_per_part']}/part) partition {record['partition_seconds']:.3g} s"
                      f"{' (saved)' if record['partition_reused'] else ''}, solve {record['solve_seconds']:.3g} s, "
                      f"{exact}", file=sys.stderr, flush=True)
                if record["exact"] is False:
                    failed += 1
        except Exception as exc:  # recorded, reported, retried next time
            failed += 1
            record = error_record(cfg, describe(exc))
            print(f"{prefix} FAILED: {record['error']}", file=sys.stderr, flush=True)
            if debug:
                traceback.print_exc()
        _keep(records, index, cfg, record, settings, run_meta, folder)

    if not results_path.exists():
        write_json_atomic(results_path, records)
    write_csv(folder / "results.csv", records)
    current = [records[index[c.key]] for c in configs if c.key in index]
    plots, note = write_plots(folder, current, exp.partitioners)
    write_report(folder, exp, current, plots, note)
    print(f"compare.py: {len(configs)} configuration(s), {failed} failed; report: {folder / 'report.md'}",
          file=sys.stderr)
    return 1 if failed else 0


