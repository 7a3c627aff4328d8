"""The FastAPSP driver: read, partition, then for each of my components
SSSP -> build -> Floyd-Warshall -> extract -> min-plus -> assemble -> host -> sink.
"""

from __future__ import annotations

import hashlib
import math
import os
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from .backend import device_csr, gpu_name, resolve_backend
from .comm import max_over_ranks, run_or_abort, run_phase, select_device
from .errors import ConfigError, PartitionError, PrecisionWarning, StageError
from .io import read_graph
from .partition import (DEFAULT_IMBALANCE, DEFAULT_SEED, PARTITIONERS, load_partition, make_partition,
                        partition_graph, save_partition)
from .precision import DTYPES, choose_dtype
from .schedule import component_costs, schedule_components
from .sink import make_sink
from .stages import (assemble_row_block, blocked_floyd_warshall, boundary_sssp, build_component_matrix,
                     extract_inner_to_boundary, min_plus)
from .stages.floyd_warshall import DEFAULT_TILE

__all__ = ["SolveOptions", "STAGES", "default_k", "run_components", "solve_job"]

STAGES = ("sssp", "build", "floyd_warshall", "extract", "min_plus", "assemble", "host_copy", "write")


def default_k(n: int) -> int:
    """Components of about 1,800 vertices (k = 64 for luxembourg_osm), at least 1."""
    return max(1, min(n, round(n / 1800)))


@dataclass
class SolveOptions:
    """Every setting of a ``fastapsp solve`` run (flags and run-file keys share these names)."""

    graph: str = ""
    k: int | None = None
    partitioner: str = "metis"
    seed: int = DEFAULT_SEED
    imbalance: float = DEFAULT_IMBALANCE
    backend: str = "auto"
    undirected: bool = False
    format: str | None = None
    output: str = "none"
    dtype: str | None = None  # None or "auto": chosen from the graph (see fastapsp.precision)
    partition_file: str | None = None
    report: str | None = None
    tile: int = DEFAULT_TILE
    block_mb: float | None = None

    def check(self) -> None:
        """Reject values no run could use, before any work starts (same on every rank)."""
        if not self.graph:
            raise ConfigError("graph: no graph file given")
        if self.k is not None and (not isinstance(self.k, int) or self.k < 1):
            raise ConfigError(f"k: {self.k!r} is not a positive integer")
        if self.partitioner not in PARTITIONERS:
            raise ConfigError(f"partitioner: {self.partitioner!r} is not one of {', '.join(PARTITIONERS)}")
        if not 0 <= self.imbalance < 1:
            raise ConfigError(f"imbalance: {self.imbalance} is outside [0, 1)")
        if self.dtype not in (None, "auto", *DTYPES):
            raise ConfigError(f"dtype: {self.dtype!r} is not one of auto, {', '.join(DTYPES)}")
        if self.backend not in ("auto", "numpy", "cupy"):
            raise ConfigError(f"backend: {self.backend!r} is not one of auto, numpy, cupy")
        out = str(self.output)
        if out not in ("none", "memory") and not out.endswith(".npy"):
            raise ConfigError(f"output: {out!r} is not 'none', 'memory' or a path ending in .npy")
        if out.endswith(".npy") and not os.path.isdir(os.path.dirname(os.path.abspath(out))):
            raise ConfigError(f"output: folder {os.path.dirname(os.path.abspath(out))} does not exist")
        if self.tile < 1:
            raise ConfigError(f"tile: {self.tile} is not a positive integer")
        if self.block_mb is not None and self.block_mb <= 0:
            raise ConfigError(f"block_mb: {self.block_mb} must be > 0")


class StageTimer:
    """Seconds per stage; on the GPU each stage is synchronised before the clock is read."""

    def __init__(self, xp) -> None:
        self.xp = xp
        self.seconds = dict.fromkeys(STAGES, 0.0)
        self.component = None  # the component (or SSSP batch) being computed, named in errors

    @contextmanager
    def __call__(self, name: str, *, sync: bool = True):
        start = time.perf_counter()
        try:
            yield
        except StageError:
            raise
        except Exception as exc:  # say which component and stage failed, e.g. a GPU out of memory
            raise StageError(f"component {self.component}, stage {name}: {type(exc).__name__}: {exc}",
                             component=self.component, stage=name) from exc
        if sync and self.xp is not np:
            # The compute stream only: copies to the host run on their own stream.
            self.xp.cuda.get_current_stream().synchronize()
        self.seconds[name] += time.perf_counter() - start


def _available_bytes(xp) -> int:
    """Memory a row block may use: most of the free GPU memory, half the free host memory."""
    if xp is not np:
        free, _ = xp.cuda.runtime.memGetInfo()
        return int(0.85 * (free + xp.get_default_memory_pool().free_bytes()))
    try:
        with open("/proc/meminfo") as fh:
            info = dict(line.split(":", 1) for line in fh)
        return int(info["MemAvailable"].split()[0]) * 1024 // 2
    except (OSError, KeyError, ValueError):
        return 4 << 30


def _column_width(c: int, nb: int, n: int, itemsize: int, xp, block_bytes, *, component: int) -> int:
    """Columns of the row block computed at once, so that the block fits in memory.

    ``block_bytes`` caps one block; by default the block (and its host copy)
    may take what the component's other arrays leave of the free memory.
    """
    if block_bytes is not None:
        return int(max(1, min(n, block_bytes // max(1, c * itemsize))))
    budget = _available_bytes(xp)
    fixed = (nb * n + c * c + (c - nb) * nb) * itemsize
    width = (budget - fixed) // max(1, c * itemsize * 2)
    if width < min(n, 32):
        need = (fixed + c * itemsize * 2 * min(n, 32)) / 2**30
        raise MemoryError(
            f"component {component} ({c} vertices, {nb} boundary) needs at least {need:.2f} GiB, "
            f"{budget / 2**30:.2f} GiB available; use a larger k"
        )
    return int(min(n, width))


def run_components(graph, partition, components, *, backend: str = "numpy", sink, dtype=np.float32,
                   tile: int = DEFAULT_TILE, block_bytes: int | None = None) -> dict:
    """Compute the row blocks of ``components`` and hand them to ``sink``.

    The boundary SSSP of several components runs as one batch (all their
    sources advance together), as far as memory allows; then each component
    goes through build, Floyd-Warshall, extract, min-plus and assemble, and its
    row block (in column chunks if it would not fit) goes to the host once.

    Returns the seconds spent in each stage (see ``STAGES``).
    """
    if backend == "cupy":
        import cupy as xp
    else:
        xp = np
    dtype = np.dtype(dtype)
    indptr, indices, weights = device_csr(graph, xp)
    timer = StageTimer(xp)
    components = [p for p in components if partition.sizes[p] > 0]
    writer = _HostWriter(xp, sink, dtype)
    for group in _sssp_groups(partition, components, graph.n, dtype.itemsize, xp):
        sources = np.concatenate([vertices[:nb] for vertices, nb in map(partition.component, group)])
        timer.component = group[0] if len(group) == 1 else f"batch {group}"
        with timer("sssp"):
            all_rows = boundary_sssp(indptr, indices, weights, xp.asarray(sources), dtype=dtype,
                                     unit_weights=graph.unit_weights)
        first = 0
        for p in group:
            vertices, nb = partition.component(p)
            rows_b = all_rows[first : first + nb]
            first += nb
            timer.component = p
            _component(graph, (indptr, indices, weights), p, vertices, nb, rows_b, xp=xp, sink=sink, dtype=dtype,
                       tile=tile, block_bytes=block_bytes, timer=timer, writer=writer)
        del all_rows
    writer.close(timer)
    if xp is not np:
        xp.get_default_memory_pool().free_all_blocks()
    return timer.seconds


def _component(graph, csr, p, vertices_host, nb, rows_b, *, xp, sink, dtype, tile, block_bytes, timer, writer):
    """Stages 2-6 of one component, its boundary rows already computed."""
    indptr, indices, weights = csr
    n, c = graph.n, vertices_host.size
    vertices = xp.asarray(vertices_host)
    with timer("build"):
        matrix = build_component_matrix(indptr, indices, weights, vertices, nb, rows_b)
    with timer("floyd_warshall"):
        blocked_floyd_warshall(matrix, tile=tile)
    with timer("extract"):
        inner = extract_inner_to_boundary(matrix, nb)
    width = _column_width(c, nb, n, dtype.itemsize, xp, block_bytes, component=p)
    for start in range(0, n, width):
        cols = min(width, n - start)
        block = xp.empty((c, cols), dtype=dtype)
        with timer("min_plus"):
            min_plus(inner, rows_b[:, start : start + cols], out=block[nb:])
        with timer("assemble"):
            assemble_row_block(block, rows_b, matrix, vertices, nb, column_start=start)
        if sink.needs_host:
            writer.put(vertices_host, start, block, timer)
        del block


class _HostWriter:
    """Brings device blocks to the sink while the GPU goes on with the next block.

    Two pinned host buffers: a block is copied into a free one on a copy stream,
    and a background thread waits for that copy and hands the buffer to the sink.
    The device block is kept alive until its copy is done.  On the host path the
    block goes to the sink directly.
    """

    def __init__(self, xp, sink, dtype) -> None:
        self.xp, self.sink, self.dtype = xp, sink, dtype
        self.slots: list = []
        if xp is not np and sink.needs_host:
            import cupyx
            from concurrent.futures import ThreadPoolExecutor

            self.stream = xp.cuda.Stream(non_blocking=True)
            self.thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fastapsp-d2h")
            self.empty_pinned = cupyx.empty_pinned
            self.slots = [{"buffer": None, "pending": None} for _ in range(2)]
            self.turn = 0

    def put(self, vertices_host, start, block, timer) -> None:
        if self.xp is np:
            with timer("write"):
                self.sink.write(vertices_host, start, block)
            return
        slot = self.slots[self.turn]
        self.turn = 1 - self.turn
        with timer("write", sync=False):  # waiting for the host side to free this buffer
            self._finish(slot)
        with timer("host_copy", sync=False):
            if slot["buffer"] is None or slot["buffer"].size < block.size:
                slot["buffer"] = None
                slot["buffer"] = self.empty_pinned((block.size,), dtype=self.dtype)
            host = slot["buffer"][: block.size].reshape(block.shape)
            ready = self.xp.cuda.Event()
            self.stream.wait_event(self.xp.cuda.get_current_stream().record())
            with self.stream:
                block.get(out=host, stream=self.stream, blocking=False)
                ready.record(self.stream)

        def deliver():
            ready.synchronize()
            self.sink.write(vertices_host, start, host)

        slot["pending"] = (self.thread.submit(deliver), block)

    @staticmethod
    def _finish(slot) -> None:
        if slot["pending"] is not None:
            future, _block = slot["pending"]
            slot["pending"] = None
            future.result()

    def close(self, timer) -> None:
        with timer("write", sync=False):
            for slot in self.slots:
                self._finish(slot)
        if self.slots:
            self.thread.shutdown()


def _sssp_groups(partition, components, n: int, itemsize: int, xp) -> list[list[int]]:
    """Consecutive runs of components whose boundary rows together fit a quarter of the free memory."""
    budget = max(1, _available_bytes(xp) // 4)
    groups: list[list[int]] = []
    used = budget + 1
    for p in components:
        need = int(partition.boundary_per_part[p]) * n * itemsize
        if used + need > budget:
            groups.append([])
            used = 0
        groups[-1].append(p)
        used += need
    return groups


def _partition_everywhere(graph, opts: SolveOptions, k: int, *, comm):
    """Rank 0 partitions (or loads ``partition_file``); every rank ends with the same Partition."""

    def on_rank0():
        if opts.partition_file and os.path.exists(opts.partition_file):
            return load_partition(opts.partition_file, graph, opts.k)
        part = partition_graph(graph, k, opts.partitioner, seed=opts.seed, imbalance=opts.imbalance)
        if opts.partition_file:
            save_partition(opts.partition_file, graph, part)
        return part

    mine = run_phase(comm, "partitioning", on_rank0 if comm.rank == 0 else (lambda: None))
    if comm.size == 1:
        return mine
    shared = comm.bcast((mine.labels, mine.k, mine.method, mine.seed, mine.imbalance, mine.seconds)
                        if comm.rank == 0 else None)
    labels, k, method, seed, imbalance, seconds = shared

    def rebuild():
        if comm.rank == 0:
            return mine
        return make_partition(graph, labels, k, method=method, seed=seed, imbalance=imbalance, seconds=seconds)

    part = run_phase(comm, "checking the partition", rebuild)
    digest = hashlib.sha256(part.labels.tobytes() + part.boundary.tobytes()).hexdigest()
    if len(set(comm.allgather(digest))) != 1:
        raise PartitionError("ranks ended with different partitions; is the graph file the same on every node?")
    return part


def solve_job(opts: SolveOptions, *, comm, log=None) -> tuple[dict, object]:
    """One whole ``fastapsp solve`` run on every rank of ``comm``.

    Returns the report (identical on every rank) and the sink (holding the
    result for ``output='memory'``).  ``log`` (a callable taking one line)
    hears which dtype was chosen and why, when that is worth saying; without
    it a precision problem is raised as a :class:`~fastapsp.errors.PrecisionWarning`.
    """
    start = time.perf_counter()
    opts.check()
    seconds = {}
    t = time.perf_counter()
    graph = run_phase(comm, "reading the graph", read_graph, opts.graph, format=opts.format,
                      undirected=opts.undirected)
    seconds["read"] = time.perf_counter() - t
    precision = choose_dtype(graph, opts.dtype)
    _tell_precision(precision, opts.dtype, log)
    k = default_k(graph.n) if opts.k is None else opts.k
    if k > max(1, graph.n):
        raise ConfigError(f"k: {k} is larger than the {graph.n} vertices of {graph.name}")
    t = time.perf_counter()
    partition = _partition_everywhere(graph, opts, k, comm=comm)
    seconds["partition"] = time.perf_counter() - t

    backend = run_phase(comm, "choosing the backend", resolve_backend, opts.backend)
    device = "cpu"
    if backend == "cupy":
        device_id = select_device(comm)
        device = f"cuda:{device_id} {gpu_name(device_id)}"
    plan = schedule_components(component_costs(partition, graph.n, graph.m), comm.size)
    sink = make_sink(opts.output, graph.n, precision.dtype, comm=comm)
    block_bytes = None if opts.block_mb is None else int(opts.block_mb * 2**20)
    try:
        # A failing rank ends the job at once (Abort) instead of waiting for the others' components.
        stage_seconds = run_or_abort(comm, "computing the components", run_components, graph, partition,
                                     plan[comm.rank], backend=backend, sink=sink, dtype=precision.dtype,
                                     tile=opts.tile, block_bytes=block_bytes, cleanup=sink.discard)
        sink.metadata = result_metadata(graph, partition, opts, precision)
        sink.commit()
    except BaseException:
        sink.abort()
        raise
    seconds.update(stage_seconds)
    seconds["total"] = time.perf_counter() - start
    seconds = max_over_ranks(comm, seconds)
    report = _report(graph, partition, opts, backend, device, seconds, comm.size)
    report.update(dtype=precision.dtype, dtype_reason=precision.reason, distance_bound=precision.bound)
    return report, sink


def result_metadata(graph, partition, opts, precision) -> dict:
    """What the sidecar of a ``.npy`` result records, so a result can be told from a foreign one."""
    from . import __version__

    return {"graph": graph.name, "graph_checksum": graph.checksum(), "directed": graph.directed,
            "k": partition.k, "partitioner": partition.method, "seed": partition.seed,
            "partition_checksum": hashlib.sha256(partition.labels.tobytes()).hexdigest()[:32],
            "undirected_option": bool(opts.undirected), "input_format": opts.format, "dtype_reason": precision.reason,
            "version": __version__}


def _tell_precision(precision, requested, log) -> None:
    """Say in one line why float64 was chosen, or warn that the chosen dtype is not exact."""
    if precision.warning is not None:
        if log is None:
            warnings.warn(precision.warning, PrecisionWarning, stacklevel=3)
        else:
            log(f"warning: {precision.warning}")
    elif requested in (None, "auto") and precision.dtype == "float64" and log is not None:
        log(f"note: {precision.reason}")


def _report(graph, partition, opts, backend, device, seconds, ranks) -> dict:
    metrics = partition.metrics()
    stages = {key: round(value, 6) for key, value in seconds.items() if key != "total"}
    return {
        "graph": graph.name,
        "n": graph.n,
        "m": graph.num_edges,
        "arcs": graph.m,
        "directed": graph.directed,
        "k": partition.k,
        "partitioner": partition.method,
        "seed": partition.seed if partition.seed >= 0 else None,  # -1: labels loaded without their history
        "imbalance_allowed": partition.imbalance if math.isfinite(partition.imbalance) else None,
        "edge_cut": metrics["edge_cut"],
        "boundary_vertices": metrics["boundary_vertices"],
        "boundary_ratio": metrics["boundary_ratio"],
        "largest_part": metrics["largest_part"],
        "imbalance": metrics["imbalance"],
        "stages": stages,
        "total_seconds": round(seconds["total"], 6),
        "ranks": ranks,
        "backend": backend,
        "device": device,
        "dtype": opts.dtype,
        "output": str(opts.output),
    }
