"""The boundary graph's upper levels with and without widening, on one partition, in one process.

``LevelTree(widen=...)`` (fastapsp/stages/boundary_graph.py): when super-groups of ``SUPER_SIZE``
vertices would leave a level about as large as it was, widening tries fewer, larger super-groups
before closing the whole level densely.  For each setting this times, on the GPU, the work the
``boundary_graph`` and ``boundary_rows`` stages do: the tree, the closures of every level, and the
boundary rows of every component (made and summed, nothing kept), and compares the rows' checksums.
The local closures are made once beforehand; a first untimed pass warms the kernels.

    python benchmarks/level_tree_bench.py GRAPH.mtx --tag two-gpus-del21

``--dense-limits 16384 8192 4096`` compares those limits of the dense top instead (``DENSE_LIMIT``,
widening on), ``--repeat`` times each, alternating: a top closed densely by every rank against more
levels of smaller super-groups.  ``--weighted`` compares super-groups gathered by which groups touch
against by the arcs between them (``LevelTree(weighted=...)``, ``WEIGHTED_GROUPS``), widening on.

One JSON under benchmarks/results/TAG/.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
from _common import RESULTS, metadata, write_result  # noqa: E402


def main(argv=None) -> int:
    import cupy as cp
    import numpy as np

    import fastapsp
    from fastapsp.cost import auto_k
    from fastapsp.partition import partition_graph
    from fastapsp.stages.boundary_graph import (DENSE_LIMIT, SUPER_SIZE, WEIGHTED_GROUPS, BoundaryGraph, LevelTree,
                                                close_components, pack_boundary_rows)

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graph")
    parser.add_argument("--k", type=int, default=None, help="default: the cost model's")
    parser.add_argument("--dense-limits", type=int, nargs="+", default=None,
                        help="compare these dense limits (widening on) instead of widening on and off")
    parser.add_argument("--weighted", action="store_true",
                        help="compare super-groups by touching groups against by arcs between them")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--seed", type=int, default=42, help="the partition's seed (default: the package's)")
    parser.add_argument("--tag", default="gpu")
    args = parser.parse_args(argv)
    graph = fastapsp.read_graph(args.graph)
    name = Path(args.graph).name.split(".")[0]
    k = auto_k(graph, backend="cupy")["k"] if args.k is None else args.k
    part = partition_graph(graph, k, "auto", backend="cupy", seed=args.seed)
    print(f"{name}: n={graph.n} k={k} {part.method} seed={args.seed} boundary={int(part.boundary.sum())}",
          flush=True)
    dtype = np.float32
    csr = [cp.asarray(a) for a in (graph.indptr, graph.indices, graph.weights)]
    comps = [p for p in range(part.k) if part.sizes[p]]
    blocks = pack_boundary_rows(close_components(*csr, part, comps, dtype=dtype), part)

    def one(widen: bool, dense_limit: int = DENSE_LIMIT["cupy"], weighted: bool = WEIGHTED_GROUPS) -> dict:
        cp.cuda.Device().synchronize()
        start = time.perf_counter()
        tree = LevelTree(graph, part, dense_limit=dense_limit, super_size=SUPER_SIZE["cupy"], widen=widen,
                         weighted=weighted)
        levels = BoundaryGraph(graph, part, blocks, cp, dtype, tree=tree)
        cp.cuda.Device().synchronize()
        built = time.perf_counter()
        total = cp.zeros((), dtype=cp.float64)
        for _, rows in levels.boundary_rows(comps):
            total += cp.where(cp.isfinite(rows), rows, 0).sum(dtype=cp.float64)
        checksum = float(total)
        done = time.perf_counter()
        sizes = tree.level_sizes
        groups = [int(nb.size) for nb in tree.nb]
        relaxations = float(sum((np.diff(s).astype(np.float64) ** 3).sum() for s in tree.starts[1:]))
        del levels
        cp.get_default_memory_pool().free_all_blocks()
        return {"widen": widen, "dense_limit": dense_limit, "weighted": weighted,
                "boundary_graph_seconds": round(built - start, 4),
                "boundary_rows_seconds": round(done - built, 4), "seconds": round(done - start, 4),
                "level_sizes": sizes, "groups": groups, "closure_relaxations": relaxations, "checksum": checksum}

    one(True)  # warms the kernels
    if args.weighted:
        runs = [one(True, weighted=weighted) for _ in range(args.repeat) for weighted in (False, True)]
    elif args.dense_limits:
        runs = [one(True, limit) for _ in range(args.repeat) for limit in args.dense_limits]
    else:
        runs = [one(False), one(True)]
    for r in runs:
        print(f"widen={r['widen']!s:5s} dense_limit={r['dense_limit']} weighted={r['weighted']!s:5s} "
              f"levels {r['level_sizes']} groups {r['groups']} closures "
              f"{r['closure_relaxations']:.2e}: boundary graph {r['boundary_graph_seconds']:.2f} s, "
              f"rows {r['boundary_rows_seconds']:.2f} s, total {r['seconds']:.2f} s", flush=True)
    variant = ("-weighted" if args.weighted else "-dense-limits" if args.dense_limits else "") \
        + (f"-seed{args.seed}" if args.seed != 42 else "")
    same = len({r["checksum"] for r in runs}) == 1
    print(f"same rows: {same} ({sorted({r['checksum'] for r in runs})!r})")
    out = write_result({"benchmark": "level_tree", "graph": name, "n": graph.n, "m": graph.m, "k": k,
                        "partitioner": part.method, "seed": args.seed, "boundary_vertices": int(part.boundary.sum()),
                        "runs": runs, "same_rows": same, "metadata": metadata()},
                       folder=RESULTS / args.tag,
                       name=f"level-tree-{name}-k{k}{variant}.json")
    print(out)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
