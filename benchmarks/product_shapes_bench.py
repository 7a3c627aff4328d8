"""Where a whole run's min-plus stage goes: every product of one run timed by itself, by shape and kernel.

    python benchmarks/product_shapes_bench.py GRAPH.mtx.gz [...] [--reps 2] [--tag product-shapes]

One plan per graph (``--output none``, defaults) is executed ``--reps`` + 1 times (the first warms
up).  In the timed runs every call of ``min_plus_cuda`` is bracketed by CUDA events, and so is its
encoding of the packed operands (``_encode_u16``), so the record of a run holds, per product: M, K,
N, the kernel ``min_plus_cuda`` picked, its seconds and those of its encoding.  The sum of the
products' seconds against the run's ``min_plus`` stage says how much of the stage lies between
products (a gap there is host time the device waited for); the seconds per distance by K say which
kernels hold a graph's rate down.  One JSON per graph under benchmarks/results/TAG/.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
from _common import write_result  # noqa: E402


def _kernel_of(k: int, integer: bool, dtype) -> str:
    """The kernel ``min_plus_cuda`` launches for inner dimension ``k`` (its own rule, read from its module)."""
    import numpy as np

    from fastapsp.stages import _cuda

    if integer and np.dtype(dtype) == np.float32:
        if k >= _cuda._U16_MIN_K:
            return "min_plus_u16"
        if _cuda._SMALLK_U16_K[0] <= k <= _cuda._SMALLK_U16_K[1]:
            return "min_plus_smallk_u16" + (f"_w{_cuda._SMALLK_U16_K[1]}" if k > 32 else "")
    return "min_plus_smallk" if k <= _cuda._SMALLK_MAX_K[np.dtype(dtype)] else "min_plus"


def main(argv=None) -> int:
    import cupy as cp

    import fastapsp
    from fastapsp.comm import SerialComm
    from fastapsp.execute import execute
    from fastapsp.stages import _cuda

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graphs", nargs="+")
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--tag", default="product-shapes")
    args = parser.parse_args(argv)

    calls: list = []
    encodes: list = []
    product, encode = _cuda.min_plus_cuda, _cuda._encode_u16

    def timed_product(a, b, out, accumulate, integer=False, *rest, **kw):
        begin, end = cp.cuda.Event(), cp.cuda.Event()
        begin.record()
        result = product(a, b, out, accumulate, integer, *rest, **kw)
        end.record()
        caller = Path(sys._getframe(2).f_code.co_filename).stem  # components (the stage) or boundary_graph
        calls.append((a.shape[0], a.shape[1], b.shape[1], bool(integer), out.dtype, begin, end, caller))
        return result

    def timed_encode(*a):
        begin, end = cp.cuda.Event(), cp.cuda.Event()
        begin.record()
        result = encode(*a)
        end.record()
        encodes.append((begin, end))
        return result

    for path in args.graphs:
        graph = fastapsp.read_graph(path)
        plan = fastapsp.plan(graph, backend="cupy", output="none")
        name = Path(path).name.split(".")[0]
        runs = []
        for rep in range(args.reps + 1):
            calls.clear()
            encodes.clear()
            _cuda.min_plus_cuda, _cuda._encode_u16 = timed_product, timed_encode
            try:
                report = execute(plan, graph, comm=SerialComm()).report
            finally:
                _cuda.min_plus_cuda, _cuda._encode_u16 = product, encode
            cp.cuda.Device().synchronize()
            if not rep:
                continue
            every = [{"m": m, "k": k, "n": n, "kernel": _kernel_of(k, integer, dtype), "caller": caller,
                      "seconds": cp.cuda.get_elapsed_time(b, e) / 1e3} for m, k, n, integer, dtype, b, e, caller in calls]
            rows = [r for r in every if r["caller"] == "components"]  # the min_plus stage's products
            enc = sum(cp.cuda.get_elapsed_time(b, e) / 1e3 for b, e in encodes)
            by_kernel: dict = {}
            for r in rows:
                s = by_kernel.setdefault(r["kernel"], {"products": 0, "seconds": 0.0, "distances": 0,
                                                       "relaxations": 0})
                s["products"] += 1
                s["seconds"] += r["seconds"]
                s["distances"] += r["m"] * r["n"]
                s["relaxations"] += r["m"] * r["n"] * r["k"]
            for s in by_kernel.values():
                s["gdist_per_s"] = s["distances"] / s["seconds"] / 1e9 if s["seconds"] else None
                s["trelax_per_s"] = s["relaxations"] / s["seconds"] / 1e12 if s["seconds"] else None
            total = sum(r["seconds"] for r in rows)
            distances = sum(r["m"] * r["n"] for r in rows)
            run = {"graph": name, "n": graph.n, "k": report["k"], "stage_min_plus": report["stages"]["min_plus"],
                   "products_seconds": total, "encode_seconds": enc, "products": len(rows),
                   "distances": distances, "gdist_per_s_stage": distances / report["stages"]["min_plus"] / 1e9,
                   "gdist_per_s_products": distances / total / 1e9 if total else None,
                   "by_kernel": by_kernel, "total_seconds": report["total_seconds"], "stages": report["stages"],
                   "other_products": [r for r in every if r["caller"] != "components"], "rows": rows}
            runs.append(run)
            print(f"{name} k={run['k']} stage {run['stage_min_plus']:.4f} s, products {total:.4f} s "
                  f"(encode {enc:.4f}), {len(rows)} products, {run['gdist_per_s_stage']:.0f} G/s stage", flush=True)
            for kern, s in sorted(by_kernel.items()):
                print(f"   {kern:24s} {s['products']:5d} products {s['seconds']:.4f} s "
                      f"{s['gdist_per_s']:.0f} G dist/s {s['trelax_per_s']:.2f} T relax/s", flush=True)
        write_result({"benchmark": "product_shapes", "graph": name, "runs": runs},
                     folder=f"benchmarks/results/{args.tag}", name=f"{name}.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
