"""The local closures of a run (every component closed over its own arcs, the ``local_fw`` stage of the
boundary-graph method) with phase 3 in packed 16-bit arithmetic (``fw_u16.cu``) and in float32.

For each ``--graph NAME=PATH`` the graph is partitioned (METIS, ``--k`` or the cost model's k) and its
components closed as a run closes them (``close_components`` in batches), timed on the GPU by CUDA
events, both ways; the closures are compared entry by entry.  Whether a run packs them is decided by
``closures_packed`` (whole-number weights, no distance inside a component past the 16-bit limit); the
bench runs the packed kernels on every graph with whole-number weights and says what the run would do.

    python benchmarks/closures_bench.py --graph luxembourg_osm=benchmarks/data/luxembourg_osm.mtx.gz \\
        --out benchmarks/results/closures
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, event_seconds, write_result  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graph", action="append", required=True, help="NAME=PATH, or NAME=PATH:K")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", default=str(RESULTS / "closures"))
    args = parser.parse_args(argv)

    import cupy as cp

    import fastapsp
    from fastapsp.backend import device_csr
    from fastapsp.components import nonempty
    from fastapsp.cost import auto_k
    from fastapsp.stages.boundary_graph import close_components
    from fastapsp.stages.min_plus import closures_packed

    records = []
    for spec in args.graph:
        name, _, rest = spec.partition("=")
        path, _, k = rest.partition(":")
        graph = fastapsp.read_graph(path)
        if not graph.integer_weights:
            print(f"{name}: weights not whole numbers, nothing to pack")
            continue
        k = int(k) if k else auto_k(graph, backend="cupy")["k"]
        part = fastapsp.partition_graph(graph, k, "metis")
        csr = device_csr(graph, cp)
        comps = [p for p in nonempty(part) if part.sizes[p] > 1]
        # Batches of about 256 MB of matrices, as a run closes them.
        batches, batch, size = [], [], 0
        for p in comps:
            batch.append(p)
            size += int(part.sizes[p]) ** 2 * 4
            if size > 256 << 20:
                batches.append(batch)
                batch, size = [], 0
        if batch:
            batches.append(batch)
        seconds, results = {}, {}
        for packed in (False, True):
            def close(packed=packed):
                return [close_components(*csr, part, b, dtype=np.float32, packed=packed) for b in batches]
            seconds[packed] = event_seconds(cp, close, args.repeat)
            results[packed] = close()
        same = all(bool(cp.array_equal(a[p], b[p])) for a, b in zip(results[False], results[True]) for p in a)
        relax = float((part.sizes.astype(np.float64) ** 3).sum())
        record = {"graph": name, "n": graph.n, "m": graph.m, "k": int(k), "partitioner": "metis",
                  "largest": int(part.sizes.max()), "max_weight": float(graph.weights.max()),
                  "run_packs": bool(closures_packed(graph, part, cp)),
                  "float32_seconds": seconds[False], "packed_seconds": seconds[True],
                  "speedup": seconds[False] / seconds[True], "same": same,
                  "float32_T_relax_per_s": relax / seconds[False] / 1e12,
                  "packed_T_relax_per_s": relax / seconds[True] / 1e12}
        records.append(record)
        print(f"{name} k={k} largest={record['largest']}: float32 {seconds[False] * 1e3:.2f} ms, packed "
              f"{seconds[True] * 1e3:.2f} ms ({record['speedup']:.2f}x), same={same}, run packs: "
              f"{record['run_packs']}", flush=True)
    path = write_result({"benchmark": "closures_bench", "records": records}, args.out, "closures")
    print(f"wrote {path}")
    return 0 if all(r["same"] for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
