"""Runs one solve through the plan and the executor, with decisions imposed (``make_plan(force=...)``).

Usage (under mpiexec or alone)::

    python tests/plan_driver.py GRAPH OUT.npy|none K METHOD [--stats PREFIX] [DECISION=0|1 ...]

DECISION is ``each_pair_once`` or ``close_everywhere``: the variants tests compare with the defaults.
"""

import json
import sys

from fastapsp.comm import get_comm
from fastapsp.execute import execute
from fastapsp.io import read_graph
from fastapsp.options import SolveOptions
from fastapsp.planning import make_plan


def main(argv):
    graph_path, output, k, method, *rest = argv
    stats = None
    if rest and rest[0] == "--stats":
        stats, rest = rest[1], rest[2:]
    force = {key: value == "1" for key, value in (item.split("=", 1) for item in rest)}
    comm = get_comm()
    opts = SolveOptions(graph=graph_path, k=int(k), backend="numpy", output=output, sssp_method=method, stats=stats,
                        quiet=True)
    graph = read_graph(graph_path, comm=comm)
    plan = make_plan(graph, opts, comm=comm, force=force)
    outcome = execute(plan, graph, comm=comm)
    if comm.rank == 0:
        print(json.dumps({"local_closures": outcome.report.get("local_closures"),
                          "stats_each_pair_once": outcome.report.get("stats_each_pair_once")}))


if __name__ == "__main__":
    main(sys.argv[1:])
