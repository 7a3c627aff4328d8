"""The per-component executor: for each component of a rank, boundary rows -> build/close ->
extract -> min-plus -> assemble -> the block handed on (device consumers, then the sink).

:func:`run_components` runs whole components; with ``rows`` (``--sources``) only
the wanted rows of each (:func:`component_rows`); :func:`run_sssp_rows` gives
the rows of chosen sources by SSSP alone.  Every decision (which components,
which method, dtype, pairs) comes from the caller: the plan.
"""

from __future__ import annotations

import bisect

import numpy as np

from .backend import available_bytes, device_csr
from .cost import receive_relaxations
from .errors import ConfigError
from .hostcopy import HostWriter
from .paths import NO_PREDECESSOR
from .sources import SOURCES_SSSP_BATCH, sssp_batch
from .stages import (assemble_row_block, boundary_sssp, build_component_matrix,
                     extract_inner_to_boundary, min_plus)
from .stages.assemble import assemble_in_result
from .stages.min_plus import Packing
from .stages.boundary_graph import BoundaryGraph, close_components, closure_batch_limit, closure_budget, levels_bytes
from .stages.floyd_warshall import DEFAULT_TILE, close_matrix
from .stages.predecessors import (assemble_predecessors, boundary_predecessors, component_predecessors,
                                  floyd_warshall_predecessors, min_plus_predecessors)
from .timing import StageTimer

__all__ = ["run_components", "local_closures", "build_and_close", "component_rows", "run_sssp_rows", "sssp_rows",
           "sssp_groups", "nonempty", "column_width", "internal_arcs"]


def column_width(c: int, nb: int, n: int, itemsize: int, xp, block_bytes, *, component: int) -> int:
    """Columns of the row block computed at once, so that the block fits in memory.

    ``block_bytes`` caps one block; by default the block (and its host copy)
    may take what the component's other arrays leave of the free memory.
    """
    if block_bytes is not None:
        return int(max(1, min(n, block_bytes // max(1, c * itemsize))))
    budget = available_bytes(xp)
    fixed = (nb * n + c * c + (c - nb) * nb) * itemsize
    width = (budget - fixed) // max(1, c * itemsize * 2)
    if width < min(n, 32):
        need = (fixed + c * itemsize * 2 * min(n, 32)) / 2**30
        raise MemoryError(
            f"component {component} ({c} vertices, {nb} boundary) needs at least {need:.2f} GiB, "
            f"{budget / 2**30:.2f} GiB available; use a larger k"
        )
    return int(min(n, width))


_MIN_WIDTH = 32  # columns of the narrowest block a shortage of device memory may leave
# Bytes a row of a row block made on the GPU is padded to.  The min-plus kernels store 16-byte vectors
# in runs of 256 bytes: rows only 16-byte aligned split every other run's 32-byte sectors (partial
# sector writes).  One H100, 1,730 x 264,348 against 264,352 columns (rows 16- against 128-byte
# aligned), min_plus_smallk_u16.cu: K = 12 0.92 -> 0.68 ms, K = 28 0.87 -> 0.70; min_plus_u16.cu,
# K = 56 and 64, 4-5% (32-byte alignment gave 1-2% of those 4-5%); K = 40 and 48 the same
# (benchmarks/results/row-align/, docs/kernels.md).
ROW_ALIGN = 128


def column_blocks(xp, rows: int, first: int, last: int, width: int, dtype, *, pad: int = 1, predecessors=False):
    """``(start, cols, block, block_p)`` over the columns ``first .. last`` in chunks of ``width``.

    ``block`` has shape (rows, cols) in ``dtype`` (rows padded to whole groups of ``pad`` elements),
    ``block_p`` the int32 predecessors beside it (``predecessors``) or None.  ``width`` comes from the free
    memory counted with the memory pool's unused blocks, which the pool may hold in pieces too small for
    one block: where the device cannot hold a chunk, the chunk is halved and tried again (down to
    ``_MIN_WIDTH`` columns).  The generator keeps no reference to a block once the caller has it back.
    """
    start = first
    while start < last:
        cols = min(width, last - start)
        try:
            block = xp.empty((rows, -(-cols // pad) * pad), dtype=dtype)[:, :cols]
            block_p = xp.empty((rows, cols), dtype=np.int32) if predecessors else None
        except MemoryError:  # CuPy's OutOfMemoryError, after its pool has released what it could
            block = block_p = None
            if xp is np or width <= _MIN_WIDTH:
                raise
            width = max(_MIN_WIDTH, width // 2)
            continue
        yield start, cols, block, block_p
        block = block_p = None
        start += cols


def internal_arcs(graph, partition) -> np.ndarray:
    """Arcs of every component between two of its own vertices (int64, one count per component).

    Self loops are not counted: a component matrix's zero diagonal hides them.
    A component without such arcs needs no dense work (see :func:`run_components`).
    The arcs of each component's vertices are counted, less the arcs that leave
    it (:meth:`~fastapsp.partition.Partition.leaving_arcs`) and its self loops.
    """
    labels = partition.labels
    counts = np.bincount(labels, weights=np.diff(graph.indptr), minlength=partition.k).astype(np.int64)
    counts -= np.bincount(labels[partition.leaving_arcs(graph)[0]], minlength=partition.k)
    counts -= np.bincount(labels[graph.loops()], minlength=partition.k)
    return counts


def _needs_matrix(partition, arcs, p: int) -> bool:
    """Whether component ``p``'s rows need its dense matrix (built and closed, or its local closure).

    They need none when every vertex is a boundary vertex (its rows are the
    boundary rows), or when the component has no arcs of its own (``arcs``,
    :func:`internal_arcs`): an interior vertex then has no arc at all, so its row
    is ``inf`` but for a zero at itself.
    """
    return int(partition.boundary_per_part[p]) < int(partition.sizes[p]) and int(arcs[p]) > 0


def run_components(graph, partition, components, *, backend: str = "numpy", sink, dtype=np.float32,
                   tile: int = DEFAULT_TILE, block_bytes: int | None = None, on_block=None, rows=None,
                   boundary_rows: str = "frontier", closed: dict | None = None, boundary_blocks: dict | None = None,
                   seed: int = 42, tree=None, timer: StageTimer | None = None, pred_sink=None,
                   pairs: bool = False, whole_rows: bool = True, comm=None, products=None, arcs=None,
                   peer_rate: float | None = None) -> dict:
    """Compute the row blocks of ``components`` and hand them to ``sink``.

    ``boundary_rows`` says where the boundary rows come from.  ``"frontier"``: the
    boundary SSSP of several components runs as one batch (all their sources
    advance together), as far as memory allows; then each component goes
    through build, Floyd-Warshall, extract, min-plus and assemble.
    ``"boundary-graph"``: the rows come from the boundary graph
    (:class:`fastapsp.stages.boundary_graph.BoundaryGraph`), built from
    ``boundary_blocks`` (``L_p[:nb_p]`` of every component, all ranks'), and
    ``closed`` holds this rank's local closures (:func:`local_closures`); each
    component then needs no second Floyd-Warshall; ``tree``, when given, is
    the boundary graph's shape (:class:`~fastapsp.stages.boundary_graph.LevelTree`)
    already made for the schedule; ``comm``, when given, shares the upper
    levels' closures out among its ranks (``peer_rate``, not None: they travel GPU to GPU at that
    many bytes a second, :func:`fastapsp.peers.peer_rate`).  Each row block (in column
    chunks if it would not fit) goes to the host once.
    ``on_block(vertices, column_start, block)``, when given, sees every block
    on the device before it is copied (``--stats``: see ``fastapsp/reductions.py``).
    ``pairs`` (undirected graphs whose components are runs of consecutive
    vertices, see :func:`fastapsp.planning.renamed_by_component`): each row
    block covers only the columns from its component's first vertex on, so each pair of vertices in two
    components is computed once (``--stats`` with nothing for the host).
    ``whole_rows=False`` (nothing needs every distance: ``--stats``, no output): a component with no
    boundary vertex, which no arc joins to another, reaches nothing outside itself, and its row block
    covers its own columns only (every other distance is ``inf``, which statistics do not count).
    ``products`` (a :class:`fastapsp.reductions.ProductStats`, with ``pairs`` and nothing else needing
    the rows): a component's rows past its own columns go there as its interior rows' product with its
    boundary rows, reduced as it is made where the product allows (no block of those columns).
    ``rows`` (a :class:`fastapsp.sources.SourceRows`) keeps only the rows of
    chosen sources: other components are skipped (``--sources``).
    ``arcs``: the components' own arc counts (:func:`internal_arcs`) where the caller has them.
    ``pred_sink``, when given, receives the int32 predecessor block of every
    distance block, carried through the stages (``--predecessors``, see
    :mod:`fastapsp.stages.predecessors`); it needs ``boundary_rows="frontier"``.
    A component whose vertices are all boundary vertices, or which has no arcs
    of its own (:func:`internal_arcs`), needs no component matrix, closure or
    extraction: its rows come from its boundary rows alone, the same numbers.

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
    writer = HostWriter(xp, sink, dtype)
    arcs = internal_arcs(graph, partition) if arcs is None else arcs
    # Every component's vertices on the device at once (one copy, not one a component).
    placed = xp.asarray(partition.order) if xp is not np else partition.order

    def on_device(p):
        return placed[int(partition.starts[p]) : int(partition.starts[p + 1])]

    packing = Packing.for_run(graph, xp)  # 16-bit products or not: decided once a run
    paths = None
    if pred_sink is not None:
        if boundary_rows != "frontier":
            raise ConfigError(f"predecessors: the {boundary_rows} method carries no predecessors; "
                              "use the frontier method")
        paths = _Predecessors(xp, pred_sink, (indptr, indices, weights))
    if boundary_rows == "boundary-graph":
        # --sources: a component's closure serves only its wanted interior rows
        keep = None if rows is None else rows.closures_needed()
        if closed is None:  # one process with everything: close every component here
            everything = nonempty(partition)
            closed, blocks = local_closures(graph, partition, everything, backend=backend, dtype=dtype, timer=timer,
                                            keep=keep, arcs=arcs,
                                            reserve=levels_bytes(tree, partition, dtype.itemsize,
                                                                 Packing.possible(graph, dtype, xp is not np)))
            boundary_blocks = blocks if boundary_blocks is None else boundary_blocks
        timer.component = None  # these stages serve every component
        with timer("boundary_graph"):
            # With ``comm`` the ranks share out the upper levels' closures (each closes its part, once).
            levels = BoundaryGraph(graph, partition, boundary_blocks, xp, dtype, seed=seed, tree=tree, comm=comm,
                                   components=components, packing=packing,
                                   receive_cost=receive_relaxations("numpy" if xp is np else "cupy", dtype,
                                                                    peer_rate),
                                   on_device=peer_rate is not None and xp is not np)
        timer.notes["upper_levels"] = levels.upper_seconds
        rows_of = levels.boundary_rows(components, level_order=True)  # _component puts them in vertex order
        # Closures not kept (memory) are closed again when their turn comes, several at once: those of the
        # next components in the order their rows come, as far as one closure batch holds.
        upcoming = levels.visit_order(components)
        place = {p: i for i, p in enumerate(upcoming)}
        reclose = [p for p in upcoming if closed.get(p) is None and _needs_matrix(partition, arcs, p)
                   and (keep is None or keep[p])]
        reclose_at = [place[p] for p in reclose]  # ascending
        while True:
            timer.component = None  # the next component is known once its rows are made
            with timer("boundary_rows"):
                item = next(rows_of, None)
            if item is None:
                break
            p, rows_b = item
            timer.component = p
            vertices, nb = partition.component(p)
            needed = _needs_matrix(partition, arcs, p)
            matrix = closed.pop(p, None)
            if not needed:  # its rows need no closure (a kept one, all boundary, is dropped here)
                matrix = None
            if matrix is None and needed and (keep is None or keep[p]):  # not kept (memory): close it again
                with timer("local_fw"):
                    batch = _reclose_batch(p, reclose, reclose_at, place[p], partition, dtype.itemsize,
                                           closure_batch_limit(available_bytes(xp) // 3))
                    closed.update(close_components(indptr, indices, weights, partition, batch, dtype=dtype,
                                                    unit_weights=graph.unit_weights,
                                                    host_csr=(graph.indptr, graph.indices)))
                matrix = closed.pop(p)
            if rows is not None:  # --sources: only the wanted rows (fastapsp/sources.py)
                with timer("boundary_rows"):
                    rows_b = levels.vertex_order(rows_b)
                _source_rows(graph, (indptr, indices, weights), p, vertices, nb, rows_b, rows, xp=xp, sink=sink,
                             dtype=dtype, tile=tile, block_bytes=block_bytes, timer=timer, writer=writer,
                             on_block=on_block, closed=matrix, arcless=arcs[p] == 0)
            else:
                _component(graph, (indptr, indices, weights), p, vertices, nb, rows_b, xp=xp, sink=sink,
                           dtype=dtype, tile=tile, block_bytes=block_bytes, timer=timer, writer=writer,
                           on_block=on_block, closed=matrix, pairs=pairs, whole_rows=whole_rows,
                           needs_matrix=needed, packing=packing, products=products, vertices=on_device(p),
                           reorder=levels.vertex_order)
            del rows_b, matrix
        writer.close(timer)
        timer.notes["packed_16bit"] = packing.answer
        return timer.seconds
    row_bytes = dtype.itemsize + (_Predecessors.ROW_BYTES if paths is not None else 0)
    for group in sssp_groups(partition, components, graph.n, row_bytes, xp):
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
                             on_block=on_block, paths=paths, arcless=arcs[p] == 0)
                continue
            _component(graph, (indptr, indices, weights), p, vertices, nb, rows_b, xp=xp, sink=sink, dtype=dtype,
                       tile=tile, block_bytes=block_bytes, timer=timer, writer=writer, on_block=on_block,
                       paths=paths, pairs=pairs, whole_rows=whole_rows,
                       needs_matrix=_needs_matrix(partition, arcs, p), packing=packing, products=products,
                       vertices=on_device(p))
        del all_rows
    writer.close(timer)
    if paths is not None:
        paths.close(timer)
    timer.notes["packed_16bit"] = packing.answer
    return timer.seconds


def _reclose_batch(p: int, reclose: list, reclose_at: list, at: int, partition, itemsize: int, limit: int) -> list:
    """``p`` and the components after it in ``reclose`` (those whose closures were not kept, in the order
    their rows come; ``reclose_at`` their places in that order, ``at`` the place of ``p``) whose matrices
    fit in ``limit`` bytes with it."""
    start = bisect.bisect_left(reclose_at, at)
    batch, size = [p], int(partition.sizes[p]) ** 2 * itemsize
    for q in reclose[start:]:
        if q == p:
            continue
        nbytes = int(partition.sizes[q]) ** 2 * itemsize
        if size + nbytes > limit:
            break
        batch.append(q)
        size += nbytes
    return batch


def local_closures(graph, partition, components, *, backend: str, dtype,
                   timer: StageTimer | None = None, keep=None, arcs=None, reserve: int = 0) -> tuple[dict, dict]:
    """Each component closed over its own arcs (boundary-graph method).

    Returns ``closed`` (``{p: L_p}``) and ``blocks`` (``{p: L_p[:nb_p]}``, what
    the boundary graph needs of every component).  Closures are kept while they
    take at most a third of the memory a row block may use; the others are
    ``None`` (only their boundary rows are kept) and are closed again when
    their component's turn comes.  ``keep`` (a bool per component, e.g.
    :meth:`fastapsp.sources.SourceRows.closures_needed`) keeps only the
    closures that will be used: the others are ``None`` from the start.
    ``reserve``: bytes the boundary graph's levels will need beside the kept
    closures (:func:`~fastapsp.stages.boundary_graph.levels_bytes`); fewer
    closures are kept where they would not leave that much
    (:func:`~fastapsp.stages.boundary_graph.closure_budget`).
    A component with no arcs of its own (``arcs``, :func:`internal_arcs`,
    counted here when not given) is not closed: ``L_p`` is ``inf`` but for its
    zero diagonal, its closure is ``None`` (its rows need none, see
    :func:`run_components`) and its block is made as it is.
    """
    xp = np if backend != "cupy" else __import__("cupy")
    indptr, indices, weights = device_csr(graph, xp)
    timer = StageTimer(xp) if timer is None else timer
    arcs = internal_arcs(graph, partition) if arcs is None else arcs
    budget = closure_budget(available_bytes(xp), reserve)
    closed: dict = {}
    blocks: dict = {}
    dense = []
    for p in components:
        if partition.sizes[p] == 0:
            continue
        if arcs[p] > 0:
            dense.append(p)
            continue
        timer.component = p
        with timer("local_fw"):
            nb, c = int(partition.boundary_per_part[p]), int(partition.sizes[p])
            rows = xp.full((nb, c), np.inf, dtype=dtype)
            rows[xp.arange(nb), xp.arange(nb)] = 0
        closed[p], blocks[p] = None, rows
    for batch in _closure_batches(partition, dense, np.dtype(dtype).itemsize, budget):
        timer.component = batch[0] if len(batch) == 1 else tuple(batch)  # closed together
        with timer("local_fw"):
            matrices = close_components(indptr, indices, weights, partition, batch, dtype=dtype,
                                          unit_weights=graph.unit_weights, host_csr=(graph.indptr, graph.indices))
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
            close_matrix(matrix, tile=tile)
        else:
            paths.close_matrix(matrix)
    return matrix


def _component(graph, csr, p, vertices_host, nb, rows_b, *, xp, sink, dtype, tile, block_bytes, timer, writer,
               on_block=None, closed=None, paths=None, pairs=False, whole_rows=True, needs_matrix=True,
               packing=None, products=None, vertices=None, reorder=None):
    """Stages 2-6 of one component, its boundary rows already computed (with ``pairs``, only the
    columns from the component's first vertex on: see :func:`run_components`).

    With ``closed`` (the component closed over its own arcs, boundary-graph
    method) the build and Floyd-Warshall are skipped and the assembly keeps
    the shorter of the paths inside the component and those through its boundary.
    With ``paths`` (:class:`_Predecessors`) every stage carries the predecessors too.
    ``needs_matrix=False`` (every vertex is a boundary vertex, or the component
    has no arcs of its own: :func:`_needs_matrix`): no matrix is made, the rows
    come from the boundary rows alone (:func:`_rows_without_matrix`).  A result
    kept whole on the device in the run's dtype (:func:`_direct_result`) takes
    the rows where they lie: the product writes the interior rows there and the
    assembly completes them, with no row block and no copy.
    ``packing`` (:class:`~fastapsp.stages.min_plus.Packing`): the run's decision whether products
    run in packed 16-bit arithmetic; none: float32 products.  ``products``
    (:class:`~fastapsp.reductions.ProductStats`, with ``pairs``): the columns past the component's own
    go there when the run packs its products and ``products.fuses`` the component's.
    ``vertices``: ``vertices_host`` on ``xp`` where the caller has them there.
    ``reorder`` (boundary-graph method): ``rows_b`` has its columns in the boundary graph's level order,
    and ``reorder(rows, out=None)`` puts them in vertex order (:meth:`BoundaryGraph.vertex_order`):
    straight into the first rows of the row block where one block holds every column (the assembly
    then has no boundary rows to copy: a pass over them all, about 0.4 s of a 2^20-vertex Delaunay graph's
    run on one H100), else into an array of their own.
    """
    n, c = graph.n, vertices_host.size
    vertices = xp.asarray(vertices_host) if vertices is None else vertices
    result = _direct_result(sink, dtype, xp) if needs_matrix and paths is None and on_block is None \
        and whole_rows and not pairs else None
    pad = ROW_ALIGN // dtype.itemsize if xp is not np and not sink.needs_host else 1
    block0 = width = None  # the one row block, made first so that the boundary rows are reordered into it
    if reorder is not None:
        if xp is not np and result is None and needs_matrix and paths is None and not pairs and nb and c > nb:
            width = column_width(c, nb, n, dtype.itemsize, xp, block_bytes, component=p)
            if width >= n:
                _, cols, block0, _ = next(column_blocks(xp, c, 0, n, n, dtype, pad=pad))
                block0 = block0 if cols == n else None  # the device could not hold it after all
        with timer("boundary_rows"):
            rows_b = reorder(rows_b, out=None if block0 is None else block0[:nb])
    matrix = inner = None
    if needs_matrix:
        matrix = closed if closed is not None else build_and_close(csr, vertices, nb, rows_b, tile=tile,
                                                                   timer=timer, paths=paths)
        with timer("extract"):
            inner = extract_inner_to_boundary(matrix, nb)
            if paths is not None:
                paths.extract(nb)
    if result is not None:  # a result kept whole on the device: the rows made where they lie, no block
        # Rows off 16-byte boundaries (n not a multiple of 4 in float32) are stored as shifted vectors
        # by every kernel (docs/kernels.md).
        with timer("min_plus"):
            min_plus(inner, rows_b, out=result, out_rows=vertices[nb:],
                     integer=packing is not None and packing(rows_b))
        with timer("assemble"):
            assemble_in_result(result, rows_b, matrix, vertices, nb, minimum=closed is not None)
        sink.written(vertices_host)
        return
    if width is None:
        extra = _Predecessors.BLOCK_BYTES if paths is not None else 0
        width = column_width(c, nb, n, dtype.itemsize + extra, xp, block_bytes, component=p)
    first = int(vertices_host.min()) if pairs and c else 0
    last = n
    if not whole_rows and nb == 0 and c:  # no path leaves the component: its own columns only
        first, last = max(first, int(vertices_host.min())), int(vertices_host.max()) + 1
    if products is not None and pairs and needs_matrix and paths is None and c > nb and first + c < last \
            and packing is not None and packing(rows_b) and products.fuses(inner, rows_b):
        # Past its own columns (pairs: the component is the run first .. first + c - 1) a row is the product
        # alone, reduced as it is made; the own columns below take the block, the closure and the assembly.
        with timer("min_plus"):
            products.add(vertices_host[nb:], vertices_host[:nb], first + c, inner, rows_b[:, first + c : last])
        last = first + c
    # On the GPU, rows that start on ROW_ALIGN-byte boundaries whatever n is (a block that goes to the
    # host stays contiguous for its copy): ``pad`` above.
    blocks = column_blocks(xp, c, first, last, width, dtype, pad=pad, predecessors=paths is not None) \
        if block0 is None else iter([(0, n, block0, None)])
    block0 = None
    for start, cols, block, block_p in blocks:
        if not needs_matrix:
            with timer("assemble"):
                _rows_without_matrix(block, rows_b[:, start : start + cols], vertices_host, start, xp=xp)
                if paths is not None:
                    _rows_without_matrix(block_p, paths.rows_p[:, start : start + cols], vertices_host, start, xp=xp,
                                         fill=NO_PREDECESSOR, own=NO_PREDECESSOR)
        else:
            with timer("min_plus"):
                if paths is None:
                    min_plus(inner, rows_b[:, start : start + cols], out=block[nb:],
                             integer=packing is not None and packing(rows_b))
                else:
                    paths.min_plus(inner, rows_b, start, cols, block[nb:], block_p[nb:])
            with timer("assemble"):
                assemble_row_block(block, rows_b, matrix, vertices, nb, column_start=start,
                                   minimum=closed is not None)
                if paths is not None:
                    assemble_predecessors(block_p, paths.rows_p, paths.matrix_p, vertices, nb, column_start=start)
        if on_block is not None:  # device-side consumers (--stats), before any copy
            with timer("stats"):
                on_block(vertices_host, start, block)
        if sink.needs_host or sink.on_device:
            writer.put(vertices_host, start, block, timer)
        if paths is not None:
            paths.writer.put(vertices_host, start, block_p, timer)
        del block, block_p


def _direct_result(sink, dtype, xp):
    """The device result a component's rows can be made in where they lie (:meth:`DeviceSink.direct`):
    a CuPy run whose dtype is the result's, the sink the result itself (no sources or 16-bit rows between)."""
    take = getattr(sink, "direct", None)
    return take(dtype) if take is not None and xp is not np else None


def _rows_without_matrix(block, boundary_block, vertices_host, start: int, *, xp, fill=np.inf, own=0) -> None:
    """The rows of a component that needs no matrix, for the columns ``start .. start + w`` of ``block``.

    Row ``a`` belongs to ``vertices_host[a]``; the first rows are those of the
    boundary vertices, ``boundary_block`` (their boundary rows at these columns).  An interior vertex of a component
    without arcs of its own has no arc at all (an arc to or from another
    component would make it a boundary vertex): its row is ``fill`` (``inf``;
    for predecessors ``-9999``) but ``own`` (0) at itself, what the
    min-plus through the boundary and the assembly from the closed matrix give.
    """
    nb, width = boundary_block.shape
    block[:nb] = boundary_block
    if block.shape[0] == nb:
        return
    block[nb:] = fill
    interior = vertices_host[nb:]
    at = np.flatnonzero((interior >= start) & (interior < start + width))
    if at.size:
        block[xp.asarray(at + nb), xp.asarray(interior[at] - start)] = own


def _block_emitter(on_block, sink, writer, timer):
    """``emit(ids, start, block)``: device consumers first (``--stats``), then the copy to the sink."""

    def emit(ids, start, block):
        if on_block is not None:
            with timer("stats"):
                on_block(ids, start, block)
        if sink.needs_host or sink.on_device:
            writer.put(ids, start, block, timer)

    return emit


def _source_rows(graph, csr, p, vertices_host, nb, rows_b, rows, *, xp, sink, dtype, tile, block_bytes, timer,
                 writer, on_block, paths=None, closed=None, arcless=False):
    """``--sources``: the wanted rows of one component (see :func:`fastapsp.sources.component_rows`)."""
    local = rows.local(vertices_host)
    extra = _Predecessors.BLOCK_BYTES if paths is not None else 0
    width = column_width(vertices_host.size, nb, graph.n, dtype.itemsize + extra, xp, block_bytes, component=p)

    emit = _block_emitter(on_block, sink, writer, timer)
    component_rows(csr, vertices_host, nb, rows_b, local, n=graph.n, xp=xp, dtype=dtype, tile=tile, width=width,
                   timer=timer, emit=emit, closed=closed, paths=paths, arcless=arcless)


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
        self.writer = HostWriter(xp, sink, np.int32)
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



def sssp_groups(partition, components, n: int, itemsize: int, xp, *, budget: int | None = None) -> list[list[int]]:
    """Consecutive runs of components whose boundary rows together fit a quarter of the free memory (or ``budget``)."""
    budget = max(1, available_bytes(xp) // 4) if budget is None else budget
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



def nonempty(partition) -> list[int]:
    """The components that have vertices."""
    return np.flatnonzero(partition.sizes > 0).tolist()


def component_rows(csr, vertices_host, nb, rows_b, local, *, n, xp, dtype, tile, width, timer, emit,
                   closed=None, paths=None, arcless: bool = False) -> None:
    """The wanted rows ``vertices_host[local]`` of one component, in column chunks of ``width``.

    Boundary rows are the boundary rows ``rows_b`` themselves.  A wanted
    interior row is the min-plus product of its distances to the boundary
    with ``rows_b``, and, for the component's own columns, the distances
    inside the component: ``closed`` (the component closed over its own arcs,
    boundary-graph method: the smaller of the two is kept), or else the
    component matrix built from ``rows_b`` and closed here (frontier method:
    it holds the exact distances).  ``emit(vertex_ids, column_start, block)``
    receives each chunk.  With ``paths`` (``--predecessors``,
    :class:`_Predecessors`) the predecessors are carried
    along and their blocks go to ``paths.writer``.  ``arcless`` (the component
    has no arcs of its own): no matrix is made, a wanted interior row is ``inf``
    but for a zero at itself (see :func:`_rows_without_matrix`).
    """
    local = np.asarray(local, dtype=np.int64)
    ids = vertices_host[local]
    boundary = local[local < nb]
    interior = local[local >= nb]
    own = inner = own_p = keep = None
    minimum = closed is not None
    dense = interior.size > 0 and not arcless  # interior rows through the closed matrix and the min-plus
    if dense:
        matrix = closed
        if matrix is None:
            matrix = build_and_close(csr, xp.asarray(vertices_host), nb, rows_b, tile=tile, timer=timer,
                                     paths=paths)
        with timer("extract"):
            keep = xp.asarray(interior)
            inner = xp.ascontiguousarray(matrix[keep, :nb])
            own = matrix[keep]  # distances inside the component
            if paths is not None:
                paths.extract(nb)
                own_p = paths.matrix_p[keep]
            del matrix
    # Without arcs of its own: the wanted rows, boundary first, as the rows of such a component.
    wanted = vertices_host[np.concatenate([boundary, interior])] if arcless else None
    boundary_dev = xp.asarray(boundary)
    for start, cols, block, block_p in column_blocks(xp, local.size, 0, n, width, dtype,
                                                     predecessors=paths is not None):
        with timer("assemble"):
            if arcless:
                _rows_without_matrix(block, rows_b[boundary_dev, start : start + cols], wanted, start, xp=xp)
                if paths is not None:
                    _rows_without_matrix(block_p, paths.rows_p[boundary_dev, start : start + cols], wanted, start,
                                         xp=xp, fill=NO_PREDECESSOR, own=NO_PREDECESSOR)
            else:
                block[: boundary.size] = rows_b[boundary_dev, start : start + cols]
                if paths is not None:
                    block_p[: boundary.size] = paths.rows_p[boundary_dev, start : start + cols]
        if dense:
            with timer("min_plus"):
                if paths is None:
                    min_plus(inner, rows_b[:, start : start + cols], out=block[boundary.size :])
                else:
                    paths.min_plus(inner, rows_b, start, cols, block[boundary.size :], block_p[boundary.size :],
                                   keep=xp.subtract(keep, nb))
            with timer("assemble"):
                inside = np.flatnonzero((vertices_host >= start) & (vertices_host < start + cols))
                if inside.size:
                    at = xp.asarray(vertices_host[inside] - start)
                    here = own[:, xp.asarray(inside)]
                    if minimum:  # paths through the boundary may be shorter than those inside
                        here = xp.minimum(here, block[boundary.size :, at])
                    block[boundary.size :, at] = here
                    if paths is not None:
                        block_p[boundary.size :, at] = own_p[:, xp.asarray(inside)]
        emit(ids, start, block)
        if paths is not None:
            paths.writer.put(ids, start, block_p, timer)
        del block, block_p


def run_sssp_rows(graph, sources, *, backend: str = "numpy", sink, dtype=np.float32, on_block=None,
                  block_bytes: int | None = None, pred_sink=None) -> dict:
    """Rows of ``sources`` by single-source shortest paths (method ``sssp``), handed to ``sink``.

    Sources go in batches whose rows fit a quarter of the free memory (or
    ``block_bytes``).  ``pred_sink``, when given, receives their predecessors
    (:func:`fastapsp.stages.predecessors.boundary_predecessors`).  Returns the
    seconds per stage, as :func:`run_components`.
    """
    if backend == "cupy":
        import cupy as xp
    else:
        xp = np
    dtype = np.dtype(dtype)
    timer = StageTimer(xp)
    writer = HostWriter(xp, sink, dtype)
    csr = device_csr(graph, xp)
    paths = None if pred_sink is None else _Predecessors(xp, pred_sink, csr)
    row_bytes = dtype.itemsize + (0 if paths is None else _Predecessors.ROW_BYTES)
    batch = sssp_batch(graph.n, row_bytes, block_bytes if block_bytes is not None else available_bytes(xp) // 4)

    emit = _block_emitter(on_block, sink, writer, timer)
    sssp_rows(graph, csr, np.asarray(sources), xp=xp, dtype=dtype, batch=batch, timer=timer, emit=emit, paths=paths)
    writer.close(timer)
    if paths is not None:
        paths.close(timer)
    return timer.seconds


def sssp_rows(graph, csr, sources, *, xp, dtype, batch: int, timer, emit, paths=None) -> None:
    """Rows of ``sources`` by single-source shortest paths, ``batch`` sources at a time (and their predecessors)."""
    indptr, indices, weights = csr
    for first in range(0, len(sources), batch):
        ids = np.asarray(sources[first : first + batch], dtype=np.int64)
        with timer("sssp"):
            rows = boundary_sssp(indptr, indices, weights, xp.asarray(ids), dtype=dtype,
                                 unit_weights=graph.unit_weights, batch=SOURCES_SSSP_BATCH)
            if paths is not None:
                paths.boundary(ids, rows)
        emit(ids, 0, rows)
        if paths is not None:
            paths.writer.put(ids, 0, paths.all_p, timer)
        del rows
