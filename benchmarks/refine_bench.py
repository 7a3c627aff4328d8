#!/usr/bin/env python3
"""Boundary vertices of METIS and of the boundary refinement after it, on the host, one JSON file per graph.

    python benchmarks/refine_bench.py --graph roadNY=/work/shared/data/roadNY.mtx.gz --k 147 \\
        --out benchmarks/results/refine-cpu/roadNY.json

METIS (``partition_graph(..., "metis")``) gives the start; the refinement
(:func:`fastapsp.partition.refine.refine_boundary`, NumPy and SciPy) runs in
its two stages, timed apart: the pairwise minimum cuts alone
(``max_rounds=0``), then the cluster moves alone (``flow_passes=0``) on their
result, which is what one call with both does.  Boundary vertices, edge cut
and part sizes of both partitions come from :func:`fastapsp.partition.make_partition`,
the bound is ``ceil((1 + imbalance) n / k)``, and ``reduction_percent`` is
``100 (refined - metis) / metis``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # _common
sys.path.insert(0, str(HERE.parent))  # measure this checkout's fastapsp, installed or not

from _common import metadata, timed, write_json_atomic  # noqa: E402

from fastapsp.io import read_graph  # noqa: E402
from fastapsp.partition import make_partition, partition_graph  # noqa: E402
from fastapsp.partition.refine import (DEFAULT_CYCLES, DEFAULT_FLOW_PASSES, max_part_size,  # noqa: E402
                                       refine_boundary)


def _summary(graph, labels, k: int, seed: int, imbalance: float) -> dict:
    metrics = make_partition(graph, labels, k, method="-", seed=seed, imbalance=imbalance, seconds=0.0).metrics()
    return {key: metrics[key] for key in ("boundary_vertices", "edge_cut", "largest_part", "imbalance")}


def bench(graph, name: str, k: int, *, seed: int, imbalance: float, flow_passes: int, cycles: int) -> dict:
    """METIS, then the two refinement stages on its labels: one record."""
    indptr, indices = graph.undirected_adjacency()
    with timed() as t_metis:
        start = partition_graph(graph, k, "metis", seed=seed, imbalance=imbalance).labels
    flow_stats, cluster_stats = {}, {}
    with timed() as t_flows:
        flowed = refine_boundary(indptr, indices, start, k, imbalance=imbalance, seed=seed, max_rounds=0,
                                 flow_passes=flow_passes, stats=flow_stats)
    with timed() as t_clusters:
        refined = refine_boundary(indptr, indices, flowed, k, imbalance=imbalance, seed=seed, flow_passes=0,
                                  cycles=cycles, stats=cluster_stats)
    before = _summary(graph, start, k, seed, imbalance)
    after_flows = _summary(graph, flowed, k, seed, imbalance)
    after = _summary(graph, refined, k, seed, imbalance)
    percent = 100.0 * (after["boundary_vertices"] - before["boundary_vertices"]) / max(before["boundary_vertices"], 1)
    return {"graph": name, "n": graph.n, "edges": int(indices.shape[0]) // 2, "k": k, "seed": seed,
            "imbalance_allowed": imbalance, "bound": max_part_size(graph.n, k, imbalance),
            "flow_passes": flow_passes, "cycles": cycles,
            "metis": {**before, "seconds": t_metis.seconds},
            "after_flows": {**after_flows, "seconds": t_flows.seconds,
                            "vertices_moved": flow_stats["moves"]},
            "refined": {**after, "seconds": t_flows.seconds + t_clusters.seconds,
                        "cluster_seconds": t_clusters.seconds, "cluster_rounds": cluster_stats["rounds"]},
            "reduction_percent": round(percent, 2)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graph", required=True, metavar="NAME=PATH", help="graph name and file")
    parser.add_argument("--k", type=int, required=True, help="number of parts")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--imbalance", type=float, default=0.03)
    parser.add_argument("--flow-passes", type=int, default=DEFAULT_FLOW_PASSES)
    parser.add_argument("--cycles", type=int, default=DEFAULT_CYCLES, help="cluster-move passes (default %(default)s)")
    parser.add_argument("--out", required=True, help="JSON file to write")
    args = parser.parse_args(argv)
    name, sep, path = args.graph.partition("=")
    if not sep or not Path(path).is_file():
        print(f"refine_bench: --graph: expected NAME=PATH of an existing file, found {args.graph!r}", file=sys.stderr)
        return 2
    if args.k < 2:
        print(f"refine_bench: --k: {args.k} is below 2", file=sys.stderr)
        return 2
    graph = read_graph(path)
    record = bench(graph, name, args.k, seed=args.seed, imbalance=args.imbalance, flow_passes=args.flow_passes,
                   cycles=args.cycles)
    write_json_atomic(args.out, {"metadata": metadata(), "result": record})
    m, f, r = record["metis"], record["after_flows"], record["refined"]
    print(f"{name} k={args.k}: METIS {m['boundary_vertices']:,} ({m['seconds']:.1f} s), flows "
          f"{f['boundary_vertices']:,} ({f['seconds']:.1f} s), refined {r['boundary_vertices']:,} "
          f"({record['reduction_percent']:+.2f}%, {r['seconds']:.1f} s), largest part {r['largest_part']} "
          f"<= {record['bound']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
