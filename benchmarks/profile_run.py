"""Where the host's seconds of one ``fastapsp solve`` go: the run under cProfile.

Runs ``solve_job`` in this process (one rank) with the options given, as the
CLI would, under :mod:`cProfile`, and prints the stage seconds of the report
and the functions that took the most time, by their own time and with what
they called.  On the GPU the host waits for the device only where something
needs a result (see ``StageTimer``), so host functions that wait show up
here as time in CuPy's synchronisations::

    python3 benchmarks/profile_run.py benchmarks/data/roadFLA.mtx.gz --backend cupy --top 40

Writes the printout to ``benchmarks/results/TAG/profile-GRAPH.txt`` with ``--tag``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
from _common import RESULTS  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graph")
    parser.add_argument("--backend", default="cupy")
    parser.add_argument("-k", type=int, default=None)
    parser.add_argument("--partitioner", default="auto")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--tag", default=None)
    args = parser.parse_args(argv)

    from fastapsp.comm import SerialComm
    from fastapsp.options import SolveOptions
    from fastapsp.pipeline import solve_job

    opts = SolveOptions(graph=args.graph, k=args.k, backend=args.backend, output="none",
                        partitioner=args.partitioner, quiet=True)
    profile = cProfile.Profile()
    start = time.perf_counter()
    profile.enable()
    report, _ = solve_job(opts, comm=SerialComm())
    profile.disable()
    wall = time.perf_counter() - start
    out = io.StringIO()
    out.write(f"{args.graph}: k {report['k']}, {wall:.3f} s under the profiler; stages "
              f"{ {name: round(sec, 3) for name, sec in report['stages'].items() if sec > 0.005} }\n")
    for key in ("tottime", "cumulative"):
        stats = pstats.Stats(profile, stream=out)
        stats.sort_stats(key).print_stats(args.top)
    text = out.getvalue()
    print(text)
    if args.tag:
        folder = RESULTS / args.tag
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"profile-{Path(args.graph).name.split('.')[0]}.txt").write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
