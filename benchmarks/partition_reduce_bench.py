#!/usr/bin/env python3
"""METIS with and without the graph reduction of :mod:`fastapsp.partition.reduce`: one JSON file.

    python benchmarks/partition_reduce_bench.py                  # the default graphs and k
    python benchmarks/partition_reduce_bench.py --graph roadNY=benchmarks/data/roadNY.mtx.gz:153

For every graph and k, ``partition_graph(..., "metis", reduce=...)`` runs
once untimed and ``--repeat`` times timed with ``reduce="never"`` (METIS on
the whole graph) and ``reduce="always"`` (METIS on the reduced graph):
the median of the partitioner's own seconds (``Partition.seconds``), the
boundary vertices, the edge cut, the largest part against the average, and
the reduction's own seconds and reduced vertex count.  The grid (no degree-1
or degree-2 vertices but its sides) is ``scripts/make_grid_road.py --rows
512 --seed 1``.  Writes ``benchmarks/results/partition-reduce/partition-reduce.json``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # _common
sys.path.insert(0, str(HERE.parent))  # measure this checkout's fastapsp, installed or not
sys.path.insert(0, str(HERE.parent / "scripts"))  # make_grid_road

from _common import RESULTS, metadata, write_json_atomic  # noqa: E402

from fastapsp.io import read_graph  # noqa: E402
from fastapsp.partition import partition_graph  # noqa: E402

DATA_DIRS = (HERE.parent.parent / "shared" / "data", HERE / "data", Path("/work/main/benchmarks/data"))
DEFAULTS = (("luxembourg_osm", 67), ("roadNY", 153), ("roadBAY", 187), ("roadFLA", 1045), ("roadFLA", 256),
            ("delaunay_n17", 181), ("grid512", 215))


def _load(name: str, path: str | None = None):
    if name == "grid512" and path is None:
        from make_grid_road import grid_road_graph

        return grid_road_graph(512, 512, seed=1)
    if path is None:
        found = [d / f"{name}.mtx.gz" for d in DATA_DIRS if (d / f"{name}.mtx.gz").is_file()]
        if not found:
            raise FileNotFoundError(f"{name}.mtx.gz in none of {', '.join(map(str, DATA_DIRS))}")
        path = found[0]
    return read_graph(path)


def bench(graph, name: str, k: int, *, repeat: int, seed: int, imbalance: float) -> list[dict]:
    """One record for METIS on the whole graph, one for METIS on the reduced graph."""
    indptr, _ = graph.undirected_adjacency()
    degree = np.diff(indptr)
    records = []
    for reduce in ("never", "always"):
        partition_graph(graph, k, "metis", seed=seed, imbalance=imbalance, reduce=reduce)
        runs = [partition_graph(graph, k, "metis", seed=seed, imbalance=imbalance, reduce=reduce)
                for _ in range(repeat)]
        metrics = runs[-1].metrics()
        record = {"graph": name, "n": graph.n, "m": graph.num_edges, "k": k, "partitioner": "metis",
                  "reduce": reduce, "seed": seed, "imbalance_allowed": imbalance,
                  "degree_1_or_2": float(np.mean((degree == 1) | (degree == 2))),
                  "seconds_runs": [r.seconds for r in runs], "seconds": statistics.median(r.seconds for r in runs),
                  "boundary": metrics["boundary_vertices"], "edge_cut": metrics["edge_cut"],
                  "largest_over_average": metrics["largest_part"] * k / graph.n,
                  "nonempty_parts": int(np.count_nonzero(runs[-1].sizes)),
                  "reduced_vertices": metrics.get("reduced_vertices"),
                  "reduce_seconds": statistics.median(r.details.get("reduce_seconds", 0.0) for r in runs),
                  "reduce_fallback": metrics.get("reduce_fallback")}
        records.append(record)
        print(f"{name} k={k} reduce={reduce}: {record['seconds']:.3f} s, {record['boundary']:,} boundary, "
              f"cut {record['edge_cut']:,}, largest/avg {record['largest_over_average']:.4f}, "
              f"reduced to {record['reduced_vertices']}", flush=True)
    return records


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graph", action="append", metavar="NAME[=PATH]:K",
                        help="graph and k (repeatable); default: the graphs of DEFAULTS")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs each (default 3, the median is kept)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--imbalance", type=float, default=0.03)
    parser.add_argument("--out", default=str(RESULTS / "partition-reduce" / "partition-reduce.json"))
    args = parser.parse_args(argv)
    cases = []
    for spec in args.graph or [f"{name}:{k}" for name, k in DEFAULTS]:
        graph, sep, k = spec.rpartition(":")
        if not sep or not k.isdigit():
            print(f"partition_reduce_bench: --graph: expected NAME[=PATH]:K, found {spec!r}", file=sys.stderr)
            return 2
        name, _, path = graph.partition("=")
        cases.append((name, path or None, int(k)))
    meta = metadata()
    meta["device"] = f"cpu: {meta['cpu']}"  # the partitioners run on the host
    records, loaded = [], {}
    for name, path, k in cases:
        if (name, path) not in loaded:
            loaded = {(name, path): _load(name, path)}
        records += bench(loaded[(name, path)], name, k, repeat=args.repeat, seed=args.seed,
                         imbalance=args.imbalance)
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(args.out, {"metadata": meta, "results": records})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
