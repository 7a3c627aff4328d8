#!/usr/bin/env python3
"""R-MAT (recursive matrix, Kronecker-style) random graphs: skewed degrees, small diameter.

``2**scale`` vertices and ``edge_factor * 2**scale`` sampled arcs.  Each arc
picks one quadrant of the adjacency matrix per level, ``scale`` times, with
probabilities ``a`` (top left), ``b`` (top right), ``c`` (bottom left) and
``d = 1 - a - b - c`` (bottom right); the quadrant bits are the bits of its
tail and head (Chakrabarti, Zhan & Faloutsos 2004).  The defaults
``a=0.57 b=0.19 c=0.19`` are Graph500's.  All arcs are drawn at once, one
vectorised step per level, from ``numpy.random.default_rng(--seed)``.

Self loops are dropped and repeated arcs kept once (the lightest), so the
graph has somewhat fewer arcs than were sampled.  The graph is directed by
default; ``--undirected`` makes every arc an edge.  ``--scramble`` relabels
the vertices by a random permutation (R-MAT otherwise gives the low ids the
high degrees).  ``--weights int|real`` draws weights uniform in
``1..--max-weight`` or ``(0, --max-weight]``; the default is unit weights
(a ``pattern`` Matrix Market file).  Example::

    python scripts/make_rmat.py --scale 14 --edge-factor 8 --undirected --weights int --seed 3 -o rmat14.mtx

Examples
--------
>>> g = rmat_graph(6, 4, seed=0)
>>> g.n, g.directed
(64, True)
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from _graphio import add_output_argument, report, write_graph
from fastapsp.graph import Graph

GRAPH500 = (0.57, 0.19, 0.19)


def rmat_arcs(scale: int, edge_factor: float, *, a: float = GRAPH500[0], b: float = GRAPH500[1],
              c: float = GRAPH500[2], seed: int = 0, scramble: bool = False):
    """Sampled R-MAT arcs ``(src, dst)`` (int64, with loops and repeats), deterministic by ``seed``."""
    d = 1.0 - a - b - c
    if min(a, b, c) < 0 or d < -1e-12:
        raise ValueError(f"a, b, c: {a}, {b}, {c}; allowed: >= 0 with a + b + c <= 1")
    if not 1 <= scale <= 40:
        raise ValueError(f"scale: {scale} is outside 1..40")
    if edge_factor <= 0:
        raise ValueError(f"edge_factor: {edge_factor} must be > 0")
    rng = np.random.default_rng(seed)
    m = int(round(edge_factor * 2**scale))
    src = np.zeros(m, dtype=np.int64)
    dst = np.zeros(m, dtype=np.int64)
    for level in range(scale):
        r = rng.random(m)
        # Quadrants in order a | b | c | d along [0, 1): tail bit for c, d; head bit for b, d.
        tail_bit = r >= a + b
        head_bit = ((r >= a) & (r < a + b)) | (r >= a + b + c)
        src |= tail_bit.astype(np.int64) << level
        dst |= head_bit.astype(np.int64) << level
    if scramble:
        perm = rng.permutation(2**scale)
        src, dst = perm[src], perm[dst]
    return src, dst


def rmat_graph(scale: int, edge_factor: float = 16, *, a: float = GRAPH500[0], b: float = GRAPH500[1],
               c: float = GRAPH500[2], seed: int = 0, undirected: bool = False, scramble: bool = False,
               weights: str = "none", max_weight: float = 100, name: str = "rmat") -> Graph:
    """An R-MAT graph (see the module docstring).

    Parameters
    ----------
    scale : int
        ``2**scale`` vertices.
    edge_factor : float
        Arcs sampled per vertex.
    a, b, c : float
        Quadrant probabilities; ``d = 1 - a - b - c``.
    seed : int
        Seed of ``numpy.random.default_rng``.
    undirected : bool
        Make every arc an undirected edge.
    scramble : bool
        Relabel vertices by a random permutation.
    weights : {"none", "int", "real"}
        Unit weights, whole numbers in ``1..max_weight`` or reals in ``(0, max_weight]``.
    max_weight : float
        Largest weight.
    name : str
        Name of the graph.

    Returns
    -------
    Graph
    """
    src, dst = rmat_arcs(scale, edge_factor, a=a, b=b, c=c, seed=seed, scramble=scramble)
    # Weights come from their own stream, so the structure does not depend on them.
    wrng = np.random.default_rng([seed, 1])
    if weights == "none":
        w = None
    elif weights == "int":
        if max_weight < 1:
            raise ValueError(f"max_weight: {max_weight}; allowed for int weights: >= 1")
        w = wrng.integers(1, int(max_weight) + 1, src.size).astype(np.float64)
    elif weights == "real":
        if not 0 < max_weight < np.inf:
            raise ValueError(f"max_weight: {max_weight}; allowed: a finite number > 0")
        w = max_weight * (1.0 - wrng.random(src.size))   # (0, max_weight]
    else:
        raise ValueError(f"weights: {weights!r} is not one of none, int, real")
    return Graph.from_edges(2**scale, src, dst, w, directed=not undirected, name=name)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="R-MAT / Kronecker-style random graph, deterministic by seed.")
    parser.add_argument("--scale", type=int, required=True, help="2**SCALE vertices")
    parser.add_argument("--edge-factor", type=float, default=16, help="arcs sampled per vertex (default 16)")
    parser.add_argument("-a", type=float, default=GRAPH500[0], help="top-left probability (default 0.57)")
    parser.add_argument("-b", type=float, default=GRAPH500[1], help="top-right probability (default 0.19)")
    parser.add_argument("-c", type=float, default=GRAPH500[2], help="bottom-left probability (default 0.19); "
                        "bottom-right d = 1 - a - b - c")
    parser.add_argument("--undirected", action="store_true", help="symmetrise: every arc becomes an edge")
    parser.add_argument("--scramble", action="store_true", help="relabel vertices by a random permutation")
    parser.add_argument("--weights", choices=("none", "int", "real"), default="none",
                        help="unit weights (default), whole numbers 1..MAX or reals in (0, MAX]")
    parser.add_argument("--max-weight", type=float, default=100.0, help="MAX (default 100)")
    parser.add_argument("--seed", type=int, default=0, help="seed of numpy.random.default_rng (default 0)")
    add_output_argument(parser)
    args = parser.parse_args(argv)
    try:
        graph = rmat_graph(args.scale, args.edge_factor, a=args.a, b=args.b, c=args.c, seed=args.seed,
                           undirected=args.undirected, scramble=args.scramble, weights=args.weights,
                           max_weight=args.max_weight, name=f"rmat{args.scale}")
    except ValueError as exc:
        parser.error(str(exc))
    comments = [f"R-MAT scale={args.scale} edge_factor={args.edge_factor:g} a={args.a:g} b={args.b:g} "
                f"c={args.c:g} d={1 - args.a - args.b - args.c:g} seed={args.seed} "
                f"{'undirected' if args.undirected else 'directed'}{' scrambled' if args.scramble else ''} "
                f"weights={args.weights}", "generated by scripts/make_rmat.py"]
    fmt = write_graph(args.output, graph, comments=comments)
    report(args.output, graph, fmt)
    return 0


if __name__ == "__main__":
    sys.exit(main())
