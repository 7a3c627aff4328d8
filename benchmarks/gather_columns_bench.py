"""The boundary rows' reorder into vertex order: ``cupy.take(rows, cols, axis=1)`` against
``gather_columns.cu`` (``fastapsp.stages._cuda.gather_columns_cuda``) with 4, 8 and 16 rows a thread.

Rows of ``--n`` float32 columns gathered by a random permutation (a Delaunay graph's vertices are
numbered in no spatial order, so a component's columns lie anywhere), for each ``--rows``; CUDA
events, best of ``--repeat``; every result compared with ``take``'s.  One JSON under ``--tag``.

    python benchmarks/gather_columns_bench.py --tag gather-columns
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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1 << 20)
    parser.add_argument("--rows", default="101,128,512")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--tag", default="gather-columns")
    args = parser.parse_args(argv)

    import cupy as cp

    from fastapsp.stages._cuda import gather_columns_cuda

    rng = np.random.default_rng(0)
    cols = cp.asarray(rng.permutation(args.n).astype(np.int64))
    records = []
    for rows in (int(r) for r in args.rows.split(",")):
        x = cp.asarray(rng.random((rows, args.n), dtype=np.float32))
        reference = cp.take(x, cols, axis=1)
        record = {"rows": rows, "n": args.n, "take": event_seconds(cp, lambda: cp.take(x, cols, axis=1), args.repeat)}
        for per in (4, 8, 16):
            name = f"gather_{per}"
            record[name] = event_seconds(cp, lambda: gather_columns_cuda(x, cols, per), args.repeat)
            record[name + "_same"] = bool(cp.array_equal(gather_columns_cuda(x, cols, per), reference))
        records.append(record)
        print(f"rows={rows} n={args.n}: " + ", ".join(f"{k} {v * 1e3:.3f} ms" for k, v in record.items()
                                                        if k in ("take", "gather_4", "gather_8", "gather_16"))
              + f", same {all(record[f'gather_{p}_same'] for p in (4, 8, 16))}", flush=True)
        del x, reference
    write_result({"benchmark": "gather_columns_bench", "records": records}, folder=RESULTS / args.tag,
                 name="gather-columns.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
