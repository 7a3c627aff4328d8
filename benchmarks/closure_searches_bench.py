"""The local closures of the boundary-graph method on the GPU: Floyd-Warshall against breadth-first searches.

For each graph (its arcs all weighing 1), the partition of a ``fastapsp.plan(g, stats=True)`` and the
closures of all its components, timed with CUDA events (best of the repeats): the matrices built
alone (``build_local_batch``), built and closed by the blocked Floyd-Warshall, and made by the
searches (``closure_bfs_batch``, which builds its own rows); the two closures compared entry by
entry.  One JSON under ``--out``.

    python benchmarks/closure_searches_bench.py --graph lux=benchmarks/data/luxembourg_osm.mtx.gz
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, event_seconds, named_graph, write_result  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graph", action="append", required=True, type=named_graph, metavar="NAME=PATH")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", default=str(RESULTS / "closure-searches"))
    args = parser.parse_args(argv)

    import cupy as cp

    import fastapsp
    from fastapsp.backend import device_csr
    from fastapsp.stages import _cuda
    from fastapsp.stages.boundary_graph import close_components

    records = []
    for name, path in args.graph:
        graph = fastapsp.read_graph(path)
        if not graph.unit_weights:
            print(f"{name}: arcs of other weights than 1, skipped", flush=True)
            continue
        part = fastapsp.plan(graph, backend="cupy", stats=True).partition
        comps = [p for p in range(part.k) if part.sizes[p]]
        csr = device_csr(graph, cp)
        close = lambda searches: close_components(*csr, part, comps, dtype=np.float32, unit_weights=searches,  # noqa: E731
                                                  host_csr=(graph.indptr, graph.indices))
        record = {"graph": name, "n": graph.n, "m": graph.m, "k": part.k, "largest": int(part.sizes.max()),
                  "build": event_seconds(cp, lambda: _cuda.build_local_batch_cuda(*csr, part, comps, np.float32),
                                         args.repeat),
                  "floyd_warshall": event_seconds(cp, lambda: close(False), args.repeat),
                  "searches": event_seconds(cp, lambda: close(True), args.repeat)}
        a, b = close(False), close(True)
        record["same"] = all(bool(cp.array_equal(a[p], b[p])) for p in comps)
        del a, b
        records.append(record)
        print(f"{name} k={part.k} largest {record['largest']}: build {record['build'] * 1e3:.2f} ms, build + "
              f"Floyd-Warshall {record['floyd_warshall'] * 1e3:.2f} ms, searches {record['searches'] * 1e3:.2f} ms, "
              f"same {record['same']}", flush=True)
    write_result({"benchmark": "closure_searches_bench", "records": records}, folder=args.out,
                 name="closure-searches.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
