#!/usr/bin/env python3
"""A weighted grid "road network": streets on a rows × cols grid, travel-time weights.

Vertex ``r * cols + c`` (0-based) is the crossing in row ``r``, column ``c``.
Every crossing is joined to its right and lower neighbours by an undirected
street whose weight is a random travel time, uniform in
``[--min-weight, --max-weight]`` (whole numbers with ``--weights int``, the
default, exact in float32; any real with ``--weights real``).  Then:

* ``--remove F`` closes a random fraction ``F`` of the streets (the graph
  may fall apart; distances between the pieces are ``inf``);
* ``--diagonals F`` adds a diagonal shortcut to a random fraction ``F`` of
  the grid cells, joining two opposite corners (which two is random), with
  a travel time drawn like a street's, so often cheaper than going round.

Everything is drawn from ``numpy.random.default_rng(--seed)``, so the seed
and the options name one graph.  Example (a 256 × 256 city)::

    python scripts/make_grid_road.py --rows 256 --cols 256 --remove 0.05 --diagonals 0.1 \\
        --seed 7 -o grid256.mtx

Examples
--------
>>> g = grid_road_graph(3, 4, seed=0)
>>> g.n, g.num_edges
(12, 17)
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from _graphio import add_output_argument, report, write_graph
from fastapsp.graph import Graph


def grid_road_graph(rows: int, cols: int, *, seed: int = 0, weights: str = "int", min_weight: float = 1,
                    max_weight: float = 100, remove: float = 0.0, diagonals: float = 0.0,
                    name: str = "grid_road") -> Graph:
    """The grid road network described in the module docstring.

    Parameters
    ----------
    rows, cols : int
        Grid size, both >= 1.
    seed : int
        Seed of ``numpy.random.default_rng``.
    weights : {"int", "real"}
        Whole-number or real travel times.
    min_weight, max_weight : float
        Range of the travel times, ``0 <= min_weight <= max_weight``.
    remove : float
        Fraction of streets removed, in [0, 1].
    diagonals : float
        Fraction of grid cells that get a diagonal shortcut, in [0, 1].
    name : str
        Name of the graph.

    Returns
    -------
    Graph
        Undirected, ``rows * cols`` vertices.
    """
    if rows < 1 or cols < 1:
        raise ValueError(f"rows, cols: {rows} x {cols}; allowed: both >= 1")
    if not 0 <= min_weight <= max_weight or not np.isfinite(max_weight):
        raise ValueError(f"weights: range [{min_weight}, {max_weight}]; allowed: 0 <= min <= max, finite")
    if weights not in ("int", "real"):
        raise ValueError(f"weights: {weights!r} is not one of int, real")
    for what, f in (("remove", remove), ("diagonals", diagonals)):
        if not 0 <= f <= 1:
            raise ValueError(f"{what}: {f} is outside [0, 1]")
    rng = np.random.default_rng(seed)
    ids = np.arange(rows * cols, dtype=np.int64).reshape(rows, cols)
    src = np.concatenate([ids[:, :-1].ravel(), ids[:-1, :].ravel()])
    dst = np.concatenate([ids[:, 1:].ravel(), ids[1:, :].ravel()])
    if remove > 0 and src.size:
        keep = rng.random(src.size) >= remove
        src, dst = src[keep], dst[keep]
    if diagonals > 0 and rows > 1 and cols > 1:
        cells = np.flatnonzero(rng.random((rows - 1) * (cols - 1)) < diagonals)
        r, c = np.divmod(cells, cols - 1)
        anti = rng.random(cells.size) < 0.5       # which pair of opposite corners
        a = np.where(anti, ids[r, c + 1], ids[r, c])
        b = np.where(anti, ids[r + 1, c], ids[r + 1, c + 1])
        src, dst = np.concatenate([src, a]), np.concatenate([dst, b])
    if weights == "int":
        w = rng.integers(int(np.ceil(min_weight)), int(np.floor(max_weight)) + 1, src.size).astype(np.float64)
    else:
        w = rng.uniform(min_weight, max_weight, src.size)
    return Graph.from_edges(rows * cols, src, dst, w, directed=False, name=name)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Weighted grid road network (travel times), "
                                                 "optionally with closed streets and diagonal shortcuts.")
    parser.add_argument("--rows", type=int, required=True, help="grid rows (>= 1)")
    parser.add_argument("--cols", type=int, default=None, help="grid columns (default: --rows)")
    parser.add_argument("--weights", choices=("int", "real"), default="int",
                        help="whole-number (default) or real travel times")
    parser.add_argument("--min-weight", type=float, default=1.0, help="smallest travel time (default 1)")
    parser.add_argument("--max-weight", type=float, default=100.0, help="largest travel time (default 100)")
    parser.add_argument("--remove", type=float, default=0.0, metavar="F",
                        help="fraction of streets removed (default 0)")
    parser.add_argument("--diagonals", type=float, default=0.0, metavar="F",
                        help="fraction of grid cells with a diagonal shortcut (default 0)")
    parser.add_argument("--seed", type=int, default=0, help="seed of numpy.random.default_rng (default 0)")
    add_output_argument(parser)
    args = parser.parse_args(argv)
    cols = args.rows if args.cols is None else args.cols
    if args.weights == "int" and np.floor(args.max_weight) < np.ceil(args.min_weight):
        parser.error(f"--min-weight/--max-weight: no whole number in [{args.min_weight}, {args.max_weight}]")
    try:
        graph = grid_road_graph(args.rows, cols, seed=args.seed, weights=args.weights,
                                min_weight=args.min_weight, max_weight=args.max_weight,
                                remove=args.remove, diagonals=args.diagonals,
                                name=f"grid_road_{args.rows}x{cols}")
    except ValueError as exc:
        parser.error(str(exc))
    comments = [f"grid road network {args.rows} x {cols}, {args.weights} travel times in "
                f"[{args.min_weight:g}, {args.max_weight:g}], remove={args.remove:g} "
                f"diagonals={args.diagonals:g} seed={args.seed}; vertex r*cols+c (0-based) is row r, column c",
                "generated by scripts/make_grid_road.py"]
    fmt = write_graph(args.output, graph, comments=comments)
    report(args.output, graph, fmt)
    return 0


if __name__ == "__main__":
    sys.exit(main())
