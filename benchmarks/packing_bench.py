"""Packed 16-bit min-plus against float32 on real boundary rows, where some distances pass 16,383.

For a few components of a real partition, the component's boundary rows (its
boundary vertices' distances to every vertex, by the GPU's boundary SSSP) and
its interior rows' distances to the boundary (the same rows read by column: the
graph must be undirected) make the operands of the product a run computes.
Each product is timed with whole-number packing (``min_plus_cuda(...,
integer=True)``: 16-bit tiles, a tile falling back to float32 inside the packed
kernel where an operand does not fit) and in float32, beside the share of tiles
that fell back and the decision of :class:`fastapsp.stages.min_plus.Packing` on
the same rows.  One JSON under ``benchmarks/results/TAG/``.

    python benchmarks/packing_bench.py --graph grid512-int=benchmarks/data/family/grid512-int.mtx --k 304
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
from _common import RESULTS, event_seconds, named_graph, write_result  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph", required=True, type=named_graph, metavar="NAME=PATH",
                        help="undirected, whole-number weights")
    parser.add_argument("--k", type=int, required=True, help="components of the METIS partition")
    parser.add_argument("--components", type=int, default=8, help="components timed (spread over the k)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--tag", default="packing")
    args = parser.parse_args()

    import cupy as cp

    from fastapsp import read_graph
    from fastapsp.backend import device_csr
    from fastapsp.partition import partition_graph
    from fastapsp.stages import boundary_sssp
    from fastapsp.stages._cuda import min_plus_cuda
    from fastapsp.stages.min_plus import U16_LIMIT, Packing

    name, path = args.graph
    graph = read_graph(path)
    if graph.directed or not graph.integer_weights:
        raise SystemExit(f"{name}: needs an undirected graph with whole-number weights")
    part = partition_graph(graph, args.k, "metis")
    indptr, indices, weights = device_csr(graph, cp)
    picked = [int(p) for p in np.linspace(0, part.k - 1, args.components).round()]
    rows = []
    for p in picked:
        vertices, nb = part.component(p)
        if nb == 0 or nb == vertices.size:
            continue
        b = boundary_sssp(indptr, indices, weights, cp.asarray(vertices[:nb]), dtype=np.float32,
                          unit_weights=graph.unit_weights)
        a = cp.ascontiguousarray(b[:, cp.asarray(vertices[nb:])].T)  # undirected: d(i, b) = d(b, i)
        out = cp.empty((a.shape[0], graph.n), dtype=cp.float32)
        packed = event_seconds(cp, lambda: min_plus_cuda(a, b, out, False, True), args.repeat)
        plain = event_seconds(cp, lambda: min_plus_cuda(a, b, out, False, False), args.repeat)
        text = io.StringIO()
        with contextlib.redirect_stderr(text):
            min_plus_cuda(a, b, out, False, True, count_fallbacks=True)
        found = re.search(r"(\d+) of (\d+) tiles", text.getvalue())
        fell, tiles = (int(found.group(1)), int(found.group(2))) if found else (None, None)
        finite = b[cp.isfinite(b)]
        item = {"component": p, "M": int(a.shape[0]), "K": int(nb), "N": graph.n,
                "packed_seconds": packed, "float32_seconds": plain, "packed_over_float32": packed / plain,
                "fallback_tiles": fell, "tiles": tiles,
                "share_above_limit": float((finite > U16_LIMIT).mean()) if finite.size else 0.0,
                "rule_packs": bool(Packing(True)(b))}
        rows.append(item)
        print(f"{name} component {p}: M={item['M']} K={nb} packed {packed * 1e3:.2f} ms, float32 "
              f"{plain * 1e3:.2f} ms ({item['packed_over_float32']:.2f}x), fell back {fell}/{tiles}, "
              f"above the limit {item['share_above_limit']:.3f}, rule packs: {item['rule_packs']}")
    record = {"benchmark": "packing_bench", "graph": name, "n": graph.n, "k": args.k, "repeat": args.repeat,
              "components": rows}
    write_result(record, folder=RESULTS / args.tag, name=f"packing-{name}.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
