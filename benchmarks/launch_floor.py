"""What a run costs before and after any work: process start, imports, MPI and CUDA start, exit.

Times, from the parent's clock, commands that do no work at all, alone and
under a launcher with ``--ranks`` ranks (median of ``--repeat`` runs each):

* ``python``: the interpreter starting and ending;
* ``python+cuda``: ``import fastapsp.cli`` and CuPy, a CUDA context on the
  rank's GPU (as ``fastapsp.comm.select_device`` picks it), then the exit
  fastapsp makes (``fastapsp.cli._end_process``);
* ``python+mpi+cuda``: the same with ``mpi4py`` started as well (the one
  process of ``--ranks 1`` included);
* ``launcher``: the launcher starting ``true`` on every rank.

A run of R ranks can be no shorter than ``python+mpi+cuda`` under the
launcher, whatever it computes; the one-process run pays ``python+cuda``.
That bounds the speed-up of R ranks: with a one-process run of T seconds,
of which ``python+cuda`` is F1, R ranks take at least FR + (T - F1) / R.

    python3 benchmarks/launch_floor.py --ranks 4 --launcher "mpirun -n 4 --bind-to none" --tag four-gpus

Writes ``benchmarks/results/<tag>/launch-floor-r<ranks>.json``.
"""

import argparse
import shlex
import statistics
import subprocess
import sys
import time

from _common import RESULTS, metadata, write_result

CUDA = ("import os, fastapsp.cli, cupy; "
        "local = int(os.environ.get('OMPI_COMM_WORLD_LOCAL_RANK', os.environ.get('MPI_LOCALRANKID', '0'))); "
        "cupy.cuda.Device(local % cupy.cuda.runtime.getDeviceCount()).use(); cupy.cuda.runtime.free(0); ")
MPI = "from mpi4py import MPI; MPI.COMM_WORLD.Barrier(); "
END = "fastapsp.cli._end_process(0)"


def _seconds(command: list[str], repeat: int) -> dict:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.run(command, capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        if proc.returncode != 0:
            raise SystemExit(f"launch_floor: {' '.join(command)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return {"median": round(statistics.median(times), 4), "runs": [round(t, 4) for t in times]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--launcher", default=None, help="launcher command for --ranks (default: mpirun -n RANKS)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--tag", default="launch-floor")
    args = parser.parse_args()
    launcher = shlex.split(args.launcher or f"mpirun -n {args.ranks}")
    py = sys.executable
    seconds = {
        "python": _seconds([py, "-c", "pass"], args.repeat),
        "python+cuda": _seconds([py, "-c", CUDA + END], args.repeat),
        "python+mpi+cuda": _seconds([py, "-c", MPI + CUDA + END], args.repeat),
        f"launcher r{args.ranks}": _seconds(launcher + ["true"], args.repeat),
        f"python+mpi+cuda r{args.ranks}": _seconds(launcher + [py, "-c", MPI + CUDA + END], args.repeat),
    }
    for name, value in seconds.items():
        print(f"{name:24s} {value['median']:.3f} s  {value['runs']}")
    result = {"benchmark": "launch_floor", "ranks": args.ranks, "launcher": " ".join(launcher),
              "seconds": seconds, "metadata": metadata()}
    print(write_result(result, folder=RESULTS / args.tag, name=f"launch-floor-r{args.ranks}.json"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
