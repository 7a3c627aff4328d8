"""The min-plus kernels writing a component's rows scattered over an (n, n) float32 result, for row
widths n whose rows start on a 16-byte boundary or 1 to 3 columns off one.

For each n and inner dimension K: the packed 16-bit kernels (whole-number operands, the shifted
stores of ``minplus_tile_u16.cuh`` where rows are off 16 bytes) as the engine builds them and with
3 or 4 resident blocks a SM asked of the small-K kernel, and the float32 kernels, with and without
the evict-first stores, timed with CUDA events (best of ``--repeat``).  One JSON under
``--out``.

    python benchmarks/shifted_rows_bench.py --out benchmarks/results/shifted-rows
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, event_seconds, write_result  # noqa: E402

VARIANTS = (("packed", True, ()),  # the engine's choice: 3 resident blocks a SM up to K = 24 (row map)
            ("packed_4_blocks", True, ("-DSKU_MIN_BLOCKS=4",)), ("packed_3_blocks", True, ("-DSKU_MIN_BLOCKS=3",)),
            ("packed_no_stream_store", True, ("-DMP_NO_STREAM_STORE",)),
            ("float32", False, ()), ("float32_no_stream_store", False, ("-DMP_NO_STREAM_STORE",)))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1450, help="interior rows of the component")
    parser.add_argument("--widths", default="114600,114604,114599,114601,114602", help="n values, comma-separated")
    parser.add_argument("--k", default="10,16,24,32,40", help="inner dimensions, comma-separated")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--out", default=str(RESULTS / "shifted-rows"))
    args = parser.parse_args(argv)

    import cupy as cp

    from fastapsp.stages._cuda import min_plus_cuda

    rng = np.random.default_rng(0)
    records = []
    for n in (int(x) for x in args.widths.split(",")):
        result = cp.empty((n, n), dtype=np.float32)
        rows = cp.asarray(np.sort(rng.permutation(n)[: args.rows]))
        for k in (int(x) for x in args.k.split(",")):
            a = cp.asarray(rng.integers(0, 50, (args.rows, k)).astype(np.float32))
            b = cp.asarray(rng.integers(0, 5000, (k, n)).astype(np.float32))
            record = {"n": n, "row_shift_varies": n % 4 != 0, "k": k, "rows": args.rows}
            for name, integer, options in VARIANTS:
                record[name] = event_seconds(
                    cp, lambda: min_plus_cuda(a, b, result, False, integer, options, out_rows=rows), args.repeat)
            records.append(record)
            print(f"n={n} K={k}: " + ", ".join(f"{name} {record[name] * 1e3:.3f} ms" for name, _, _ in VARIANTS),
                  flush=True)
        result = None
        cp.get_default_memory_pool().free_all_blocks()
    write_result({"benchmark": "shifted_rows_bench", "records": records}, folder=args.out, name="shifted-rows.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
