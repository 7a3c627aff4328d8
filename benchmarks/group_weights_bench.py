"""The boundary graph's super-groups gathered by the arcs between groups, or by which groups touch.

``LevelTree(weighted=...)`` (fastapsp/stages/boundary_graph.py) gathers the groups of a level into
super-groups by METIS on the graph of groups: with ``weighted`` its edges weigh the arcs between two
groups (so the cut follows the next level's boundary), without it every touching pair weighs one.
For each graph and METIS partition seed this builds the tree both ways, at the host's and the GPU's
limits (``DENSE_LIMIT``, ``SUPER_SIZE``), and records the levels' sizes, the top and the relaxations
of closing every super-group (``sum c^3``: what the upper levels cost), with the seconds the tree
took.  Host only (no distances are computed).

    python benchmarks/group_weights_bench.py --graph roadNY=benchmarks/data/roadNY.mtx.gz --k 153 --seeds 1 2

One JSON per graph under ``benchmarks/results/TAG/`` (default ``weighted-groups``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
from _common import metadata, named_graph, write_result  # noqa: E402


def main(argv=None) -> int:
    import numpy as np

    from fastapsp.io import read_graph
    from fastapsp.partition import make_partition
    from fastapsp.partition.metis import metis
    from fastapsp.stages.boundary_graph import DENSE_LIMIT, SUPER_SIZE, LevelTree

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph", action="append", required=True, type=named_graph, metavar="NAME=PATH")
    parser.add_argument("--k", type=int, action="append", required=True,
                        help="components of each graph, in the order of --graph")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1])
    parser.add_argument("--tag", default="weighted-groups")
    args = parser.parse_args(argv)
    if len(args.k) != len(args.graph):
        parser.error(f"--k: {len(args.k)} given for {len(args.graph)} graphs")
    meta = metadata()
    for (label, path), k in zip(args.graph, args.k):
        graph = read_graph(path)
        indptr, indices = graph.undirected_adjacency()
        runs = []
        for seed in args.seeds:
            part = make_partition(graph, metis(indptr, indices, k, seed=seed, imbalance=0.03), k, method="metis",
                                  seed=seed, imbalance=0.03, seconds=0.0)
            for limits in ("numpy", "cupy"):
                for weighted in (False, True):
                    start = time.perf_counter()
                    tree = LevelTree(graph, part, dense_limit=DENSE_LIMIT[limits], super_size=SUPER_SIZE[limits],
                                     weighted=weighted)
                    took = time.perf_counter() - start
                    sizes = [np.diff(s).astype(np.float64) for s in tree.starts[1:]]
                    runs.append({"seed": seed, "limits": limits, "weighted": weighted, "seconds": round(took, 4),
                                 "boundary_vertices": int(part.boundary.sum()), "level_sizes": tree.level_sizes,
                                 "top": int(sizes[-1].max()) if sizes else 0,
                                 "closure_relaxations": float(sum((c ** 3).sum() for c in sizes))})
                    print(label, runs[-1], flush=True)
        write_result({"benchmark": "group_weights_bench", "graph": label, "path": str(path), "n": graph.n,
                      "m": graph.m, "k": k, "partitioner": "metis", "runs": runs, "metadata": meta},
                     folder=REPO / "benchmarks" / "results" / args.tag, name=f"{label}.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
