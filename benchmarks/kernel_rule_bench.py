"""Whole runs under two rules for the short-K min-plus of whole-number distances.

    python benchmarks/kernel_rule_bench.py GRAPH.mtx.gz [...] [--reps 3] [--json PATH]

``min_plus_cuda`` gives whole-number products with 9 <= K <= 56 to the packed 16-bit
``min_plus_smallk_u16.cu`` (``fastapsp/stages/_cuda.py``, ``_SMALLK_U16_K``).  Kernel-level
timings on roadNY's shape (M = 1,730, N = 264,346) found the float32 ``min_plus_smallk.cu``
faster up to K = 32, where earlier timings at M = 996, N = 2^20 found the opposite.  This
benchmark settles it on whole runs: one plan per graph (k, partition, everything) made once, then
the plan executed alternately with the current range and with the 16-bit kernel from K = 33 only,
``--output none``; the min-plus stage seconds and totals of every run go to JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

RULES = {"u16 from K=9": (9, 56), "u16 from K=33": (33, 56)}


def main(argv=None) -> int:
    import fastapsp
    from fastapsp.comm import SerialComm
    from fastapsp.execute import execute
    from fastapsp.stages import _cuda

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graphs", nargs="+")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    records = []
    for path in args.graphs:
        graph = fastapsp.read_graph(path)
        plan = fastapsp.plan(graph, backend="cupy", output="none")
        for rep in range(args.reps + 1):  # the first round warms up and is not kept
            for name, bounds in RULES.items():
                _cuda._SMALLK_U16_K = bounds
                report = execute(plan, graph, comm=SerialComm()).report
                if rep:
                    records.append({"graph": Path(path).name.split(".")[0], "n": graph.n, "k": report["k"],
                                    "rule": name, "min_plus": report["stages"]["min_plus"],
                                    "total": report["total_seconds"], "device": report["device"]})
                    print(f"{records[-1]['graph']:16s} k={report['k']:5d} {name:14s} min_plus "
                          f"{report['stages']['min_plus']:.4f} s  total {report['total_seconds']:.3f} s", flush=True)
    _cuda._SMALLK_U16_K = RULES["u16 from K=9"]
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
