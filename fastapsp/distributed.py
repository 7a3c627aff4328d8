"""What the ranks of a run do together: choose k on rank 0 and partition (on rank 0, or every rank a
piece) and hear it everywhere,
shape the boundary graph's level tree once, close the components and share their boundary rows.
(The upper levels' closures travel inside :class:`~fastapsp.stages.boundary_graph.BoundaryGraph`.)

Every function takes the communicator (``comm``); a failure on one rank is raised
on every rank (:func:`fastapsp.comm.run_phase`) or ends the job (:func:`fastapsp.comm.run_or_abort`).
"""

from __future__ import annotations

import os
import time
import zlib

import numpy as np

from .backend import gpu_total_bytes
from .comm import run_or_abort, run_phase, select_device
from .components import internal_arcs, local_closures, nonempty
from .cost import auto_k, pieces_seconds
from .errors import PartitionError
from .partition import (Partition, load_partition, make_partition, partition_graph, partition_labels,
                        partition_method, refine_labels, save_partition)
from .partition.initial import RankHelpers, serve
from .partition.pieces import PIECES_FROM, cut_pieces, piece_graph, piece_imbalance
from .schedule import component_costs, schedule_in_order
from .stages.boundary_graph import DENSE_LIMIT, SUPER_SIZE, LevelTree, levels_bytes
from .stages.min_plus import Packing
from .timing import StageTimer

__all__ = ["choose_k_everywhere", "partition_everywhere", "in_pieces", "tree_schedule", "boundary_graph_inputs", "share_blocks"]


def choose_k_everywhere(graph, backend: str, dtype, *, comm, reserve: int = 0, partitioner: str | None = None) -> dict:
    """Rank 0 picks the default k with the cost model (:func:`fastapsp.cost.auto_k`); every rank hears it.

    On the GPU a component may use 80% of the device's memory less ``reserve``
    (bytes the run keeps there anyway: a result held on the device).
    ``partitioner``: the run's (its seconds per component enter the choice).
    """

    def on_rank0():
        memory = None
        if backend == "cupy":
            import cupy

            total = gpu_total_bytes(cupy.cuda.Device().id)
            memory = max(0.0, 0.8 * total - reserve)
        return auto_k(graph, backend=backend, dtype=dtype, memory_bytes=memory, partitioner=partitioner)

    choice = run_phase(comm, "choosing k", on_rank0 if comm.rank == 0 else (lambda: None))
    return choice if comm.size == 1 else comm.bcast(choice)


def partition_everywhere(graph, opts, k: int, backend: str, *, comm, log=None, solve: float | None = None):
    """Every rank ends with the same Partition: made by rank 0, by all ranks in pieces, or loaded.

    First every rank checks that its graph is rank 0's (vertices, arcs and the CRC-32 of the CSR
    arrays).  Then either rank 0 partitions the whole graph (or loads ``partition_file``; with Jet the
    other ranks partition a share of the pieces of its coarsest graph meanwhile, ``initial.serve``), or, where
    :func:`in_pieces` says so (``solve``: the cost model's seconds of the later stages on one rank, when
    it chose k), every rank partitions a piece of it (:func:`_labels_in_pieces`) and rank 0 puts the
    labels together.  Rank 0 broadcasts the partition whole, its arrays as buffers (labels,
    boundary, vertex order, component starts and boundary counts: about 13 bytes a vertex), so the other
    ranks do not compute it again from the labels while rank 0 waits.
    """
    if comm.size > 1:
        _same_graph_everywhere(graph, comm=comm)
    pieces = in_pieces(opts, graph.n, k, comm.size, arcs=graph.m, backend=backend, solve=solve)
    if comm.size > 1:  # rank 0's answer everywhere: no rank waits in a collective the others skip
        pieces = comm.bcast(pieces if comm.rank == 0 else None)
    if pieces:  # the partitioner's name resolved once, for every rank's piece and rank 0's refinement
        base, method = partition_method(opts.partitioner, opts.refine, graph.n, backend)
        gathered = _labels_in_pieces(graph, opts, k, base, comm=comm)

    def on_rank0(helpers):
        if pieces:
            return _partition_from_pieces(graph, opts, k, base, method, gathered)
        if opts.partition_file and os.path.exists(opts.partition_file):
            return load_partition(opts.partition_file, graph, opts.k, log=log)
        return partition_graph(graph, k, opts.partitioner, seed=opts.seed, imbalance=opts.imbalance,
                               refine=opts.refine, backend=backend, helpers=helpers)

    def made():
        if comm.size > 1:  # the other ranks partition pieces of Jet's coarsest graph meanwhile (serve)
            with RankHelpers(comm) as helpers:
                part = on_rank0(helpers)
        else:
            part = on_rank0(None)
        if opts.partition_file and not os.path.exists(opts.partition_file):
            save_partition(opts.partition_file, graph, part)
        return part

    mine = run_phase(comm, "partitioning", made if comm.rank == 0 else (lambda: serve(comm)))
    if comm.size == 1:
        return mine
    head = comm.bcast((mine.k, mine.method, mine.seed, mine.imbalance, mine.seconds, mine.edge_cut, mine.details)
                      if comm.rank == 0 else None)
    k, method, seed, imbalance, seconds, edge_cut, details = head
    n = graph.n
    shapes = [(n, np.int32), (n, np.bool_), (n, np.int64), (k + 1, np.int64), (k, np.int64)]

    def buffers():  # rank 0's arrays, or room for them: every rank has its buffers before any broadcast
        if comm.rank == 0:
            return [np.ascontiguousarray(a, dtype=dtype) for a, (_, dtype) in
                    zip((mine.labels, mine.boundary, mine._order, mine._starts, mine._n_boundary), shapes)]
        return [np.empty(size, dtype=dtype) for size, dtype in shapes]

    arrays = run_phase(comm, "receiving the partition", buffers)
    for array in arrays:
        comm.Bcast(array, root=0)
    if comm.rank == 0:
        return mine
    labels, boundary, order, starts, n_boundary = arrays
    return Partition(labels, k, boundary, method, seed, imbalance, seconds, edge_cut, order, starts, n_boundary,
                     details)


def _same_graph_everywhere(graph, *, comm) -> None:
    """Raise on every rank unless every rank holds rank 0's graph (vertices, arcs, CRC-32 of the CSR arrays)."""
    fingerprint = (graph.n, graph.m, zlib.crc32(np.ascontiguousarray(graph.indptr)),
                   zlib.crc32(np.ascontiguousarray(graph.indices)))
    if not all(comm.allgather(fingerprint == comm.bcast(fingerprint if comm.rank == 0 else None))):
        raise PartitionError("ranks hold different graphs (vertices, arcs or their checksums differ from rank 0's); "
                             "is the graph file the same on every node?")


def in_pieces(opts, n: int, k: int, ranks: int, *, arcs: int = 0, backend: str = "auto",
              solve: float | None = None) -> bool:
    """Whether the ranks partition side by side, one piece each (``--parallel-partition``).

    ``on``: whenever every rank can have a component.  ``auto``: from
    :data:`~fastapsp.partition.pieces.PIECES_FROM` vertices on, with at least two
    components a rank, where the cost model predicts that a rank's cut and its
    piece's partition, with what the cut's boundary adds to the later stages
    (``solve``: their predicted seconds on one rank, when k was chosen by the
    model), take less than the whole graph's partition
    (:func:`fastapsp.cost.pieces_seconds`).  Never for one rank, nor where a
    partition file is loaded.
    """
    if ranks == 1 or opts.parallel_partition == "off" or k < ranks:
        return False
    if opts.partition_file and os.path.exists(opts.partition_file):
        return False
    if opts.parallel_partition == "on":
        return True
    if n < PIECES_FROM or k < 2 * ranks:
        return False
    base, _ = partition_method(opts.partitioner, opts.refine, n, backend)
    cost = pieces_seconds(n, arcs, k, ranks, base, solve=solve)
    return cost["pieces"] + cost["added"] < cost["whole"]


def _labels_in_pieces(graph, opts, k: int, base: str, *, comm):
    """Every rank cuts out its own piece and partitions it into its share of the ``k`` components
    with the partitioner ``base`` (on its own GPU for Jet); rank 0 receives every piece's vertices and
    labels.

    Returns, on rank 0, the pieces in rank order as ``(vertices, labels, components, seconds)`` with
    the seconds of the cut and of the partitioner on that rank; None elsewhere.  A failure on any
    rank is raised on every rank.
    """
    if base == "jet":  # each rank's own GPU, chosen before its first work there
        select_device(comm)

    def mine():
        start = time.perf_counter()
        indptr, indices = graph.undirected_adjacency()
        (_, vertices, components), = cut_pieces(indptr, indices, comm.size, k, only=comm.rank)
        sub_ptr, sub_ind = piece_graph(indptr, indices, vertices)
        cut = time.perf_counter() - start
        imbalance = piece_imbalance(graph.n, k, opts.imbalance, vertices.size, components)
        labels, _ = partition_labels(sub_ptr, sub_ind, components, base, seed=opts.seed, imbalance=imbalance)
        return (np.ascontiguousarray(vertices, dtype=np.int64), np.ascontiguousarray(labels, dtype=np.int32),
                components, {"cut": cut, "partition": time.perf_counter() - start - cut})

    vertices, labels, components, seconds = run_phase(comm, "partitioning a piece", mine)
    heads = comm.gather((vertices.size, components, seconds))
    sizes = [size for size, _, _ in heads] if comm.rank == 0 else None
    room = (np.empty(sum(sizes), dtype=np.int64), np.empty(sum(sizes), dtype=np.int32)) if comm.rank == 0 else None
    comm.Gatherv(vertices, (room[0], sizes) if room else None, root=0)
    comm.Gatherv(labels, (room[1], sizes) if room else None, root=0)
    if comm.rank != 0:
        return None
    ends = np.cumsum(sizes)
    return [(room[0][end - size:end], room[1][end - size:end], share, took)
            for end, (size, share, took) in zip(ends, heads)]


def _partition_from_pieces(graph, opts, k: int, base: str, method: str, pieces) -> Partition:
    """Rank 0's partition from every rank's piece: labels offset by the components before each piece,
    refined where ``method`` is ``base`` with the boundary refinement."""
    start = time.perf_counter()
    labels = np.full(graph.n, -1, dtype=np.int32)
    offset = 0
    for vertices, piece_labels, components, _ in pieces:
        labels[vertices] = piece_labels + offset
        offset += components
    covered = np.bincount(np.concatenate([p[0] for p in pieces]), minlength=graph.n)
    if offset != k or covered.size != graph.n or not np.all(covered == 1):
        raise PartitionError(f"the ranks' pieces do not cover the graph once ({int(np.sum(covered != 1))} vertices "
                             f"in none or several, {offset} components of {k}); are the ranks' libraries the same?")
    details = {"pieces": {"ranks": len(pieces), "vertices": [int(p[0].size) for p in pieces],
                          "components": [int(p[2]) for p in pieces],
                          "cut_seconds": [round(p[3]["cut"], 4) for p in pieces],
                          "partition_seconds": [round(p[3]["partition"], 4) for p in pieces]}}
    if method != base:
        indptr, indices = graph.undirected_adjacency()
        labels, refined = refine_labels(indptr, indices, labels, k, seed=opts.seed, imbalance=opts.imbalance)
        details.update(refined)
    slowest = max(p[3]["cut"] + p[3]["partition"] for p in pieces)
    return make_partition(graph, labels, k, method=method, seed=opts.seed, imbalance=opts.imbalance,
                          seconds=slowest + time.perf_counter() - start, details=details)


def tree_schedule(graph, partition, costs, selection, backend: str, seed: int, *, comm):
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

    def meanwhile():  # the other ranks find the arcs leaving the components, which their closures count next
        partition.leaving_arcs(graph)  # (kept by the partition: internal_arcs takes them from there)

    tree = run_phase(comm, "shaping the boundary graph", on_rank0 if comm.rank == 0 else meanwhile)
    if comm.size > 1:
        tree = comm.bcast(tree)
    order = tree.order()
    plan = schedule_in_order(costs, order, comm.size)
    spread = plan if selection is None else \
        schedule_in_order(component_costs(partition, graph.n, graph.m), order, comm.size)
    return tree, plan, spread



def boundary_graph_inputs(graph, partition, spread, backend, dtype, *, comm, cleanup=None, keep=None,
                           share: bool = True, tree=None, peer_rate: float | None = None):
    """Close this rank's components locally and share their boundary rows with every rank.

    What travels: ``L_p[:nb_p]`` of every component (sum of nb_p * c_p
    distances over all components), once, by one allgather (:func:`share_blocks`).  The upper
    levels of the boundary graph are then closed by the ranks together (given the communicator,
    :class:`~fastapsp.stages.boundary_graph.BoundaryGraph` shares them out level by level and
    says what travels).  Returns the
    run_components arguments, the timer, and the seconds the sharing took
    (waiting for the slowest rank included).  The closures are
    long work of each rank alone: a failure there ends the job at once
    (``cleanup`` first), as in the components' stages.  ``keep``: which
    closures to keep (see :func:`local_closures`).  ``spread``: the
    components each rank closes.  ``share=False``: this rank closes every
    component and nothing travels.  ``tree`` (the level tree): closures are kept only while they leave
    room for the levels (:func:`~fastapsp.stages.boundary_graph.closure_budget`).  ``peer_rate`` (not
    None): the rows travel GPU to GPU (:func:`fastapsp.peers.share_on_device`).
    """
    xp = np if backend != "cupy" else __import__("cupy")
    timer = StageTimer(xp)
    mine = spread[comm.rank] if share else nonempty(partition)
    reserve = levels_bytes(tree, partition, np.dtype(dtype).itemsize, Packing.possible(graph, dtype, xp is not np))
    arcs = internal_arcs(graph, partition)
    closed, blocks = run_or_abort(comm, "closing the components", local_closures, graph, partition, mine,
                                  backend=backend, dtype=dtype, timer=timer, cleanup=cleanup, keep=keep,
                                  arcs=arcs, reserve=reserve)
    t = time.perf_counter()
    if comm.size > 1 and share:
        blocks = share_blocks(blocks, partition, spread, comm=comm, xp=xp, dtype=dtype,
                              on_device=peer_rate is not None and xp is not np)
    return {"closed": closed, "boundary_blocks": blocks, "arcs": arcs}, timer, time.perf_counter() - t


_MPI_COUNT_LIMIT = 2**31 - 1  # elements of one Allgatherv's buffer (MPI's int counts and displacements)


def share_blocks(blocks: dict, partition, spread, *, comm, xp, dtype, on_device: bool = False) -> dict:
    """Every rank's ``L_p[:nb_p]`` to every rank: ``{p: L_p[:nb_p]}`` for all components, on ``xp``.

    Each rank packs its blocks (the components ``spread[rank]``, in that order)
    into one flat array.  ``on_device``: every rank copies the others' arrays
    from their GPUs (:func:`fastapsp.peers.share_on_device`).  Else the array
    is copied to the host at once; one ``Allgatherv`` gives
    every rank all of them (the sizes nb_p * c_p are known everywhere: nothing
    else travels), copied to the device at once (a pickled allgather of a
    dict of arrays is several times slower: docs/kernels.md).  When a rank's
    part passes MPI's count limit the pickled allgather is used.
    """
    dtype = np.dtype(dtype)
    size = (partition.boundary_per_part.astype(np.int64) * partition.sizes.astype(np.int64))
    counts = [int(sum(size[p] for p in spread[r])) for r in range(comm.size)]
    mine = [blocks[p] for p in spread[comm.rank]]
    if on_device:
        from .peers import share_on_device

        parts = share_on_device(comm, mine, [(0, counts[comm.rank])] * comm.size, counts, dtype)
        if parts is not None:  # (None: no room on some GPU for the copy; through the host below)
            parts[comm.rank] = None  # this rank's own blocks, as they are
            gathered = _blocks_of(parts, partition, spread)
            gathered.update((p, xp.asarray(blocks[p], dtype=dtype)) for p in spread[comm.rank])
            return gathered
    if sum(counts) > _MPI_COUNT_LIMIT:  # pragma: no cover - more than 8 GB in float32
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
    starts = np.concatenate([[0], np.cumsum(counts)])
    return _blocks_of([received[starts[r] : starts[r + 1]] for r in range(comm.size)], partition, spread)


def _blocks_of(parts: list, partition, spread) -> dict:
    """``{p: L_p[:nb_p]}`` from ``parts[r]``, rank ``r``'s blocks of ``spread[r]`` one after another, flat
    (None: not among them)."""
    gathered = {}
    for r, flat in enumerate(parts):
        if flat is None:
            continue
        offset = 0
        for p in spread[r]:
            nb, c = int(partition.boundary_per_part[p]), int(partition.sizes[p])
            gathered[p] = flat[offset : offset + nb * c].reshape(nb, c)
            offset += nb * c
    return gathered


