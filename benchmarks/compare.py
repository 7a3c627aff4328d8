"""Compare graph partitioners by what they do to FastAPSP (thesis Tables 5.2-5.5).

    python benchmarks/compare.py EXPERIMENT.yaml [--out FOLDER] [--force]
                                 [--partition-only | --require-partitions]

For every (graph, k, partitioner) of the experiment: partition once (the
partition is saved, compressed, under ``FOLDER/partitions/`` and reused on a rerun), record
its quality (edge cut, boundary vertices in all and in the largest part,
boundary-to-interior ratio, imbalance, partitioning seconds), then solve
``repetitions`` times in this process with :func:`fastapsp.pipeline.run_components`
and record the per-stage seconds and the solve seconds (medians), the solve
plus partitioning seconds, and whether sampled rows equal SciPy's Dijkstra.

FOLDER (default ``benchmarks/results/<experiment name>``) receives
``results.json`` (one object per configuration, each with its run metadata),
``results.csv`` (the same, flat), ``report.md`` (tables and a summary of the
improvement over METIS), PNG plots (with matplotlib) and a copy of the
experiment file.

Experiment file (YAML; any other key is an error)::

    graphs:                 # required; files that do not exist are skipped with a warning
      - ../shared/data/wing.graph.gz           # a path (relative: to the working
      - path: tests/data/minnesota.mtx.gz      #   directory, else to the repository root)
        name: minnesota     # optional, default: file name without extensions
        k: [4, 8]           # optional, overrides the experiment's k for this graph
        format: mtx         # optional, as fastapsp solve --format
        undirected: false   # optional, as fastapsp solve --undirected
    k: [8, 16, 32]          # k values of graphs without their own list
    partitioners: all       # 'all' (every registered one) or a list of names
    backend: auto           # auto | numpy | cupy
    repetitions: 3          # solves per configuration; times are medians
    output: none            # none (rows discarded, as --output none) | memory (rows kept, n x n)
    dtype: float32          # float32 | float64, as fastapsp solve --dtype
    check_samples: 4        # rows checked against scipy.sparse.csgraph.dijkstra (0: no check)
    seed: 42                # partitioner seed, and the seed of the sampled rows
    imbalance: 0.03         # allowed imbalance of the partitioners

Resuming: a configuration whose result is in ``results.json`` with the same
settings (backend, dtype, output, repetitions, check_samples, seed,
imbalance) is skipped; ``results.json`` is rewritten atomically after every
configuration, so an interrupted run loses at most the one in progress.
``--force`` recomputes everything, partitions included.  Failed
configurations are recorded (status ``error``) and retried on the next run;
the exit status is 1 when any configuration failed.

Partitioning on one machine, solving on another (``--partition-only``): for
every configuration, compute (or reuse) and save the partition and record its
quality and partitioning seconds, without solving and without touching the
backend (status ``partitioned``; a rerun skips those whose partition file is
still there).  A later normal run over the same FOLDER -- on the GPU machine,
say -- reuses every saved partition and records the partitioning seconds
stored in its file, so those were measured on the machine that partitioned
(``partition_metadata`` of each result; report.md says so when it differs from
the machine that solved).  ``--require-partitions`` makes sure of it: a
configuration whose saved partition is missing or unusable fails instead of
being partitioned.

Warm-up, untimed: a tiny graph through every stage once per process (CUDA
kernels compiled, first-call costs paid), each partitioner once on a tiny
graph, and the largest component of each graph's first configuration.

Exactness: with ``output: memory`` the sampled rows come from the last timed
solve.  With ``output: none`` nothing is kept, so one more, untimed run
computes only the components holding the sampled rows and keeps those rows.
Integer weights must match exactly; other weights within a relative 1e-6
(use ``dtype: float64`` for them).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import re
import shutil
import sys
import traceback
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # _common
sys.path.insert(0, str(HERE.parent))  # measure this checkout's fastapsp, installed or not

from _common import REPO, RESULTS, metadata, timed, write_json_atomic  # noqa: E402

from fastapsp.backend import device_csr  # noqa: E402
from fastapsp.errors import PartitionError  # noqa: E402
from fastapsp.partition import PARTITIONERS, load_partition, make_partition, partition_graph, save_partition  # noqa: E402
from fastapsp.pipeline import STAGES, run_components  # noqa: E402
from fastapsp.schedule import component_costs, schedule_components  # noqa: E402

TOP_KEYS = ("graphs", "k", "partitioners", "backend", "repetitions", "output", "dtype", "check_samples", "seed",
            "imbalance")
GRAPH_KEYS = ("path", "name", "k", "format", "undirected")
DEFAULTS = {"partitioners": "all", "backend": "auto", "repetitions": 3, "output": "none", "dtype": "float32",
            "check_samples": 4, "seed": 42, "imbalance": 0.03}
# Settings that change a result: a stored result made with other values is run again.
SETTINGS = ("backend", "dtype", "output", "repetitions", "check_samples", "seed", "imbalance")
REFERENCE = "metis"
RTOL = 1e-6
CSV_FIELDS = ("graph", "n", "m", "k", "partitioner", "status", "edge_cut", "boundary_vertices",
              "boundary_max_per_part", "boundary_ratio", "imbalance", "partition_seconds", "solve_seconds",
              "total_seconds", *(f"stage_{s}" for s in STAGES), "exact", "max_abs_error", "checked_rows",
              "backend", "dtype", "output", "repetitions", "seed", "imbalance_allowed", "partition_reused",
              "finished", "device", "commit", "partition_device", "partition_host", "error")
PARTITIONED = "partitioned"  # status of a --partition-only result: partition saved and measured, not solved


class ExperimentError(ValueError):
    """The experiment file cannot be used (unknown key, bad value)."""


# ----------------------------------------------------------------- experiment
@dataclass
class GraphEntry:
    name: str
    path: Path | None  # None: the file was not found
    given: str
    k: list[int]
    format: str | None = None
    undirected: bool = False


@dataclass
class Experiment:
    name: str
    source: Path
    graphs: list[GraphEntry]
    partitioners: list[str]
    backend: str
    repetitions: int
    output: str
    dtype: str
    check_samples: int
    seed: int
    imbalance: float
    missing: list[GraphEntry] = field(default_factory=list)

    @property
    def settings(self) -> dict:
        return {key: getattr(self, key) for key in SETTINGS}


def _k_list(value, where: str) -> list[int]:
    values = value if isinstance(value, list) else [value]
    if not values or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in values):
        raise ExperimentError(f"{where}: {value!r} is not a positive integer or a list of them")
    return list(dict.fromkeys(values))


def _graph_name(path: str) -> str:
    name = Path(path).name
    if name.endswith(".gz"):
        name = name[:-3]
    return name.split(".", 1)[0] or name


def _resolve(path: str) -> Path | None:
    """An existing file: the path itself, or relative to the repository root; None when neither exists."""
    p = Path(path).expanduser()
    if p.is_file():
        return p.resolve()
    if not p.is_absolute() and (REPO / p).is_file():
        return (REPO / p).resolve()
    return None


def load_experiment(path) -> Experiment:
    """Read and check an experiment file; raises ExperimentError naming the key at fault."""
    import yaml

    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ExperimentError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except yaml.YAMLError as exc:
        raise ExperimentError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise ExperimentError(f"{path}: expected a mapping of settings, found {type(data).__name__}")
    for key in data:
        if key not in TOP_KEYS:
            raise ExperimentError(f"{path}: unknown key {key!r}; allowed: {', '.join(TOP_KEYS)}")
    opts = {**DEFAULTS, **data}

    default_k = _k_list(opts["k"], f"{path}: k") if "k" in opts else None
    raw_graphs = opts.get("graphs")
    if not isinstance(raw_graphs, list) or not raw_graphs:
        raise ExperimentError(f"{path}: graphs: expected a non-empty list of paths or {{path: ...}} entries")
    graphs, missing, names = [], [], set()
    for i, entry in enumerate(raw_graphs):
        where = f"{path}: graphs[{i}]"
        if isinstance(entry, str):
            entry = {"path": entry}
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            raise ExperimentError(f"{where}: expected a path or a mapping with a 'path' key, found {entry!r}")
        for key in entry:
            if key not in GRAPH_KEYS:
                raise ExperimentError(f"{where}: unknown key {key!r}; allowed: {', '.join(GRAPH_KEYS)}")
        name = str(entry.get("name") or _graph_name(entry["path"]))
        if not re.fullmatch(r"[A-Za-z0-9_.+-]+", name):
            raise ExperimentError(f"{where}: name {name!r} may hold only letters, digits and _ . + -")
        if name in names:
            raise ExperimentError(f"{where}: a second graph named {name!r}; give one of them another name")
        names.add(name)
        if "k" in entry:
            ks = _k_list(entry["k"], f"{where}: k")
        elif default_k is not None:
            ks = default_k
        else:
            raise ExperimentError(f"{where}: no k list for {name!r}; set the experiment's k or the graph's k")
        fmt = entry.get("format")
        if fmt is not None and not isinstance(fmt, str):
            raise ExperimentError(f"{where}: format: {fmt!r} is not a string")
        undirected = entry.get("undirected", False)
        if not isinstance(undirected, bool):
            raise ExperimentError(f"{where}: undirected: {undirected!r} is not true or false")
        g = GraphEntry(name, _resolve(entry["path"]), entry["path"], ks, fmt, undirected)
        (graphs if g.path is not None else missing).append(g)

    parts = opts["partitioners"]
    if parts == "all":
        parts = list(PARTITIONERS)
    if isinstance(parts, str):
        parts = [parts]
    if not isinstance(parts, list) or not parts:
        raise ExperimentError(f"{path}: partitioners: expected 'all' or a non-empty list of names")
    for p in parts:
        if p not in PARTITIONERS:
            raise ExperimentError(f"{path}: partitioners: {p!r} is not one of all, {', '.join(PARTITIONERS)}")
    parts = list(dict.fromkeys(parts))

    choices = {"backend": ("auto", "numpy", "cupy"), "output": ("none", "memory"), "dtype": ("float32", "float64")}
    for key, allowed in choices.items():
        if str(opts[key]) not in allowed:
            raise ExperimentError(f"{path}: {key}: {opts[key]!r} is not one of {', '.join(allowed)}")
    for key, low in (("repetitions", 1), ("check_samples", 0), ("seed", 0)):
        value = opts[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ExperimentError(f"{path}: {key}: {value!r} is not an integer >= {low}")
    imbalance = opts["imbalance"]
    if isinstance(imbalance, bool) or not isinstance(imbalance, (int, float)) or not 0 <= imbalance < 1:
        raise ExperimentError(f"{path}: imbalance: {imbalance!r} is not a number in [0, 1)")
    return Experiment(path.stem, path, graphs, parts, str(opts["backend"]), opts["repetitions"], str(opts["output"]),
                      str(opts["dtype"]), opts["check_samples"], opts["seed"], float(imbalance), missing)


@dataclass
class Config:
    graph: GraphEntry
    k: int
    partitioner: str

    @property
    def key(self) -> str:
        return f"{self.graph.name}/k={self.k}/{self.partitioner}"


def configurations(exp: Experiment) -> list[Config]:
    """Every (graph, k, partitioner), graph by graph, so each graph is read once."""
    return [Config(g, k, p) for g in exp.graphs for k in g.k for p in exp.partitioners]


# ------------------------------------------------------------------ measuring
class _RowSink:
    """Keeps only the rows of ``rows`` (a sink for run_components, like fastapsp.sink.MemorySink)."""

    needs_host = True
    path = None

    def __init__(self, n: int, rows: np.ndarray, dtype) -> None:
        self.position = np.full(n, -1, dtype=np.int64)
        self.position[rows] = np.arange(rows.size)
        self.result = np.full((rows.size, n), np.nan, dtype=dtype)

    def write(self, vertices, column_start, block) -> None:
        where = self.position[vertices]
        keep = where >= 0
        if keep.any():
            self.result[where[keep], column_start : column_start + block.shape[1]] = block[keep]

    def commit(self) -> None:
        return None

    def abort(self) -> None:
        return None


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
    try:
        with open("/proc/meminfo") as fh:
            info = dict(line.split(":", 1) for line in fh)
        return int(info["MemAvailable"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        return 1 << 62


_WARM = set()


def _warm_up(backend: str, dtype: str) -> None:
    """Run a tiny graph through every stage once (BFS and weighted paths), so no timed run pays
    for compiling CUDA kernels or for first-call costs (imports, caches) on the host."""
    if (backend, dtype) in _WARM:
        return
    from fastapsp.graph import Graph
    from fastapsp.sink import NullSink

    n = 64
    src, dst = np.arange(n - 1), np.arange(1, n)
    for w in (None, np.full(n - 1, 2.0)):
        g = Graph.from_edges(n, src, dst, w, directed=False, name="warm-up")
        part = make_partition(g, (np.arange(n) >= n // 2).astype(np.int32), 2, method="warm-up", seed=0,
                              imbalance=0.0, seconds=0.0)
        run_components(g, part, [0, 1], backend=backend, sink=NullSink(), dtype=dtype)
    _WARM.add((backend, dtype))


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
    save_partition(path, data.graph, part)
    compress_npz(path)
    return part, path, False


def compress_npz(path: Path) -> None:
    """Rewrite an ``.npz`` archive compressed, with the same arrays (``np.load`` reads both kinds).

    Saved partitions travel with the result folder (to the GPU machine, into git): their labels
    compress about tenfold.
    """
    with np.load(path, allow_pickle=False) as data:
        arrays = {name: data[name] for name in data.files}
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as fh:
        np.savez_compressed(fh, **arrays)
    tmp.replace(path)


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
    """Partition (or reuse the partition), solve ``repetitions`` times, check sampled rows."""
    from fastapsp.sink import MemorySink, NullSink

    graph = data.graph
    part, part_path, reused = _partition(cfg, data, exp, folder, force, require)
    xp = np
    if backend == "cupy":
        import cupy as xp
    _warm_up(backend, exp.dtype)
    device_csr(graph, xp)  # the one upload of the graph to the GPU stays out of the first timed run
    plan = schedule_components(component_costs(part, graph.n, graph.m), 1)[0]
    if not data.warm and plan:
        # The first solve on a graph runs measurably slower (memory pools and the heap
        # grow to the graph's sizes): compute its largest component once, untimed.
        run_components(graph, part, plan[:1], backend=backend, sink=NullSink(), dtype=exp.dtype)
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
        with timed(xp=xp) as t:
            stage_runs.append(run_components(graph, part, plan, backend=backend, sink=sink, dtype=exp.dtype))
        walls.append(t.seconds)
    stages = {s: float(np.median([run[s] for run in stage_runs])) for s in STAGES}
    solve = float(np.median(walls))

    exact, error, check_run = None, None, None
    if data.samples.size:
        if exp.output == "memory":
            rows = sink.result[data.samples]
            check_run = "last timed run"
        else:
            needed = [int(p) for p in np.unique(part.labels[data.samples])]
            rows_sink = _RowSink(graph.n, data.samples, exp.dtype)
            run_components(graph, part, needed, backend=backend, sink=rows_sink, dtype=exp.dtype)
            rows = rows_sink.result
            check_run = f"separate run of the {len(needed)} component(s) holding the rows"
        exact, error = _compare_rows(rows, data.reference, data.integer_weights)
    del sink

    return {
        **partition_fields(cfg, data, part, part_path, reused, folder),
        "backend": backend,
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
    return bool(record) and record.get("status") == "ok" and record.get("settings") == settings


def is_partitioned(record: dict | None, settings: dict, folder: Path) -> bool:
    """A result (solved or --partition-only) whose partition, made with these seed and imbalance, is saved."""
    if not record or record.get("status") not in ("ok", PARTITIONED) or not record.get("partition_file"):
        return False
    old = record.get("settings") or {}
    return (all(old.get(key) == settings[key] for key in ("seed", "imbalance"))
            and (folder / record["partition_file"]).is_file())


def write_csv(path: Path, records: list[dict]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=CSV_FIELDS, extrasaction="ignore")
        writer.writeheader()
        for r in records:
            row = dict(r)
            for s in STAGES:
                row[f"stage_{s}"] = (r.get("stages") or {}).get(s)
            meta = r.get("metadata") or {}
            row["device"], row["commit"] = meta.get("device"), meta.get("commit")
            pmeta = r.get("partition_metadata") or {}
            row["partition_device"], row["partition_host"] = pmeta.get("device"), pmeta.get("hostname")
            row["backend"] = r.get("backend")
            row.update({key: r.get("settings", {}).get(key) for key in ("dtype", "output", "repetitions")})
            writer.writerow({key: ("" if row.get(key) is None else row.get(key)) for key in CSV_FIELDS})
    tmp.replace(path)


# --------------------------------------------------------------------- report
def _fmt_s(x) -> str:
    if x is None:
        return "–"
    return f"{x:.3g}" if x < 10 else f"{x:.1f}"


def _geomean(values) -> float | None:
    values = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def improvement_over_reference(records: list[dict], partitioners: list[str]) -> list[dict]:
    """Per partitioner: geometric means of METIS value / partitioner value over (graph, k)."""
    ok = {(r["graph"], r["k"], r["partitioner"]): r for r in records if r.get("status") == "ok"}
    rows = []
    for p in partitioners:
        pairs = [(ok[(g, k, REFERENCE)], r) for (g, k, q), r in ok.items() if q == p and (g, k, REFERENCE) in ok]
        row = {"partitioner": p, "pairs": len(pairs)}
        for field_, label in (("solve_seconds", "solve"), ("total_seconds", "total"),
                              ("boundary_vertices", "boundary"), ("edge_cut", "cut")):
            row[label] = _geomean(ref[field_] / r[field_] if r[field_] else None for ref, r in pairs)
        rows.append(row)
    return rows


def _exact_cell(r: dict) -> str:
    if r.get("exact") is None:
        return "not checked"
    if r["exact"]:
        return f"yes ({r['checked_rows']} rows)"
    err = r.get("max_abs_error")
    return f"**NO** (max error {'inf' if err is None else f'{err:.3g}'})"


def _machines_note(records: list[dict]) -> list[str]:
    """Report lines saying where the partitions were made when that is not where the solves ran."""
    def where(metas):
        devices = sorted({m.get("device", "?") for m in metas})
        hosts = sorted({m.get("hostname", "?") for m in metas})
        dates = sorted(m.get("date", "") for m in metas)
        return f"{', '.join(devices)} (host {', '.join(hosts)}), {dates[0]} to {dates[-1]}"

    lines = []
    ok = [r for r in records if r.get("status") == "ok" and r.get("metadata")]
    elsewhere = [r for r in ok if r.get("partition_metadata")
                 and r["partition_metadata"].get("hostname") != r["metadata"].get("hostname")]
    if elsewhere:
        made = where([r["partition_metadata"] for r in elsewhere])
        lines += [f"**Two machines.** The partitions of {len(elsewhere)} of the {len(ok)} solved configurations "
                  f"were computed beforehand with `--partition-only` on {made}, and reused, not recomputed, "
                  f"by the solve run: their *partition s* (and the partitioning part of *total s*) were measured "
                  f"on that machine's CPU, while *solve s* were measured on "
                  f"{where([r['metadata'] for r in elsewhere])}.", ""]
    pending = [r for r in records if r.get("status") == PARTITIONED]
    if pending:
        metas = [r.get("partition_metadata") or r.get("metadata") or {} for r in pending]
        lines += [f"**Partitioned only.** {len(pending)} configuration(s) were partitioned with `--partition-only` "
                  f"on {where(metas)} and are not solved yet: rerun without `--partition-only` (on the GPU "
                  f"machine) over this folder to solve them with these partitions.", ""]
    return lines


def write_report(folder: Path, exp: Experiment, records: list[dict], plots: list[tuple[str, str]],
                 plot_note: str | None) -> None:
    ok = [r for r in records if r.get("status") == "ok"]
    metas = [r["metadata"] for r in ok if r.get("metadata")]
    lines = [f"# Partitioner comparison: {exp.name}", ""]
    try:
        source = exp.source.resolve().relative_to(REPO)
    except ValueError:
        source = exp.source
    check = (f"{exp.check_samples} sampled rows per configuration compared with "
             f"`scipy.sparse.csgraph.dijkstra`" if exp.check_samples else "no exactness check")
    lines += [f"Experiment `{source}`: backend {exp.backend}, dtype {exp.dtype}, output {exp.output}, "
              f"{exp.repetitions} repetition(s), seed {exp.seed}, imbalance {exp.imbalance:g}, {check}.", ""]
    if metas:
        devices = sorted({m.get("device", "?") for m in metas})
        commits = sorted({m.get("commit", "?") for m in metas})
        hosts = sorted({m.get("hostname", "?") for m in metas})
        dates = sorted(m.get("date", "") for m in metas)
        versions = metas[-1].get("versions", {})
        lines += [f"Ran on {', '.join(devices)} (host {', '.join(hosts)}), commit {', '.join(commits)}, "
                  f"{dates[0]} to {dates[-1]}.  "
                  f"Versions: {', '.join(f'{k} {v}' for k, v in versions.items() if v)}.", ""]
    lines += _machines_note(records)
    lines += ["*solve s*: median seconds of the FastAPSP computation with the saved partition (without "
              "partitioning); *total s*: solve + partitioning seconds (with partitioning); *boundary*: "
              "boundary vertices in all parts (*max/part*: in the part with most); *ratio*: boundary / "
              "interior vertices; *imbalance*: largest part × k / n − 1.", ""]

    summary = improvement_over_reference(ok, exp.partitioners)
    lines += [f"## Summary: geometric-mean improvement over {REFERENCE.upper()}", "",
              f"{REFERENCE.upper()} value / partitioner value, geometric mean over every graph and k where both "
              "ran; above 1 is better than METIS.", "",
              "| partitioner | (graph, k) pairs | solve time | total time | boundary vertices | edge cut |",
              "|---|---:|---:|---:|---:|---:|"]
    for row in summary:
        cells = ["–" if row[c] is None else f"{row[c]:.3f}×" for c in ("solve", "total", "boundary", "cut")]
        lines.append(f"| {row['partitioner']} | {row['pairs']} | " + " | ".join(cells) + " |")
    lines.append("")

    by_graph: dict[str, list[dict]] = {}
    for r in records:
        by_graph.setdefault(r["graph"], []).append(r)
    for name, rows in by_graph.items():
        first = next((r for r in rows if r.get("status") in ("ok", PARTITIONED)), None)
        size = f" (n = {first['n']:,}, m = {first['m']:,})" if first else ""
        lines += [f"## {name}{size}", "",
                  "| k | partitioner | cut | boundary | max/part | ratio | imbalance | partition s | solve s "
                  "| total s | exact |",
                  "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for r in rows:
            if r.get("status") not in ("ok", PARTITIONED):
                error = str(r.get("error", "?")).replace("|", "\\|")
                lines.append(f"| {r['k']} | {r['partitioner']} | | | | | | | | | error: {error} |")
                continue
            solved = r["status"] == "ok"
            lines.append(
                f"| {r['k']} | {r['partitioner']} | {r['edge_cut']:,} | {r['boundary_vertices']:,} | "
                f"{r['boundary_max_per_part']:,} | {r['boundary_ratio']:.4f} | {r['imbalance']:.3f} | "
                f"{_fmt_s(r['partition_seconds'])} | {_fmt_s(r.get('solve_seconds'))} | "
                f"{_fmt_s(r.get('total_seconds'))} | {_exact_cell(r) if solved else 'not solved yet'} |")
        lines.append("")

    lines += ["## Plots", ""]
    if plot_note:
        lines += [plot_note, ""]
    for file, title in plots:
        lines += [f"### {title}", "", f"![{title}]({file})", ""]
    if exp.missing:
        lines += ["## Skipped graphs", ""]
        lines += [f"- `{g.name}`: file `{g.given}` not found" for g in exp.missing]
        lines.append("")
    tmp = folder / ".report.md.tmp"
    tmp.write_text("\n".join(lines) + "\n")
    tmp.replace(folder / "report.md")


def write_plots(folder: Path, records: list[dict], partitioners: list[str]) -> tuple[list, str | None]:
    """PNG plots; returns [(file, title)] and a note when they could not be drawn."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return [], "Plots skipped: matplotlib is not installed (`pip install matplotlib`, or the `bench` extra)."
    ok = [r for r in records if r.get("status") == "ok"]
    if not ok:
        return [], "No plots: no configuration finished."
    graphs = list(dict.fromkeys(r["graph"] for r in ok))
    parts = [p for p in partitioners if any(r["partitioner"] == p for r in ok)]
    colors = {p: plt.get_cmap("tab10")(i % 10) for i, p in enumerate(parts)}
    markers = dict(zip(parts, "osD^vP*Xh<>p" * 2))
    plots = []

    def grid(count, width, height):
        fig, axes = plt.subplots(count, 1, figsize=(width, height * count), squeeze=False)
        return fig, axes[:, 0]

    # 1. Boundary ratio against solve time, one marker per partitioner.
    fig, axes = grid(len(graphs), 7, 4)
    for ax, g in zip(axes, graphs):
        for p in parts:
            rows = [r for r in ok if r["graph"] == g and r["partitioner"] == p]
            if rows:
                ax.scatter([r["boundary_ratio"] for r in rows], [r["solve_seconds"] for r in rows],
                           marker=markers[p], color=colors[p], label=p, s=40)
                for r in rows:
                    ax.annotate(f"k={r['k']}", (r["boundary_ratio"], r["solve_seconds"]), fontsize=6,
                                xytext=(3, 3), textcoords="offset points")
        ax.set_title(g)
        ax.set_xlabel("boundary / interior vertices")
        ax.set_ylabel("solve seconds")
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    fig.savefig(folder / "boundary_vs_runtime.png", dpi=110)
    plt.close(fig)
    plots.append(("boundary_vs_runtime.png", "Boundary ratio vs solve time"))

    # 2. Solve time per partitioner, grouped by k, one panel per graph; hatched: partitioning on top.
    fig, axes = grid(len(graphs), max(7, 1.2 * len(parts) + 3), 3.5)
    width = 0.8 / max(1, len(parts))
    for ax, g in zip(axes, graphs):
        ks = sorted({r["k"] for r in ok if r["graph"] == g})
        for j, p in enumerate(parts):
            found = {r["k"]: r for r in ok if r["graph"] == g and r["partitioner"] == p}
            x = [i + (j - (len(parts) - 1) / 2) * width for i, k in enumerate(ks) if k in found]
            solve = [found[k]["solve_seconds"] for k in ks if k in found]
            part_s = [found[k]["partition_seconds"] for k in ks if k in found]
            ax.bar(x, solve, width, color=colors[p], label=p)
            ax.bar(x, part_s, width, bottom=solve, color=colors[p], alpha=0.35, hatch="//")
        ax.set_xticks(range(len(ks)), [f"k={k}" for k in ks])
        ax.set_title(f"{g}: solve seconds (hatched: + partitioning)")
        ax.set_ylabel("seconds")
        ax.grid(True, axis="y", alpha=0.3)
    axes[0].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    fig.savefig(folder / "runtime_by_partitioner.png", dpi=110)
    plt.close(fig)
    plots.append(("runtime_by_partitioner.png", "Solve time per partitioner"))

    # 3. Per-stage breakdown, one stacked bar per (k, partitioner).
    used = [s for s in STAGES if any((r.get("stages") or {}).get(s, 0) > 0 for r in ok)]
    stage_colors = {s: plt.get_cmap("Set2")(i % 8) for i, s in enumerate(STAGES)}
    most = max(sum(r["graph"] == g for r in ok) for g in graphs)
    fig, axes = grid(len(graphs), max(7, 0.45 * most + 3), 3.8)
    for ax, g in zip(axes, graphs):
        rows = sorted((r for r in ok if r["graph"] == g), key=lambda r: (r["k"], parts.index(r["partitioner"])))
        bottom = np.zeros(len(rows))
        for s in used:
            values = np.array([r["stages"].get(s, 0.0) for r in rows])
            ax.bar(range(len(rows)), values, 0.7, bottom=bottom, color=stage_colors[s], label=s)
            bottom += values
        ax.set_xticks(range(len(rows)), [f"{r['partitioner']}\nk={r['k']}" for r in rows], rotation=90, fontsize=7)
        ax.set_title(f"{g}: seconds per stage")
        ax.set_ylabel("seconds")
        ax.grid(True, axis="y", alpha=0.3)
    axes[0].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    fig.savefig(folder / "stage_breakdown.png", dpi=110)
    plt.close(fig)
    plots.append(("stage_breakdown.png", "Per-stage breakdown"))
    return plots, None


# ----------------------------------------------------------------------- main
def run(exp: Experiment, folder: Path, *, force: bool = False, debug: bool = False,
        partition_only: bool = False, require_partitions: bool = False) -> int:
    """Run every configuration not yet done; write results, report and plots. Returns the exit status.

    ``partition_only``: partition and measure, never solve (the backend is not even resolved);
    ``require_partitions``: never partition, fail a configuration whose saved partition is unusable.
    """
    from fastapsp.backend import resolve_backend

    if partition_only and require_partitions:
        raise ExperimentError("--partition-only and --require-partitions exclude each other")
    folder.mkdir(parents=True, exist_ok=True)
    if exp.source.resolve() != (folder / "experiment.yaml").resolve():
        shutil.copyfile(exp.source, folder / "experiment.yaml")
    for g in exp.missing:
        print(f"compare.py: warning: graph {g.name!r}: file {g.given} not found, skipped", file=sys.stderr)
    results_path = folder / "results.json"
    records = load_results(results_path)
    index = {r.get("key"): i for i, r in enumerate(records)}
    settings = exp.settings
    configs = configurations(exp)
    backend = None
    run_meta = None
    loaded: dict[str, GraphData | BaseException] = {}
    failed = 0
    for i, cfg in enumerate(configs, 1):
        prefix = f"[{i}/{len(configs)}] {cfg.graph.name} k={cfg.k} {cfg.partitioner}:"
        old = records[index[cfg.key]] if cfg.key in index else None
        if not force and is_done(old, settings):
            print(f"{prefix} done (in results.json), skipped", file=sys.stderr, flush=True)
            continue
        if partition_only and not force and is_partitioned(old, settings, folder):
            print(f"{prefix} partitioned (in results.json), skipped", file=sys.stderr, flush=True)
            continue
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
            message = " ".join(str(exc).split()) or type(exc).__name__
            record = {"graph": cfg.graph.name, "path": cfg.graph.given, "k": cfg.k, "partitioner": cfg.partitioner,
                      "status": "error", "error": f"{type(exc).__name__}: {message}"}
            print(f"{prefix} FAILED: {record['error']}", file=sys.stderr, flush=True)
            if debug:
                traceback.print_exc()
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
        write_json_atomic(results_path, records)
        write_csv(folder / "results.csv", records)

    if not results_path.exists():
        write_json_atomic(results_path, records)
    write_csv(folder / "results.csv", records)
    current = [records[index[c.key]] for c in configs if c.key in index]
    plots, note = write_plots(folder, current, exp.partitioners)
    write_report(folder, exp, current, plots, note)
    print(f"compare.py: {len(configs)} configuration(s), {failed} failed; report: {folder / 'report.md'}",
          file=sys.stderr)
    return 1 if failed else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("experiment", help="experiment YAML file (see benchmarks/experiments/)")
    parser.add_argument("--out", help="result folder (default: benchmarks/results/<experiment name>)")
    parser.add_argument("--force", action="store_true", help="recompute every configuration and partition")
    parser.add_argument("--debug", action="store_true", help="print tracebacks of failed configurations")
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--partition-only", action="store_true",
                      help="compute, save and measure every partition, solve nothing (no GPU needed); a later "
                           "normal run over the same --out reuses the partitions and their measured seconds")
    only.add_argument("--require-partitions", action="store_true",
                      help="never partition: a configuration without a usable saved partition fails "
                           "(for the solve run after --partition-only)")
    args = parser.parse_args(argv)
    try:
        exp = load_experiment(args.experiment)
    except ExperimentError as exc:
        print(f"compare.py: error: {exc}", file=sys.stderr)
        return 2
    folder = Path(args.out) if args.out else RESULTS / exp.name
    try:
        return run(exp, folder, force=args.force, debug=args.debug, partition_only=args.partition_only,
                   require_partitions=args.require_partitions)
    except ExperimentError as exc:
        print(f"compare.py: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
