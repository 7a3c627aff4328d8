"""SciPy's Dijkstra on a sample of sources: an anchor for the all-pairs times of fastapsp.

    python benchmarks/scipy_anchor.py                          # luxembourg_osm (and roadNY if present)
    python benchmarks/scipy_anchor.py GRAPH.mtx.gz --sources 256 --seed 0 --repeat 3 --out-dir DIR

Times ``scipy.sparse.csgraph.shortest_path(A, method="D", directed=False, indices=SAMPLE)`` in this
one process, best of ``--repeat`` calls, on a fixed random sample of source vertices (reading the
graph is not timed).  Computing every row would need the n x n float64 matrix in memory (105 GB for
luxembourg_osm), so the all-pairs time is an extrapolation, ``seconds_per_source * n``, and the JSON
says so in ``note``.

Writes ``<out-dir>/scipy-<graph>.json`` (default ``benchmarks/results/anchors/``) with graph, n, m
(undirected edges), arcs (stored entries SciPy receives), sources, seed, runs, seconds (best),
seconds_per_source, extrapolated_all_pairs_seconds, note, host (platform, CPU model, cores, the
1-minute load average before and after the timed calls), versions (numpy, scipy, python) and
commit (``git rev-parse --short HEAD``, or ``FASTAPSP_COMMIT``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, _commit, _cpu_name  # noqa: E402

DATA = REPO / "benchmarks" / "data"
DEFAULT_GRAPHS = ("luxembourg_osm.mtx.gz", "roadNY.mtx.gz")  # roadNY only when present
OUT_DIR = REPO / "benchmarks" / "results" / "anchors"


def graph_name(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".bz2", ".xz", ".mtx"):
        name = name.removesuffix(suffix)
    return name


def load_1min() -> float | None:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def read(path: Path):
    """The graph as a CSR matrix, and its count of undirected edges (self-loops left out)."""
    import scipy.io
    import scipy.sparse as sp

    a = sp.csr_matrix(scipy.io.mmread(str(path)))
    if a.shape[0] != a.shape[1]:
        raise ValueError(f"{path}: not a square matrix ({a.shape[0]} x {a.shape[1]})")
    pattern = (a != 0).astype(np.int8)
    edges = int(sp.triu(pattern + pattern.T, k=1).nnz)
    return a, edges


def measure(path: Path, sources: int, seed: int, repeat: int) -> dict:
    import scipy
    from scipy.sparse.csgraph import shortest_path

    a, edges = read(path)
    n = a.shape[0]
    sample = np.sort(np.random.default_rng(seed).choice(n, size=min(sources, n), replace=False))
    load_before = load_1min()
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        d = shortest_path(a, method="D", directed=False, indices=sample)
        runs.append(time.perf_counter() - start)
    load_after = load_1min()
    if d.shape != (len(sample), n):
        raise RuntimeError(f"shortest_path returned {d.shape}, expected {(len(sample), n)}")
    best = min(runs)
    per_source = best / len(sample)
    return {
        "benchmark": "scipy_anchor",
        "graph": graph_name(path),
        "file": str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path),
        "n": n,
        "m": edges,
        "arcs": int(a.nnz),
        "call": 'scipy.sparse.csgraph.shortest_path(A, method="D", directed=False, indices=SAMPLE)',
        "sources": len(sample),
        "seed": seed,
        "repeat": repeat,
        "runs": runs,
        "seconds": best,
        "seconds_per_source": per_source,
        "extrapolated_all_pairs_seconds": round(per_source * n, 3),
        "note": (f"extrapolated_all_pairs_seconds is an extrapolation, seconds_per_source * n, not a measured "
                 f"all-pairs run: SciPy computed {len(sample)} sampled rows of {n} (best of {repeat} calls, one "
                 f"process); all rows as float64 would take {n * n * 8 / 1e9:.3g} GB"),
        "reachable_in_sample": int(np.isfinite(d).sum()),
        "host": {
            "platform": platform.platform(),
            "cpu": _cpu_name(),
            "cores": os.cpu_count(),
            "load_average_1min_before": load_before,
            "load_average_1min_after": load_after,
        },
        "versions": {"numpy": np.__version__, "scipy": scipy.__version__, "python": platform.python_version()},
        "commit": _commit(),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Time SciPy's Dijkstra from a sample of sources.")
    parser.add_argument("graphs", nargs="*", type=Path,
                        help="Matrix Market files (default: benchmarks/data/luxembourg_osm.mtx.gz, and "
                             "roadNY.mtx.gz there when present)")
    parser.add_argument("--sources", type=int, default=256, help="sampled source vertices (default 256)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sample (default 0)")
    parser.add_argument("--repeat", type=int, default=3, help="timed calls; the best is kept (default 3)")
    parser.add_argument("--out-dir", type=Path, default=OUT_DIR, help="folder of the JSON files "
                        "(default benchmarks/results/anchors)")
    args = parser.parse_args(argv)
    if args.sources < 1 or args.repeat < 1:
        parser.error("--sources and --repeat must be at least 1")
    graphs = args.graphs or [DATA / name for name in DEFAULT_GRAPHS
                             if name == DEFAULT_GRAPHS[0] or (DATA / name).exists()]
    for path in graphs:
        if not path.is_file():
            print(f"scipy_anchor.py: error: {path}: no such file", file=sys.stderr)
            return 2
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for path in graphs:
        result = measure(path.resolve(), args.sources, args.seed, args.repeat)
        out = args.out_dir / f"scipy-{result['graph']}.json"
        tmp = out.with_name(f".{out.name}.tmp{os.getpid()}")
        tmp.write_text(json.dumps(result, indent=2) + "\n")
        os.replace(tmp, out)
        print(f"{result['graph']}: n {result['n']:,}, {result['sources']} sources in {result['seconds']:.3f} s "
              f"(best of {args.repeat}), {result['seconds_per_source'] * 1e3:.2f} ms a source, all pairs "
              f"extrapolated {result['extrapolated_all_pairs_seconds']:,.0f} s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
