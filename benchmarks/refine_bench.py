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
``100 (refined - metis) / metis``.  ``--workers`` processes solve the pairwise
cuts (default: ``FASTAPSP_REFINE_WORKERS``, else the CPUs this process may
use); the record also holds where the cuts' time went: the restart's layout,
the cuts' rounds (seconds of all cuts together, ``cut_seconds``, and the sum
over the rounds of the longest cut, ``longest_cut_seconds``: no number of
workers can go below it) and ``cuts_floor_seconds``, the sum over the rounds
of ``max(longest cut, all cuts / W)`` for W = 4, 8, 16: what the cuts would
take with W workers and nothing else (no parent's work, no transfers).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # _common
sys.path.insert(0, str(HERE.parent))  # measure this checkout's fastapsp, installed or not

from _common import metadata, named_graph, timed, write_json_atomic  # noqa: E402

from fastapsp.io import read_graph  # noqa: E402
from fastapsp.partition import make_partition, partition_graph  # noqa: E402
from fastapsp.partition.refine import (DEFAULT_CYCLES, DEFAULT_FLOW_PASSES, max_part_size,  # noqa: E402
                                       refine_boundary)


def _summary(graph, labels, k: int, seed: int, imbalance: float) -> dict:
    metrics = make_partition(graph, labels, k, method="-", seed=seed, imbalance=imbalance, seconds=0.0).metrics()
    return {key: metrics[key] for key in ("boundary_vertices", "edge_cut", "largest_part", "imbalance")}


def _rounds_summary(timings: dict) -> dict:
    """Seconds of the cuts from ``refine_boundary``'s timings (see the module docstring)."""
    rounds = timings.get("round_seconds", [])
    return {"layout_seconds": timings.get("layout_seconds", 0.0), "cut_rounds": len(rounds),
            "cut_seconds": sum(total for total, _ in rounds),
            "longest_cut_seconds": sum(longest for _, longest in rounds),
            "cuts_floor_seconds": {w: sum(max(longest, total / w) for total, longest in rounds) for w in (4, 8, 16)},
            "broadcast_seconds": timings.get("broadcast_seconds", 0.0)}


def bench(graph, name: str, k: int, *, seed: int, imbalance: float, flow_passes: int, cycles: int,
          workers: int | None = None) -> dict:
    """METIS, then the two refinement stages on its labels: one record."""
    indptr, indices = graph.undirected_adjacency()
    with timed() as t_metis:
        start = partition_graph(graph, k, "metis", seed=seed, imbalance=imbalance).labels
    flow_stats, cluster_stats = {}, {}
    with timed() as t_flows:
        flowed = refine_boundary(indptr, indices, start, k, imbalance=imbalance, seed=seed, max_rounds=0,
                                 flow_passes=flow_passes, workers=workers, stats=flow_stats)
    with timed() as t_clusters:
        refined = refine_boundary(indptr, indices, flowed, k, imbalance=imbalance, seed=seed, flow_passes=0,
                                  cycles=cycles, workers=workers, stats=cluster_stats)
    before = _summary(graph, start, k, seed, imbalance)
    after_flows = _summary(graph, flowed, k, seed, imbalance)
    after = _summary(graph, refined, k, seed, imbalance)
    percent = 100.0 * (after["boundary_vertices"] - before["boundary_vertices"]) / max(before["boundary_vertices"], 1)
    return {"graph": name, "n": graph.n, "edges": int(indices.shape[0]) // 2, "k": k, "seed": seed,
            "imbalance_allowed": imbalance, "bound": max_part_size(graph.n, k, imbalance),
            "flow_passes": flow_passes, "cycles": cycles, "workers": flow_stats["workers"],
            "restarted": flow_stats["restarted"],
            "metis": {**before, "seconds": t_metis.seconds},
            "after_flows": {**after_flows, "seconds": t_flows.seconds,
                            "vertices_moved": flow_stats["moves"], **_rounds_summary(flow_stats["timings"])},
            "refined": {**after, "seconds": t_flows.seconds + t_clusters.seconds,
                        "cluster_seconds": t_clusters.seconds, "cluster_rounds": cluster_stats["rounds"]},
            "reduction_percent": round(percent, 2)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graph", required=True, type=named_graph, metavar="NAME=PATH", help="graph name and file")
    parser.add_argument("--k", type=int, required=True, help="number of parts")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--imbalance", type=float, default=0.03)
    parser.add_argument("--flow-passes", type=int, default=DEFAULT_FLOW_PASSES)
    parser.add_argument("--cycles", type=int, default=DEFAULT_CYCLES, help="cluster-move passes (default %(default)s)")
    parser.add_argument("--workers", type=int, default=None,
                        help="processes for the pairwise cuts (default: FASTAPSP_REFINE_WORKERS, else the CPUs)")
    parser.add_argument("--out", required=True, help="JSON file to write")
    args = parser.parse_args(argv)
    name, path = args.graph
    if args.k < 2:
        print(f"refine_bench: --k: {args.k} is below 2", file=sys.stderr)
        return 2
    graph = read_graph(path)
    if args.workers is not None and args.workers < 1:
        print(f"refine_bench: --workers: {args.workers} is below 1", file=sys.stderr)
        return 2
    record = bench(graph, name, args.k, seed=args.seed, imbalance=args.imbalance, flow_passes=args.flow_passes,
                   cycles=args.cycles, workers=args.workers)
    write_json_atomic(args.out, {"metadata": metadata(), "result": record})
    m, f, r = record["metis"], record["after_flows"], record["refined"]
    print(f"{name} k={args.k}: METIS {m['boundary_vertices']:,} ({m['seconds']:.1f} s), flows "
          f"{f['boundary_vertices']:,} ({f['seconds']:.1f} s), refined {r['boundary_vertices']:,} "
          f"({record['reduction_percent']:+.2f}%, {r['seconds']:.1f} s), largest part {r['largest_part']} "
          f"<= {record['bound']}; {record['workers']} workers, layout {f['layout_seconds']:.1f} s, cuts "
          f"{f['cut_seconds']:.1f} s in {f['cut_rounds']} rounds (floor with 16 workers "
          f"{f['cuts_floor_seconds'][16]:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
