"""Kernel-level timing of the min-plus variants on the shapes of the million-vertex runs.

Every variant is launched by the pipeline's own ``min_plus_cuda`` (so the grid
is the one a run uses): float32 (``min_plus_smallk.cu`` for K <= 32, ``min_plus.cu``),
packed 16-bit with the DPX
add-min (``min_plus_u16.cu``; ``min_plus_smallk_u16.cu`` for K <= 32 in ``u16_default``) and with an add and a SIMD minimum
(``-DU16_SPLIT``).  Every result is compared with the float32 one.
``results/min-plus-packed`` was measured when a test of the chunk's length inside the loop cut
the partial last chunk of K (then ``-DMP_CUT_TAIL``, since replaced by ``sweep_k``, which sweeps
it after the loop).  One JSON under benchmarks/results/TAG/.

    python benchmarks/minplus_u16_bench.py --tag min-plus-packed
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
from _common import RESULTS, event_seconds, write_result  # noqa: E402

SHAPES = [(996, 20), (997, 15), (1005, 19), (1650, 22), (1000, 8), (1000, 32), (1650, 150), (1650, 100), (400, 75)]
VARIANTS = [  # name, keywords of min_plus_cuda (packed="never" unless given), compiler options
    ("float32", {}, ()),  # what min_plus_cuda picks: min_plus_smallk.cu for K <= 32, else min_plus.cu
    ("float32_tiled", {"smallk": False}, ()),  # min_plus.cu
    # min_plus.cu's float32 tiles: 64 x 64 (one column group a thread; the default before two) and
    # 64 x 128 built for 3 blocks an SM (80 registers, spills) instead of 2. ("float32_wide" in
    # results/min-plus-float-min3/h100/kern-wide.txt: two groups, before they became the default.)
    ("float32_one_group", {"smallk": False}, ("-DMP_CW=1",)),
    ("float32_wide_3_blocks", {"smallk": False}, ("-DMP_CW=2", "-DMP_CW_BLOCKS=3")),
    ("u16_dpx", {"packed": "always"}, ()),
    ("u16_split", {"packed": "always"}, ("-DU16_SPLIT",)),
    # Evict-first stores of the row block: min_plus_smallk.cu's default since 90da1d0's measurement
    # (results/min-plus-evict-first), so "float32" has them at K <= 32 from then on.
    ("float32_stream_store", {}, ("-DMP_STREAM_STORE",)),
    ("float32_no_stream_store", {}, ("-DMP_NO_STREAM_STORE",)),
    ("float32_smallk_3_blocks", {}, ("-DSK_MIN_BLOCKS=3",)),  # min_plus_smallk.cu's occupancy hint
    ("float32_smallk_5_blocks", {}, ("-DSK_MIN_BLOCKS=5",)),
    # What min_plus_cuda picks for whole numbers: min_plus_smallk_u16.cu for K <= 32, min_plus_u16.cu
    # from K = 64, float32 between.
    ("u16_default", {"packed": "auto"}, ()),
    ("u16_smallk_no_stream_store", {"packed": "auto"}, ("-DMP_NO_STREAM_STORE",)),
    ("u16_smallk_3_blocks", {"packed": "auto"}, ("-DSKU_MIN_BLOCKS=3",)),
    ("u16_smallk_2_blocks", {"packed": "auto"}, ("-DSKU_MIN_BLOCKS=2",)),
    ("u16_default_split", {"packed": "auto"}, ("-DU16_SPLIT",)),  # add and SIMD minimum, no DPX
    # min_plus_smallk_u16.cu at every K up to its largest, below its threshold too (the float32 small-K
    # kernel takes K <= 8 by default): the threshold's measurement.
    ("u16_smallk_every_k", {"packed": "auto"}, ()),
    # min_plus_smallk_u16.cu turning its packed results into floats on the integer pipe (a shift or mask,
    # a conversion, a compare and a select a value) instead of its default, the FMA pipe.
    ("u16_decode_int", {"packed": "auto"}, ("-DU16_DECODE_INT",)),
]
# Variants run with the packed small-K kernel's range of K set to this (min_plus_cuda reads it per call).
SMALLK_U16_RANGE = {"u16_smallk_every_k": (1, 48)}


def main(argv=None):
    import cupy as cp

    from fastapsp.stages import _cuda
    from fastapsp.stages._cuda import min_plus_cuda

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1 << 20)
    parser.add_argument("--tag", default="gpu")
    parser.add_argument("--variants", default=None, help="comma-separated names (default: all)")
    parser.add_argument("--shapes", default=None, help="M:K pairs, comma-separated (default: all)")
    args = parser.parse_args(argv)
    variants = VARIANTS if args.variants is None else [v for v in VARIANTS if v[0] in args.variants.split(",")]
    shapes = SHAPES if args.shapes is None else [tuple(map(int, s.split(":"))) for s in args.shapes.split(",")]
    rng = np.random.default_rng(0)
    rows = []
    for m, k in shapes:
        a = cp.asarray(rng.integers(0, 2000, (m, k)).astype(np.float32))
        b = cp.asarray(rng.integers(0, 2000, (k, args.n)).astype(np.float32))
        b[:, ::7] = np.inf  # unreachable columns, as in graphs with several pieces
        c = cp.empty((m, args.n), dtype=np.float32)
        reference = None
        # The floor: writing the same M x N block and nothing else.
        sec = event_seconds(cp, lambda: c.fill(0), 5)
        rows.append({"kernel": "fill_only", "M": m, "K": k, "N": args.n, "seconds": sec,
                     "bytes_written_per_s": m * args.n * 4 / sec})
        print(f"{'fill_only':20s} M={m:5d} K={k:4d} {sec * 1e3:8.3f} ms  {m * args.n * 4 / sec / 1e9:7.1f} GB/s written",
              flush=True)
        for name, keywords, options in variants:
            keywords = {"packed": "never", **keywords}
            default_range = _cuda._SMALLK_U16_K
            _cuda._SMALLK_U16_K = SMALLK_U16_RANGE.get(name, default_range)
            try:
                sec = event_seconds(cp, lambda: min_plus_cuda(a, b, c, False, True, options, **keywords), 5)
            finally:
                _cuda._SMALLK_U16_K = default_range
            if reference is None:
                reference = c.copy()
            same = bool(cp.array_equal(c, reference))
            rows.append({"kernel": name, "M": m, "K": k, "N": args.n, "seconds": sec, "same_as_float32": same,
                         "relaxations_per_s": m * k * args.n / sec, "bytes_written_per_s": m * args.n * 4 / sec})
            print(f"{name:20s} M={m:5d} K={k:4d} {sec * 1e3:8.3f} ms  {m * k * args.n / sec / 1e12:6.2f} T relax/s  "
                  f"{m * args.n * 4 / sec / 1e9:7.1f} GB/s written  same={same}", flush=True)
        del a, b, c, reference
    write_result({"benchmark": "minplus_u16_bench", "n": args.n, "results": rows},
                 folder=RESULTS / args.tag, name="kernels.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
