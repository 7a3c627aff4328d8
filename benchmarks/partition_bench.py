#!/usr/bin/env python3
"""Time partitioners on one graph: seconds, boundary vertices, edge cut and balance, one JSON file.

    python benchmarks/partition_bench.py --graph roadFLA=benchmarks/data/roadFLA.mtx.gz --k 595 \\
        --partitioners metis jet metis+b jet+b --repeat 2 --out results.json

Every partitioner runs first once on a small graph (untimed: CUDA kernels
compiled, libraries loaded; the graph is large enough for jet to coarsen it,
with stars that only its two-hop matching pairs up, so that its array
operations are compiled too), then ``--repeat`` times on the graph; the JSON
holds every run's seconds (device synchronised before the clock is read) and
their median, twice: ``seconds``, the whole ``partition_graph`` call, and
``partition_seconds``, the partitioner's own (``Partition.seconds``: from the
graph to the labels on the host and any refinement, without the boundary and
metrics that ``partition_graph`` computes afterwards, about 0.2 s on a
million vertices); then the partition's metrics (from the last run; the
partitioners are deterministic for a seed) and the run's metadata (device,
versions, commit).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # _common
sys.path.insert(0, str(HERE.parent))  # measure this checkout's fastapsp, installed or not

from _common import metadata, named_graph, timed  # noqa: E402

from fastapsp.graph import Graph  # noqa: E402
from fastapsp.io import read_graph  # noqa: E402
from fastapsp.partition import PARTITIONERS, partition_graph  # noqa: E402

METRICS = ("edge_cut", "boundary_vertices", "boundary_vertices_before_refine", "largest_part", "imbalance",
           "refine_seconds", "refine_rounds", "refine_moves", "refine_backend", "refine_workers")


def _array_module():
    try:
        import cupy

        return cupy if cupy.cuda.runtime.getDeviceCount() > 0 else None
    except Exception:
        return None


def bench(graph, name: str, k: int, partitioners: list[str], *, repeat: int, seed: int, imbalance: float,
          save=None) -> list[dict]:
    """One record per partitioner: seconds of every run, their median, and the partition's metrics.

    A partitioner that fails gets a record with its ``error`` instead.  ``save(records)``,
    when given, is called after every partitioner (so a run cut short keeps what it measured).
    """
    xp = _array_module()
    warm = _warm_up_graph()
    records = []
    for partitioner in partitioners:
        seconds, own = [], []
        try:
            partition_graph(warm, 8, partitioner, seed=seed, imbalance=imbalance)
            for _ in range(repeat):
                with timed(xp=xp) as t:
                    part = partition_graph(graph, k, partitioner, seed=seed, imbalance=imbalance)
                seconds.append(t.seconds)
                own.append(part.seconds)
        except Exception as exc:  # recorded; the other partitioners still run
            error = f"{type(exc).__name__}: {' '.join(str(exc).split())}"
            records.append({"graph": name, "n": graph.n, "k": k, "partitioner": partitioner, "error": error})
            print(f"{name} k={k} {partitioner}: FAILED: {error}", flush=True)
            if save is not None:
                save(records)
            continue
        metrics = part.metrics()
        record = {"graph": name, "n": graph.n, "k": k, "partitioner": partitioner, "seed": seed,
                  "imbalance_allowed": imbalance, "seconds": seconds, "median_seconds": statistics.median(seconds),
                  "partition_seconds": own, "median_partition_seconds": statistics.median(own),
                  **{key: metrics.get(key) for key in METRICS}}
        records.append(record)
        print(f"{name} k={k} {partitioner}: {record['median_partition_seconds']:.3f} s "
              f"({record['median_seconds']:.3f} s with the metrics), "
              f"{record['boundary_vertices']:,} boundary vertices, cut {record['edge_cut']:,}", flush=True)
        if save is not None:
            save(records)
    return records


def _warm_up_graph() -> Graph:
    """An 80 x 80 grid with 100 stars of 20 leaves hanging from it (8,500 vertices)."""
    side, stars, leaves = 80, 100, 20
    grid = np.arange(side * side).reshape(side, side)
    centres = side * side + (leaves + 1) * np.arange(stars)
    leaf = (centres[:, None] + np.arange(1, leaves + 1)).ravel()
    src = np.concatenate([grid[:, 1:].ravel(), grid[1:, :].ravel(), centres, np.repeat(centres, leaves)])
    dst = np.concatenate([grid[:, :-1].ravel(), grid[:-1, :].ravel(), 61 * np.arange(stars) % (side * side), leaf])
    return Graph.from_edges(side * side + stars * (leaves + 1), src, dst, directed=False, name="warm-up")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graph", required=True, type=named_graph, metavar="NAME=PATH", help="graph name and file")
    parser.add_argument("--k", type=int, required=True, help="number of parts")
    parser.add_argument("--partitioners", nargs="+", default=["metis", "metis+b", "jet", "jet+b"])
    parser.add_argument("--repeat", type=int, default=2, help="timed runs per partitioner (default 2)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--imbalance", type=float, default=0.03)
    parser.add_argument("--out", required=True, help="JSON file to write")
    args = parser.parse_args(argv)
    name, path = args.graph
    unknown = [p for p in args.partitioners if p not in PARTITIONERS]
    if unknown:
        print(f"partition_bench: --partitioners: {', '.join(unknown)} not among {', '.join(PARTITIONERS)}",
              file=sys.stderr)
        return 2
    if args.repeat < 1:
        print(f"partition_bench: --repeat: {args.repeat} is below 1", file=sys.stderr)
        return 2
    graph = read_graph(path)
    meta = metadata()

    def save(records):
        tmp = Path(f"{args.out}.tmp")
        tmp.write_text(json.dumps({"metadata": meta, "results": records}, indent=1) + "\n")
        tmp.replace(args.out)

    records = bench(graph, name, args.k, args.partitioners, repeat=args.repeat, seed=args.seed,
                    imbalance=args.imbalance, save=save)
    return 1 if any("error" in r for r in records) else 0


if __name__ == "__main__":
    sys.exit(main())
