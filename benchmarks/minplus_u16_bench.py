"""Kernel-level timing of the min-plus variants (float32, packed 16-bit DPX, packed 16-bit add + SIMD min)
on the shapes of the million-vertex runs.  One JSON under benchmarks/results/.

    python benchmarks/minplus_u16_bench.py --tag h100-kernels
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import metadata, write_result  # noqa: E402


def timed(fn, reps=3):
    import cupy as cp

    fn()
    cp.cuda.Device().synchronize()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    best = float("inf")
    for _ in range(reps):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        best = min(best, cp.cuda.get_elapsed_time(start, stop) / 1e3)
    return best


def main(argv=None):
    import cupy as cp

    from fastapsp.kernels import get_kernel

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1 << 20)
    parser.add_argument("--tag", default="gpu")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    rows = []
    for m, k in [(1650, 150), (1650, 22), (1005, 19), (150, 150), (400, 75)]:
        a = cp.asarray(rng.integers(0, 2000, (m, k)).astype(np.float32))
        b = cp.asarray(rng.integers(0, 2000, (k, args.n)).astype(np.float32))
        b[:, ::7] = np.inf  # unreachable columns, as in graphs with several pieces
        c = cp.empty((m, args.n), dtype=np.float32)
        for name, file, kern, width, opts in [("float32", "min_plus.cu", "min_plus", 64, ()),
                                              ("u16_dpx", "min_plus_u16.cu", "min_plus_u16", 128, ()),
                                              ("u16_split", "min_plus_u16.cu", "min_plus_u16", 128, ("-DU16_SPLIT",))]:
            f = get_kernel(file, kern, np.float32, options=opts)
            grid = (-(-args.n // width), -(-m // 64))
            call = (a, np.int64(k), b, np.int64(args.n), c, np.int64(args.n), np.int32(m), np.int32(args.n),
                    np.int32(k), np.int32(0))
            sec = timed(lambda: f(grid, (256,), call))
            rows.append({"kernel": name, "M": m, "K": k, "N": args.n, "seconds": sec,
                         "relaxations_per_s": m * k * args.n / sec, "bytes_written_per_s": m * args.n * 4 / sec})
            print(f"{name:10s} M={m:5d} K={k:4d} {sec * 1e3:8.2f} ms  {m * k * args.n / sec / 1e12:6.2f} T relax/s  "
                  f"{m * args.n * 4 / sec / 1e9:7.1f} GB/s written", flush=True)
    write_result({"benchmark": "minplus_u16_bench", "results": rows, "metadata": metadata()},
                 folder=f"benchmarks/results/{args.tag}", name="kernels")


if __name__ == "__main__":
    main()
