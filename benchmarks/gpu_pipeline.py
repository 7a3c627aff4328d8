"""End-to-end timing of ``fastapsp solve`` (process start to exit), one JSON per run.

Each configuration runs the real command line in a fresh process, so reading,
partitioning, CuPy start-up and the kernel cache are all inside the time, as a
user sees them.  A warm-up solve first fills the kernel cache.  The per-stage
seconds come from the run's ``--report`` (maximum over ranks).  An exactness
check (``--check``) compares the rows of sampled components, computed in-process
on the same backend, with SciPy's Dijkstra.

    python benchmarks/gpu_pipeline.py --graph luxembourg_osm=PATH --k 16 32 64 \
        --outputs none memory --commit $(git rev-parse HEAD)

Results: ``benchmarks/results/<tag>/<graph>-k<k>-<output>-r<ranks>.json`` with keys
graph, n, m, k, partitioner, backend, device, ranks, output, total_seconds,
solve_seconds, stages, commit, metadata; and ``summary.json`` beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, metadata, named_graph, write_result  # noqa: E402


# Modes besides none and memory: "stats" is --output none plus --stats (to compare with "none"); "sources1000" computes
# the rows of 1,000 random sources (--sources random:1000, kept in memory).
MODES = {"none": ["--output", "none"], "memory": ["--output", "memory"],
         "stats": ["--output", "none", "--stats", "{tmp}/stats"],
         "sources1000": ["--output", "memory", "--sources", "random:1000"]}


def run_solve(launcher, graph_path, k, output, partitioner, backend, report, method="auto", verify=0):
    mode = [a.replace("{tmp}", str(Path(report).parent)) for a in MODES[output]]
    cmd = [*launcher, sys.executable, "-m", "fastapsp", "solve", str(graph_path), "--partitioner", partitioner,
           "--backend", backend, *mode, "--report", str(report), "--quiet", "--sssp-method", method]
    if verify:  # sampled rows of the run itself, each checked by the rank that made it (fastapsp/verify.py)
        cmd += ["--verify", str(verify)]
    if k is not None:
        cmd += ["-k", str(k)]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"benchmark: {' '.join(cmd)} failed: {proc.stderr.strip()}")
    return seconds, json.loads(Path(report).read_text())


def check_exact(graph_path, k, partitioner, backend, samples, seed=0, rows=256, method="frontier"):
    """``rows`` random rows of ``samples`` random components against SciPy Dijkstra.

    Integer weights must match exactly.  Real weights are summed in float32
    by fastapsp and in float64 by SciPy, in other orders: there the check
    allows a relative error of 1e-5 (a few float32 roundings along a path).

    Returns (exact, max abs error, max relative error, rows checked).
    """
    from scipy.sparse.csgraph import dijkstra

    import fastapsp
    from fastapsp.partition import partition_graph
    from fastapsp.components import run_components

    from fastapsp.cost import default_k

    graph = fastapsp.read_graph(graph_path)
    part = partition_graph(graph, default_k(graph.n) if k is None else k, partitioner, backend=backend)
    rng = np.random.default_rng(seed)
    picked = rng.choice(np.flatnonzero(part.sizes > 0), size=samples, replace=False)

    from fastapsp.sink import NullSink

    class Rows(NullSink):
        needs_host = True

        def __init__(self):
            self.rows = {}

        def write(self, vertices, start, block):
            for a, v in enumerate(vertices):
                self.rows.setdefault(int(v), np.empty(graph.n, dtype=block.dtype))[start:start + block.shape[1]] = block[a]

    sink = Rows()
    if method == "auto":
        from fastapsp.cost import choose_boundary_rows, predict

        method = choose_boundary_rows(predict(part.sizes, part.boundary_per_part, graph.n, graph.m,
                                       unit_weights=graph.unit_weights, backend=backend))
    run_components(graph, part, picked, backend=backend, sink=sink, dtype=np.float32, boundary_rows=method)
    # SciPy from every row would take minutes: compare a random sample of the computed rows.
    verts = np.sort(rng.choice(np.array(sorted(sink.rows)), size=min(rows, len(sink.rows)), replace=False))
    ref = dijkstra(graph.to_scipy(), indices=verts).astype(np.float32)
    got = np.stack([sink.rows[v] for v in verts])
    return (*compare_rows(graph, ref, got), int(verts.size))


def check_sources(graph_path, spec, backend, seed=0, rows=32):
    """The rows of ``--sources SPEC``, computed in-process as the CLI computes them, against SciPy's Dijkstra.

    ``rows`` of them, picked at random, compared as in :func:`check_exact`.
    Returns (exact, max abs error, max relative error, rows checked).
    """
    from scipy.sparse.csgraph import dijkstra

    import fastapsp
    from fastapsp.sources import parse_sources

    graph = fastapsp.read_graph(graph_path)
    got = fastapsp.solve(graph, sources=spec, backend=backend)
    ids = parse_sources(spec, graph.n)
    pick = np.sort(np.random.default_rng(seed).choice(ids.size, size=min(rows, ids.size), replace=False))
    ref = dijkstra(graph.to_scipy(), indices=ids[pick]).astype(got.dtype)
    return (*compare_rows(graph, ref, got[pick]), int(pick.size))


def compare_rows(graph, ref, got):
    """(exact, max abs error, max relative error) of rows ``got`` against SciPy's ``ref`` (see :func:`check_exact`)."""
    finite = np.isfinite(ref)
    same_inf = np.array_equal(np.isinf(ref), np.isinf(got))
    err = float(np.max(np.abs(ref[finite] - got[finite]))) if finite.any() else 0.0
    rel = float(np.max(np.abs(ref[finite] - got[finite]) / np.maximum(ref[finite], 1e-30))) if finite.any() else 0.0
    integer = bool(np.all(graph.weights == np.round(graph.weights)))
    ok = same_inf and (err == 0.0 if integer else rel <= 1e-5)
    return bool(ok), err, rel


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph", action="append", required=True, type=named_graph, metavar="NAME=PATH")
    parser.add_argument("--k", nargs="+", required=True, help="values of k, or 'auto' for fastapsp's default")
    parser.add_argument("--sssp-method", dest="methods", nargs="+", default=["auto"],
                        choices=["auto", "frontier", "boundary-graph"])
    parser.add_argument("--outputs", nargs="+", default=["none"], choices=sorted(MODES))
    parser.add_argument("--partitioner", default="auto", help="default: fastapsp's own (auto)")
    parser.add_argument("--backend", default="cupy")
    parser.add_argument("--launcher", default="", help="e.g. 'mpirun -n 2 --allow-run-as-root'")
    parser.add_argument("--ranks", type=int, default=1)
    parser.add_argument("--check", type=int, default=2, help="components per graph checked against SciPy (0: none)")
    parser.add_argument("--warmup", default=str(REPO / "tests" / "data" / "minnesota.mtx.gz"))
    parser.add_argument("--check-rows", dest="check_rows", type=int, default=32,
                        help="rows of the checked components compared with SciPy (Dijkstra on the CPU)")
    parser.add_argument("--verify", type=int, default=0, metavar="N",
                        help="pass --verify N to every timed run: N sampled rows of the run itself against SciPy, "
                             "on the ranks that made them; the check's seconds are recorded apart (verify_seconds)")
    parser.add_argument("--tag", default="gpu")
    parser.add_argument("--commit", default=os.environ.get("FASTAPSP_COMMIT"))
    args = parser.parse_args(argv)
    args.k = [None if k == "auto" else int(k) for k in args.k]

    launcher = shlex.split(args.launcher)
    meta = metadata()
    if args.commit:
        meta["commit"] = args.commit
    tmp = Path(tempfile.mkdtemp())
    if args.warmup:
        for method in ("frontier", "boundary-graph"):
            run_solve(launcher, args.warmup, 4, "none", args.partitioner, args.backend, tmp / "warm.json", method)
        if args.backend != "numpy" and args.partitioner == "auto":  # auto may mean Jet: its kernels too
            run_solve(launcher, args.warmup, 4, "none", "jet", args.backend, tmp / "warm.json", "boundary-graph")
    rows = []
    for name, path in args.graph:
        for output, k, method in [(o, k, m) for o in args.outputs for k in args.k for m in args.methods]:
            if True:
                seconds, report = run_solve(launcher, path, k, output, args.partitioner, args.backend,
                                            tmp / "r.json", method, verify=args.verify)
                k = report["k"]  # with --k auto, the k the cost model chose: the check uses the same
                exact = None
                spec = next((MODES[output][i + 1] for i, a in enumerate(MODES[output]) if a == "--sources"), None)
                if args.check and spec is not None:  # the rows of the sources themselves (there may be no partition)
                    ok, err, rel, nrows = check_sources(path, spec, args.backend, rows=args.check_rows)
                    print(f"{name}: {nrows} sampled rows of --sources {spec} vs SciPy: exact={ok} max|err|={err:.3g}",
                          flush=True)
                    exact = {"exact": ok, "max_abs_error": err, "max_rel_error": rel, "rows_checked": nrows,
                             "sources": spec}
                elif args.check:
                    ok, err, rel, nrows = check_exact(path, k, args.partitioner, args.backend, args.check, rows=args.check_rows,
                                                      method=method)
                    exact = {"exact": ok, "max_abs_error": err, "max_rel_error": rel, "rows_checked": nrows,
                             "k": k, "sssp_method": method}
                    print(f"{name}: {nrows} sampled rows of {args.check} components vs SciPy ({method}): "
                          f"exact={ok} max|err|={err:.3g} rel={rel:.3g}", flush=True)
                result = {
                    "graph": name, "n": report["n"], "m": report["m"], "k": k, "partitioner": report["partitioner"],
                    "partitioner_asked": args.partitioner,
                    "backend": report["backend"], "device": report["device"], "ranks": report["ranks"],
                    "output": output, "total_seconds": round(seconds, 4),
                    "solve_seconds": report["total_seconds"], "stages": report["stages"],
                    "boundary_vertices": report["boundary_vertices"], "edge_cut": report["edge_cut"],
                    "exactness_check": exact, "commit": meta["commit"], "metadata": meta,
                    "sssp_method": report.get("sssp_method"), "sssp_method_asked": method,
                    "predicted_seconds": report.get("predicted_seconds"), "dtype": report.get("dtype"),
                    "k_choice": report.get("k_choice"), "sources_method": report.get("sources_method"),
                    "startup_seconds": report.get("startup_seconds"), "rank_seconds": report.get("rank_seconds"),
                    "local_closures": report.get("local_closures"),
                    # the boundary graph's upper levels, level by level on every rank (close, exchange, make)
                    "upper_levels": report.get("upper_levels"), "packed_16bit": report.get("packed_16bit"),
                }
                if args.verify:
                    result["verified_in_run"] = {key: report.get(key) for key in
                                                 ("verified_rows", "verify_max_rel_error", "verify_seconds")}
                write_result(result, folder=f"benchmarks/results/{args.tag}",
                             name=f"{name}-k{k}-{output}-{method}-r{report['ranks']}")
                rows.append(result)
                top = max((s for s in report["stages"] if s not in ("read", "partition")),
                          key=lambda s: report["stages"][s])
                how = report.get("sssp_method") if report.get("sources_method") in (None, "pipeline") else "sssp-rows"
                print(f"{name:16s} k={k:<3d} {output:6s} {how} ranks={report['ranks']} total {seconds:7.2f} s "
                      f"(solve {report['total_seconds']:.2f} s; top stage {top} {report['stages'][top]:.2f} s)",
                      flush=True)
    summary = {}
    for r in rows:
        key = f"{r['graph']}/{r['output']}/{r['sssp_method_asked']}/r{r['ranks']}"
        summary.setdefault(key, []).append(r["total_seconds"])
    summary = {key: {"mean_total_seconds": round(float(np.mean(v)), 3), "runs": v} for key, v in summary.items()}
    write_result({"benchmark": "gpu_pipeline", "summary": summary, "commit": meta["commit"], "metadata": meta},
                 folder=f"benchmarks/results/{args.tag}",
                 name=f"summary-{'+'.join(name for name, _ in args.graph)}-r{args.ranks}")
    for key, value in summary.items():
        print(f"mean {key}: {value['mean_total_seconds']:.2f} s over {len(value['runs'])} runs")


if __name__ == "__main__":
    main()
