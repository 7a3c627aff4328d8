"""Device seconds of the boundary-graph method's per-component steps, one by one.

A run of the pipeline times whole stages; this takes them apart on one graph:
the local closures, the boundary graph, the batches of boundary rows (the
super-group's rows gathered, the grouped min-plus) and their columns put back
in vertex order, then for every component the extract, the min-plus and the
assembly, each timed on the device with a pair of events (nothing else
queued beside it).  Prints the total of each step over all components::

    python3 benchmarks/boundary_rows_bench.py benchmarks/data/roadFLA.mtx.gz --k 1045 --tag T
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
from _common import RESULTS, write_result  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graph")
    parser.add_argument("--k", type=int, required=True)
    parser.add_argument("--partitioner", default="jet")
    parser.add_argument("--tag", default=None)
    parser.add_argument("--profile", action="store_true",
                        help="also print where the host's time goes while the boundary graph is built (cProfile)")
    parser.add_argument("--no-rows", dest="rows", action="store_false", help="stop after the boundary graph")
    args = parser.parse_args(argv)

    import cupy as cp

    from fastapsp.io import read_graph
    from fastapsp.partition import partition_graph
    from fastapsp.components import local_closures
    from fastapsp.stages import assemble_row_block, extract_inner_to_boundary, min_plus
    from fastapsp.stages.boundary_graph import BoundaryGraph

    graph = read_graph(args.graph)
    part = partition_graph(graph, args.k, args.partitioner, seed=42, backend="cupy")
    seconds = defaultdict(float)

    def timed(name, fn, *a, **kw):
        begin, end = cp.cuda.Event(), cp.cuda.Event()
        begin.record()
        out = fn(*a, **kw)
        end.record()
        end.synchronize()
        seconds[name] += cp.cuda.get_elapsed_time(begin, end) / 1e3
        return out

    dtype = np.float32
    everything = [p for p in range(part.k) if part.sizes[p] > 0]
    closed, blocks = timed("local_closures", local_closures, graph, part, everything, backend="cupy", dtype=dtype)
    levels = timed("boundary_graph", BoundaryGraph, graph, part, blocks, cp, dtype)
    print(f"levels: {levels.level_sizes}", flush=True)
    if args.profile:  # again, under the profiler (the kernels are loaded by now)
        import cProfile
        import pstats

        profile = cProfile.Profile()
        profile.enable()
        BoundaryGraph(graph, part, blocks, cp, dtype)
        cp.cuda.Device().synchronize()
        profile.disable()
        pstats.Stats(profile).sort_stats("tottime").print_stats(25)
    # The steps of BoundaryGraph.boundary_rows, timed apart: the batches of rows (super-group rows
    # gathered, grouped min-plus), then their columns put in vertex order; then each component's own steps.
    batches = levels._row_batches(0, everything if args.rows else [])
    while True:
        item = timed("rows/batches", next, batches, None)
        if item is None:
            break
        batch, rows = item
        rows = timed("rows/to_vertex_order", cp.take, rows, levels._position_dev, axis=1)
        for p, first, last in batch:
            rows_b = rows[first:last]
            vertices_host, nb = part.component(p)
            vertices = cp.asarray(vertices_host)
            matrix = closed[p]
            inner = timed("extract", extract_inner_to_boundary, matrix, nb)
            block = cp.empty((vertices.size, graph.n), dtype=dtype)
            timed("min_plus", min_plus, inner, rows_b, out=block[nb:], integer=graph.integer_weights)
            timed("assemble", assemble_row_block, block, rows_b, matrix, vertices, nb, column_start=0, minimum=True)
            del block, rows_b
    total = sum(seconds.values())
    for name, sec in seconds.items():
        print(f"{name:28s} {sec:8.3f} s  {100 * sec / total:5.1f}%")
    if args.tag:
        write_result({"benchmark": "boundary_rows_bench", "graph": Path(args.graph).name, "n": graph.n, "k": args.k,
                      "partitioner": args.partitioner, "boundary_vertices": int(part.boundary.sum()),
                      "seconds": dict(seconds)}, folder=RESULTS / args.tag,
                     name=f"boundary-rows-{Path(args.graph).name.split('.')[0]}.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
