"""Jet against METIS in one warm process: the partitioner's own seconds and the whole library call.

``--partitioner auto`` takes METIS below ``AUTO_JET_FROM`` vertices, a threshold set from whole
command-line runs, where Jet's first use in the process also waits for the GPU to start.  This times,
in one process that has already used the GPU, ``partition_graph`` with each partitioner (the cost
model's k for the graph, several repeats) and the call a library user makes
(``fastapsp.stats(g, partitioner=...)``), and records the boundary vertices of each partition.

    python benchmarks/partition_warm_bench.py --graph roadNY=benchmarks/data/roadNY.mtx.gz --repeat 3

One JSON per graph under ``benchmarks/results/TAG/`` (default ``partition-warm``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
from _common import metadata, named_graph, write_result  # noqa: E402


def main(argv=None) -> int:
    import cupy as cp

    import fastapsp
    from fastapsp.cost import auto_k
    from fastapsp.io import read_graph
    from fastapsp.partition import partition_graph

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph", action="append", required=True, type=named_graph, metavar="NAME=PATH")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--partitioners", nargs="+", default=["metis", "jet"])
    parser.add_argument("--tag", default="partition-warm")
    args = parser.parse_args(argv)
    meta = metadata()

    def sync():
        cp.cuda.Device().synchronize()

    warm = read_graph(REPO / "tests" / "data" / "minnesota.mtx.gz")
    for name in args.partitioners:  # the GPU started and every partitioner used once before any timing
        partition_graph(warm, 8, name, backend="cupy")
    fastapsp.stats(warm, backend="cupy")
    sync()
    for label, path in args.graph:
        graph = read_graph(path, cache="auto")
        k = auto_k(graph, backend="cupy")["k"]
        runs = []
        for name in args.partitioners:
            for repeat in range(args.repeat):
                sync()
                start = time.perf_counter()
                part = partition_graph(graph, k, name, backend="cupy")
                sync()
                seconds = time.perf_counter() - start
                runs.append({"what": "partition_graph", "partitioner": name, "repeat": repeat,
                             "seconds": round(seconds, 6), "boundary_vertices": int(part.boundary.sum())})
            for repeat in range(args.repeat):
                sync()
                start = time.perf_counter()
                fastapsp.stats(graph, backend="cupy", k=k, partitioner=name)
                sync()
                runs.append({"what": "stats", "partitioner": name, "repeat": repeat,
                             "seconds": round(time.perf_counter() - start, 6)})
        for run in runs:
            print(f"{label:16s} k={k:<5d} {run['what']:16s} {run['partitioner']:6s} {run['seconds']:8.3f} s "
                  f"{run.get('boundary_vertices', '')}", flush=True)
        write_result({"benchmark": "partition_warm", "graph": label, "n": graph.n, "m": graph.m, "k": k,
                      "device": meta.get("device"), "commit": meta.get("commit"), "runs": runs, "metadata": meta},
                     folder=f"benchmarks/results/{args.tag}", name=f"partition-warm-{label}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
