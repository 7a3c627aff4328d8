"""Time each CUDA kernel of fastapsp alone, on the sizes of a real run.

    PYTHONPATH=. python3 benchmarks/kernels_bench.py [--quick] [--json PATH]

* boundary SSSP on a Luxembourg-like road graph (about 112k vertices, a subdivided
  grid with 20 % of its streets removed: ~1000+ BFS levels), 300 and 900 sources
  lying on a ring, as the boundary of one component does; BFS (unit weights)
  and Bellman-Ford (integer weights 1..100), one cooperative launch and one
  launch per level;
* component matrix build, c = 7200 with 900 boundary rows;
* blocked Floyd-Warshall, c = 1800, 3600, 7200;
* min-plus 7000 x 60 x 114599 (interior x boundary x all vertices).

Every time is the median over repetitions of CUDA events around the call, after a
warm-up (compilation stays out).  A table is printed last; the numbers also go
to JSON (``--json``, else ``$OUT/kernels_bench.json`` when ``$OUT`` is set).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys

import numpy as np


def road_graph(rng, side=68, segments=16, drop=0.2):
    """Subdivided ``side`` x ``side`` street grid: long chains of degree-2 vertices, as in OSM road graphs."""
    from fastapsp.graph import Graph

    ids = np.arange(side * side).reshape(side, side)
    a = np.concatenate([ids[:, :-1].ravel(), ids[:-1, :].ravel()])
    b = np.concatenate([ids[:, 1:].ravel(), ids[1:, :].ravel()])
    keep = rng.random(a.size) >= drop
    a, b = a[keep], b[keep]
    # Each street becomes a chain of `segments` arcs through segments - 1 new vertices.
    inner = segments - 1
    first = side * side + np.arange(a.size) * inner
    chain = np.concatenate([a[:, None], first[:, None] + np.arange(inner), b[:, None]], axis=1)
    src, dst = chain[:, :-1].ravel(), chain[:, 1:].ravel()
    n = side * side + a.size * inner
    # Positions (for choosing a compact set of sources): grid point, interpolated along streets.
    pos = np.zeros((n, 2))
    pos[: side * side] = np.stack(np.divmod(np.arange(side * side), side), axis=1)
    t = (np.arange(inner) + 1) / segments
    pa, pb = pos[a], pos[b]
    pos[side * side :] = (pa[:, None, :] * (1 - t[:, None]) + pb[:, None, :] * t[:, None]).reshape(-1, 2)
    w = rng.integers(1, 101, src.size).astype(np.float64)
    return Graph.from_edges(n, src, dst, w, directed=False, name="road-like"), pos


def ring_sources(pos, count, inside):
    """``count`` vertices at the rim of the ``inside`` vertices nearest the centre: a component's boundary."""
    centre = pos.mean(axis=0)
    order = np.argsort(((pos - centre) ** 2).sum(axis=1), kind="stable")
    return np.sort(order[inside : inside + count])


def timed(cp, fn, reps, setup=None):
    """Median milliseconds of ``fn()`` over ``reps`` runs (CUDA events), after one warm-up."""
    if setup is not None:
        setup()
    fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(reps):
        if setup is not None:
            setup()
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop))
    return float(np.median(times))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer repetitions")
    parser.add_argument("--json", help="where to write the results")
    parser.add_argument("--only", default="sssp,build,fw,minplus", help="comma-separated kernels to time")
    args = parser.parse_args(argv)
    only = set(args.only.split(","))

    import cupy as cp

    from fastapsp.stages import _cuda, blocked_floyd_warshall, boundary_sssp, build_component_matrix, min_plus

    rng = np.random.default_rng(0)
    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    rows = []  # (kernel, case, ms, note)

    graph, pos = road_graph(rng, side=30 if args.quick else 68)
    indptr, indices, weights = (cp.asarray(x) for x in (graph.indptr, graph.indices, graph.weights))
    ones = cp.ones_like(weights)
    n = graph.n
    print(f"graph: {graph!r}", flush=True)

    boundary = None
    if "sssp" in only or "build" in only:
        for count in (300, 900):
            sources = cp.asarray(ring_sources(pos, count, n // 16))
            out = cp.empty((count, n), dtype=cp.float32)
            for unit in (True, False):
                w = ones if unit else weights
                for mode in ("pull persistent", "pull levels", "push persistent", "push levels"):
                    _cuda._SSSP_DIRECTION, launches = mode.split()
                    _cuda._PERSISTENT = launches == "persistent"
                    ms = timed(cp, lambda: boundary_sssp(indptr, indices, w, sources, out=out, unit_weights=unit),
                               3 if args.quick else 5)
                    finite = out[cp.isfinite(out)]
                    levels = int(finite.max()) if unit else -1
                    note = f"{levels} levels" if unit else ""
                    rows.append(("sssp " + ("bfs" if unit else "bellman-ford"), f"n={n} S={count} f32 {mode}", ms,
                                 note))
                    print(rows[-1], flush=True)
            _cuda._PERSISTENT, _cuda._SSSP_DIRECTION = True, "push"
            # Spot check against SciPy for a few sources (weighted, float64).
            from scipy.sparse.csgraph import dijkstra

            check = sources[:8].get()
            ref = dijkstra(graph.to_scipy(), directed=True, indices=check)
            got = boundary_sssp(indptr, indices, weights, cp.asarray(check), dtype=np.float64).get()
            assert np.array_equal(got, ref), "SSSP spot check failed"
            boundary = (sources, out)
        sources = boundary[0]
        out64 = cp.empty((sources.size, n), dtype=cp.float64)
        ms = timed(cp, lambda: boundary_sssp(indptr, indices, weights, sources, out=out64, unit_weights=False), 3)
        rows.append(("sssp bellman-ford", f"n={n} S={sources.size} f64 push persistent", ms, ""))

    if "build" in only:
        sources, out = boundary
        nb = int(sources.size)
        c = 7200 if not args.quick else 1800
        inside = np.setdiff1d(np.argsort(((pos - pos.mean(axis=0)) ** 2).sum(axis=1))[: c + nb], sources.get())
        vertices = cp.asarray(np.concatenate([sources.get(), inside[: c - nb]]))
        ms = timed(cp, lambda: build_component_matrix(indptr, indices, weights, vertices, nb, out), 10)
        rows.append(("build", f"c={c} nb={nb} f32", ms, ""))

    if "fw" in only:
        for c in ((600, 1800) if args.quick else (1800, 3600, 7200)):
            for dtype in (np.float32, np.float64):
                d0 = np.where(rng.random((c, c)) < 4.0 / c, rng.integers(1, 100, (c, c)), np.inf).astype(dtype)
                np.fill_diagonal(d0, 0)
                src = cp.asarray(d0)
                work = cp.empty_like(src)
                ms = timed(cp, lambda: blocked_floyd_warshall(work), 3 if c >= 7200 else 5,
                           setup=lambda: work.__setitem__(Ellipsis, src))
                rate = c**3 / (ms * 1e-3) / 1e9
                rows.append(("floyd-warshall", f"c={c} {np.dtype(dtype).name}", ms, f"{rate:.0f} G min-plus/s"))
                print(rows[-1], flush=True)
                del src, work

    if "minplus" in only:
        m, k, nn = (7000, 60, 114599) if not args.quick else (2000, 60, 30000)
        for dtype in (np.float32, np.float64):
            a = cp.asarray(rng.integers(0, 1000, (m, k)).astype(dtype))
            b = cp.asarray(rng.integers(0, 1000, (k, nn)).astype(dtype))
            out = cp.empty((m, nn), dtype=dtype)
            for accumulate in (False, True):
                ms = timed(cp, lambda: min_plus(a, b, out=out, accumulate=accumulate), 5)
                rate = m * k * nn / (ms * 1e-3) / 1e9
                gbs = out.nbytes * (2 if accumulate else 1) / (ms * 1e-3) / 1e9
                rows.append(("min-plus", f"{m}x{k}x{nn} {np.dtype(dtype).name} acc={accumulate}", ms,
                             f"{rate:.0f} G min-plus/s, {gbs:.0f} GB/s of out"))
                print(rows[-1], flush=True)
            # Spot check of a few entries.
            i = rng.integers(0, m, 64)
            j = rng.integers(0, nn, 64)
            ref = (a[i, :] + b[:, j].T).min(axis=1)
            assert bool((out[i, j] == ref).all()), "min-plus spot check failed"
            del a, b, out
            cp.get_default_memory_pool().free_all_blocks()

    try:
        git = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True)
        commit = git.stdout.strip() if git.returncode == 0 else ""
    except OSError:
        commit = ""
    result = {
        "device": props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"]),
        "cupy": cp.__version__, "python": platform.python_version(), "commit": commit,
        "graph": {"name": graph.name, "n": graph.n, "m": graph.m},
        "rows": [{"kernel": k_, "case": c_, "ms": ms_, "note": note_} for k_, c_, ms_, note_ in rows],
    }
    path = args.json or (os.path.join(os.environ["OUT"], "kernels_bench.json") if os.environ.get("OUT") else None)
    if path:
        with open(path, "w") as f:
            json.dump(result, f, indent=1)
    print(f"\n{result['device']}  cupy {result['cupy']}")
    print(f"{'kernel':<20} {'case':<42} {'ms':>10}  note")
    for k_, c_, ms_, note_ in rows:
        print(f"{k_:<20} {c_:<42} {ms_:>10.3f}  {note_}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
