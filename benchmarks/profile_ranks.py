"""Where each rank's seconds go: the command line under cProfile, with a timeline of the run's phases.

Run it in place of ``python -m fastapsp`` (under the launcher for several ranks); every rank writes
``OUT/TAG-nSIZE-rRANK.txt``: the phases as the rank entered them (``run_phase`` names, seconds from the
process start, and how long the phase before lasted), then the functions by cumulative and by own time.
Seconds outside every stage of the report (waits for CuPy's import, for the other ranks) show up
there as phases with no stage of their own.

    mpirun -n 2 python benchmarks/profile_ranks.py --out /tmp/prof --tag roadFLA -- \\
        solve benchmarks/data/roadFLA.mtx.gz --output none --backend cupy
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time
from pathlib import Path

START = time.perf_counter()
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import command_line  # noqa: E402

_RANK_VARS = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID")
_SIZE_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS")


def _launcher_value(names, default: str) -> str:
    return next((os.environ[v] for v in names if os.environ.get(v, "").isdigit()), default)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder of the profiles")
    parser.add_argument("--tag", default="profile")
    parser.add_argument("cli", nargs=argparse.REMAINDER, help="-- then the fastapsp command line")
    args = parser.parse_args()
    argv = command_line(parser, args)

    import fastapsp.comm as comm_module
    from fastapsp.cli import main as cli_main

    phases = []
    enter = comm_module.note_phase

    def note(name):  # run_phase tells each phase's name as the rank enters it
        phases.append((time.perf_counter() - START, name))
        enter(name)

    comm_module.note_phase = note
    profile = cProfile.Profile()
    profile.enable()
    try:
        status = cli_main(argv)
    finally:
        profile.disable()
        end = time.perf_counter() - START
        rank, size = _launcher_value(_RANK_VARS, "0"), _launcher_value(_SIZE_VARS, "1")
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, f"{args.tag}-n{size}-r{rank}.txt"), "w") as fh:
            before = 0.0
            for at, name in phases + [(end, "END")]:
                fh.write(f"{at:8.3f} (+{at - before:6.3f}) {name}\n")
                before = at
            stats = pstats.Stats(profile, stream=fh)
            stats.sort_stats("cumtime").print_stats(70)
            stats.sort_stats("tottime").print_stats(30)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
