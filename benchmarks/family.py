"""Experiments of ``kind: family``: a family of graphs solved by the command line, one record per run.

    python benchmarks/compare.py benchmarks/experiments/family.yaml [--out FOLDER]

For every graph of the experiment (made first by its ``make`` command when its file is missing):
one untimed ``fastapsp solve`` that compiles and caches the kernels for the graph's shapes, saves
the partition (``--partition-file``) and checks ``verify`` sampled rows against SciPy's Dijkstra
(``--verify``), then ``repetitions`` timed runs, each a fresh process timed from start to exit with
its ``--report``.  Each timed run is one record of ``FOLDER/results.json``:

- graph, path, n, m, directed, k, partitioner, sssp_method, dtype, packed_16bit (whether the products ran
  in packed 16-bit arithmetic, the report's), boundary_vertices;
- ``process_seconds`` (start to exit, measured here), ``total_seconds`` and ``stages`` (the report's);
- ``compile_seconds``: the report's ``compile`` entry where it has one (None otherwise);
- ``rates`` (None where a stage took no time or the partition is unknown):
  ``min_plus_gdist_per_s``: distances the min-plus product wrote, (n - boundary) * n, over its
  seconds, in 1e9 a second; ``boundary_rows_gdist_per_s``: the boundary rows, boundary * n
  distances, over the stage that made them (``boundary_rows`` with the boundary-graph method,
  ``sssp`` with the frontier method), in 1e9 a second; ``min_plus_trelax_per_s``: the relaxations
  of the product, the sum over components of |interior| * |boundary| * n, over its seconds, in 1e12
  a second.  The component sizes come from the partition saved by the untimed run; they are used
  only where that partition has the run's k and boundary count;
- device (the report's), versions and commit (:func:`_common.metadata`, taken in a child process so
  this one never holds a GPU context), the untimed run's seconds and verification, how the graph
  was made.

Experiment file (YAML; any other key is an error)::

    kind: family
    graphs:                         # required
      - path: benchmarks/data/roadNY.mtx.gz     # relative: to the working directory, else the repository
        name: roadNY                # optional, default: file name without extensions
      - path: benchmarks/data/family/grid-700.mtx.gz
        make: [scripts/make_grid_road.py, --rows, "700", --seed, "1"]   # run with -o PATH when missing
        k: 300                      # optional, as the experiment's k
        partitioner: metis          # optional, as the experiment's partitioner
        format: mtx                 # optional, as fastapsp solve --format
        undirected: false           # optional, as fastapsp solve --undirected
    backend: auto                   # auto | numpy | cupy, as fastapsp solve --backend
    partitioner: auto               # as fastapsp solve --partitioner
    k: auto                         # auto (the cost model) or a positive integer
    repetitions: 2                  # timed runs per graph
    verify: 4                       # rows checked by the untimed run (0: none)
    timeout: 300                    # seconds allowed to one fastapsp process (and to one make)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from _common import REPO, write_json_atomic  # noqa: E402
from compare_experiment import ExperimentError, graph_entries  # noqa: E402

KIND = "family"
TOP_KEYS = ("kind", "graphs", "backend", "partitioner", "k", "repetitions", "verify", "timeout")
GRAPH_KEYS = ("path", "name", "make", "k", "partitioner", "format", "undirected")
DEFAULTS = {"backend": "auto", "partitioner": "auto", "k": "auto", "repetitions": 2, "verify": 4, "timeout": 300}
BACKENDS = ("auto", "numpy", "cupy")


@dataclass
class FamilyGraph:
    name: str
    path: Path  # where the file is, or where ``make`` writes it
    given: str
    make: list[str] | None
    k: int | None  # None: the cost model's
    partitioner: str
    format: str | None = None
    undirected: bool = False


@dataclass
class Family:
    name: str
    source: Path
    graphs: list[FamilyGraph]
    backend: str
    repetitions: int
    verify: int
    timeout: float
    missing: list[FamilyGraph]

    def settings(self) -> dict:
        return {"backend": self.backend, "repetitions": self.repetitions, "verify": self.verify}


def _k(value, where: str) -> int | None:
    if value == "auto":
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ExperimentError(f"{where}: {value!r} is not 'auto' or a positive integer")
    return value


def _partitioner(value, where: str) -> str:
    from fastapsp.partition import PARTITIONERS

    if value != "auto" and value not in PARTITIONERS:
        raise ExperimentError(f"{where}: {value!r} is not one of auto, {', '.join(PARTITIONERS)}")
    return value


def _where(path: str) -> Path:
    """The file a graph entry names: as given when it exists or is absolute, else under the repository."""
    p = Path(path).expanduser()
    if p.is_absolute() or p.exists():
        return p.resolve()
    return (REPO / p).resolve()


def load_family(path, data: dict) -> Family:
    """Check a ``kind: family`` experiment (``data``, read from ``path``); raises ExperimentError naming the key."""
    path = Path(path)
    for key in data:
        if key not in TOP_KEYS:
            raise ExperimentError(f"{path}: unknown key {key!r} for kind {KIND}; allowed: {', '.join(TOP_KEYS)}")
    opts = {**DEFAULTS, **data}
    if opts["backend"] not in BACKENDS:
        raise ExperimentError(f"{path}: backend: {opts['backend']!r} is not one of {', '.join(BACKENDS)}")
    for key, low in (("repetitions", 1), ("verify", 0)):
        value = opts[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ExperimentError(f"{path}: {key}: {value!r} is not an integer >= {low}")
    timeout = opts["timeout"]
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ExperimentError(f"{path}: timeout: {timeout!r} is not a positive number of seconds")
    default_k = _k(opts["k"], f"{path}: k")
    default_part = _partitioner(opts["partitioner"], f"{path}: partitioner")
    graphs, missing = [], []
    for where, entry, name, fmt, undirected in graph_entries(opts.get("graphs"), path, GRAPH_KEYS):
        make = entry.get("make")
        if make is not None and (not isinstance(make, list) or not make
                                 or not all(isinstance(a, (str, int, float)) and not isinstance(a, bool) for a in make)):
            raise ExperimentError(f"{where}: make: expected a list of a script and its arguments, found {make!r}")
        k = _k(entry["k"], f"{where}: k") if "k" in entry else default_k
        part = _partitioner(entry["partitioner"], f"{where}: partitioner") if "partitioner" in entry else default_part
        g = FamilyGraph(name, _where(entry["path"]), entry["path"], [str(a) for a in make] if make else None, k, part,
                        fmt, undirected)
        (graphs if g.make or g.path.is_file() else missing).append(g)
    return Family(path.stem, path, graphs, opts["backend"], opts["repetitions"], opts["verify"], float(timeout),
                  missing)


# ------------------------------------------------------------------ measuring
def child_metadata() -> dict:
    """:func:`_common.metadata` from a child process: this one imports no CuPy and holds no GPU context,
    which would take device memory from the runs measured (the cost model's k depends on it)."""
    proc = subprocess.run([sys.executable, str(HERE / "_common.py")], capture_output=True, text=True, cwd=REPO,
                          timeout=120)
    if proc.returncode != 0:
        raise ExperimentError(f"benchmarks/_common.py (run metadata) failed: {proc.stderr.strip()[-300:]}")
    return json.loads(proc.stdout)


def make_graph(g: FamilyGraph, timeout: float) -> dict | None:
    """Run the graph's ``make`` command when its file is missing; what was run and how long it took."""
    if g.path.is_file():
        return {"command": g.make, "seconds": None, "made": False} if g.make else None
    g.path.parent.mkdir(parents=True, exist_ok=True)
    script, *args = g.make
    part = g.path.with_name(f".part-{os.getpid()}-{g.path.name}")  # the same extension: the maker writes its format
    cmd = [sys.executable, str(_where(script)), *args, "-o", str(part)]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=timeout)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        part.unlink(missing_ok=True)
        raise RuntimeError(f"make of {g.name} ({' '.join(g.make)}) failed: {proc.stderr.strip()[-300:]}")
    os.replace(part, g.path)
    return {"command": g.make, "seconds": round(seconds, 3), "made": True}


def solve_command(g: FamilyGraph, exp: Family, report: Path, *extra: str) -> list[str]:
    cmd = [sys.executable, "-m", "fastapsp", "solve", str(g.path), "--output", "none", "--backend", exp.backend,
           "--partitioner", g.partitioner, "--report", str(report), "--quiet", *extra]
    if g.k is not None:
        cmd += ["-k", str(g.k)]
    if g.format:
        cmd += ["--format", g.format]
    if g.undirected:
        cmd.append("--undirected")
    return cmd


def run_solve(cmd: list[str], report: Path, timeout: float) -> tuple[float, dict]:
    """(process seconds, report) of one ``fastapsp solve`` process; RuntimeError naming the failure."""
    report.unlink(missing_ok=True)
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"fastapsp solve ran past the {timeout:g} s timeout") from None
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        last = (proc.stderr.strip() or proc.stdout.strip() or f"exit status {proc.returncode}").splitlines()[-1]
        raise RuntimeError(f"fastapsp solve failed (exit {proc.returncode}): {last}")
    return seconds, json.loads(report.read_text())


def compile_seconds(report: dict) -> float | None:
    """The report's ``compile_seconds`` (or an older report's ``compile`` entry, top level or a stage) as
    seconds; None where it has none."""
    value = report.get("compile_seconds", report.get("compile", (report.get("stages") or {}).get("compile")))
    if isinstance(value, dict):
        value = value.get("seconds", value.get("total"))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def component_sizes(g: FamilyGraph, partition_file: Path, k: int):
    """(interior, boundary) vertex counts per component of the saved partition, on the graph read here."""
    from fastapsp.io import read_graph
    from fastapsp.partition import load_partition

    graph = read_graph(g.path, format=g.format, undirected=g.undirected)
    part = load_partition(partition_file, graph, k)
    boundary = part.boundary_per_part.astype("int64")
    return part.sizes.astype("int64") - boundary, boundary


def rates(report: dict, sizes) -> dict:
    """The min-plus and boundary-row rates of one run (see the module's docstring); None where unknown."""
    n, b = report["n"], report.get("boundary_vertices")
    stages = report.get("stages") or {}
    method = report.get("sssp_method")
    rows_stage = "boundary_rows" if method == "boundary-graph" else "sssp"

    def per(amount, seconds, unit):
        return None if amount is None or not seconds or seconds <= 0 else amount / seconds / unit

    relax = None
    if sizes is not None:
        interior, boundary = sizes
        relax = float((interior * boundary).sum()) * n
    return {
        "min_plus_gdist_per_s": per(None if b is None else (n - b) * n, stages.get("min_plus"), 1e9),
        "boundary_rows_gdist_per_s": per(None if b is None else b * n, stages.get(rows_stage), 1e9),
        "boundary_rows_stage": rows_stage,
        "min_plus_trelax_per_s": per(relax, stages.get("min_plus"), 1e12),
        "min_plus_relaxations": relax,
    }


_REPORT_KEYS = ("n", "m", "directed", "k", "partitioner", "sssp_method", "dtype", "packed_16bit", "boundary_vertices",
                "edge_cut", "total_seconds", "startup_seconds", "stages", "device", "backend")


def run_graph(g: FamilyGraph, exp: Family, folder: Path, meta: dict) -> list[dict]:
    """The untimed run and the timed runs of one graph; one record per timed run."""
    made = make_graph(g, exp.timeout) if g.make else None
    work = folder / "work"
    work.mkdir(parents=True, exist_ok=True)
    report = work / f"{g.name}.report.json"
    part_file = work / f"{g.name}.partition.npz"
    for stale in (part_file, Path(f"{part_file}.json")):
        stale.unlink(missing_ok=True)
    extra = ["--partition-file", str(part_file)] + (["--verify", str(exp.verify)] if exp.verify else [])
    warm_s, warm = run_solve(solve_command(g, exp, report, *extra), report, exp.timeout)
    warmup = {"process_seconds": round(warm_s, 3), "total_seconds": warm.get("total_seconds"),
              "compile_seconds": compile_seconds(warm), "verified_rows": warm.get("verified_rows"),
              "verify_max_rel_error": warm.get("verify_max_rel_error"),
              "k": warm.get("k"), "boundary_vertices": warm.get("boundary_vertices")}
    try:
        sizes = component_sizes(g, part_file, warm["k"])
    except Exception as exc:  # the rates that need sizes stay None, and say why
        sizes, sizes_note = None, f"component sizes unknown: {type(exc).__name__}: {exc}"
    else:
        sizes_note = "component sizes of the untimed run's partition"
    records = []
    for rep in range(exp.repetitions):
        seconds, rec = run_solve(solve_command(g, exp, report), report, exp.timeout)
        same = sizes is not None and rec.get("k") == warm.get("k") \
            and rec.get("boundary_vertices") == int(sizes[1].sum())
        record = {"graph": g.name, "path": g.given, "repeat": rep, **{key: rec.get(key) for key in _REPORT_KEYS},
                  "process_seconds": round(seconds, 3), "compile_seconds": compile_seconds(rec),
                  "rates": rates(rec, sizes if same else None),
                  "rates_note": sizes_note if same else
                  f"{sizes_note if sizes is None else 'partition differs from the untimed run'}: "
                  "min_plus_trelax_per_s not computed",
                  "warmup": warmup, "made": made, "settings": exp.settings(),
                  "commit": meta.get("commit"), "versions": meta.get("versions"), "metadata": meta}
        records.append(record)
    return records


def run_family(exp: Family, folder: Path, *, debug: bool = False) -> int:
    """Run every graph of a family experiment; ``folder/results.json`` rewritten after each graph. Exit status."""
    import traceback

    folder.mkdir(parents=True, exist_ok=True)
    if exp.source.resolve() != (folder / "experiment.yaml").resolve():
        shutil.copyfile(exp.source, folder / "experiment.yaml")
    for g in exp.missing:
        print(f"compare.py: warning: graph {g.name!r}: file {g.given} not found and no make, skipped",
              file=sys.stderr)
    meta = child_metadata()
    records, failed = [], 0
    for i, g in enumerate(exp.graphs, 1):
        prefix = f"[{i}/{len(exp.graphs)}] {g.name}:"
        try:
            mine = run_graph(g, exp, folder, meta)
        except Exception as exc:
            failed += 1
            mine = [{"graph": g.name, "path": g.given, "status": "error", "error": f"{type(exc).__name__}: {exc}",
                     "settings": exp.settings(), "commit": meta.get("commit"), "metadata": meta}]
            print(f"{prefix} FAILED: {mine[0]['error']}", file=sys.stderr, flush=True)
            if debug:
                traceback.print_exc()
        else:
            r = mine[0]
            rate = r["rates"]["min_plus_trelax_per_s"]
            totals = "/".join(f"{x['total_seconds']:.3g}" for x in mine)
            processes = "/".join(f"{x['process_seconds']:.3g}" for x in mine)
            print(f"{prefix} n={r['n']} k={r['k']} {r['partitioner']} total {totals} s, process {processes} s, "
                  f"min-plus {'-' if rate is None else f'{rate:.3g}'} T relaxations/s", file=sys.stderr, flush=True)
        records.extend(mine)
        write_json_atomic(folder / "results.json", records)
    shutil.rmtree(folder / "work", ignore_errors=True)
    print(f"compare.py: {len(exp.graphs)} graph(s), {failed} failed; results: {folder / 'results.json'}",
          file=sys.stderr)
    return 1 if failed else 0
