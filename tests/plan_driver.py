"""Runs one solve through the plan and the executor, with decisions imposed (``make_plan(force=...)``).

Usage (under mpiexec or alone)::

    python tests/plan_driver.py GRAPH OUT.npy|none K METHOD [--stats PREFIX] [DECISION=0|1 ...] [SETTING=VALUE ...]

DECISION is ``each_pair_once`` or ``close_everywhere``: the variants tests compare with the defaults.
SETTING is ``backend`` (default numpy), ``dense_limit`` / ``super_size`` (the boundary graph's, for
the backend run: small ones make upper levels of a small graph), ``receive_cost`` (the relaxations one
received distance is priced at when the ranks share out the upper levels: 0 shares every super-group,
whatever the measured rate) or ``fail_copy`` (a rank whose copies from the other ranks' GPUs fail).
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
    items = dict(item.split("=", 1) for item in rest)
    backend = items.pop("backend", "numpy")
    for name in ("dense_limit", "super_size"):
        if name in items:
            from fastapsp.stages import boundary_graph

            getattr(boundary_graph, name.upper())[backend] = int(items.pop(name))
    if "receive_cost" in items:  # the price the executor hands the upper levels (fastapsp/components.py)
        from fastapsp import components

        price = int(items.pop("receive_cost"))
        components.receive_relaxations = lambda *args, **kwargs: price
    failing = items.pop("fail_copy", None)  # this rank's copies from the other GPUs fail once planned
    force = {key: value == "1" for key, value in items.items()}
    comm = get_comm()
    opts = SolveOptions(graph=graph_path, k=int(k), backend=backend, output=output, sssp_method=method, stats=stats,
                        quiet=True)
    graph = read_graph(graph_path, comm=comm)
    plan = make_plan(graph, opts, comm=comm, force=force)
    if failing is not None and comm.rank == int(failing):  # after the rate was measured
        from fastapsp import peers

        def fail(*args):
            raise RuntimeError("copy refused")

        peers._copy_from = fail
    outcome = execute(plan, graph, comm=comm)
    if comm.rank == 0:
        print(json.dumps({"local_closures": outcome.report.get("local_closures"),
                          "stats_each_pair_once": outcome.report.get("stats_each_pair_once"),
                          "peer_rate": plan.peer_rate, "upper_levels": outcome.report.get("upper_levels")}))


if __name__ == "__main__":
    main(sys.argv[1:])
