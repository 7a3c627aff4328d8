"""What splitting the partitioning among ranks would cost: the graph cut into pieces, each partitioned apart.

A way to partition in parallel is to cut the graph into one piece per rank and
let every rank partition its piece into its share of the k components.  This
measures three such cuts: ``hops``, the package's own (recursive bisection between
two levels of hops, pockets moved across: :func:`fastapsp.partition.pieces.cut_pieces`),
``bands``, the vertices ordered by hops from a pseudo-peripheral vertex (two
breadth-first searches) and cut into R runs of equal size, and ``metis``, METIS
into R parts; each piece is then partitioned by ``--partitioner`` (METIS on the
host, Jet on the GPU) into its share of the k parts.  It records the seconds of
the cut, of the partitioner on the whole graph and on each piece (the slowest
piece is what R ranks would wait for), and the boundary vertices and largest
component of each partition, the quantities the run's cost follows.  The whole
graph is partitioned twice first; the second, warm call is the one compared.
One JSON under ``benchmarks/results/TAG/``.

    python benchmarks/split_bench.py --graph roadFLA=benchmarks/data/roadFLA.mtx.gz -k 1045 --pieces 2 4
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
from _common import RESULTS, named_graph, write_result  # noqa: E402


def bands(graph, pieces: int) -> tuple[np.ndarray, float]:
    """``(piece of every vertex, seconds)``: hops from a pseudo-peripheral vertex, cut into equal runs."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import breadth_first_order, shortest_path

    start = time.perf_counter()
    ptr, ind = graph.undirected_adjacency()
    a = sp.csr_matrix((np.ones(ind.size), ind, ptr), shape=(graph.n, graph.n))
    far = breadth_first_order(a, 0, directed=False, return_predecessors=False)[-1]
    hops = shortest_path(a, unweighted=True, indices=far)
    order = np.lexsort((np.arange(graph.n), hops))  # unreached vertices (other pieces of the graph) last
    piece = np.empty(graph.n, dtype=np.int64)
    piece[order] = np.minimum(np.arange(graph.n) * pieces // graph.n, pieces - 1)
    return piece, time.perf_counter() - start


def hops_cut(graph, pieces: int, k: int) -> tuple[np.ndarray, float]:
    """``(piece of every vertex, seconds)``: the package's cut (the whole cut, as one rank would not make it)."""
    from fastapsp.partition.pieces import cut_pieces

    start = time.perf_counter()
    ptr, ind = graph.undirected_adjacency()
    piece = np.empty(graph.n, dtype=np.int64)
    for p, vertices, _ in cut_pieces(ptr, ind, pieces, k):
        piece[vertices] = p
    return piece, time.perf_counter() - start


def own_piece_seconds(graph, pieces: int, k: int) -> list[float]:
    """Seconds each rank would take to find its own piece (``cut_pieces(..., only=rank)``)."""
    from fastapsp.partition.pieces import cut_pieces

    ptr, ind = graph.undirected_adjacency()
    seconds = []
    for rank in range(pieces):
        start = time.perf_counter()
        cut_pieces(ptr, ind, pieces, k, only=rank)
        seconds.append(time.perf_counter() - start)
    return seconds


def metis_cut(graph, pieces: int) -> tuple[np.ndarray, float]:
    """``(piece of every vertex, seconds)``: METIS into ``pieces`` parts."""
    from fastapsp.partition import partition_graph

    start = time.perf_counter()
    piece = partition_graph(graph, pieces, "metis").labels.astype(np.int64)
    return piece, time.perf_counter() - start


def shares(k: int, sizes) -> np.ndarray:
    """k split in proportion to ``sizes``, largest remainders first."""
    want = k * np.asarray(sizes, dtype=np.float64) / max(1, int(np.sum(sizes)))
    out = np.floor(want).astype(np.int64)
    out[np.argsort(-(want - out))[: k - int(out.sum())]] += 1
    return np.maximum(out, 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph", required=True, type=named_graph, metavar="NAME=PATH")
    parser.add_argument("-k", type=int, required=True)
    parser.add_argument("--pieces", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--cuts", nargs="+", choices=["hops", "bands", "metis"], default=["hops", "bands", "metis"])
    parser.add_argument("--partitioner", default="metis", help="of the whole graph and of the pieces (metis, jet, ...)")
    parser.add_argument("--tag", default="partition-split")
    args = parser.parse_args()

    from fastapsp import read_graph
    from fastapsp.partition import make_partition, partition_graph

    name, path = args.graph
    graph = read_graph(path)
    method = args.partitioner
    start = time.perf_counter()
    partition_graph(graph, args.k, method)
    first = time.perf_counter() - start
    start = time.perf_counter()
    whole = partition_graph(graph, args.k, method)
    rows = [{"cut": "none", "pieces": 1, "cut_seconds": 0.0, "piece_seconds": [time.perf_counter() - start],
             "first_call_seconds": first,
             "boundary_vertices": int(whole.boundary.sum()), "largest_component": int(whole.sizes.max())}]
    for cut, pieces in [(cut, pieces) for cut in args.cuts for pieces in args.pieces]:
        extra = {}
        if cut == "hops":
            piece, cut_seconds = hops_cut(graph, pieces, args.k)
            extra["own_piece_seconds"] = own_piece_seconds(graph, pieces, args.k)
        else:
            piece, cut_seconds = (bands if cut == "bands" else metis_cut)(graph, pieces)
        ks = shares(args.k, np.bincount(piece, minlength=pieces))
        labels = np.empty(graph.n, dtype=np.int64)
        offset, seconds = 0, []
        for r in range(pieces):
            vertices = np.flatnonzero(piece == r)
            t = time.perf_counter()
            part = partition_graph(graph.subgraph(vertices), int(ks[r]), method)
            seconds.append(time.perf_counter() - t)
            labels[vertices] = part.labels + offset
            offset += int(ks[r])
        split = make_partition(graph, labels, offset, method=f"{method} on {cut}", seed=0, imbalance=0.03, seconds=0)
        rows.append({"cut": cut, "pieces": pieces, "cut_seconds": cut_seconds, "piece_seconds": seconds,
                     "boundary_vertices": int(split.boundary.sum()), "largest_component": int(split.sizes.max()),
                     **extra})
    base = rows[0]["boundary_vertices"]
    for row in rows:
        row["boundary_over_whole"] = row["boundary_vertices"] / base
        print(f"{name} {row['cut']} pieces {row['pieces']}: cut {row['cut_seconds']:.2f} s, slowest piece "
              f"{max(row['piece_seconds']):.2f} s (all {sum(row['piece_seconds']):.2f} s), boundary "
              f"{row['boundary_vertices']} ({row['boundary_over_whole']:.3f} of whole), largest "
              f"{row['largest_component']}")
    write_result({"benchmark": "split_bench", "graph": name, "n": graph.n, "m": graph.m, "k": args.k,
                  "partitioner": method, "runs": rows}, folder=RESULTS / args.tag, name=f"split-{name}.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
