"""``--dry-run``'s memory estimate against a real run's measured peaks, one JSON per configuration.

In one process: the dry run of the configuration (``solve_job`` with
``dry_run``), then the real run, measured three ways:

* the high-water of the bytes live in CuPy's memory pool, exact: a
  ``cupy.cuda.MemoryHook`` adds every allocation from the pool and subtracts
  every release (this is what the estimate models: the arrays the run holds);
* at every stage boundary (``StageTimer.listeners``): the pool's live and held
  bytes (held includes freed blocks the pool keeps for reuse) and the device
  memory in use by the process as the driver reports it (``memGetInfo``, CUDA
  context included);
* the host: the largest resident set while the run goes (sampled every 20 ms)
  and the resident set just before it, whose difference is compared with the
  host estimate.

    python benchmarks/memory_check.py --graph roadFLA=benchmarks/data/roadFLA.mtx.gz \
        --mode none stats --tag answers

Writes ``benchmarks/results/<tag>/memory-<graph>-<mode>.json`` with ``estimate``,
``measured``, ``ratio`` (measured / estimate) and ``within_25_percent``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import metadata, named_graph, write_result  # noqa: E402

# What each mode adds to `fastapsp solve GRAPH --backend cupy --quiet`.
MODES = {
    "none": {"output": "none"},
    "stats": {"output": "none", "stats": "{tmp}/stats"},
    "sources1000-memory": {"output": "memory", "sources": "random:1000"},
    # the same rows by the pipeline (boundary rows, local closures of the components holding a source)
    "sources1000-pipeline": {"output": "memory", "sources": "random:1000", "sources_method": "pipeline"},
    "frontier": {"output": "none", "sssp_method": "frontier"},
}


def rss_now() -> int:
    """Resident set of this process now, in bytes (Linux /proc)."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class RssSampler:
    """The largest resident set seen while the ``with`` block runs (sampled every 20 ms by a thread)."""

    def __init__(self, every: float = 0.02) -> None:
        self.every, self.peak = every, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_now())
            self._stop.wait(self.every)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_now())


class PoolWatch:
    """Live bytes of CuPy's pool (exact, by hook) and samples at stage boundaries."""

    def __init__(self, cupy) -> None:
        self.cupy = cupy
        self.live = self.peak = 0
        self.stages: dict = {}
        self.held_peak = self.device_used_peak = 0
        outer = self

        class Hook(cupy.cuda.MemoryHook):
            name = "fastapsp_memory_check"

            def malloc_postprocess(self, **kw):
                if kw.get("mem_ptr"):
                    outer.live += kw["mem_size"]
                    outer.peak = max(outer.peak, outer.live)

            def free_postprocess(self, **kw):
                outer.live -= kw["mem_size"]

        self.hook = Hook()

    def stage_ended(self, name: str) -> None:
        pool = self.cupy.get_default_memory_pool()
        free, total = self.cupy.cuda.runtime.memGetInfo()
        sample = {"pool_used": int(pool.used_bytes()), "pool_held": int(pool.total_bytes()),
                  "device_used": int(total - free)}
        self.held_peak = max(self.held_peak, sample["pool_held"])
        self.device_used_peak = max(self.device_used_peak, sample["device_used"])
        best = self.stages.setdefault(name, dict.fromkeys(sample, 0))
        for key, value in sample.items():
            best[key] = max(best[key], value)


def measure(graph_path: str, name: str, mode: str, k, tag: str) -> dict:
    import cupy

    from fastapsp.comm import SerialComm
    from fastapsp.options import SolveOptions
    from fastapsp.timing import StageTimer
    from fastapsp.pipeline import solve_job

    tmp = tempfile.mkdtemp()
    settings = {key: value.replace("{tmp}", tmp) if isinstance(value, str) else value
                for key, value in MODES[mode].items()}
    opts = SolveOptions(graph=graph_path, k=k, backend="cupy", quiet=True, **settings)
    comm = SerialComm()
    dry, _ = solve_job(dataclasses.replace(opts, dry_run=True), comm=comm)
    estimate = dry["dry_run"][0]
    watch = PoolWatch(cupy)
    StageTimer.listeners.append(watch.stage_ended)
    baseline_rss = rss_now()
    host = RssSampler()
    start = time.perf_counter()
    try:
        with watch.hook, host:
            report, sink = solve_job(dataclasses.replace(opts), comm=comm)
    finally:
        StageTimer.listeners.remove(watch.stage_ended)
    seconds = time.perf_counter() - start
    del sink
    peak_rss = host.peak
    measured = {
        "pool_live_peak_bytes": int(watch.peak),
        "pool_held_peak_bytes": int(watch.held_peak),
        "device_used_peak_bytes": int(watch.device_used_peak),
        "per_stage": watch.stages,
        "host_rss_before_bytes": int(baseline_rss),
        "host_rss_peak_bytes": int(peak_rss),
        "host_added_bytes": int(max(0, peak_rss - baseline_rss)),
    }
    device_estimate = int(estimate["device_peak_bytes"])
    ratio = watch.peak / device_estimate if device_estimate else None
    host_estimate = int(estimate["host_bytes"])
    result = {
        "benchmark": "memory_check", "graph": name, "n": report["n"], "m": report["m"], "k": report["k"],
        "mode": mode, "settings": settings, "sssp_method": report.get("sssp_method"),
        "sources_method": report.get("sources_method"),
        "dtype": report.get("dtype"), "seconds": round(seconds, 3),
        "estimate": {"device_peak_bytes": device_estimate,
                     "device_bytes_per_stage": estimate.get("device_bytes_per_stage"),
                     "host_bytes": host_estimate},
        "measured": measured,
        "ratio": {"device_live_over_estimate": None if ratio is None else round(ratio, 4),
                  "host_added_over_estimate": round(measured["host_added_bytes"] / host_estimate, 4)
                  if host_estimate else None},
        "within_25_percent": None if ratio is None else bool(0.75 <= ratio <= 1.25),
        "host_within_25_percent": bool(0.75 <= measured["host_added_bytes"] / host_estimate <= 1.25)
        if host_estimate else None,
        "metadata": metadata(),
    }
    write_result(result, folder=f"benchmarks/results/{tag}", name=f"memory-{name}-{mode}")
    gib = 2**30
    method = report.get("sssp_method") if report.get("sources_method") in (None, "pipeline") else "sssp from the sources"
    print(f"{name} {mode} ({method}): device estimate {device_estimate / gib:.2f} GiB, "
          f"live peak {watch.peak / gib:.2f} GiB (ratio {ratio if ratio is None else round(ratio, 3)}), "
          f"pool held {watch.held_peak / gib:.2f} GiB, device used {watch.device_used_peak / gib:.2f} GiB; "
          f"host estimate {host_estimate / gib:.2f} GiB, added {measured['host_added_bytes'] / gib:.2f} GiB; "
          f"{seconds:.1f} s", flush=True)
    cupy.get_default_memory_pool().free_all_blocks()
    return result


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph", required=True, type=named_graph, metavar="NAME=PATH")
    parser.add_argument("--mode", nargs="+", default=["none"], choices=sorted(MODES))
    parser.add_argument("--k", default="auto", help="number of components, or 'auto'")
    parser.add_argument("--tag", default="gpu-memory")
    args = parser.parse_args(argv)
    name, path = args.graph
    k = None if args.k == "auto" else int(args.k)
    for mode in args.mode:
        measure(path, name, mode, k, args.tag)


if __name__ == "__main__":
    main()
