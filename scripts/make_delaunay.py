#!/usr/bin/env python3
"""Delaunay triangulation of random points in the unit square, as a graph.

Like the DIMACS10 ``delaunay_nXX`` graphs: ``N`` points drawn uniformly from
[0, 1)², triangulated with :class:`scipy.spatial.Delaunay`; every triangle
side is an edge.  Planar, about 3 N edges, bounded degree on average: a good
stand-in for meshes and road-like graphs.

The points are ``numpy.random.default_rng(SEED).random((N, 2))``, so a seed
and a size name one graph on every machine.  The instance called
**delaunay16r** in the benchmarks (65,536 vertices, 196,583 edges) is::

    python scripts/make_delaunay.py --scale 16 --seed 1 -o delaunay16r.mtx

The default output is a ``pattern symmetric`` Matrix Market file (lower
triangle, 1-based, sorted by column then row); ``--weights euclidean`` gives
``real`` weights, the lengths of the sides.

Examples
--------
>>> g = delaunay_graph(np.random.default_rng(1).random((100, 2)))
>>> g.n, g.directed
(100, False)
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from _graphio import add_output_argument, report, write_graph
from fastapsp.graph import Graph


def random_points(n: int, seed: int) -> np.ndarray:
    """``n`` points uniform in [0, 1)², ``default_rng(seed).random((n, 2))``."""
    return np.random.default_rng(seed).random((n, 2))


def delaunay_graph(points: np.ndarray, *, weights: str = "pattern", name: str = "delaunay") -> Graph:
    """The undirected graph of the Delaunay triangulation of ``points``.

    Parameters
    ----------
    points : (n, 2) array of float
        Point coordinates, n >= 3 and not all on one line.
    weights : {"pattern", "euclidean"}
        Every edge weighs 1, or the distance between its ends.
    name : str
        Name of the graph.

    Returns
    -------
    Graph
        Undirected, one edge per triangle side.
    """
    from scipy.spatial import Delaunay

    points = np.asarray(points, dtype=np.float64)
    if points.ndim != 2 or points.shape[1] != 2 or points.shape[0] < 3:
        raise ValueError(f"points: need an (n, 2) array with n >= 3, found shape {points.shape}")
    tri = Delaunay(points)
    s = tri.simplices.astype(np.int64)
    src = np.concatenate([s[:, 0], s[:, 1], s[:, 2]])
    dst = np.concatenate([s[:, 1], s[:, 2], s[:, 0]])
    w = None
    if weights == "euclidean":
        w = np.hypot(*(points[src] - points[dst]).T)
    elif weights != "pattern":
        raise ValueError(f"weights: {weights!r} is not one of pattern, euclidean")
    # Each inner side appears in two triangles; Graph.from_edges keeps one copy.
    return Graph.from_edges(points.shape[0], src, dst, w, directed=False, name=name)


def orient_randomly(graph: Graph, seed: int, *, name: str | None = None) -> Graph:
    """A directed graph keeping each edge of ``graph`` as u->v, v->u or both, each with probability 1/3.

    ``numpy.random.default_rng(seed)`` draws one choice per edge, edges taken
    in the order of the lower triangle (u > v) of the CSR.
    """
    src, dst, w = graph.arcs()
    lower = src > dst
    u, v, w = src[lower], dst[lower], w[lower]
    choice = np.random.default_rng(seed).integers(0, 3, u.size)
    fwd, bwd = choice != 1, choice != 0
    return Graph.from_edges(graph.n, np.concatenate([u[fwd], v[bwd]]), np.concatenate([v[fwd], u[bwd]]),
                            np.concatenate([w[fwd], w[bwd]]), directed=True, name=name or graph.name)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description="Delaunay triangulation of random points in the unit square, written as a graph "
                    "(like DIMACS10 delaunay_nXX). delaunay16r: --scale 16 --seed 1.")
    size = parser.add_mutually_exclusive_group(required=True)
    size.add_argument("--points", type=int, metavar="N", help="number of points (vertices)")
    size.add_argument("--scale", type=int, metavar="XX", help="2**XX points")
    parser.add_argument("--seed", type=int, default=1, help="seed of numpy.random.default_rng (default 1)")
    parser.add_argument("--weights", choices=("pattern", "euclidean"), default="pattern",
                        help="unit weights (default) or side lengths")
    parser.add_argument("--directed", action="store_true",
                        help="keep each edge in one or both directions at random (1/3 each; same seed)")
    add_output_argument(parser)
    args = parser.parse_args(argv)
    n = args.points if args.points is not None else 2 ** args.scale
    if args.scale is not None and not 2 <= args.scale <= 30:
        parser.error(f"--scale: {args.scale} is outside 2..30")
    if n < 3:
        parser.error(f"--points: {n} is too few; allowed: at least 3")
    name = f"delaunay_n{args.scale}" if args.scale is not None else f"delaunay_{n}"
    graph = delaunay_graph(random_points(n, args.seed), weights=args.weights, name=name)
    if args.directed:
        graph = orient_randomly(graph, args.seed)
    comments = [f"Delaunay triangulation of {n} random points in [0,1)^2: "
                f"numpy.random.default_rng({args.seed}).random(({n}, 2))",
                f"generated by scripts/make_delaunay.py --points {n} --seed {args.seed} --weights {args.weights}"
                + (" --directed" if args.directed else "")]
    fmt = write_graph(args.output, graph, comments=comments)
    report(args.output, graph, fmt)
    return 0


if __name__ == "__main__":
    sys.exit(main())
