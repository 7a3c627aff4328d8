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

:func:`dry_run` adds what a run holds besides (:func:`stage_memory` is one
component alone): the graph's CSR on the device; with the frontier method the
boundary rows of a whole SSSP batch (the components whose rows fit a quarter of
the memory available, as :func:`fastapsp.components.sssp_groups` forms them),
alive while each of its components is computed, and the SSSP's own buffers;
with the boundary-graph method the local closures that are kept, the boundary
graph's levels and a component's rows made twice (product, then reordered);
a second row block while the previous one is still copied to the host or
reduced by ``--stats`` on its own stream; the ``--stats`` accumulators; the
int32 arcs and predecessors of ``--predecessors``.  Where the run picks a size
from the free memory (batches, column chunks), the estimate uses the memory
available when it is made.

With ``--sources`` only the components holding a source work, on blocks of
their wanted rows; a component's matrix is held only where an interior vertex
is wanted (with the boundary-graph method only those components' local
closures are kept, the others keep their boundary rows).  Rows by SSSP from
the sources (:func:`sssp_memory`) hold a batch of rows, the GPU SSSP's own
buffers for one pass of up to 1024 sources, or SciPy's float64 result on the host.

On the host: the output for ``memory``, and with the GPU the two pinned
buffers through which blocks are copied, in chunks of at most
``HostWriter.CHUNK_BYTES`` (:class:`fastapsp.hostcopy.HostWriter`).

The time estimate is the schedule's cost model (``fastapsp/schedule.py``)
divided by a fixed rate per backend: a rough guide, not a measurement.
"""

from __future__ import annotations

import os
import shutil

import numpy as np

from .backend import host_available_bytes as _host_available
from .errors import ConfigError
from .stages._cuda import _MAX_BATCH, sssp_pass_size
from .stages.boundary_graph import batch_rows, closure_batch_limit, closure_budget, levels_bytes
from .stages.min_plus import Packing

__all__ = ["stage_memory", "dry_run", "sssp_memory", "check_output_fits", "output_bytes", "RATE"]

# Cost-model units per second, from the order of magnitude of past runs: a guide only.
RATE = {"numpy": 2.0e8, "cupy": 2.0e10}
_STATS_TILE = 2048  # columns per block of the --stats kernel (reductions_gpu.py)
STAGES = ("csr", "sssp", "local_fw", "boundary_graph", "boundary_rows", "build", "floyd_warshall", "extract",
          "min_plus", "assemble")


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


def _groups(partition, components, n: int, row_bytes: int, budget: int) -> list[list[int]]:
    """The SSSP batches of :func:`fastapsp.components.sssp_groups` for a memory budget."""
    from .components import sssp_groups

    return sssp_groups(partition, components, n, row_bytes, None, budget=budget)


def _width(c: int, nb: int, n: int, itemsize: int, available: int, block_bytes) -> int:
    """Columns per row block, as :func:`fastapsp.components.column_width` picks them."""
    if block_bytes is not None:
        return int(max(1, min(n, block_bytes // max(1, c * itemsize))))
    fixed = (nb * n + c * c + (c - nb) * nb) * itemsize
    return int(max(min(n, 32), min(n, (available - fixed) // max(1, c * itemsize * 2))))


def _sssp_work(n: int, sources: int, itemsize: int, unit: bool, gpu: bool, per_pass: int = _MAX_BATCH) -> int:
    """What the SSSP of ``sources`` holds besides its rows: the GPU's buffers, or SciPy's float64 result."""
    return _sssp_buffers(n, sources, itemsize, unit, per_pass) if gpu else sources * n * 8


def _sssp_buffers(n: int, sources: int, itemsize: int, unit: bool, per_pass: int = _MAX_BATCH) -> int:
    """The GPU SSSP's own arrays for one pass of ``sssp_pass_size(per_pass)`` sources at most (as
    stages/_cuda.py sizes it): distances (n x 32 words), flags, stamps and queues."""
    batch = min(sssp_pass_size(per_pass), max(1, sources))
    words = -(-batch // 32)
    return n * 32 * words * itemsize + (3 if unit else 2) * n * words * 4 + n * 4 + 2 * n * 4 + 12


def _staging_bytes(rows: int, cols: int, itemsize: int) -> int:
    """The two pinned host buffers a GPU run copies ``rows`` x ``cols`` blocks through."""
    from .hostcopy import HostWriter

    return 2 * HostWriter.buffer_elements(rows, cols, itemsize) * itemsize if rows and cols else 0


def sssp_memory(graph, counts, *, dtype, backend: str, output: str, block_bytes=None, available: int | None = None,
                predecessors: bool = False) -> list[dict]:
    """Per rank, ``--sources`` by SSSP from the sources (:func:`fastapsp.sources.run_sssp_rows`).

    ``counts``: sources per rank.  Memory of one batch of rows (sized as the
    run sizes it, from ``block_bytes`` or a quarter of ``available``) and of
    the SSSP computing it; host memory and seconds as :func:`dry_run` gives them.
    """
    from .sources import SOURCES_SSSP_BATCH, sssp_batch, sssp_seconds

    itemsize = np.dtype(dtype).itemsize
    n = graph.n
    gpu = backend == "cupy"
    csr = (graph.indptr.nbytes + graph.indices.nbytes + graph.weights.nbytes) if gpu else 0
    row_bytes = itemsize + (8 if predecessors else 0)  # int32 arcs and predecessors beside each distance
    budget = block_bytes if block_bytes is not None else ((1 << 62) if available is None else int(available)) // 4
    ranks = []
    for rank, count in enumerate(counts):
        batch = min(int(count), sssp_batch(n, row_bytes, budget))
        peak = csr + batch * n * row_bytes + _sssp_work(n, batch, itemsize, bool(graph.unit_weights), gpu,
                                                        SOURCES_SSSP_BATCH)
        host = 0
        if gpu and output != "none":
            host = _staging_bytes(batch, n, itemsize) + (_staging_bytes(batch, n, 4) if predecessors else 0)
        host += output_bytes(count, n, dtype) if output == "memory" else 0
        ranks.append({
            "rank": rank,
            "rows": int(count),
            "sources_method": "sssp",
            "batch": int(batch),
            "device_bytes_per_stage": {"csr": int(csr), "sssp": int(peak)},
            "device_peak_bytes": int(peak),
            "host_bytes": int(host),
            "estimated_seconds": sssp_seconds(count, n, graph.m, unit_weights=bool(graph.unit_weights),
                                              backend=backend, dtype=dtype),
        })
    return ranks


def dry_run(graph, partition, plan, *, dtype, backend: str, output: str, rows: int, block_bytes=None,
            method: str = "frontier", available: int | None = None, stats: bool = False,
            predecessors: bool = False, wanted=None, interior=None, closing=None, keep=None,
            whole_rows: bool = True, tree=None) -> list[dict]:
    """Per rank: peak device memory per stage, host memory, output size and estimated seconds.

    Parameters
    ----------
    method : {"frontier", "boundary-graph"}
        Where the boundary rows come from.
    available : int, optional
        Memory a run may use (``fastapsp.backend.available_bytes``); batches
        and column chunks are sized from it.  Unbounded when omitted.
    stats, predecessors : bool
        ``--stats`` and ``--predecessors``.
    wanted, interior : ndarray of int, optional
        ``--sources``: wanted rows, and wanted interior rows, per component
        (only those components work; only those with interior rows need their matrix).
    closing : list of lists, optional
        Boundary-graph method: the components each rank closes (default ``plan``).
    keep : ndarray of bool, optional
        Boundary-graph method: the local closures kept for later (default all
        that fit; see :func:`fastapsp.components.local_closures`).
    whole_rows : bool
        False when nothing needs every distance: a component without boundary
        computes its own columns only (the estimated seconds).
    tree : LevelTree, optional
        Boundary-graph method: the levels the run will close (their super-groups' sizes); without it
        the upper levels are estimated from the dense limit and the super-group size.
    """
    from .schedule import component_costs
    from .stages.boundary_graph import DENSE_LIMIT, SUPER_SIZE

    itemsize = np.dtype(dtype).itemsize
    n = graph.n
    unit = bool(graph.unit_weights)
    available = (1 << 62) if available is None else int(available)
    costs = component_costs(partition, n, graph.m, whole_rows=whole_rows)
    out_bytes = output_bytes(rows, n, dtype)
    gpu = backend == "cupy"
    csr = (graph.indptr.nbytes + graph.indices.nbytes + graph.weights.nbytes) if gpu else 0
    row_bytes = itemsize + (8 if predecessors else 0)  # int32 arcs and predecessors beside the boundary rows
    square = itemsize + (8 if predecessors else 0)  # the same beside the component matrix
    block_item = itemsize + (4 if predecessors else 0)  # int32 predecessors beside the row block
    # A second block: the previous one is copied to the host, or reduced by --stats on its own stream.
    blocks = 2 if gpu and (output != "none" or stats) else 1
    if stats and gpu:
        extra = 9 * n * 8 + 65536 * 48 * 8  # per-vertex accumulators and the histogram's levels
    else:
        extra = 0
    sizes = partition.sizes.astype(np.int64)
    nbs = partition.boundary_per_part.astype(np.int64)
    ranks = []
    for rank, components in enumerate(plan):
        peak = dict.fromkeys(STAGES, 0)
        peak["csr"] = csr
        base = csr + extra
        if method == "boundary-graph":
            mine = keep if keep is None else keep & np.isin(np.arange(partition.k), components)  # as the run keeps
            base, kept = _boundary_graph_memory(partition, plan[rank] if closing is None else closing[rank], mine,
                                                n, itemsize, available, DENSE_LIMIT[backend], SUPER_SIZE[backend],
                                                peak, base, tree=tree,
                                                packed=Packing.possible(graph, dtype, gpu))
            groups = [[p] for p in components]
            batch_most = batch_rows(n, itemsize, available)
            batch_total = int(sum(nbs[p] for p in components))
        else:
            groups = _groups(partition, components, n, row_bytes, max(1, available // 4))
        for group in groups:
            group_rows = int(sum(nbs[p] for p in group))
            rows_bytes = group_rows * n * row_bytes
            if method == "frontier":
                peak["sssp"] = max(peak["sssp"], base + rows_bytes + _sssp_work(n, group_rows, itemsize, unit, gpu))
            for p in group:
                c, nb = int(sizes[p]), int(nbs[p])
                r = c if wanted is None else int(wanted[p])
                inner = c - nb if interior is None else int(interior[p])  # interior rows computed
                if method == "boundary-graph":
                    # the rows are made for a batch of components (BoundaryGraph._row_batches: up to
                    # batch_rows rows, a larger component alone) by the grouped product
                    # and then reordered, twice at once; the batch stays while its components are computed
                    batch = max(nb, min(batch_most, batch_total)) * n * itemsize
                    held = base + 2 * batch
                    peak["boundary_rows"] = max(peak["boundary_rows"], held)
                    held -= batch
                    if (inner or interior is None) and p not in kept:  # a closure not held here is made again
                        held += c * c * itemsize
                else:
                    held = base + rows_bytes
                    if inner or interior is None:  # --sources: no matrix without an interior row
                        held += c * c * square
                    peak["build"] = max(peak["build"], held)
                    peak["floyd_warshall"] = max(peak["floyd_warshall"], held)
                if interior is None:
                    held += (c - nb) * nb * square
                else:  # the wanted interior rows' distances to the boundary and inside the component
                    held += inner * (nb + c) * square
                peak["extract"] = max(peak["extract"], held)
                # the run sizes its blocks from what is free then: everything held so far is taken
                width = _width(c, nb, n, block_item, max(0, available - int(0.85 * held)), block_bytes)
                held += blocks * r * width * block_item + (r * -(-width // _STATS_TILE) * 24 if stats else 0)
                peak["min_plus"] = max(peak["min_plus"], held)
                peak["assemble"] = max(peak["assemble"], held)
        device = {key: int(value) for key, value in peak.items()}
        # the host copy goes through two pinned buffers as large as a chunk of the largest block
        biggest = max((int(sizes[p]) if wanted is None else int(wanted[p]) for p in components), default=0)
        width = n if block_bytes is None else max(1, block_bytes // max(1, biggest * itemsize))
        host = 0
        if output != "none" and gpu:
            host = _staging_bytes(biggest, min(n, width), itemsize)
            host += _staging_bytes(biggest, min(n, width), 4) if predecessors else 0
        host += out_bytes if output == "memory" else 0
        ranks.append({
            "rank": rank,
            "components": len(components),
            "rows": int(sum(int(sizes[p]) if wanted is None else int(wanted[p]) for p in components)),
            "sssp_method": method,
            "device_bytes_per_stage": device,
            "device_peak_bytes": max(device.values()) if device else 0,
            "host_bytes": int(host),
            "estimated_seconds": float(sum(costs[p] for p in components) / RATE.get(backend, RATE["numpy"])),
        })
    return ranks


def _boundary_graph_memory(partition, components, keep, n, itemsize, available, dense_limit, super_size, peak,
                           base, tree=None, packed: bool = False) -> tuple[int, set]:
    """Fill the boundary-graph stages of ``peak``; return what stays held while components are computed
    and the components whose closures are held.

    ``components``: those this rank closes; ``keep``: which closures are kept (None: all that fit).
    ``packed``: the grouped products may run in 16 bits (their encoded blocks held too).
    """
    sizes = partition.sizes.astype(np.int64)
    nbs = partition.boundary_per_part.astype(np.int64)
    # L_q[:nb_q] of every component, one copy in the levels, and with the tree its upper levels as they will be
    # closed and the rows made from them while components run
    levels = levels_bytes(tree, partition, itemsize, packed)
    # closures kept while they leave room for the levels (components.local_closures)
    budget = closure_budget(available, levels)
    kept = 0
    unkept_rows = 0
    unkept_squares = 0
    held = set()
    for p in components:
        square = int(sizes[p]) ** 2 * itemsize
        if (keep is None or keep[p]) and square <= budget - kept:
            kept += square
            held.add(p)
        else:
            unkept_rows += int(nbs[p] * sizes[p]) * itemsize
            unkept_squares += square
    largest = int(sizes.max()) ** 2 * itemsize if sizes.size else 0
    # closures not kept are made a batch at a time (components.local_closures)
    in_flight = max(largest, min(closure_batch_limit(budget), unkept_squares))
    closures = kept + unkept_rows
    peak["local_fw"] = base + closures + in_flight
    if tree is None:  # the upper levels from the limits alone
        boundary = int(nbs.sum())
        if boundary <= dense_limit:
            levels += boundary * boundary * itemsize
        else:  # super-groups of about super_size boundary vertices, closed densely, and a dense top
            levels += 2 * boundary * super_size * itemsize + dense_limit * dense_limit * itemsize
    peak["boundary_graph"] = base + closures + levels
    return base + closures + levels, held


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
    if output == "device":
        import cupy

        from .backend import available_bytes

        have = available_bytes(cupy)
        if need > have:
            raise ConfigError(f"output: device needs {need / 2**30:.2f} GiB for {rows} x {n} {np.dtype(dtype)}, "
                              f"the GPU has {have / 2**30:.2f} GiB free for it; use fastapsp.stats for statistics, "
                              "sources= for some rows, or write a file (output='PATH.npy')")
        return need
    if output == "memory":
        have = _host_available()
        if have is not None and need > have:
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
