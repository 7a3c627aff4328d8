"""One component's rows of a result kept on the device: made in a row block and copied, or made in place.

A component of ``--rows`` interior rows and ``--boundary`` boundary rows over
``--cols`` columns (luxembourg_osm's shape at the default k by default: 1,700
rows, 14 boundary vertices, 114,599 columns), its rows scattered over an
(n, n) float32 result.  Timed on the GPU (CUDA events), for whole-number
operands (the packed 16-bit kernels) and real ones (float32):

``block``     the product into a row block of padded rows (16-byte aligned)
``copy``      that block's copy to the result's rows (the ``write`` stage, ``scatter_rows.cu``)
``in_place``  the product straight into the result's rows (``min_plus(out_rows=)``)
``in_place_float32``  the same with the float32 kernels (whole numbers too)

Once with n = ``--cols`` rounded up to a multiple of 4 (rows on 16-byte
boundaries) and once with ``--cols`` itself when it is not.

    python benchmarks/rows_in_place_bench.py --out benchmarks/results/rows-in-place
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
    parser.add_argument("--rows", type=int, default=1700)
    parser.add_argument("--boundary", type=int, default=14)
    parser.add_argument("--cols", type=int, default=114599)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", default=str(RESULTS / "rows-in-place"))
    args = parser.parse_args(argv)

    import cupy as cp

    from fastapsp.sink import _scatter_rows_device
    from fastapsp.stages._cuda import min_plus_cuda

    rng = np.random.default_rng(0)
    widths = sorted({-(-args.cols // 4) * 4, args.cols})
    records = []
    for n in widths:
        result = cp.empty((n, n), dtype=np.float32)
        rows = np.sort(rng.permutation(n)[: args.rows])
        rows_dev = cp.asarray(rows)
        block = cp.empty((args.rows, -(-n // 4) * 4), dtype=np.float32)[:, :n]
        a = cp.asarray(rng.integers(0, 50, (args.rows, args.boundary)).astype(np.float32))
        for integer in (True, False):
            b = rng.integers(0, 5000, (args.boundary, n)).astype(np.float32) if integer else \
                rng.random((args.boundary, n), dtype=np.float32) * 5000
            b = cp.asarray(b)
            record = {"n": n, "aligned_rows": n * 4 % 16 == 0, "whole_numbers": integer, "rows": args.rows,
                      "boundary": args.boundary}
            record["block"] = event_seconds(cp, lambda: min_plus_cuda(a, b, block, False, integer), args.repeat)
            record["copy"] = event_seconds(cp, lambda: _scatter_rows_device(block, result, rows, 0), args.repeat)
            record["in_place"] = event_seconds(
                cp, lambda: min_plus_cuda(a, b, result, False, integer, out_rows=rows_dev), args.repeat)
            record["in_place_float32"] = event_seconds(
                cp, lambda: min_plus_cuda(a, b, result, False, False, out_rows=rows_dev), args.repeat)
            records.append(record)
            print(f"n={n} aligned={record['aligned_rows']} whole={integer}: block {record['block'] * 1e3:.3f} ms "
                  f"+ copy {record['copy'] * 1e3:.3f} ms; in place {record['in_place'] * 1e3:.3f} ms, "
                  f"float32 kernels {record['in_place_float32'] * 1e3:.3f} ms", flush=True)
        result = block = None  # the next width maps its own
        cp.get_default_memory_pool().free_all_blocks()
    write_result({"benchmark": "rows_in_place_bench", "records": records}, folder=args.out,
                 name="rows-in-place.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
