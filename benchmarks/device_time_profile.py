"""Where a GPU stage's device seconds go: one ``fastapsp solve`` with CUDA events around its kernels' callers.

Runs ``solve_job`` in this process (one rank, ``--output none``) after wrapping, without any
synchronisation, the functions that queue most of the device's work:

``min_plus``          ``_cuda.min_plus_cuda`` called by the min-plus stage (every product of a component)
``upper_rows``        ``_cuda.min_plus_cuda`` called while a super-group's full rows are made
                      (``BoundaryGraph._make_full_rows``: the rows of the levels above)
``grouped_min_plus``  ``_cuda.grouped_min_plus_cuda`` (the boundary rows of the groups of a super-group)
``gather``            ``_cuda.gather_by_columns_cuda`` (boundary rows stored by columns into vertex order)
``take``              ``cupy.take`` (other gathers: rows of a batch, the upper levels' columns)

Each call is bracketed by two events on the current stream; the seconds between them are summed per
name after the run, next to the report's stage seconds (also device time).  What a stage holds beyond
its named parts is other kernels (copies, fills, minima) and the device waiting for the host.

    python benchmarks/device_time_profile.py /tmp/del20-euclid.mtx.gz --tag boundary-rows-profile
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
from _common import RESULTS, write_result  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graph")
    parser.add_argument("-k", type=int, default=None)
    parser.add_argument("--batch-rows", type=int, default=None, help="boundary_graph.BATCH_ROWS for this run")
    parser.add_argument("--batch-bytes", type=int, default=None, help="boundary_graph.BATCH_BYTES for this run")
    parser.add_argument("--grouped-float32", action="store_true",
                        help="the boundary rows' grouped products in float32 even where they would pack (the "
                             "packed grouped_min_plus_u16.cu against grouped_min_plus.cu)")
    parser.add_argument("--tag", default=None)
    args = parser.parse_args(argv)

    import cupy as cp

    from fastapsp.comm import SerialComm
    from fastapsp.options import SolveOptions
    from fastapsp.pipeline import solve_job
    from fastapsp.stages import _cuda, boundary_graph

    if args.batch_rows is not None:
        boundary_graph.BATCH_ROWS = args.batch_rows
    if args.batch_bytes is not None:
        boundary_graph.BATCH_BYTES = args.batch_bytes
    pending: list = []  # (name, begin, end)
    inside_upper = [0]

    def timed(name_of, fn):
        @functools.wraps(fn)
        def wrapper(*a, **kw):
            begin, end = cp.cuda.Event(), cp.cuda.Event()
            begin.record()
            try:
                return fn(*a, **kw)
            finally:
                end.record()
                pending.append((name_of(), begin, end))
        return wrapper

    _cuda.min_plus_cuda = timed(lambda: "upper_rows" if inside_upper[0] else "min_plus", _cuda.min_plus_cuda)
    grouped = _cuda.grouped_min_plus_cuda
    if args.grouped_float32:
        packed_grouped = grouped

        def grouped(a, level, out, integer=False):
            return packed_grouped(a, level, out, integer=False)
    _cuda.grouped_min_plus_cuda = timed(lambda: "grouped_min_plus", grouped)
    cp.take = timed(lambda: "take", cp.take)
    if hasattr(_cuda, "gather_by_columns_cuda"):  # absent from trees older than the layout (A/B runs)
        _cuda.gather_by_columns_cuda = timed(lambda: "gather", _cuda.gather_by_columns_cuda)
    make_full_rows = boundary_graph.BoundaryGraph._make_full_rows

    def counted_make_full_rows(self, *a, **kw):
        inside_upper[0] += 1
        try:
            return make_full_rows(self, *a, **kw)
        finally:
            inside_upper[0] -= 1

    boundary_graph.BoundaryGraph._make_full_rows = counted_make_full_rows

    opts = SolveOptions(graph=args.graph, k=args.k, backend="cupy", output="none", quiet=True)
    report, _ = solve_job(opts, comm=SerialComm())
    cp.cuda.Device().synchronize()
    parts: dict = {}
    calls: dict = {}
    for name, begin, end in pending:
        parts[name] = parts.get(name, 0.0) + cp.cuda.get_elapsed_time(begin, end) / 1e3
        calls[name] = calls.get(name, 0) + 1
    stages = {name: round(sec, 4) for name, sec in report["stages"].items() if sec > 0.005}
    from fastapsp.stages.boundary_graph import BATCH_BYTES, BATCH_ROWS

    record = {"graph": Path(args.graph).name, "n": report["n"], "k": report["k"],
              "grouped_float32": bool(args.grouped_float32), "packed_16bit": report.get("packed_16bit"),
              "batch_rows": BATCH_ROWS, "batch_bytes": BATCH_BYTES,
              "total_seconds": report["total_seconds"], "stages": stages,
              "parts": {name: round(sec, 4) for name, sec in sorted(parts.items())}, "calls": calls,
              "device": report.get("device")}
    print(json.dumps(record, indent=1))
    if args.tag:
        write_result(record, folder=RESULTS / args.tag, name=f"profile-{Path(args.graph).name.split('.')[0]}.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
