"""The boundary-graph method with other limits of the dense top level, on one partition.

``DENSE_LIMIT`` (fastapsp/stages/boundary_graph.py) is the largest boundary graph closed by one
dense Floyd-Warshall; above it the boundary vertices are gathered into super-groups and the
construction repeats one level up.  This times ``run_components`` (``--output none``) with each
limit given, on the same graph and partition, in one process (the first run also warms the
kernels and is not counted), and checks that every limit gives the same row blocks' checksum.

    python benchmarks/dense_limit_bench.py GRAPH.mtx.gz --limits 16384 24576 --tag h100-dense

One JSON under benchmarks/results/TAG/.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
from _common import RESULTS, metadata, write_result  # noqa: E402


def main(argv=None) -> int:
    import cupy as cp
    import numpy as np

    import fastapsp
    from fastapsp.cost import auto_k
    from fastapsp.partition import partition_graph
    from fastapsp.timing import StageTimer
    from fastapsp.components import run_components
    from fastapsp.sink import NullSink
    from fastapsp.stages import boundary_graph

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graph")
    parser.add_argument("--limits", type=int, nargs="+", default=[16384, 24576])
    parser.add_argument("--k", type=int, default=None, help="default: the cost model's")
    parser.add_argument("--tag", default="gpu")
    args = parser.parse_args(argv)
    graph = fastapsp.read_graph(args.graph)
    k = auto_k(graph, backend="cupy")["k"] if args.k is None else args.k
    part = partition_graph(graph, k, "auto", backend="cupy")
    print(f"{graph.name}: n={graph.n} k={k} {part.method} boundary={int(part.boundary.sum())}", flush=True)
    rows = []
    for limit in [args.limits[0], *args.limits]:  # the first run warms the kernels
        boundary_graph.DENSE_LIMIT["cupy"] = limit
        sums = []

        def checksum(ids, start, block):
            finite = cp.where(cp.isfinite(block), block, 0)
            sums.append(float(finite.astype(cp.float64).sum()))

        timer = StageTimer(cp)
        start = time.perf_counter()
        run_components(graph, part, range(part.k), backend="cupy", sink=NullSink(), dtype=np.float32,
                       boundary_rows="boundary-graph", timer=timer, on_block=checksum)
        cp.cuda.Device().synchronize()
        seconds = time.perf_counter() - start
        rows.append({"dense_limit": limit, "seconds": round(seconds, 4),
                     "stages": {s: round(v, 4) for s, v in timer.seconds.items() if v},
                     "checksum": math.fsum(sums)})  # the order of the blocks may differ
        print(f"dense limit {limit}: {seconds:.2f} s {rows[-1]['stages']} checksum {rows[-1]['checksum']:.6e}",
              flush=True)
    rows = rows[1:]
    same = len({r["checksum"] for r in rows}) == 1
    print(f"same row blocks (checksum) for every limit: {same}")
    write_result({"benchmark": "dense_limit_bench", "graph": graph.name, "n": graph.n, "k": k,
                  "partitioner": part.method, "boundary_vertices": int(part.boundary.sum()), "runs": rows,
                  "same_checksum": same, "metadata": metadata()},
                 folder=RESULTS / args.tag, name=f"{graph.name}-dense-limit.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
