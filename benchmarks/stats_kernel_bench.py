"""Time the ``--stats`` reduction kernel (``kernels/reduce_stats.cu``) on a real row block.

The block is the distances from a BFS ball of ``--rows`` vertices (a stand-in for
one component of about that size) to every vertex of the graph, computed on the
GPU with the boundary SSSP.  Each variant of the kernel (compile-time switches
that leave parts out, or count the histogram another way) reduces the block
``--repeat`` times; the JSON gives seconds per block and the bytes read per
second, beside a plain read of the block (``cupy.max``) as the floor.

    python benchmarks/stats_kernel_bench.py --graph roadFLA=benchmarks/data/roadFLA.mtx.gz --tag stats-kernel

``--product K ...`` times instead, for each inner dimension K, the statistics of a product reduced as it
is made (``min_plus_stats.cu``, :meth:`StatsAccumulator.update_product`) against the product stored in
a block and then reduced (the packed min-plus, then ``reduce_stats.cu`` with ST_PAIRS): the product of
the ball's distances to K of its vertices with those K vertices' rows to the rest of the graph, both
on the compute stream.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
from _common import RESULTS, event_seconds, named_graph, write_result  # noqa: E402

VARIANTS = {  # name: extra -D options (on top of STATS_INTEGER for integer graphs)
    "full": (),
    "no_hist": ("-DST_NO_HIST",),
    "no_harm": ("-DST_NO_HARM",),
    "no_cols": ("-DST_NO_COLS",),  # what undirected graphs run
    "rows_only": ("-DST_NO_HIST", "-DST_NO_HARM", "-DST_NO_COLS"),
    # Each pair once (what --stats runs on undirected graphs): column sums and maxima kept too.
    "pairs": ("-DST_PAIRS",),
    "pairs_no_hist": ("-DST_PAIRS", "-DST_NO_HIST"),
    "pairs_no_harm": ("-DST_PAIRS", "-DST_NO_HARM"),
    "exact_rcp": ("-DST_EXACT_RCP",),  # the correctly rounded reciprocal in the harmonic sums
    "pairs_exact_rcp": ("-DST_PAIRS", "-DST_EXACT_RCP"),
    # Whole numbers below 2**24 through the general (64-bit) path, as before the 32-bit one.
    "general": ("-DST_GENERAL_ONLY",),
    "pairs_general": ("-DST_PAIRS", "-DST_GENERAL_ONLY"),
}

# Builds of min_plus_stats.cu for --product: name -> extra -D options.
PRODUCT_VARIANTS = {
    "default": (),
    "two_blocks": ("-DMS_MIN_BLOCKS=2",),  # 108 registers, none spilled, two blocks an SM
    "four_blocks": ("-DMS_MIN_BLOCKS=4",),  # 64 registers; the run's shared bins cut to fit four blocks
    "no_hist": ("-DMS_NO_HIST",),
    "no_harm": ("-DMS_NO_HARM",),
}


def ball(graph, rows: int, start: int) -> np.ndarray:
    """The first ``rows`` vertices of a breadth-first search from ``start``."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import breadth_first_order

    a = csr_matrix((np.ones(graph.indices.size), graph.indices, graph.indptr), shape=(graph.n, graph.n))
    order = breadth_first_order(a, start, directed=False, return_predecessors=False)
    return np.sort(order[:rows])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph", required=True, type=named_graph, metavar="NAME=PATH")
    parser.add_argument("--rows", type=int, default=1024)
    parser.add_argument("--start", type=int, default=0, help="first vertex of the ball")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS))
    parser.add_argument("--tag", default="stats-kernel")
    parser.add_argument("--product", type=int, nargs="+", metavar="K",
                        help="time the product reduced as it is made against stored then reduced, at these K")
    parser.add_argument("--product-variants", nargs="+", default=["default"], choices=list(PRODUCT_VARIANTS),
                        help="builds of min_plus_stats.cu to time with --product")
    args = parser.parse_args()

    import cupy as cp

    from fastapsp import read_graph
    from fastapsp.backend import device_csr
    from fastapsp.reductions import StatsAccumulator
    from fastapsp.reductions_gpu import GpuStats
    from fastapsp.stages import boundary_sssp

    name, path = args.graph
    graph = read_graph(path)
    sources = ball(graph, args.rows, args.start)
    indptr, indices, weights = device_csr(graph, cp)
    block = boundary_sssp(indptr, indices, weights, cp.asarray(sources), dtype=np.float32,
                          unit_weights=graph.unit_weights)
    cp.cuda.Device().synchronize()
    nbytes = block.nbytes
    if args.product:
        return product_bench(name, graph, sources, block, args)

    results = [{"variant": "read_floor (cupy.max)", "seconds": event_seconds(cp, lambda: cp.max(block), args.repeat)}]
    reference = None
    for variant in args.variants:
        acc = StatsAccumulator.for_graph(graph, "cupy")
        acc._gpu = gpu = GpuStats(acc, acc.max_distance, overlap=False)  # time on the compute stream
        acc.update(sources[:1], 0, block[:1])
        gpu.hist.fill(0)  # the block's counts alone: a pairs variant's are then twice the full one's
        gpu.options = gpu.options + VARIANTS[variant]
        rows_dev = cp.asarray(sources, dtype=cp.int64)
        seconds = event_seconds(cp, lambda: gpu._launch(rows_dev, 0, block), args.repeat)
        hist = gpu.collapse(gpu.level_reached())
        harm = acc.row_harm.copy()
        options = VARIANTS[variant]
        if variant == "full":
            reference = (hist, harm)
        same = harm_error = None
        if reference is not None and "-DST_NO_HIST" not in options:
            twice = "-DST_PAIRS" in options  # each entry stands for both orders: counted twice
            same = bool(cp.array_equal(hist, reference[0] * (2 if twice else 1)))
        if reference is not None and "-DST_NO_HARM" not in options and "-DST_PAIRS" not in options:
            scale = cp.maximum(cp.abs(reference[1]), 1e-300)
            harm_error = float(cp.max(cp.abs(harm - reference[1]) / scale))  # against "full"
        results.append({"variant": variant, "options": list(gpu.options), "seconds": seconds,
                        "histogram_equals_full": same, "harmonic_rel_diff_vs_full": harm_error})
    for item in results:
        item["read_bytes_per_s"] = nbytes / item["seconds"]
        print(f"{name} {item['variant']:<22} {item['seconds'] * 1e3:8.2f} ms/block "
              f"{item['read_bytes_per_s'] / 1e12:6.2f} TB/s  hist {item.get('histogram_equals_full', '')} "
              f"harmonic {item.get('harmonic_rel_diff_vs_full', '')}")
    record = {"benchmark": "stats_kernel_bench", "graph": name, "n": graph.n, "m": int(graph.indices.size),
              "rows": int(args.rows), "block_bytes": int(nbytes), "repeat": args.repeat, "results": results}
    write_result(record, folder=RESULTS / args.tag, name=f"stats-kernel-{name}.json")
    return 0


@contextlib.contextmanager
def product_build(options):
    """min_plus_stats.cu built with ``options`` added, for the calls inside."""
    from fastapsp import reductions_gpu

    keep = reductions_gpu.get_kernel

    def with_options(file, name, *args, **kwargs):
        if file == "min_plus_stats.cu":
            kwargs["options"] = tuple(kwargs.get("options", ())) + tuple(options)
        return keep(file, name, *args, **kwargs)

    keep_bins = reductions_gpu._PRODUCT_SHARED_BINS
    reductions_gpu.get_kernel = with_options
    if "-DMS_MIN_BLOCKS=4" in options:  # 4 x (45 KB + 4 bytes a bin) within the SM's 228 KB
        reductions_gpu._PRODUCT_SHARED_BINS = 2048
    try:
        yield
    finally:
        reductions_gpu.get_kernel = keep
        reductions_gpu._PRODUCT_SHARED_BINS = keep_bins


def product_bench(name, graph, sources, block, args) -> int:
    """``--product``: seconds and distances per second of both ways at each K (see the module text)."""
    import cupy as cp

    from fastapsp.backend import device_csr
    from fastapsp.reductions import StatsAccumulator
    from fastapsp.reductions_gpu import GpuStats
    from fastapsp.stages import boundary_sssp
    from fastapsp.stages.min_plus import min_plus

    r = sources.size
    indptr, indices, weights = device_csr(graph, cp)
    rng = np.random.default_rng(0)
    results = []
    for k in args.product:
        picks = np.sort(rng.choice(r, size=k, replace=False))
        a = cp.ascontiguousarray(block[:, cp.asarray(picks)])
        b = boundary_sssp(indptr, indices, weights, cp.asarray(sources[picks]), dtype=np.float32,
                          unit_weights=graph.unit_weights)[:, r:]
        ids = np.arange(r)  # stand-in row ids before the columns (r, n)

        def fresh():
            acc = StatsAccumulator(graph.n, xp=cp, integer=True, directed=False)
            acc._gpu = GpuStats(acc, acc.max_distance, overlap=False)  # every kernel on the compute stream
            return acc

        stored_acc = fresh()
        out = cp.empty((r, b.shape[1]), dtype=cp.float32)

        def stored():
            min_plus(a, b, out=out, integer=True)
            stored_acc.update_beyond(ids, r, out)

        both = event_seconds(cp, stored, args.repeat)
        entries = r * b.shape[1]
        print(f"{name} K={k:3d}: stored then reduced {both * 1e3:7.2f} ms ({entries / both / 1e9:5.0f} G/s)")
        for variant in args.product_variants:
            fused_acc = fresh()
            with product_build(PRODUCT_VARIANTS[variant]):
                fused = event_seconds(cp, lambda: fused_acc.update_product(ids, r, a, b), args.repeat)
            same = bool(cp.array_equal(fused_acc._gpu.collapse(fused_acc._gpu.level_reached()),
                                       stored_acc._gpu.collapse(stored_acc._gpu.level_reached()))
                        and cp.array_equal(fused_acc.row_sum, stored_acc.row_sum))
            results.append({"k": k, "variant": variant, "options": list(PRODUCT_VARIANTS[variant]),
                            "fused_seconds": fused, "stored_seconds": both, "entries": entries,
                            "fused_g_per_s": entries / fused / 1e9, "stored_g_per_s": entries / both / 1e9,
                            "same_histogram_and_row_sums": same})
            print(f"{name} K={k:3d} {variant:<16}: reduced as made {fused * 1e3:7.2f} ms "
                  f"({entries / fused / 1e9:5.0f} G/s), same {same}")
    record = {"benchmark": "stats_kernel_bench --product", "graph": name, "n": graph.n,
              "m": int(graph.indices.size), "rows": int(r), "repeat": args.repeat, "results": results}
    write_result(record, folder=RESULTS / args.tag, name=f"stats-product-{name}.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
