"""The FastAPSP driver: read, partition, then for each of my components
SSSP -> build -> Floyd-Warshall -> extract -> min-plus -> assemble -> host -> sink.
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from .backend import device_csr, gpu_name, resolve_backend, start_gpu_warmup
from .comm import max_over_ranks, process_age, run_or_abort, run_phase, select_device
from .cost import SSSP_METHODS, auto_k, close_everywhere, default_k, predict
from .cost import choose_method as choose_sssp_method
from .errors import ConfigError, PartitionError, PrecisionWarning, StageError
from .io import read_graph
from .partition import (AUTO, DEFAULT_IMBALANCE, DEFAULT_SEED, PARTITIONERS, REFINEMENTS, load_partition,
                        make_partition, partition_checksum, partition_graph, save_partition)
from .precision import DTYPES, choose_dtype
from .schedule import component_costs, schedule_components, schedule_in_order
from .sink import make_sink
from .stages import (assemble_row_block, blocked_floyd_warshall, boundary_sssp, build_component_matrix,
                     extract_inner_to_boundary, min_plus)
from .stages.boundary_graph import (DENSE_LIMIT, SUPER_SIZE, BoundaryGraph, LevelTree, close_components,
                                    closure_batch_limit)
from .stages.floyd_warshall import DEFAULT_TILE

# Issue 9 (answers at scale): each feature in its own module, hooked in below.
from .reductions import StatsAccumulator, finish_stats
from .sources import (METHODS, RowSubsetSink, SourceRows, choose_method, component_rows, ids_path, parse_sources,
                      pipeline_seconds, run_sssp_rows, sssp_before_partition)
from .paths import predecessors_path
from .stages.predecessors import (NO_PREDECESSOR, assemble_predecessors, boundary_predecessors,
                                  component_predecessors, floyd_warshall_predecessors, min_plus_predecessors)
from .progress import make_progress
from .sizing import check_output_fits, dry_run, output_bytes, sssp_memory
from .smalldist import SMALL_DTYPES, SmallIntSink, check_small_dtype
from .verify import RowSampler, chain, pick_rows, verify_rows
from .watch import note_stage, place

__all__ = ["SolveOptions", "STAGES", "default_k", "run_components", "solve_job"]

STAGES = ("sssp", "local_fw", "boundary_graph", "boundary_rows", "build", "floyd_warshall", "extract", "min_plus",
          "assemble", "stats", "host_copy", "write")


@dataclass
class SolveOptions:
    """Every setting of a ``fastapsp solve`` run (flags and run-file keys share these names)."""

    graph: str = ""
    k: int | None = None
    partitioner: str = "auto"  # fastapsp.partition.auto_partitioner
    refine: str = "none"
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
    sssp_method: str = "auto"
    stats: str | None = None  # --stats PREFIX (fastapsp/reductions.py)
    sources: str | None = None  # --sources SPEC (fastapsp/sources.py)
    sources_method: str = "auto"
    verify: int = 0  # --verify N (fastapsp/verify.py)
    predecessors: bool = False  # --predecessors (fastapsp/paths.py)
    dry_run: bool = False  # --dry-run (fastapsp/sizing.py)
    quiet: bool = False  # --quiet: no progress bar (fastapsp/progress.py)

    def check(self) -> None:
        """Reject values no run could use, before any work starts (same on every rank)."""
        if not self.graph:
            raise ConfigError("graph: no graph file given")
        if self.k is not None and (not isinstance(self.k, int) or self.k < 1):
            raise ConfigError(f"k: {self.k!r} is not a positive integer")
        if self.partitioner != AUTO and self.partitioner not in PARTITIONERS:
            raise ConfigError(f"partitioner: {self.partitioner!r} is not one of {AUTO}, {', '.join(PARTITIONERS)}")
        if self.refine not in REFINEMENTS:
            raise ConfigError(f"refine: {self.refine!r} is not one of {', '.join(REFINEMENTS)}")
        if not 0 <= self.imbalance < 1:
            raise ConfigError(f"imbalance: {self.imbalance} is outside [0, 1)")
        if self.dtype not in (None, "auto", *DTYPES, *SMALL_DTYPES):
            raise ConfigError(f"dtype: {self.dtype!r} is not one of auto, {', '.join(DTYPES + SMALL_DTYPES)}")
        if self.backend not in ("auto", "numpy", "cupy"):
            raise ConfigError(f"backend: {self.backend!r} is not one of auto, numpy, cupy")
        out = str(self.output)
        if out not in ("none", "memory") and not out.endswith(".npy"):
            raise ConfigError(f"output: {out!r} is not 'none', 'memory' or a path ending in .npy")
        if out.endswith(".npy") and not os.path.isdir(os.path.dirname(os.path.abspath(out))):
            raise ConfigError(f"output: folder {os.path.dirname(os.path.abspath(out))} does not exist")
        if self.stats and not os.path.isdir(os.path.dirname(os.path.abspath(self.stats))):
            raise ConfigError(f"stats: folder {os.path.dirname(os.path.abspath(self.stats))} does not exist")
        if self.sources_method not in METHODS:
            raise ConfigError(f"sources_method: {self.sources_method!r} is not one of {', '.join(METHODS)}")
        if self.stats and self.sources:
            raise ConfigError("stats: --stats reduces the whole matrix and cannot be combined with --sources")
        if self.predecessors and not out.endswith(".npy"):
            raise ConfigError(f"predecessors: needs --output PATH.npy (they are written beside it), found {out!r}")
        if not isinstance(self.verify, int) or self.verify < 0:
            raise ConfigError(f"verify: {self.verify!r} is not a number of rows >= 0")
        if self.tile < 1:
            raise ConfigError(f"tile: {self.tile} is not a positive integer")
        if self.block_mb is not None and self.block_mb <= 0:
            raise ConfigError(f"block_mb: {self.block_mb} must be > 0")
        if self.sssp_method not in SSSP_METHODS:
            raise ConfigError(f"sssp_method: {self.sssp_method!r} is not one of {', '.join(SSSP_METHODS)}")


class StageTimer:
    """Seconds per stage.

    On the host, the wall clock around each stage.  On the GPU, the seconds of
    the compute stream between two events recorded as the stage begins and
    ends: the host does not wait for the device at every stage, so it queues
    the next stages (Python, launches) while the device still runs the last
    ones, and a run of a thousand components does not pay its host time on top
    of its device time.  A stage that the device reaches late (still busy with
    an earlier one) is timed from where the device reaches it.  ``seconds``
    waits for the device.  ``FASTAPSP_SYNC_STAGES=1`` in the environment (or
    any listener) synchronises at the end of every stage and reads the clock
    instead, as every stage did before 2026-11: slower, but a failing kernel
    is then named by the stage that ran it.

    ``StageTimer.listeners``: callables told the name of every stage as it ends
    (after the synchronisation), e.g. to sample memory (``benchmarks/memory_check.py``).
    """

    listeners: list = []
    _RESOLVE_EVERY = 256  # pending event pairs read back (those already passed) once this many wait

    def __init__(self, xp) -> None:
        self.xp = xp
        self._seconds = dict.fromkeys(STAGES, 0.0)
        self._pending: list = []  # (stage, begin event, end event) not read yet
        self.events = xp is not np and os.environ.get("FASTAPSP_SYNC_STAGES", "") != "1"
        self.component = None  # the component (or SSSP batch) being computed, named in errors

    @property
    def seconds(self) -> dict:
        """Seconds per stage (on the GPU, after the device has finished every stage timed so far)."""
        self._resolve(wait=True)
        return self._seconds

    @contextmanager
    def __call__(self, name: str, *, sync: bool = True):
        note_stage(self.component, name)  # named by the supervisor if this rank is killed here
        events = sync and self.events and not StageTimer.listeners
        if events:
            begin = self.xp.cuda.Event()
            begin.record()
        start = time.perf_counter()
        try:
            yield
        except StageError:
            raise
        except Exception as exc:  # say which component and stage failed, e.g. a GPU out of memory
            raise StageError(f"{place(self.component, name)}: {type(exc).__name__}: {exc}", component=self.component,
                             stage=name) from exc
        if events:
            end = self.xp.cuda.Event()
            end.record()
            self._pending.append((name, begin, end))
            if len(self._pending) >= self._RESOLVE_EVERY:
                self._resolve(wait=False)
            return
        if sync and self.xp is not np:
            # The compute stream only: copies to the host run on their own stream.
            self.xp.cuda.get_current_stream().synchronize()
        self._seconds[name] += time.perf_counter() - start
        for listener in StageTimer.listeners:
            listener(name)

    def _resolve(self, *, wait: bool) -> None:
        """Add the seconds of the pending stages the device has passed (all of them with ``wait``)."""
        done = 0
        for name, begin, end in self._pending:
            if wait:
                end.synchronize()
            elif not end.done:
                break  # one stream: the later ones are not done either
            self._seconds[name] += self.xp.cuda.get_elapsed_time(begin, end) / 1e3
            done += 1
        del self._pending[:done]


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
                   tile: int = DEFAULT_TILE, block_bytes: int | None = None, on_block=None, rows=None,
                   method: str = "frontier", closed: dict | None = None, boundary_blocks: dict | None = None,
                   seed: int = 42, tree=None, timer: StageTimer | None = None, pred_sink=None,
                   pairs: bool = False) -> dict:
    """Compute the row blocks of ``components`` and hand them to ``sink``.

    ``method`` says where the boundary rows come from.  ``"frontier"``: the
    boundary SSSP of several components runs as one batch (all their sources
    advance together), as far as memory allows; then each component goes
    through build, Floyd-Warshall, extract, min-plus and assemble.
    ``"boundary-graph"``: the rows come from the boundary graph
    (:class:`fastapsp.stages.boundary_graph.BoundaryGraph`), built from
    ``boundary_blocks`` (``L_p[:nb_p]`` of every component, all ranks'), and
    ``closed`` holds this rank's local closures (:func:`local_closures`); each
    component then needs no second Floyd-Warshall; ``tree``, when given, is
    the boundary graph's shape (:class:`~fastapsp.stages.boundary_graph.LevelTree`)
    already made for the schedule.  Each row block (in column
    chunks if it would not fit) goes to the host once.
    ``on_block(vertices, column_start, block)``, when given, sees every block
    on the device before it is copied (``--stats``: see ``fastapsp/reductions.py``).
    ``pairs`` (undirected graphs whose components are runs of consecutive
    vertices, see :func:`pairs_run`): each row block covers only the columns
    from its component's first vertex on, so each pair of vertices in two
    components is computed once (``--stats`` with nothing for the host).
    ``rows`` (a :class:`fastapsp.sources.SourceRows`) keeps only the rows of
    chosen sources: other components are skipped (``--sources``).
    ``pred_sink``, when given, receives the int32 predecessor block of every
    distance block, carried through the stages (``--predecessors``, see
    :mod:`fastapsp.stages.predecessors`); it needs ``method="frontier"``.

    Returns the seconds spent in each stage (see ``STAGES``).
    """
    if backend == "cupy":
        import cupy as xp
    else:
        xp = np
    dtype = np.dtype(dtype)
    indptr, indices, weights = device_csr(graph, xp)
    timer = StageTimer(xp) if timer is None else timer
    components = [p for p in components if partition.sizes[p] > 0]
    if rows is not None:
        components = [p for p in components if rows.per_component[p] > 0]
    writer = _HostWriter(xp, sink, dtype)
    paths = None
    if pred_sink is not None:
        if method != "frontier":
            raise ConfigError(f"predecessors: the {method} method carries no predecessors; use the frontier method")
        paths = _Predecessors(xp, pred_sink, (indptr, indices, weights))
    if method == "boundary-graph":
        # --sources: a component's closure serves only its wanted interior rows
        keep = None if rows is None else rows.closures_needed()
        if closed is None:  # one process with everything: close every component here
            everything = _nonempty(partition)
            closed, blocks = local_closures(graph, partition, everything, backend=backend, dtype=dtype, timer=timer,
                                            keep=keep)
            boundary_blocks = blocks if boundary_blocks is None else boundary_blocks
        timer.component = None  # these stages serve every component
        with timer("boundary_graph"):
            levels = BoundaryGraph(graph, partition, boundary_blocks, xp, dtype, seed=seed, tree=tree)
        rows_of = levels.boundary_rows(components)
        while True:
            timer.component = None  # the next component is known once its rows are made
            with timer("boundary_rows"):
                item = next(rows_of, None)
            if item is None:
                break
            p, rows_b = item
            timer.component = p
            vertices, nb = partition.component(p)
            matrix = closed.pop(p, None)
            if matrix is None and (keep is None or keep[p]):  # not kept (memory): close it again
                with timer("local_fw"):
                    matrix = close_components(indptr, indices, weights, partition, [p], dtype=dtype)[p]
            if rows is not None:  # --sources: only the wanted rows (fastapsp/sources.py)
                _source_rows(graph, (indptr, indices, weights), p, vertices, nb, rows_b, rows, xp=xp, sink=sink,
                             dtype=dtype, tile=tile, block_bytes=block_bytes, timer=timer, writer=writer,
                             on_block=on_block, closed=matrix)
            else:
                _component(graph, (indptr, indices, weights), p, vertices, nb, rows_b, xp=xp, sink=sink,
                           dtype=dtype, tile=tile, block_bytes=block_bytes, timer=timer, writer=writer,
                           on_block=on_block, closed=matrix, pairs=pairs)
            del rows_b, matrix
        writer.close(timer)
        if xp is not np:
            xp.get_default_memory_pool().free_all_blocks()
        return timer.seconds
    row_bytes = dtype.itemsize + (_Predecessors.ROW_BYTES if paths is not None else 0)
    for group in _sssp_groups(partition, components, graph.n, row_bytes, xp):
        sources = np.concatenate([vertices[:nb] for vertices, nb in map(partition.component, group)])
        timer.component = group[0] if len(group) == 1 else tuple(group)  # one SSSP batch for several components
        with timer("sssp"):
            all_rows = boundary_sssp(indptr, indices, weights, xp.asarray(sources), dtype=dtype,
                                     unit_weights=graph.unit_weights)
            if paths is not None:
                paths.boundary(sources, all_rows)
        first = 0
        for p in group:
            vertices, nb = partition.component(p)
            rows_b = all_rows[first : first + nb]
            if paths is not None:
                paths.select(first, first + nb)
            first += nb
            timer.component = p
            if rows is not None:  # --sources: only the wanted rows (fastapsp/sources.py)
                _source_rows(graph, (indptr, indices, weights), p, vertices, nb, rows_b, rows, xp=xp, sink=sink,
                             dtype=dtype, tile=tile, block_bytes=block_bytes, timer=timer, writer=writer,
                             on_block=on_block, paths=paths)
                continue
            _component(graph, (indptr, indices, weights), p, vertices, nb, rows_b, xp=xp, sink=sink, dtype=dtype,
                       tile=tile, block_bytes=block_bytes, timer=timer, writer=writer, on_block=on_block,
                       paths=paths, pairs=pairs)
        del all_rows
    writer.close(timer)
    if paths is not None:
        paths.close(timer)
    if xp is not np:
        xp.get_default_memory_pool().free_all_blocks()
    return timer.seconds


def local_closures(graph, partition, components, *, backend: str, dtype,
                   timer: StageTimer | None = None, keep=None) -> tuple[dict, dict]:
    """Each component closed over its own arcs (boundary-graph method).

    Returns ``closed`` (``{p: L_p}``) and ``blocks`` (``{p: L_p[:nb_p]}``, what
    the boundary graph needs of every component).  Closures are kept while they
    take at most a third of the memory a row block may use; the others are
    ``None`` (only their boundary rows are kept) and are closed again when
    their component's turn comes.  ``keep`` (a bool per component, e.g.
    :meth:`fastapsp.sources.SourceRows.closures_needed`) keeps only the
    closures that will be used: the others are ``None`` from the start.
    """
    xp = np if backend != "cupy" else __import__("cupy")
    indptr, indices, weights = device_csr(graph, xp)
    timer = StageTimer(xp) if timer is None else timer
    budget = _available_bytes(xp) // 3
    closed: dict = {}
    blocks: dict = {}
    for batch in _closure_batches(partition, components, np.dtype(dtype).itemsize, budget):
        timer.component = batch[0] if len(batch) == 1 else tuple(batch)  # closed together
        with timer("local_fw"):
            matrices = close_components(indptr, indices, weights, partition, batch, dtype=dtype)
        for p in batch:
            matrix = matrices.pop(p)
            nb = int(partition.boundary_per_part[p])
            # On the GPU a batch's matrices share one buffer: a batch only partly kept holds all of it
            # (one batch at most, a quarter of the budget: the budget runs out there).
            if (keep is None or keep[p]) and matrix.nbytes <= budget:
                budget -= matrix.nbytes
                closed[p], blocks[p] = matrix, matrix[:nb]
            else:
                closed[p], blocks[p] = None, matrix[:nb].copy()
    return closed, blocks


def _closure_batches(partition, components, itemsize: int, budget: int):
    """``components`` (the non-empty ones) in runs closed together by :func:`local_closures`.

    A run holds at most ``CLOSURE_BATCH_BYTES`` of matrices, and at most a
    quarter of ``budget``, so the batch never crowds out the kept closures.
    """
    limit = closure_batch_limit(budget)
    sizes = partition.sizes
    batch, size = [], 0
    for p in components:
        c = int(sizes[p])
        if c == 0:
            continue
        nbytes = c * c * itemsize
        if batch and size + nbytes > limit:
            yield batch
            batch, size = [], 0
        batch.append(p)
        size += nbytes
    if batch:
        yield batch


def build_and_close(csr, vertices, nb: int, rows_b, *, tile: int, timer, paths=None):
    """Stages 2-3 of one component: its matrix built from the boundary rows and arcs, then closed.

    With ``paths`` (:class:`_Predecessors`) the predecessors are built and closed beside it.
    """
    indptr, indices, weights = csr
    with timer("build"):
        matrix = build_component_matrix(indptr, indices, weights, vertices, nb, rows_b)
        if paths is not None:
            paths.build(vertices, nb)
    with timer("floyd_warshall"):
        if paths is None:
            blocked_floyd_warshall(matrix, tile=tile)
        else:
            paths.close_matrix(matrix)
    return matrix


def _component(graph, csr, p, vertices_host, nb, rows_b, *, xp, sink, dtype, tile, block_bytes, timer, writer,
               on_block=None, closed=None, paths=None, pairs=False):
    """Stages 2-6 of one component, its boundary rows already computed (with ``pairs``, only the
    columns from the component's first vertex on: see :func:`run_components`).

    With ``closed`` (the component closed over its own arcs, boundary-graph
    method) the build and Floyd-Warshall are skipped and the assembly keeps
    the shorter of the paths inside the component and those through its boundary.
    With ``paths`` (:class:`_Predecessors`) every stage carries the predecessors too.
    """
    n, c = graph.n, vertices_host.size
    vertices = xp.asarray(vertices_host)
    matrix = closed if closed is not None else build_and_close(csr, vertices, nb, rows_b, tile=tile, timer=timer,
                                                               paths=paths)
    with timer("extract"):
        inner = extract_inner_to_boundary(matrix, nb)
        if paths is not None:
            paths.extract(nb)
    extra = _Predecessors.BLOCK_BYTES if paths is not None else 0
    width = _column_width(c, nb, n, dtype.itemsize + extra, xp, block_bytes, component=p)
    first = int(vertices_host.min()) if pairs and c else 0
    for start in range(first, n, width):
        cols = min(width, n - start)
        block = xp.empty((c, cols), dtype=dtype)
        block_p = None if paths is None else xp.empty((c, cols), dtype=np.int32)
        with timer("min_plus"):
            if paths is None:
                min_plus(inner, rows_b[:, start : start + cols], out=block[nb:], integer=graph.integer_weights)
            else:
                paths.min_plus(inner, rows_b, start, cols, block[nb:], block_p[nb:])
        with timer("assemble"):
            assemble_row_block(block, rows_b, matrix, vertices, nb, column_start=start, minimum=closed is not None)
            if paths is not None:
                assemble_predecessors(block_p, paths.rows_p, paths.matrix_p, vertices, nb, column_start=start)
        if on_block is not None:  # device-side consumers (--stats), before any copy
            with timer("stats"):
                on_block(vertices_host, start, block)
        if sink.needs_host:
            writer.put(vertices_host, start, block, timer)
        if paths is not None:
            paths.writer.put(vertices_host, start, block_p, timer)
        del block, block_p


def _block_emitter(on_block, sink, writer, timer):
    """``emit(ids, start, block)``: device consumers first (``--stats``), then the copy to the sink."""

    def emit(ids, start, block):
        if on_block is not None:
            with timer("stats"):
                on_block(ids, start, block)
        if sink.needs_host:
            writer.put(ids, start, block, timer)

    return emit


def _source_rows(graph, csr, p, vertices_host, nb, rows_b, rows, *, xp, sink, dtype, tile, block_bytes, timer,
                 writer, on_block, paths=None, closed=None):
    """``--sources``: the wanted rows of one component (see :func:`fastapsp.sources.component_rows`)."""
    local = rows.local(vertices_host)
    extra = _Predecessors.BLOCK_BYTES if paths is not None else 0
    width = _column_width(vertices_host.size, nb, graph.n, dtype.itemsize + extra, xp, block_bytes, component=p)

    emit = _block_emitter(on_block, sink, writer, timer)
    component_rows(csr, vertices_host, nb, rows_b, local, n=graph.n, xp=xp, dtype=dtype, tile=tile, width=width,
                   timer=timer, emit=emit, closed=closed, paths=paths)


class _Predecessors:
    """``--predecessors``: what the stages carry beside the distances (:mod:`fastapsp.stages.predecessors`).

    Holds the arcs and predecessors of the current SSSP batch's boundary rows
    and of the current component's matrix, and the writer of the int32
    predecessor blocks (to their own sink, through pinned buffers like the distances).
    """

    ROW_BYTES = 8  # int32 arcs and predecessors beside each boundary distance
    BLOCK_BYTES = 4  # int32 predecessors beside each distance of a row block

    def __init__(self, xp, sink, csr) -> None:
        self.xp, self.sink, self.csr = xp, sink, csr
        self.writer = _HostWriter(xp, sink, np.int32)
        self.all_h = self.all_p = self.rows_h = self.rows_p = None
        self.matrix_h = self.matrix_p = self.inner_h = self.inner_p = None

    def boundary(self, sources, all_rows) -> None:
        """Arcs and predecessors of a batch of boundary rows (breadth-first over their tight arcs)."""
        self.all_h, self.all_p = boundary_predecessors(*self.csr, self.xp.asarray(sources), all_rows)

    def select(self, first: int, last: int) -> None:
        """The rows of one component within the batch."""
        self.rows_h, self.rows_p = self.all_h[first:last], self.all_p[first:last]

    def build(self, vertices, nb: int) -> None:
        self.matrix_h, self.matrix_p = component_predecessors(*self.csr, vertices, nb, self.rows_h, self.rows_p)

    def close_matrix(self, matrix) -> None:
        floyd_warshall_predecessors(matrix, self.matrix_h, self.matrix_p)

    def extract(self, nb: int) -> None:
        self.inner_h = extract_inner_to_boundary(self.matrix_h, nb)
        self.inner_p = extract_inner_to_boundary(self.matrix_p, nb)

    def min_plus(self, inner, rows_b, start: int, cols: int, out, out_pred, *, keep=None) -> None:
        """Interior rows (``keep``: some of them) through the boundary rows' columns ``start .. start + cols``."""
        inner_h, inner_p = (self.inner_h, self.inner_p) if keep is None else (self.inner_h[keep], self.inner_p[keep])
        span = slice(start, start + cols)
        min_plus_predecessors(inner, inner_h, inner_p, rows_b[:, span], self.rows_h[:, span], self.rows_p[:, span],
                              out=out, out_pred=out_pred)

    def close(self, timer) -> None:
        self.writer.close(timer)
        self.all_h = self.all_p = self.rows_h = self.rows_p = None


class _HostWriter:
    """Brings device blocks to the sink while the GPU goes on with the next block.

    Two pinned host buffers of at most ``CHUNK_BYTES`` (or one row) each: a
    block is copied in chunks of whole rows, each into a free buffer on a copy
    stream, and a background thread waits for that copy and hands the buffer
    to the sink, while the next chunk is copied into the other buffer.  So a
    large block (the 1,000 rows of ``--sources``: 4 GB) needs no pinned buffer
    of its size, whose page-locking alone would cost more than the copy.  The
    device block is kept alive until its last chunk is copied.  On the host
    path the block goes to the sink directly.
    """

    CHUNK_BYTES = 64 << 20

    def __init__(self, xp, sink, dtype) -> None:
        self.xp, self.sink, self.dtype = xp, sink, np.dtype(dtype)
        self.slots: list = []
        if xp is not np and sink.needs_host:
            import cupyx
            from concurrent.futures import ThreadPoolExecutor

            self.stream = xp.cuda.Stream(non_blocking=True)
            self.thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fastapsp-d2h")
            self.empty_pinned = cupyx.empty_pinned
            self.slots = [{"buffer": None, "pending": None} for _ in range(2)]
            self.turn = 0

    @classmethod
    def chunk_rows(cls, cols: int, itemsize: int) -> int:
        """Rows of one chunk: as many as ``CHUNK_BYTES`` holds, at least one."""
        return max(1, cls.CHUNK_BYTES // max(1, cols * itemsize))

    @classmethod
    def buffer_elements(cls, rows: int, cols: int, itemsize: int) -> int:
        """Elements of the pinned buffer a ``rows`` x ``cols`` block is copied through (a power of two)."""
        size = min(rows, cls.chunk_rows(cols, itemsize)) * cols
        return 1 << max(0, size - 1).bit_length()

    def put(self, vertices_host, start, block, timer) -> None:
        if self.xp is np:
            with timer("write"):
                self.sink.write(vertices_host, start, block)
            return
        rows, cols = block.shape
        step = self.chunk_rows(cols, block.dtype.itemsize)
        made = self.xp.cuda.get_current_stream().record()  # the block is complete on the compute stream
        for first in range(0, rows, step):
            self._put_chunk(vertices_host[first : first + step], start, block, first, min(rows, first + step), made,
                            timer)

    def _put_chunk(self, vertices_host, start, block, first, last, made, timer) -> None:
        slot = self.slots[self.turn]
        self.turn = 1 - self.turn
        with timer("write", sync=False):  # waiting for the host side to free this buffer
            self._finish(slot)
        with timer("host_copy", sync=False):
            chunk = block[first:last]
            if slot["buffer"] is None or slot["buffer"].size < chunk.size:
                # Grown to the next power of two: blocks of --sources grow a little at a time,
                # and each new pinned buffer costs a page-locking allocation.
                slot["buffer"] = None
                slot["buffer"] = self.empty_pinned(
                    (self.buffer_elements(last - first, chunk.shape[1], chunk.dtype.itemsize),), dtype=self.dtype)
            host = slot["buffer"][: chunk.size].reshape(chunk.shape)
            ready = self.xp.cuda.Event()
            self.stream.wait_event(made)
            with self.stream:
                chunk.get(out=host, stream=self.stream, blocking=False)
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


def _sssp_groups(partition, components, n: int, itemsize: int, xp, *, budget: int | None = None) -> list[list[int]]:
    """Consecutive runs of components whose boundary rows together fit a quarter of the free memory (or ``budget``)."""
    budget = max(1, _available_bytes(xp) // 4) if budget is None else budget
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


def _choose_k_everywhere(graph, backend: str, dtype, *, comm) -> dict:
    """Rank 0 picks the default k with the cost model (:func:`fastapsp.cost.auto_k`); every rank hears it."""

    def on_rank0():
        memory = None
        if backend == "cupy":
            import cupy

            memory = 0.8 * cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["totalGlobalMem"]
        return auto_k(graph, backend=backend, dtype=dtype, memory_bytes=memory)

    choice = run_phase(comm, "choosing k", on_rank0 if comm.rank == 0 else (lambda: None))
    return choice if comm.size == 1 else comm.bcast(choice)


def _partition_everywhere(graph, opts: SolveOptions, k: int, backend: str, *, comm, log=None):
    """Rank 0 partitions (or loads ``partition_file``); every rank ends with the same Partition."""

    def on_rank0():
        if opts.partition_file and os.path.exists(opts.partition_file):
            return load_partition(opts.partition_file, graph, opts.k, log=log)
        part = partition_graph(graph, k, opts.partitioner, seed=opts.seed, imbalance=opts.imbalance,
                               refine=opts.refine, backend=backend)
        if opts.partition_file:
            save_partition(opts.partition_file, graph, part)
        return part

    mine = run_phase(comm, "partitioning", on_rank0 if comm.rank == 0 else (lambda: None))
    if comm.size == 1:
        return mine
    shared = comm.bcast((mine.labels, mine.k, mine.method, mine.seed, mine.imbalance, mine.seconds, mine.details)
                        if comm.rank == 0 else None)
    labels, k, method, seed, imbalance, seconds, details = shared

    def rebuild():
        if comm.rank == 0:
            return mine
        return make_partition(graph, labels, k, method=method, seed=seed, imbalance=imbalance, seconds=seconds,
                              details=details)

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
    startup = process_age()
    opts.check()
    start_gpu_warmup(opts.backend, comm.size)  # CUDA starts while the graph is read (fastapsp/backend.py)
    seconds = {}

    def read():  # timed on this rank alone (run_phase then waits for the others: that is not reading)
        t = time.perf_counter()
        # The ranks parse a share of the lines each and gather them (fastapsp/io/share.py).
        graph = read_graph(opts.graph, format=opts.format, undirected=opts.undirected, comm=comm)
        seconds["read"] = time.perf_counter() - t
        return graph

    graph = run_phase(comm, "reading the graph", read)
    precision = choose_dtype(graph, "float32" if opts.dtype in SMALL_DTYPES else opts.dtype)
    backend = run_phase(comm, "choosing the backend", resolve_backend, opts.backend)
    k = default_k(graph.n) if opts.k is None else opts.k
    if k > max(1, graph.n):
        raise ConfigError(f"k: {k} is larger than the {graph.n} vertices of {graph.name}")
    sources = method = None
    if opts.sources:  # --sources (fastapsp/sources.py)
        sources = run_phase(comm, "reading the sources", parse_sources, opts.sources, graph.n)
        # SSSP from the sources when asked, or when it costs no more than partitioning alone: then no partition
        # is made; otherwise the method is chosen once the components are known.
        partitioned = bool(opts.partition_file and os.path.exists(opts.partition_file))
        cheap = opts.sources_method == "auto" and not partitioned and sssp_before_partition(
            sources.size, graph.n, graph.m, k, unit_weights=graph.unit_weights, backend=backend, dtype=precision.dtype)
        method = "sssp" if opts.sources_method == "sssp" or cheap else None
    if opts.k is not None:
        k_choice = {"k": k, "rule": "given"}
    elif method == "sssp":
        k_choice = {"rule": "none needed (source rows by SSSP)"}
    elif opts.partition_file and os.path.exists(opts.partition_file):
        k_choice = {"rule": "from the partition file"}
    else:
        t = time.perf_counter()
        k_choice = _choose_k_everywhere(graph, backend, precision.dtype, comm=comm)
        k = k_choice["k"]
        seconds["choose_k"] = time.perf_counter() - t
    t = time.perf_counter()
    partition = None if method == "sssp" else _partition_everywhere(graph, opts, k, backend, comm=comm, log=log)
    seconds["partition"] = time.perf_counter() - t
    _tell_precision(precision, opts.dtype, log)  # after the checks of the partition file: a refusal is one line
    if sources is not None and method is None:
        method = choose_method(partition, sources, graph.n, graph.m, opts.sources_method,
                               unit_weights=graph.unit_weights, backend=backend, dtype=precision.dtype)

    device = "cpu"
    if backend == "cupy":
        device_id = select_device(comm)
        device = f"cuda:{device_id} {gpu_name(device_id)}"
    selection = None
    prediction, sssp_method = None, None
    compute_dtype = precision.dtype
    out_dtype = opts.dtype if opts.dtype in SMALL_DTYPES else precision.dtype
    plan = spread = None
    if partition is not None and method != "sssp":
        costs = component_costs(partition, graph.n, graph.m)
        if sources is not None:
            selection = SourceRows(partition, sources)
            costs = np.where(selection.needed(), costs, 0.0)
        prediction = predict(partition.sizes, partition.boundary_per_part, graph.n, graph.m,
                             unit_weights=graph.unit_weights, backend=backend, dtype=compute_dtype,
                             dense_limit=DENSE_LIMIT[backend], super_size=SUPER_SIZE[backend])
        sssp_method = choose_sssp_method(prediction) if opts.sssp_method == "auto" else opts.sssp_method
        if sources is not None and opts.sssp_method == "auto":  # what the wanted rows alone cost by each method
            sources_cost = pipeline_seconds(partition, sources, graph.n, graph.m, unit_weights=graph.unit_weights,
                                            backend=backend, dtype=compute_dtype)
            sssp_method = min(sources_cost, key=sources_cost.get)
        if opts.predecessors and sssp_method == "boundary-graph":
            if log is not None and opts.sssp_method == "boundary-graph":
                log("note: --predecessors takes the boundary rows from the frontier SSSP (the boundary-graph "
                    "method carries no predecessors)")
            sssp_method = "frontier"
        if sssp_method != "boundary-graph":  # that method's schedule follows its level tree (_tree_schedule)
            plan = schedule_components(costs, comm.size)
    if opts.dtype in SMALL_DTYPES:  # --dtype uint16/uint8: float32 on the device, converted at the sink
        run_phase(comm, "checking the distance type", check_small_dtype, graph, opts.dtype)
        compute_dtype = "float32"
    out_rows = graph.n if sources is None else int(sources.size)
    block_bytes = None if opts.block_mb is None else int(opts.block_mb * 2**20)
    if opts.dry_run:  # sizes and estimates only (fastapsp/sizing.py)
        if sssp_method == "boundary-graph":  # the schedule of the run
            _, plan, spread = _tree_schedule(graph, partition, costs, selection, backend, opts.seed, comm=comm)
        report = _report(graph, partition, opts, backend, device, {"total": time.perf_counter() - start}, comm.size)
        report["output_bytes"] = output_bytes(out_rows, graph.n, out_dtype)
        if opts.predecessors:
            report["predecessors_bytes"] = output_bytes(out_rows, graph.n, np.int32)
        report["dry_run"] = _dry_run_ranks(graph, partition, plan, spread, selection, sources, compute_dtype,
                                           backend, opts, block_bytes, comm.size, method=sssp_method or "frontier")
        report["sssp_method"] = sssp_method
        if sources is not None:
            report.update(sources=int(sources.size), sources_method=method)
        return report, None
    run_phase(comm, "checking the output size", check_output_fits, opts.output, out_rows, graph.n, out_dtype,
              extra=output_bytes(out_rows, graph.n, np.int32) if opts.predecessors else 0)
    sink = base_sink = make_sink(opts.output, graph.n, out_dtype, comm=comm,
                                 rows=None if sources is None else sources.size)
    pred_sink = pred_base = None
    if opts.predecessors:  # int32 beside the output (fastapsp/stages/predecessors.py)
        pred_sink = pred_base = make_sink(predecessors_path(opts.output), graph.n, np.int32, comm=comm,
                                          rows=None if sources is None else sources.size)
    if opts.dtype in SMALL_DTYPES:
        sink = SmallIntSink(sink, opts.dtype)
    if sources is not None:
        sink = RowSubsetSink(sink, _positions(sources, graph.n))
        if pred_sink is not None:
            pred_sink = RowSubsetSink(pred_sink, _positions(sources, graph.n))

    def cleanup():  # this rank alone, before it ends the job
        base_sink.discard()
        if pred_base is not None:
            pred_base.discard()

    accumulator = StatsAccumulator.for_graph(graph, backend) if opts.stats else None
    sampler = None
    if opts.verify:
        sampler = RowSampler(pick_rows(np.arange(graph.n) if sources is None else sources, opts.verify), graph.n)
    # --stats with nothing for the host on an undirected graph: each pair computed once (pairs_run).
    paired = None
    if method != "sssp" and not sink.needs_host and pred_sink is None and sampler is None and selection is None:
        paired = pairs_run(graph, partition, accumulator, backend=backend)
    feed = None if accumulator is None else accumulator.update
    run_graph, run_partition, feed = (graph, partition, feed) if paired is None else paired
    tree = None
    if sssp_method == "boundary-graph":
        t = time.perf_counter()
        tree, plan, spread = _tree_schedule(run_graph, run_partition, costs, selection, backend, opts.seed, comm=comm)
        tree_seconds = time.perf_counter() - t
    work = None  # rows of each of rank 0's components (with pairs: rows times the share of columns it covers)
    if method != "sssp":
        first = np.concatenate([[0], np.cumsum(run_partition.sizes)])  # a component's first vertex (pairs)
        work = [run_partition.sizes[p] * (1.0 if paired is None else (graph.n - first[p]) / graph.n)
                for p in plan[0]]
    progress = make_progress(work if method != "sssp" else [sources.size], graph.n, rank=comm.rank, quiet=opts.quiet)
    on_block = chain(feed, sampler, progress)
    verified = {}
    closures = None  # boundary-graph method: who closes which components (close_everywhere)
    try:
        # A failing rank ends the job at once (Abort) instead of waiting for the others' components.
        if method == "sssp":
            stage_seconds = run_or_abort(comm, "computing the source rows", run_sssp_rows, graph,
                                         sources[comm.rank :: comm.size], backend=backend, sink=sink,
                                         dtype=compute_dtype, block_bytes=block_bytes, on_block=on_block,
                                         pred_sink=pred_sink, cleanup=cleanup)
        else:
            extra, timer = {}, None
            if sssp_method == "boundary-graph":
                keep = None  # --sources: the closures this rank's wanted interior rows need, no others
                if selection is not None:
                    keep = selection.closures_needed() & np.isin(np.arange(partition.k), plan[comm.rank])
                everywhere = _close_everywhere(run_partition, comm.size, backend, compute_dtype)
                closures = "every rank closes every component" if everywhere else "each rank closes its share"
                if everywhere:  # and keeps the closures of its own components only
                    mine = np.isin(np.arange(partition.k), plan[comm.rank])
                    keep = mine if keep is None else keep & mine
                extra, timer, seconds["share_rows"] = _boundary_graph_inputs(
                    run_graph, run_partition, spread, backend, compute_dtype, comm=comm,
                    cleanup=base_sink.discard, keep=keep, share=not everywhere)
            stage_seconds = run_or_abort(comm, "computing the components", run_components, run_graph, run_partition,
                                         plan[comm.rank], backend=backend, sink=sink, dtype=compute_dtype,
                                         tile=opts.tile, block_bytes=block_bytes, on_block=on_block, rows=selection,
                                         method=sssp_method, seed=opts.seed, tree=tree, timer=timer,
                                         cleanup=cleanup, pred_sink=pred_sink, pairs=paired is not None, **extra)
        if sampler is not None:  # before the output is committed: a wrong result is not left behind
            verified = verify_rows(graph, sampler, compute_dtype, comm=comm)
        if partition is not None:
            base_sink.metadata = result_metadata(graph, partition, opts, precision)
        sink.commit()
        if sources is not None and sink.path:
            run_phase(comm, "saving the source ids",
                      (lambda: np.save(ids_path(sink.path), sources)) if comm.rank == 0 else (lambda: None))
        if pred_base is not None:
            pred_base.metadata = dict(getattr(base_sink, "metadata", {}), content="predecessors",
                                      no_predecessor=NO_PREDECESSOR)
            pred_sink.commit()
    except BaseException:
        sink.abort()
        if pred_sink is not None:
            pred_sink.abort()
        raise
    finally:
        if progress is not None:
            progress.close()
    seconds.update(stage_seconds)
    if tree is not None:
        seconds["boundary_graph"] += tree_seconds  # its shape (LevelTree), made before the schedule
    stats = None
    if accumulator is not None:
        stats = finish_stats(accumulator, opts.stats, comm=comm)
    seconds["total"] = time.perf_counter() - start
    each: list = []
    seconds = max_over_ranks(comm, dict(seconds, startup=startup), each=each)
    startup = seconds.pop("startup")
    report = _report(graph, partition, opts, backend, device, seconds, comm.size)
    report["startup_seconds"] = round(startup, 6)  # process start to this job's start (imports, MPI), slowest rank
    if comm.size > 1:  # the stages above are each the slowest rank's: every rank's own, to see the balance
        report["rank_seconds"] = [{key: round(value, 6) for key, value in part.items()} for part in each]
    report["sssp_method"] = sssp_method
    report["sssp_method_asked"] = opts.sssp_method
    if closures is not None:
        report["local_closures"] = closures
    report["k_choice"] = k_choice
    if prediction is not None:
        report["predicted_seconds"] = {name: {key: round(value, 6) for key, value in stages.items()}
                                       for name, stages in prediction.items()}
    report.update(dtype=out_dtype, dtype_reason=precision.reason, distance_bound=precision.bound)
    report.update(verified)
    if sources is not None:
        report.update(sources=int(sources.size), sources_method=method)
    if stats is not None:  # the scalars (the histogram and per-vertex arrays are in PREFIX.json / .npz)
        report["stats"] = {key: value for key, value in stats.to_json_dict().items()
                           if key not in ("histogram", "per_vertex")}
        report["stats_each_pair_once"] = paired is not None  # half the matrix computed (pairs_run)
    return report, sink


def pairs_run(graph, partition, accumulator, *, backend: str):
    """``(graph, partition, on_block)`` of a ``--stats`` run that computes each pair of vertices once,
    or None.

    For an undirected graph ``d(u, v) = d(v, u)``: with the vertices renamed
    so that every component is a run of consecutive ids (:meth:`Graph.permuted`),
    the row block of a component needs only the columns from its own first
    vertex on, half the matrix in all (see
    :meth:`fastapsp.reductions.StatsAccumulator.update` with ``pairs``); the
    accumulator gives its per-vertex arrays back in the graph's own order.
    None for directed graphs, or when ``FASTAPSP_STATS_PAIRS=0`` (the whole
    matrix, kept for comparison).
    """
    if accumulator is None or graph.directed or os.environ.get("FASTAPSP_STATS_PAIRS", "") == "0":
        return None
    order = np.argsort(partition.labels, kind="stable")
    renamed = graph.permuted(order)
    labels = partition.labels[order]
    part = make_partition(renamed, labels, partition.k, method=partition.method, seed=partition.seed,
                          imbalance=partition.imbalance, seconds=partition.seconds, details=partition.details)
    accumulator.vertex_order = order
    return renamed, part, functools.partial(accumulator.update, pairs=True)


def _nonempty(partition) -> list[int]:
    """The components that have vertices."""
    return np.flatnonzero(partition.sizes > 0).tolist()


def _tree_schedule(graph, partition, costs, selection, backend: str, seed: int, *, comm):
    """``(tree, plan, spread)`` of the boundary-graph method.

    The levels' shape first (:class:`~fastapsp.stages.boundary_graph.LevelTree`,
    made by rank 0 and broadcast, so that every rank schedules from the same
    tree): each rank then takes runs of components of the same super-groups
    (:func:`~fastapsp.schedule.schedule_in_order`), and makes the upper rows
    of those super-groups alone.  ``plan``: the components whose rows each
    rank makes (``costs``); ``spread``: those each rank closes (all
    components, also with ``--sources``).
    """
    def on_rank0():
        return LevelTree(graph, partition, dense_limit=DENSE_LIMIT[backend], super_size=SUPER_SIZE[backend],
                         seed=seed)

    tree = run_phase(comm, "shaping the boundary graph", on_rank0 if comm.rank == 0 else (lambda: None))
    if comm.size > 1:
        tree = comm.bcast(tree)
    order = tree.order()
    plan = schedule_in_order(costs, order, comm.size)
    spread = plan if selection is None else \
        schedule_in_order(component_costs(partition, graph.n, graph.m), order, comm.size)
    return tree, plan, spread


def _close_everywhere(partition, ranks: int, backend: str, dtype) -> bool:
    """Whether every rank closes every component (no rows travel): the cost model
    (:func:`fastapsp.cost.close_everywhere`), or ``FASTAPSP_CLOSE_ALL`` set to 1 or 0."""
    forced = os.environ.get("FASTAPSP_CLOSE_ALL", "")
    if forced in ("0", "1"):
        return forced == "1" and ranks > 1
    return close_everywhere(partition.sizes, partition.boundary_per_part, ranks, backend=backend, dtype=dtype)


def _boundary_graph_inputs(graph, partition, spread, backend, dtype, *, comm, cleanup=None, keep=None,
                           share: bool = True):
    """Close this rank's components locally and share their boundary rows with every rank.

    What travels: ``L_p[:nb_p]`` of every component (sum of nb_p * c_p
    distances over all components), once, by one allgather (:func:`share_blocks`).  Every rank then
    builds the upper levels of the boundary graph itself.  Returns the
    run_components arguments, the timer, and the seconds the sharing took
    (waiting for the slowest rank included).  The closures are
    long work of each rank alone: a failure there ends the job at once
    (``cleanup`` first), as in the components' stages.  ``keep``: which
    closures to keep (see :func:`local_closures`).  ``spread``: the
    components each rank closes.  ``share=False``: this rank closes every
    component and nothing travels.
    """
    xp = np if backend != "cupy" else __import__("cupy")
    timer = StageTimer(xp)
    mine = spread[comm.rank] if share else _nonempty(partition)
    closed, blocks = run_or_abort(comm, "closing the components", local_closures, graph, partition, mine,
                                  backend=backend, dtype=dtype, timer=timer, cleanup=cleanup, keep=keep)
    t = time.perf_counter()
    if comm.size > 1 and share:
        blocks = share_blocks(blocks, partition, spread, comm=comm, xp=xp, dtype=dtype)
    return {"closed": closed, "boundary_blocks": blocks}, timer, time.perf_counter() - t


_MPI_COUNT_LIMIT = 2**31 - 1  # elements one rank may send in one Allgatherv (MPI's int counts)


def share_blocks(blocks: dict, partition, spread, *, comm, xp, dtype) -> dict:
    """Every rank's ``L_p[:nb_p]`` to every rank: ``{p: L_p[:nb_p]}`` for all components, on ``xp``.

    Each rank packs its blocks (the components ``spread[rank]``, in that order)
    into one flat array, copied to the host at once; one ``Allgatherv`` gives
    every rank all of them (the sizes nb_p * c_p are known everywhere: nothing
    else travels), copied to the device at once.  A pickled allgather of a
    dict of arrays instead moved about 0.5 GB/s on a 4 x H200 host (1.1 s for
    the 577 MB of del20-unit at k = 655).  When a rank's part passes MPI's
    count limit the pickled allgather is used.
    """
    dtype = np.dtype(dtype)
    size = (partition.boundary_per_part.astype(np.int64) * partition.sizes.astype(np.int64))
    counts = [int(sum(size[p] for p in spread[r])) for r in range(comm.size)]
    mine = [blocks[p] for p in spread[comm.rank]]
    if max(counts) > _MPI_COUNT_LIMIT:  # pragma: no cover - parts of more than 8 GB in float32
        host = {p: (rows.get() if hasattr(rows, "get") else np.asarray(rows)) for p, rows in blocks.items()}
        gathered = {}
        for part in comm.allgather(host):
            gathered.update({p: xp.asarray(rows) for p, rows in part.items()})
        return gathered
    send = np.empty(counts[comm.rank], dtype=dtype)
    if mine:
        flat = xp.concatenate([xp.asarray(rows, dtype=dtype).ravel() for rows in mine])
        send[:] = flat.get() if hasattr(flat, "get") else flat
    received = np.empty(sum(counts), dtype=dtype)
    comm.Allgatherv(send, (received, counts))
    received = xp.asarray(received)
    gathered, offset = {}, 0
    for r in range(comm.size):
        for p in spread[r]:
            nb, c = int(partition.boundary_per_part[p]), int(partition.sizes[p])
            gathered[p] = received[offset : offset + nb * c].reshape(nb, c)
            offset += nb * c
    return gathered


def _dry_run_ranks(graph, partition, plan, spread, selection, sources, dtype, backend, opts, block_bytes, ranks,
                   method="frontier") -> list:
    """``--dry-run``: per rank memory and time (see :mod:`fastapsp.sizing`).

    ``plan`` is None when the rows come from SSSP from the sources; ``spread``
    (the components each rank closes, boundary-graph method, unless every rank
    closes all: :func:`_close_everywhere`) and ``selection``
    (:class:`fastapsp.sources.SourceRows`) as in the run.
    """
    xp = np if backend != "cupy" else __import__("cupy")
    common = dict(dtype=dtype, backend=backend, output=str(opts.output), block_bytes=block_bytes,
                  available=_available_bytes(xp), predecessors=bool(opts.predecessors))
    if plan is None:  # --sources by SSSP, one batch of rows at a time
        return sssp_memory(graph, [sources[r::ranks].size for r in range(ranks)], **common)
    keep = None if selection is None else selection.closures_needed()
    if method == "boundary-graph" and _close_everywhere(partition, ranks, backend, dtype):
        # every rank closes every component and keeps the closures of its own (solve_job)
        spread = [_nonempty(partition)] * ranks
        keep = np.ones(partition.k, dtype=bool) if keep is None else keep
    return dry_run(graph, partition, plan, rows=graph.n if sources is None else sources.size, method=method,
                   stats=bool(opts.stats), closing=spread, keep=keep,
                   wanted=None if selection is None else selection.per_component,
                   interior=None if selection is None else selection.interior_per_component, **common)


def _positions(sources, n: int) -> np.ndarray:
    """Output row of every vertex (-1 for those not among ``sources``)."""
    position = np.full(n, -1, dtype=np.int64)
    position[sources] = np.arange(sources.size)
    return position


def result_metadata(graph, partition, opts, precision) -> dict:
    """What the sidecar of a ``.npy`` result records, so a result can be told from a foreign one."""
    from . import __version__

    return {"graph": graph.name, "graph_checksum": graph.checksum(), "directed": graph.directed,
            "k": partition.k, "partitioner": partition.method, "seed": partition.seed,
            "partition_checksum": partition_checksum(partition),
            "undirected_option": bool(opts.undirected), "input_format": opts.format, "dtype_reason": precision.reason,
            "version": __version__}


def _tell_precision(precision, requested, log, *, stacklevel: int = 3) -> None:
    """Say in one line why float64 was chosen, or warn that the chosen dtype is not exact."""
    if precision.warning is not None:
        if log is None:
            warnings.warn(precision.warning, PrecisionWarning, stacklevel=stacklevel)
        else:
            log(f"warning: {precision.warning}")
    elif requested in (None, "auto") and precision.dtype == "float64" and log is not None:
        log(f"note: {precision.reason}")


def _report(graph, partition, opts, backend, device, seconds, ranks) -> dict:
    if partition is None:  # --sources computed by SSSP alone: no partition was made
        from .partition import make_partition

        partition = make_partition(graph, np.zeros(graph.n, dtype=np.int32), 1, method="none", seed=-1,
                                   imbalance=math.inf, seconds=0.0)
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
        "boundary_vertices_before_refine": metrics.get("boundary_vertices_before_refine"),
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
