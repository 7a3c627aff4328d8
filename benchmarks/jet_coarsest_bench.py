"""Jet's coarsest graph: how many vertices per part it keeps, against time and boundary.

Jet coarsens on the GPU until about ``COARSEST_PER_PART * k`` vertices are
left and partitions that graph with METIS on the host (``_initial_partition``),
which on a million-vertex road network with k near 1,000 is most of Jet's
time.  For each value of ``--per-part`` this runs ``partition_graph(...,
"jet")`` (after one untimed run), and prints and saves the seconds of the
call, of METIS on the coarsest graph, and the boundary vertices and edge cut::

    python3 benchmarks/jet_coarsest_bench.py benchmarks/data/roadFLA.mtx.gz --k 1045 --per-part 30 20 10 --tag T
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
from _common import RESULTS, write_result  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graph")
    parser.add_argument("--k", type=int, required=True)
    parser.add_argument("--per-part", dest="per_part", type=int, nargs="+", default=[30, 20, 10])
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--tag", default=None)
    args = parser.parse_args(argv)

    import importlib

    import cupy

    from fastapsp.io import read_graph
    from fastapsp.partition import partition_graph

    jet = importlib.import_module("fastapsp.partition.jet")  # the module (the package's `jet` is its function)

    graph = read_graph(args.graph)
    metis_seconds = []
    initial = jet._initial_partition

    def timed_initial(*a, **kw):
        start = time.perf_counter()
        labels = initial(*a, **kw)
        metis_seconds.append(time.perf_counter() - start)
        return labels

    jet._initial_partition = timed_initial
    rows = []
    default = jet.COARSEST_PER_PART
    for per_part in args.per_part:
        jet.COARSEST_PER_PART = per_part
        for run in range(2):  # the first one compiles and warms up
            metis_seconds.clear()
            cupy.cuda.Device().synchronize()
            start = time.perf_counter()
            part = partition_graph(graph, args.k, "jet", seed=args.seed, backend="cupy")
            seconds = time.perf_counter() - start
        metrics = part.metrics()
        row = {"per_part": per_part, "seconds": seconds, "partition_seconds": part.seconds,
               "metis_coarsest_seconds": sum(metis_seconds), "boundary_vertices": metrics["boundary_vertices"],
               "edge_cut": metrics["edge_cut"], "largest_part": metrics["largest_part"]}
        rows.append(row)
        print(" ".join(f"{key} {value:.3f}" if isinstance(value, float) else f"{key} {value}"
                       for key, value in row.items()), flush=True)
    jet.COARSEST_PER_PART = default
    if args.tag:
        write_result({"benchmark": "jet_coarsest_bench", "graph": Path(args.graph).name, "n": graph.n, "k": args.k,
                      "results": rows}, folder=RESULTS / args.tag, name=f"jet-coarsest-{Path(args.graph).name}.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
