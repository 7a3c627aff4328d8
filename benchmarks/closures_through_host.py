"""The command line with the closures sent through the host: the baseline of the GPU-to-GPU copies.

Run it in place of ``python -m fastapsp`` under the launcher.  It makes the plan find no link between
the GPUs (``fastapsp.planning.peer_rate`` returns None), so the cost model prices sharing at the host's
``SHARE_RATE`` and every exchange goes through the host, as before the ranks copied from each other's
GPUs; everything else is the package's own run.  Compare its report with a plain run's (``local_fw``,
``share_rows``, ``boundary_graph`` and each rank's ``upper_levels``):

    mpirun -n 2 python benchmarks/closures_through_host.py -- solve del21-unit.mtx --output none \\
        --report host.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import command_line, run_command_line  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cli", nargs=argparse.REMAINDER, help="-- then the fastapsp command line")
    argv = command_line(parser, parser.parse_args())
    import fastapsp.planning as planning

    planning.peer_rate = lambda comm: None
    return run_command_line(argv)


if __name__ == "__main__":
    raise SystemExit(main())
