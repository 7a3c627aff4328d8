"""The host's min-plus product in float32 and in 16-bit integers (``fastapsp.stages.min_plus``).

Random whole-number operands shaped as a component's product (``--rows`` interior rows, K boundary
vertices, ``--cols`` columns; 2% of the boundary rows' entries ``inf``), timed both ways (best of
``--repeat``) and compared entry by entry.  ``HOST_U16_MIN_K`` in ``fastapsp/stages/min_plus.py``
comes from these records.

    python benchmarks/host_min_plus_bench.py --out benchmarks/results/host-min-plus
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, write_result  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=350)
    parser.add_argument("--cols", type=int, default=114_599)
    parser.add_argument("--k", type=int, nargs="+", default=[4, 8, 12, 16, 20, 40])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", default=str(RESULTS / "host-min-plus"))
    args = parser.parse_args(argv)

    import importlib

    module = importlib.import_module("fastapsp.stages.min_plus")  # the package exports a function of its name
    rng = np.random.default_rng(0)
    records = []
    for k in args.k:
        a = rng.integers(0, 300, (args.rows, k)).astype(np.float32)
        b = rng.integers(0, 3000, (k, args.cols)).astype(np.float32)
        b[rng.random(b.shape) < 0.02] = np.inf
        seconds, results = {}, {}
        for name, packed in (("float32", False), ("uint16", True)):
            out = np.empty((args.rows, args.cols), dtype=np.float32)
            best = np.inf
            for _ in range(args.repeat):
                start = time.perf_counter()
                if packed:
                    done = module._host_u16(out, a, b, True)
                    assert done
                else:
                    module._host_accumulate(out, a, b, fresh=True)
                best = min(best, time.perf_counter() - start)
            seconds[name], results[name] = best, out
        same = bool(np.array_equal(results["float32"], results["uint16"]))
        entries = args.rows * args.cols
        record = {"rows": args.rows, "cols": args.cols, "k": k, "float32_seconds": seconds["float32"],
                  "uint16_seconds": seconds["uint16"], "float32_ns_per_entry": seconds["float32"] / entries * 1e9,
                  "uint16_ns_per_entry": seconds["uint16"] / entries * 1e9, "same": same}
        records.append(record)
        print(f"K={k}: float32 {record['float32_ns_per_entry']:.2f} ns an entry, uint16 "
              f"{record['uint16_ns_per_entry']:.2f}, same={same}", flush=True)
    path = write_result({"benchmark": "host_min_plus_bench", "records": records}, args.out, "host-min-plus")
    print(f"wrote {path}")
    return 0 if all(r["same"] for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
