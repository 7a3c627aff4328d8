"""Sizing (``--dry-run``) and the up-front refusal of an output that cannot fit.

Memory per stage of one component with c vertices, b of them boundary, in a
graph of n vertices, distances of s bytes (the arrays the stages allocate):

- sssp: the boundary rows, b * n * s (several components' rows at once, as far
  as a quarter of the free memory allows);
- build and floyd_warshall: the component matrix, c * c * s, beside the boundary rows;
- extract: the interior-to-boundary block, (c - b) * b * s, beside both;
- min_plus and assemble: the row block, c * w * s, w columns at a time (all n
  unless memory or ``--block-mb`` caps it); the host copy takes two pinned
  buffers of that size on the host.

The time estimate is the schedule's cost model (``fastapsp/schedule.py``)
divided by a fixed rate per backend: a rough guide, not a measurement.
"""

from __future__ import annotations

import os
import shutil

import numpy as np

from .errors import ConfigError

__all__ = ["stage_memory", "dry_run", "check_output_fits", "output_bytes", "RATE"]

# Cost-model units per second, from the order of magnitude of past runs: a guide only.
RATE = {"numpy": 2.0e8, "cupy": 2.0e10}


def output_bytes(rows: int, n: int, dtype) -> int:
    """Bytes of a ``rows`` x ``n`` result of ``dtype`` (without the 128-byte .npy header)."""
    return int(rows) * int(n) * np.dtype(dtype).itemsize


def stage_memory(c: int, b: int, n: int, itemsize: int, width: int | None = None) -> dict:
    """Device bytes each stage of one component holds at its peak (see the module text)."""
    width = n if width is None else min(n, width)
    rows_b = b * n * itemsize
    matrix = c * c * itemsize
    inner = (c - b) * b * itemsize
    block = c * width * itemsize
    return {
        "sssp": rows_b,
        "build": rows_b + matrix,
        "floyd_warshall": rows_b + matrix,
        "extract": rows_b + matrix + inner,
        "min_plus": rows_b + matrix + inner + block,
        "assemble": rows_b + matrix + inner + block,
        "host_copy": 2 * block,  # pinned host buffers (GPU path with an output)
    }


def dry_run(graph, partition, plan, *, dtype, backend: str, output: str, rows: int, block_bytes=None) -> list[dict]:
    """Per rank: peak device memory per stage, host memory, output size and estimated seconds."""
    from .schedule import component_costs

    itemsize = np.dtype(dtype).itemsize
    n = graph.n
    costs = component_costs(partition, n, graph.m)
    out_bytes = output_bytes(rows, n, dtype)
    ranks = []
    for rank, components in enumerate(plan):
        peak = dict.fromkeys(("sssp", "build", "floyd_warshall", "extract", "min_plus", "assemble", "host_copy"), 0)
        for p in components:
            c, b = int(partition.sizes[p]), int(partition.boundary_per_part[p])
            width = None if block_bytes is None else max(1, block_bytes // max(1, c * itemsize))
            for stage, value in stage_memory(c, b, n, itemsize, width).items():
                peak[stage] = max(peak[stage], value)
        device = {k: v for k, v in peak.items() if k != "host_copy"}
        host = (peak["host_copy"] if output != "none" and backend == "cupy" else 0)
        host += out_bytes if output == "memory" else 0
        ranks.append({
            "rank": rank,
            "components": len(components),
            "rows": int(sum(int(partition.sizes[p]) for p in components)),
            "device_bytes_per_stage": device,
            "device_peak_bytes": max(device.values()) if device else 0,
            "host_bytes": int(host),
            "estimated_seconds": float(sum(costs[p] for p in components) / RATE.get(backend, RATE["numpy"])),
        })
    return ranks


def _host_available() -> int:
    try:
        with open("/proc/meminfo") as fh:
            info = dict(line.split(":", 1) for line in fh)
        return int(info["MemAvailable"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        return -1


def check_output_fits(output: str, rows: int, n: int, dtype, *, extra: int = 0) -> int:
    """Refuse a run whose output cannot fit where it goes; returns its size in bytes.

    ``memory``: the rows must fit the available host memory.  A file: its size
    must fit the free space of its folder, with ``extra`` bytes written beside
    it (the ``--predecessors`` file).

    Raises
    ------
    ConfigError
        Naming ``output``, the size needed and the space there is.
    """
    need = output_bytes(rows, n, dtype)
    output = str(output)
    if output == "none":
        return need
    if output == "memory":
        have = _host_available()
        if have >= 0 and need > have:
            raise ConfigError(f"output: memory needs {need / 2**30:.2f} GiB for {rows} x {n} {np.dtype(dtype)}, "
                              f"the host has {have / 2**30:.2f} GiB available; write a file or use --sources/--stats")
        return need
    folder = os.path.dirname(os.path.abspath(output))
    have = shutil.disk_usage(folder).free
    if os.path.exists(output):
        have += os.path.getsize(output)  # it is replaced
    if need + extra + 128 > have:
        beside = f" and {extra / 2**30:.2f} GiB of predecessors" if extra else ""
        raise ConfigError(f"output: {output} needs {need / 2**30:.2f} GiB for {rows} x {n} {np.dtype(dtype)}"
                          f"{beside}, {folder} has {have / 2**30:.2f} GiB free; use --sources, --stats or a "
                          "smaller --dtype")
    return need
