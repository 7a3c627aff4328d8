"""The Python library's calls, timed in one warm process, beside the command line's own time for the same run.

For each ``--graph NAME=PATH`` (read once with ``fastapsp.read_graph``), after a
warm-up solve that compiles the kernels (``--warmup``, Minnesota by default),
each selected call runs ``--repeat`` times:

``solve->cupy``         ``fastapsp.solve(g, backend="cupy", output="device")`` (the plan made inside the call)
``solve->cupy(plan)``   the same with ``plan=p``, ``p = fastapsp.plan(g, backend="cupy", output="device")``
                        made once beforehand (its ``p.seconds`` recorded as ``plan_seconds``)
``solve->numpy``        ``fastapsp.solve(g, backend=B)``: the result in host memory (skipped when
                        n*n*4 bytes exceed half the host's available memory)
``stats``               ``fastapsp.stats(g, backend=B)``
``stats(plan)``         the same with a reused ``fastapsp.plan(g, stats=True, backend=B)``
``stats(plan,stored)``  the same with every product stored and then reduced (none reduced as it is made,
                        ``fastapsp/kernels/min_plus_stats.cu``), for comparison
``shortest_path->cupy`` ``fastapsp.shortest_path(cupyx.scipy.sparse.csr_matrix(g.to_scipy()))``: float64
                        on the GPU (skipped when n*n*8 bytes do not fit the GPU's free memory)
``cli``                 ``python -m fastapsp solve PATH --backend B --output none --report R.json``:
                        ``seconds`` is the report's ``total_seconds`` (read to exit of the job),
                        ``process_seconds`` the process's wall time
``cli-stats``           the same with ``--stats PREFIX`` (what ``stats`` compares with)

The ``*cupy*`` calls need ``--backend cupy`` and are skipped (recorded as
such) with ``--backend numpy``.  The clock is read after synchronising the
GPU (``_common.timed``); results are deleted and the memory pool emptied
between calls (``--keep-pool`` keeps the pool: a session that drops one result before asking for
the next; each record says which, ``memory_pool``).  ``stages`` is the engine's own per-stage seconds of the timed
call (the report :func:`fastapsp.execute.execute` makes, caught on its way
back from :func:`fastapsp.execute.execute`: no extra work), ``k`` and ``boundary_rows``
its plan's decisions.

Exactness (``exact``): a distance result's 16 rows (seeded sample) against
``scipy.sparse.csgraph.dijkstra`` (equal for whole-number weights, float32
rounding otherwise); a statistics result's diameter, reachable pairs and sum
of distances against the ``--stats`` JSON of the command line on the same graph.

    python benchmarks/library_bench.py --backend cupy --graph luxembourg_osm=benchmarks/data/luxembourg_osm.mtx.gz \
        --out benchmarks/results/library
    python benchmarks/library_bench.py --backend numpy --graph minnesota=tests/data/minnesota.mtx.gz --repeat 2

Output: ``OUT/library-<graph>.json``, a list of one record per timed call
(``graph, n, m, call, seconds, repeat, device, commit, versions, exact, k,
boundary_rows, stages`` and call-specific keys; ``skipped`` with the reason
for a call not run), rewritten after every call; and a table of medians and
library/CLI ratios on standard output.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, _commit, _gpu_name, _version, named_graph, timed, write_json_atomic  # noqa: E402

import fastapsp  # noqa: E402

CALLS = ("solve->cupy", "solve->cupy(plan)", "solve->numpy", "stats", "stats(plan)", "stats(plan,stored)",
         "shortest_path->cupy",
         "cli", "cli-stats")
GPU_CALLS = ("solve->cupy", "solve->cupy(plan)", "shortest_path->cupy")
# Which command-line call each library call is compared with in the summary.
CLI_OF = {"solve->cupy": "cli", "solve->cupy(plan)": "cli", "solve->numpy": "cli", "stats": "cli-stats",
          "stats(plan)": "cli-stats", "stats(plan,stored)": "cli-stats"}
STATS_KEYS = ("diameter", "reachable_pairs", "sum_of_distances")
CHECK_ROWS = 16
MINNESOTA = REPO / "tests" / "data" / "minnesota.mtx.gz"


# ------------------------------------------------------------------ where and with what
def versions() -> dict:
    return {name: _version(name, None if name == "cupy" else name) for name in ("fastapsp", "numpy", "cupy")}


def host_available_bytes() -> int:
    """The host's available memory (8 GiB where the system does not say)."""
    from fastapsp.backend import host_available_bytes as known

    return known() or 8 << 30


def gpu_free_bytes(cp) -> int:
    free, _ = cp.cuda.runtime.memGetInfo()
    return int(free + cp.get_default_memory_pool().free_bytes())


KEEP_POOL = False  # --keep-pool


def free_memory(cp, *, always: bool = False) -> None:
    """Wait for the GPU and empty CuPy's memory pools (not with ``--keep-pool``, unless ``always``)."""
    if cp is not None:
        cp.cuda.Device().synchronize()
        if KEEP_POOL and not always:
            return
        cp.get_default_memory_pool().free_all_blocks()
        cp.get_default_pinned_memory_pool().free_all_blocks()


# ------------------------------------------------------------------ the engine's report of a public call
class Caught:
    """Wraps :func:`fastapsp.execute.execute` (which the library imports when it runs a plan) to keep the
    plan and the report of the last call: the stages are those of the timed call itself."""

    def __init__(self) -> None:
        import fastapsp.execute as engine

        self.plan = self.report = None
        self._inner = engine.execute
        engine.execute = self

    def __call__(self, the_plan, graph, **kwargs):
        outcome = self._inner(the_plan, graph, **kwargs)
        self.plan, self.report = the_plan, getattr(outcome, "report", None)
        return outcome

    def reset(self) -> None:
        self.plan = self.report = None

    def decided(self) -> dict:
        plan, report = self.plan, self.report or {}
        return {"k": None if plan is None else plan.k,
                "boundary_rows": None if plan is None else plan.boundary_rows,
                "dtype": None if plan is None else plan.dtype,
                "stages": report.get("stages")}


# ------------------------------------------------------------------ checks
class Reference:
    """SciPy's rows of the sampled sources and the command line's statistics, made once per graph."""

    def __init__(self, graph, path, backend, k, folder) -> None:
        self.graph, self.path, self.backend, self.k, self.folder = graph, path, backend, k, folder
        self.integer = bool(graph.m == 0 or np.all(graph.weights == np.round(graph.weights)))
        self.rows = np.sort(np.random.default_rng(0).choice(graph.n, min(CHECK_ROWS, graph.n), replace=False))
        self._dist = None
        self.cli_stats = None  # PREFIX.json of the first --stats run of the command line

    def distances(self) -> np.ndarray:
        if self._dist is None:
            from scipy.sparse.csgraph import dijkstra

            self._dist = dijkstra(self.graph.to_scipy(), directed=True, indices=self.rows)
        return self._dist

    def check_rows(self, result) -> bool:
        if isinstance(result, np.ndarray):
            got = result[self.rows]
        else:  # a CuPy array: index on the device, copy the 16 rows only
            import cupy

            got = result[cupy.asarray(self.rows)].get()
        got = np.asarray(got, dtype=np.float64)
        want = self.distances()
        if self.integer:
            return bool(np.array_equal(got, want))
        return bool(np.array_equal(np.isinf(got), np.isinf(want))
                    and np.allclose(got, want, rtol=2e-6, atol=0))

    def stats_json(self) -> dict:
        if self.cli_stats is None:
            run_cli(self, stats=True)
        return self.cli_stats

    def check_stats(self, stats) -> bool:
        mine = json.loads(json.dumps(stats.to_json_dict(), allow_nan=False))
        theirs = self.stats_json()
        return all(mine.get(key) == theirs.get(key) for key in STATS_KEYS)


def run_cli(ref: Reference, *, stats: bool) -> dict:
    """One command-line run (``--output none``, with ``--stats`` when asked): its report and wall time."""
    with tempfile.TemporaryDirectory(dir=ref.folder) as tmp:
        report = Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "fastapsp", "solve", str(ref.path), "--backend", ref.backend,
               "--output", "none", "--report", str(report), "--quiet"]
        if ref.k is not None:
            cmd += ["-k", str(ref.k)]
        cmd += ["--partitioner", ref.partitioner]
        if stats:
            cmd += ["--stats", str(Path(tmp) / "stats")]
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
        start = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=env)
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed: {proc.stderr.strip()}")
        data = json.loads(report.read_text())
        if stats:
            stats_json = json.loads((Path(tmp) / "stats.json").read_text())
            if ref.cli_stats is None:
                ref.cli_stats = stats_json
    return {"seconds": float(data["total_seconds"]), "process_seconds": wall, "k": data.get("k"),
            "boundary_rows": data.get("sssp_method"), "dtype": data.get("dtype"), "stages": data.get("stages"),
            "stats": None if not stats else {key: stats_json.get(key) for key in STATS_KEYS}}


# ------------------------------------------------------------------ the calls
class Skip(Exception):
    """A call that cannot run here (the reason is recorded)."""


def prepare(call, graph, backend, cp, ref, plans) -> None:
    """What a call needs made once before its repeats: a plan, or a check that its output fits."""
    n = graph.n
    if call in GPU_CALLS and backend != "cupy":
        raise Skip("needs --backend cupy")
    if call == "solve->numpy" and n * n * 4 > host_available_bytes() // 2:
        raise Skip(f"n*n*4 = {n * n * 4 / 2**30:.1f} GiB exceeds half the host's available memory "
                   f"({host_available_bytes() / 2**30:.1f} GiB)")
    if call in ("solve->cupy", "solve->cupy(plan)") and n * n * 4 > 0.9 * gpu_free_bytes(cp):
        raise Skip(f"n*n*4 = {n * n * 4 / 2**30:.1f} GiB does not fit the GPU's free memory "
                   f"({gpu_free_bytes(cp) / 2**30:.1f} GiB)")
    if call == "shortest_path->cupy" and n * n * 8 > 0.9 * gpu_free_bytes(cp):
        raise Skip(f"n*n*8 = {n * n * 8 / 2**30:.1f} GiB (float64) does not fit the GPU's free memory "
                   f"({gpu_free_bytes(cp) / 2**30:.1f} GiB)")
    if call == "solve->cupy(plan)" and call not in plans:
        plans[call] = fastapsp.plan(graph, k=ref.k, partitioner=ref.partitioner, backend="cupy",
                                      output="device")
    if call in ("stats(plan)", "stats(plan,stored)") and call not in plans:
        plans[call] = plans.get("stats(plan)") or plans.get("stats(plan,stored)") or fastapsp.plan(
            graph, k=ref.k, partitioner=ref.partitioner, stats=True, backend=backend)


def run_call(call, graph, backend, cp, ref, plans, caught) -> dict:
    """Time one call; returns the record's call-specific part."""
    if call in ("cli", "cli-stats"):
        record = run_cli(ref, stats=call == "cli-stats")
        record["exact"] = None  # the command line is the reference the library's statistics are checked with
        return record
    xp = cp if backend == "cupy" else None
    k = ref.k
    caught.reset()
    record: dict = {}
    with timed(xp=xp) as t:
        if call == "solve->cupy":
            result = fastapsp.solve(graph, k=k, partitioner=ref.partitioner, backend="cupy", output="device")
        elif call == "solve->cupy(plan)":
            result = fastapsp.solve(graph, plan=plans[call])
        elif call == "solve->numpy":
            result = fastapsp.solve(graph, k=k, partitioner=ref.partitioner, backend=backend)
        elif call == "stats":
            result = fastapsp.stats(graph, k=k, partitioner=ref.partitioner, backend=backend)
        elif call == "stats(plan)":
            result = fastapsp.stats(graph, plan=plans[call])
        elif call == "stats(plan,stored)":
            with products_stored():
                result = fastapsp.stats(graph, plan=plans[call])
        elif call == "shortest_path->cupy":
            import cupyx.scipy.sparse as cupyx_sparse

            matrix = cupyx_sparse.csr_matrix(graph.to_scipy())
            result = fastapsp.shortest_path(matrix, k=k, partitioner=ref.partitioner)
        else:
            raise ValueError(f"call: {call!r} is not one of {', '.join(CALLS)}")
    record["seconds"] = t.seconds
    record.update(caught.decided())
    if call in plans:
        record["plan_seconds"] = dict(plans[call].seconds)
    if call.startswith("stats"):
        record["exact"] = ref.check_stats(result)
        record["stats"] = {key: result.to_json_dict().get(key) for key in STATS_KEYS}
    else:
        if call == "shortest_path->cupy":
            record["result_dtype"] = str(result.dtype)
            del matrix
        record["exact"] = ref.check_rows(result)
    del result
    free_memory(cp)
    return record


@contextlib.contextmanager
def products_stored():
    """Every product stored as a block and reduced by reduce_stats.cu, none reduced as it is made
    (min_plus_stats.cu): the ``stats(plan,stored)`` variant, for comparison."""
    from fastapsp import reductions_gpu

    keep = reductions_gpu.product_supports
    reductions_gpu.product_supports = lambda acc, a, b: False
    try:
        yield
    finally:
        reductions_gpu.product_supports = keep


# ------------------------------------------------------------------ driver
def warm_up(path, backend, cp) -> None:
    if not path:
        return
    g = fastapsp.read_graph(path)
    if backend == "cupy":  # solve to the device, and the --stats kernels
        fastapsp.solve(g, backend="cupy", output="device")  # the device array is dropped at once
        fastapsp.stats(g, backend="cupy")
    else:
        fastapsp.solve(g, backend="numpy")
    free_memory(cp)


def bench_graph(name, path, args, cp, caught, out_dir) -> list[dict]:
    start = time.perf_counter()
    graph = fastapsp.read_graph(path)
    read_seconds = time.perf_counter() - start
    device = (_gpu_name() or "gpu") if args.backend == "cupy" else "cpu"
    common = {"graph": name, "n": graph.n, "m": graph.m, "backend": args.backend, "device": device,
              "commit": _commit(), "versions": versions(), "read_seconds": read_seconds,
              "memory_pool": "kept" if KEEP_POOL else "emptied"}
    print(f"{name}: n={graph.n} m={graph.m} read in {read_seconds:.2f} s", flush=True)
    ref = Reference(graph, path, args.backend, args.k, out_dir)
    ref.partitioner = args.partitioner
    plans: dict = {}
    records: list[dict] = []
    target = out_dir / f"library-{name}.json"
    for call in args.calls:
        try:
            prepare(call, graph, args.backend, cp, ref, plans)
        except (Skip, ValueError, MemoryError) as exc:  # ValueError: the plan's "the output does not fit"
            why = exc if isinstance(exc, Skip) else f"{type(exc).__name__}: {' '.join(str(exc).split())}"
            free_memory(cp, always=True)
            records.append({**common, "call": call, "seconds": None, "repeat": None, "exact": None, "k": None,
                            "boundary_rows": None, "stages": None, "skipped": str(why)})
            print(f"  {call:20s} skipped: {why}", flush=True)
            write_json_atomic(target, records)
            continue
        for repeat in range(args.repeat):
            try:
                part = run_call(call, graph, args.backend, cp, ref, plans, caught)
            except (MemoryError, ValueError) as exc:  # the engine's "does not fit", an out-of-memory
                free_memory(cp, always=True)
                part = {"seconds": None, "exact": None, "k": None, "boundary_rows": None, "stages": None,
                        "skipped": f"{type(exc).__name__}: {' '.join(str(exc).split())}"}
            except Exception as exc:
                if cp is not None and isinstance(exc, cp.cuda.memory.OutOfMemoryError):
                    free_memory(cp, always=True)
                    part = {"seconds": None, "exact": None, "k": None, "boundary_rows": None, "stages": None,
                            "skipped": f"OutOfMemoryError: {exc}"}
                else:
                    raise
            records.append({**common, "call": call, "repeat": repeat, **part})
            write_json_atomic(target, records)
            if part.get("skipped"):
                print(f"  {call:20s} #{repeat} skipped: {part['skipped']}", flush=True)
                break
            extra = f" (process {part['process_seconds']:.2f} s)" if "process_seconds" in part else ""
            print(f"  {call:20s} #{repeat} {part['seconds']:.3f} s{extra} k={part['k']} "
                  f"{part['boundary_rows']} exact={part['exact']}", flush=True)
        plans.pop(call, None)
        free_memory(cp)
    print(f"  -> {target}", flush=True)
    return records


def summary(records: list[dict]) -> str:
    lines = [f"{'graph':16s} {'call':20s} {'median s':>9s} {'min s':>8s} {'runs':>4s} {'k':>5s} "
             f"{'exact':>5s} {'vs CLI':>7s}  note"]
    by: dict = {}
    for r in records:
        by.setdefault((r["graph"], r["call"]), []).append(r)
    medians = {key: statistics.median([r["seconds"] for r in rs if r.get("seconds") is not None])
               for key, rs in by.items() if any(r.get("seconds") is not None for r in rs)}
    for (graph, call), rs in by.items():
        done = [r for r in rs if r.get("seconds") is not None]
        if not done:
            lines.append(f"{graph:16s} {call:20s} {'-':>9s} {'-':>8s} {0:4d} {'-':>5s} {'-':>5s} {'-':>7s}  "
                         f"skipped: {rs[-1].get('skipped')}")
            continue
        median = medians[(graph, call)]
        other = medians.get((graph, CLI_OF.get(call)))
        ratio = f"{median / other:7.2f}" if other else f"{'-':>7s}"
        exact = {r["exact"] for r in done}
        exact_text = "-" if exact == {None} else str(all(e for e in exact if e is not None))
        note = ""
        if call.startswith("cli"):
            note = f"process {statistics.median(r['process_seconds'] for r in done):.2f} s"
        elif call == "solve->numpy":
            note = "n x n in host memory (the CLI run: --output none)"
        elif "plan_seconds" in done[0]:
            note = f"plan made once: {done[0]['plan_seconds'].get('total', float('nan')):.3f} s"
        lines.append(f"{graph:16s} {call:20s} {median:9.3f} {min(r['seconds'] for r in done):8.3f} "
                     f"{len(done):4d} {str(done[0].get('k')):>5s} {exact_text:>5s} {ratio}  {note}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graph", action="append", required=True, type=named_graph, metavar="NAME=PATH",
                        help="a graph to time (repeatable)")
    parser.add_argument("--backend", choices=("numpy", "cupy"), default="cupy")
    parser.add_argument("--calls", nargs="+", choices=CALLS, default=list(CALLS), metavar="CALL",
                        help=f"calls to time, in this order (default: all of {', '.join(CALLS)})")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep-pool", action="store_true",
                        help="keep CuPy's memory pool between calls (default: emptied, each call maps its memory "
                             "afresh)")
    parser.add_argument("-k", type=int, default=None, help="components (default: the cost model's choice)")
    parser.add_argument("--partitioner", default="auto", help="partitioner of every call (default: auto)")
    parser.add_argument("--warmup", default=str(MINNESOTA), metavar="PATH",
                        help="graph solved first to compile the kernels ('' for none)")
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "library"), metavar="DIR")
    args = parser.parse_args(argv)
    graphs = [(name, Path(path).resolve()) for name, path in args.graph]
    if args.repeat < 1:
        parser.error("--repeat: at least 1")
    global KEEP_POOL
    KEEP_POOL = bool(args.keep_pool)
    cp = None
    if args.backend == "cupy":
        import cupy as cp
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    caught = Caught()
    start = time.perf_counter()
    warm_up(args.warmup, args.backend, cp)
    print(f"warm-up: {time.perf_counter() - start:.2f} s", flush=True)
    records = []
    for name, path in graphs:
        records += bench_graph(name, path, args, cp, caught, out_dir)
    print()
    print(summary(records))
    wrong = [r for r in records if r.get("exact") is False]
    if wrong:
        print(f"NOT EXACT: {', '.join(sorted({r['graph'] + ' ' + r['call'] for r in wrong}))}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
