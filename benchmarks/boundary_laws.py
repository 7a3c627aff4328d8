"""The boundary laws of graphs, and what measuring one costs (``fastapsp.cost.sample_boundary``).

For each ``--graph NAME=PATH``: ``alpha`` and ``beta`` (a component of ``c``
vertices has about ``alpha * c**beta`` boundary vertices), the vertices of the
sampled region and the host seconds of the measurement (best of ``--repeat``), how
fast that region grows (``fastapsp.cost.growth_dimension`` of its breadth-first levels),
and what ``fastapsp.cost.auto_k`` does with the graph on each backend (its rule
and k, and the seconds it took).  ``KNOWN_LAWS`` and
``SAMPLE_SECONDS_PER_VERTEX`` in ``fastapsp/cost.py`` come from these records.

    python benchmarks/boundary_laws.py --graph delaunay_n14=../shared/data/delaunay_n14.mtx.gz \\
        --out benchmarks/results/boundary-laws
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, named_graph, write_result  # noqa: E402

import fastapsp  # noqa: E402
from fastapsp.cost import _SAMPLE_PARTS, _SAMPLE_RANGE, _ball, auto_k, growth_dimension, sample_boundary  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graph", action="append", required=True, type=named_graph, metavar="NAME=PATH")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", default=str(RESULTS / "boundary-laws"))
    args = parser.parse_args(argv)
    records = []
    for name, path in args.graph:
        graph = fastapsp.read_graph(path)
        isolated = int(np.count_nonzero(np.diff(graph.undirected_adjacency()[0]) == 0))
        linked = graph.n - isolated
        parts = _SAMPLE_PARTS if linked >= 4 * _SAMPLE_PARTS[0] else (max(2, linked // 4), max(2, linked // 16))
        sample = int(np.clip(linked // 10, *_SAMPLE_RANGE))
        seconds = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            alpha, beta = sample_boundary(graph, sample=sample, sizes=parts)
            seconds.append(time.perf_counter() - start)
        region = min(sample, linked)
        first = int(np.flatnonzero(np.diff(graph.undirected_adjacency()[0]) > 0)[0])
        ball, hops = _ball(graph, first, sample, levels=True)
        record = {"graph": name, "n": graph.n, "m": graph.m, "alpha": round(alpha, 4), "beta": round(beta, 4),
                  "sampled_vertices": region, "sample_seconds": round(min(seconds), 5),
                  "seconds_per_sampled_vertex": min(seconds) / max(region, 1),
                  "growth": round(growth_dimension(hops), 3), "growth_hops": int(hops.size),
                  "growth_reached": int(ball.size)}
        for backend in ("cupy", "numpy"):
            choice = auto_k(graph, backend=backend)
            record[f"auto_k_{backend}"] = {key: choice[key] for key in ("k", "rule", "seconds")}
        records.append(record)
        print(f"{name}: n={graph.n} alpha={alpha:.3f} beta={beta:.3f} growth {record['growth']} sample {region} vertices "
              f"{min(seconds) * 1e3:.1f} ms ({record['seconds_per_sampled_vertex'] * 1e6:.2f} us a vertex); "
              f"auto_k cupy k={record['auto_k_cupy']['k']} ({record['auto_k_cupy']['rule']}), "
              f"numpy k={record['auto_k_numpy']['k']}", flush=True)
    write_result({"benchmark": "boundary_laws", "host": platform.node(), "records": records}, folder=args.out,
                 name="boundary-laws.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
