"""The min-plus kernels on the operands a real run gives them, float32 against packed 16-bit.

Runs the boundary-graph pipeline on a graph (``--output none``) with the
min-plus product recorded: the operands of the first ``--keep`` calls are kept
(views as the pipeline passes them).  Each kept call is then timed with the
float32 kernel (``min_plus.cu``) and the packed one (``min_plus_u16.cu``): on the
operands as they are, with the left operand copied to a contiguous array, with
the right operand contiguous, and with a fresh output array, to find what makes
the two kernels differ inside a run and alone.

    python benchmarks/minplus_inrun_bench.py --graph roadFLA=benchmarks/data/roadFLA.mtx.gz --k 1045
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
from _common import RESULTS, event_seconds, write_result  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph", required=True, help="NAME=PATH")
    parser.add_argument("--k", type=int, required=True)
    parser.add_argument("--keep", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--tag", default="minplus-inrun")
    args = parser.parse_args()

    import cupy as cp

    import fastapsp.stages._cuda as cuda_stages
    from fastapsp import read_graph
    from fastapsp.partition import partition_graph
    from fastapsp.components import run_components
    from fastapsp.sink import NullSink

    name, path = args.graph.split("=", 1)
    graph = read_graph(path)
    partition = partition_graph(graph, args.k, "metis")
    kept = []
    original = cuda_stages.min_plus_cuda

    def recording(a, b, out, accumulate, integer=False):
        if len(kept) < args.keep:
            kept.append((a, b, out, accumulate, integer))
        return original(a, b, out, accumulate, integer)

    cuda_stages.min_plus_cuda = recording
    components = list(range(args.keep + 2))
    run_components(graph, partition, components, backend="cupy", sink=NullSink(), boundary_rows="boundary-graph")
    cuda_stages.min_plus_cuda = original

    rows = []
    for a, b, out, accumulate, integer in kept:
        shapes = {"M": a.shape[0], "K": a.shape[1], "N": b.shape[1], "lda": a.strides[0] // a.itemsize,
                  "ldb": b.strides[0] // b.itemsize, "ldc": out.strides[0] // out.itemsize,
                  "a_contiguous": bool(a.flags.c_contiguous), "b_contiguous": bool(b.flags.c_contiguous)}
        for label, x in (("A", a), ("B", b)):
            finite = x[cp.isfinite(x)]
            shapes[f"{label}_max"] = float(finite.max()) if finite.size else None
            shapes[f"{label}_min"] = float(finite.min()) if finite.size else None
            shapes[f"{label}_inf"] = int(x.size - finite.size)
            shapes[f"{label}_fractional"] = int(cp.count_nonzero(finite != cp.trunc(finite)))
        print(name, {key: value for key, value in shapes.items()})
        rng = cp.random.default_rng(0)
        synthetic = (rng.integers(0, 2000, a.shape).astype(cp.float32),
                     rng.integers(0, 2000, b.shape).astype(cp.float32), cp.empty_like(out))
        cases = {"as_run": (a, b, out), "a_copy": (a.copy(), b, out), "b_copy": (a, b.copy(), out),
                 "fresh_out": (a, b, cp.empty_like(out)), "all_copies": (a.copy(), b.copy(), cp.empty_like(out)),
                 "synthetic": synthetic,
                 "synthetic_n2^20": (synthetic[0], rng.integers(0, 2000, (b.shape[0], 1 << 20)).astype(cp.float32),
                                     cp.empty((a.shape[0], 1 << 20), dtype=cp.float32))}
        reference = None
        for case, (x, y, z) in cases.items():
            for packed in ("never", "always"):
                seconds = event_seconds(cp, lambda: original(x, y, z, accumulate, integer, packed=packed),
                                        args.repeat)
                if case.startswith("synthetic"):
                    same = None
                else:
                    if reference is None:
                        reference = z.copy()
                    same = bool(cp.array_equal(z, reference))
                if packed == "always" and case in ("as_run", "synthetic", "synthetic_n2^20"):  # tiles that fell back to float32
                    original(x, y, z, accumulate, integer, packed=packed, count_fallbacks=True)
                kernel = "float32" if packed == "never" else "u16"
                rows.append(dict(shapes, case=case, kernel=kernel, seconds=seconds, same_as_first=same))
                print(f"{name} M={shapes['M']} K={shapes['K']} lda={shapes['lda']} {case:<11} {kernel:<8} "
                      f"{seconds * 1e3:8.3f} ms  same={same}")
    record = {"benchmark": "minplus_inrun_bench", "graph": name, "n": graph.n, "k": args.k, "results": rows}
    write_result(record, folder=RESULTS / args.tag, name=f"minplus-inrun-{name}.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
