"""Jet's initial partition in pieces against one METIS call, in one warm process.

Jet partitions its coarsest graph by METIS's recursive bisection.  The package makes the top
bisections first and then partitions up to eight pieces on their own, in forked workers where that
pays (``fastapsp/partition/initial.py``).  This times Jet on each graph (the cost model's k) three
ways, alternating: one METIS call for the whole coarsest graph (``PIECES = 1``, the variant), the
pieces one after the other in this process (one worker), and the pieces in forked workers (the
default); each run gives Jet's seconds, the initial partition's seconds inside it, the boundary
vertices and edge cut of the partition that Jet returns, and the vertices of every level of the
boundary graph that partition leads to (``LevelTree`` at the GPU's limits: the top level is closed
densely by every rank).

    python benchmarks/initial_pieces_bench.py --graph roadFLA=benchmarks/data/roadFLA.mtx.gz --repeat 3

``--backend numpy`` runs Jet's NumPy path (no GPU needed; the same labels, the GPU run's k);
``--seeds 42 7 3`` repeats everything for several seeds; ``--variants`` picks some of the three.  One JSON per graph under
``benchmarks/results/TAG/`` (default ``initial-pieces``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
from _common import metadata, named_graph, write_result  # noqa: E402

VARIANTS = ("whole", "pieces-here", "pieces-forked")


def main(argv=None) -> int:
    import numpy as np

    from fastapsp.cost import auto_k
    from fastapsp.io import read_graph
    from fastapsp.partition import make_partition
    from fastapsp.stages.boundary_graph import DENSE_LIMIT, SUPER_SIZE, LevelTree
    from fastapsp.partition.workers import WORKERS_ENV, worker_count

    initial = importlib.import_module("fastapsp.partition.initial")
    jet = importlib.import_module("fastapsp.partition.jet")

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph", action="append", required=True, type=named_graph, metavar="NAME=PATH")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--backend", choices=("cupy", "numpy"), default="cupy")
    parser.add_argument("--seeds", type=int, nargs="+", default=[42])
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    parser.add_argument("--tag", default="initial-pieces")
    args = parser.parse_args(argv)
    meta = metadata()
    if args.backend == "cupy":
        import cupy as xp

        def sync():
            xp.cuda.Device().synchronize()
    else:
        xp = np

        def sync():
            pass

    workers = worker_count()
    seconds_inside: list = []
    real_initial = jet.initial_labels

    def timed_initial(*a, **kw):
        start = time.perf_counter()
        labels = real_initial(*a, **kw)
        seconds_inside.append(time.perf_counter() - start)
        return labels

    jet.initial_labels = timed_initial

    def run(graph, indptr, indices, k, variant, seed=42):
        initial.PIECES = 1 if variant == "whole" else 8
        os.environ[WORKERS_ENV] = "1" if variant == "pieces-here" else str(workers)
        seconds_inside.clear()
        sync()
        start = time.perf_counter()
        labels = jet.jet_partition(indptr, indices, k, seed=seed, imbalance=0.03)
        sync()
        took = time.perf_counter() - start
        labels = np.asarray(labels.get() if hasattr(labels, "get") else labels)
        part = make_partition(graph, labels, k, method="jet", seed=seed, imbalance=0.03, seconds=took)
        tree = LevelTree(graph, part, dense_limit=DENSE_LIMIT["cupy"], super_size=SUPER_SIZE["cupy"])
        return {"variant": variant, "seed": seed, "jet_seconds": round(took, 4),
                "initial_seconds": round(seconds_inside[0], 4), "boundary_vertices": int(part.boundary.sum()),
                "edge_cut": part.edge_cut, "level_sizes": tree.level_sizes}

    warm = read_graph(REPO / "tests" / "data" / "minnesota.mtx.gz")
    wp, wi = warm.undirected_adjacency()
    for variant in VARIANTS:  # every code path used once before any timing
        run(warm, xp.asarray(wp), xp.asarray(wi), 8, variant)
    for label, path in args.graph:
        graph = read_graph(path, cache="auto")
        k = auto_k(graph, backend="cupy", partitioner="jet")["k"]  # the k of a GPU run, whichever path runs Jet
        indptr, indices = (xp.asarray(a) for a in graph.undirected_adjacency())
        runs = []
        for seed in args.seeds:
            for repeat in range(args.repeat):
                for variant in args.variants:
                    runs.append({"repeat": repeat, **run(graph, indptr, indices, k, variant, seed)})
                    print(label, k, runs[-1], flush=True)
        summary = {}
        for variant in args.variants:
            mine = [r for r in runs if r["variant"] == variant]
            summary[variant] = {key: float(np.median([r[key] for r in mine]))
                                for key in ("jet_seconds", "initial_seconds", "boundary_vertices")}
        write_result({"benchmark": "initial_pieces_bench", "graph": label, "path": str(path), "n": graph.n,
                      "m": graph.m, "k": k, "partitioner": "jet", "backend": args.backend, "workers": workers,
                      "runs": runs, "median": summary, "metadata": meta},
                     folder=REPO / "benchmarks" / "results" / args.tag, name=f"{label}.json")
    jet.initial_labels = real_initial
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
