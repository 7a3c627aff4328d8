"""Jet's initial partition: its coarsest graph cut into pieces, each piece partitioned on its own.

METIS's recursive bisection of the coarsest graph into all ``k`` parts runs in
one thread: a process's METIS calls run one at a time (METIS keeps its random
state process-wide, :mod:`fastapsp.partition.metis`), and on a graph of a few
million vertices and thousands of parts it is most of Jet's time (del21-unit,
k = 3,444, one H100 and its 16-core host: 0.63 s of Jet's 0.73 s; in pieces on
forked workers 0.31-0.33 s of 0.39-0.41 s).  Here the top bisections come first: METIS into
two parts, with target weights in proportion to the parts each side will hold
and the imbalance METIS's own recursion allows a level, down to ``P`` pieces;
then each piece, an induced subgraph, is partitioned into its parts by
METIS's recursive bisection on its own.  That is what METIS's recursion does
itself, so the cut is about the same (``benchmarks/initial_pieces_bench.py``).

``P`` depends only on the coarsest graph's size and ``k`` (:func:`piece_count`),
never on who solves the pieces, so the labels are a function of the graph and
the seed: the same in one process (the pieces solved in forked worker
processes where that pays, :func:`solve_here`) and under MPI, where rank 0 runs
Jet and every rank partitions a share of the pieces, in its own forked workers
where that pays (:class:`RankHelpers` on rank 0, :func:`serve` on the others).
Two ranks sharing one H100 partitioned del21-unit in 1.07-1.19 s with each
rank's pieces one after the other, in 0.72-0.85 s with them in each rank's
workers (one rank: 0.77-0.86 s).
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import PartitionError
from .metis import metis
from .pieces import piece_graph

__all__ = ["initial_labels", "piece_count", "solve_here", "RankHelpers", "serve", "PIECES"]

PIECES = 8  # pieces of the coarsest graph at most: a power of two
PARTS_PER_PIECE = 16  # at least this many parts per piece (fewer pieces for a small k)
VERTICES_PER_PIECE = 1024  # and at least this many coarse vertices per piece
# Coarse vertices from which the pieces go to forked worker processes (when this process may fork).
# Starting and ending eight workers took about 20 ms on the 2-core development machine (the parent
# holding 1.6 GB); METIS on a coarsest graph of this size takes about 0.06-0.09 s there, so below it
# the workers would save about what they cost.
FORK_FROM = 16_384


def piece_count(n: int, k: int) -> int:
    """Pieces of a coarsest graph of ``n`` vertices into ``k`` parts: the largest power of two up to
    ``PIECES`` that leaves every piece ``PARTS_PER_PIECE`` parts and ``VERTICES_PER_PIECE`` vertices.

    >>> piece_count(103_320, 3444), piece_count(31_350, 1045), piece_count(4_590, 153), piece_count(900, 30)
    (8, 8, 4, 1)
    """
    pieces = PIECES
    while pieces > 1 and (k < pieces * PARTS_PER_PIECE or n < pieces * VERTICES_PER_PIECE):
        pieces //= 2
    return pieces


def _levels(k: int) -> int:
    return max(1, math.ceil(math.log2(max(k, 2))))


def _level_imbalance(imbalance: float, levels: int, k: int) -> float:
    """The imbalance of ``levels`` bisection levels out of the ``_levels(k)`` that reach ``k`` parts:
    ``(1 + imbalance)`` spread evenly over the levels, as METIS's recursive bisection spreads it."""
    return (1.0 + imbalance) ** (levels / _levels(k)) - 1.0


def _induced(indptr, indices, eweights, vertices):
    """CSR structure and arc weights of the subgraph induced by ``vertices`` (ascending), renumbered 0.."""
    sub_indptr, sub_indices, at = piece_graph(indptr, indices, vertices, positions=True)
    return sub_indptr, sub_indices, eweights[at]


class _Pieces:
    """The pieces' METIS calls, as the forked workers' state (:class:`~fastapsp.partition.workers.ForkedWorkers`).

    ``answers=True``: each call gives ``(labels, None)`` or, where it raised, ``(None, "Type: message")``, so
    that a rank reports which of its pieces failed (:func:`_answer`) however many workers solved them.
    """

    def __init__(self, tasks, answers: bool = False):
        self.tasks, self.answers = tasks, answers

    def solve(self, i: int):
        if not self.answers:
            return _solve(self.tasks[i])
        try:
            return _solve(self.tasks[i]), None
        except Exception as exc:  # noqa: BLE001 - reported by rank 0 once every rank has answered
            return None, f"{type(exc).__name__}: {exc}"


def _solve(task) -> np.ndarray:
    """Labels of one task (a piece, or the whole coarsest graph): METIS's recursive bisection."""
    indptr, indices, vweights, eweights, k, seed, imbalance = task
    n = indptr.size - 1
    if k == 1 or n <= k:  # no more vertices than parts: one each (METIS would complain, on stderr)
        return np.remainder(np.arange(n), k).astype(np.int32)
    return metis(indptr, indices, k, seed=seed, imbalance=imbalance, vweights=vweights, eweights=eweights,
                 recursive=True)


def solve_here(tasks, *, answers: bool = False) -> list:
    """The pieces' labels in this process: in forked workers (one per piece, up to
    :func:`~fastapsp.partition.workers.worker_count`) when they hold ``FORK_FROM`` vertices or more, else
    one after the other.  ``answers``: ``(labels, None)`` or ``(None, error)`` per piece instead of
    raising (:class:`_Pieces`)."""
    from .workers import ForkedWorkers, worker_count

    vertices = sum(task[0].size - 1 for task in tasks)
    count = min(len(tasks), worker_count(brief=True)) if vertices >= FORK_FROM else 1
    with ForkedWorkers(_Pieces(tasks, answers), count, name="initial partition") as workers:
        return workers.map([(i,) for i in range(len(tasks))])


def initial_labels(indptr, indices, k: int, *, seed: int, imbalance: float, vweights, eweights,
                   solve=None) -> np.ndarray:
    """int32 labels of ``k`` parts of a weighted graph (Jet's coarsest), on the host.

    Parameters
    ----------
    indptr, indices, vweights, eweights : ndarray
        Symmetric CSR structure with vertex and arc weights.
    k, seed, imbalance
        As :func:`fastapsp.partition.metis.metis` (``imbalance`` of the whole: the levels share it).
    solve : callable, optional
        ``solve(tasks) -> labels of every task``, each task ``(indptr, indices, vweights, eweights, k,
        seed, imbalance)`` of one piece: :func:`solve_here` (the default) or a :class:`RankHelpers`.
    """
    indptr, indices = np.asarray(indptr, dtype=np.int64), np.asarray(indices, dtype=np.int64)
    vweights, eweights = np.asarray(vweights, dtype=np.int64), np.asarray(eweights, dtype=np.int64)
    n = indptr.size - 1
    pieces = piece_count(n, k)
    if pieces == 1 or n <= k:
        return _solve((indptr, indices, vweights, eweights, int(k), int(seed), imbalance))
    top = _level_imbalance(imbalance, 1, k)
    # (vertices, parts, pieces) to cut, depth first; the leaves come out in a fixed order.
    stack, leaves = [(np.arange(n, dtype=np.int64), k, pieces)], []
    while stack:
        vertices, parts, count = stack.pop()
        if count == 1:
            leaves.append((vertices, parts))
            continue
        first = count // 2
        parts_first = parts * first // count
        sub_indptr, sub_indices, sub_eweights = _induced(indptr, indices, eweights, vertices)
        side = metis(sub_indptr, sub_indices, 2, seed=seed, imbalance=top, vweights=vweights[vertices],
                     eweights=sub_eweights, recursive=True,
                     target_weights=(parts_first / parts, 1.0 - parts_first / parts))
        stack.append((vertices[side == 1], parts - parts_first, count - first))
        stack.append((vertices[side == 0], parts_first, first))
    tasks = []
    for vertices, parts in leaves:
        sub_indptr, sub_indices, sub_eweights = _induced(indptr, indices, eweights, vertices)
        tasks.append((sub_indptr, sub_indices, vweights[vertices], sub_eweights, int(parts), int(seed),
                      _level_imbalance(imbalance, _levels(parts), k)))
    found = (solve or solve_here)(tasks)
    labels = np.empty(n, dtype=np.int32)
    offset = 0
    for (vertices, parts), piece in zip(leaves, found):
        labels[vertices] = np.asarray(piece, dtype=np.int32) + offset
        offset += parts
    return labels


class RankHelpers:
    """Rank 0's side of the pieces under MPI: ``self(tasks)`` gives every rank a share of the pieces
    (rank r the pieces r, r + size, ...), partitions its own and gathers the others'.

    Use as a context manager around rank 0's partitioning: leaving it (however) tells the other ranks,
    waiting in :func:`serve`, that no more pieces come.  A piece that fails on any rank raises
    :class:`~fastapsp.errors.PartitionError` on rank 0 after every rank has answered, so no rank waits.
    """

    def __init__(self, comm):
        self.comm = comm

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.comm.scatter([None] * self.comm.size, root=0)
        return False

    def __call__(self, tasks) -> list:
        size = self.comm.size
        shares = [[(i, tasks[i]) for i in range(r, len(tasks), size)] for r in range(size)]
        answers = self.comm.gather(_answer(self.comm.scatter(shares, root=0)), root=0)
        found = [None] * len(tasks)
        for rank, (results, failure) in enumerate(answers):
            if failure is not None:
                raise PartitionError(f"the initial partition's piece {failure[0]} failed on rank {rank}: "
                                     f"{failure[1]}")
            for i, labels in results:
                found[i] = labels
        return found


def _answer(share):
    """``(results, failure)`` of one rank's share: ``[(piece, labels)]`` and None, or the first failure
    (a worker that died: the share's first piece, with what its pool said)."""
    from .workers import WorkerError

    try:
        found = solve_here([task for _, task in share], answers=True)
    except WorkerError as exc:
        return [], (share[0][0], str(exc).splitlines()[0])
    results = []
    for (i, _), (labels, failure) in zip(share, found):
        if failure is not None:
            return results, (i, failure)
        results.append((i, labels))
    return results, None


def serve(comm) -> None:
    """A rank other than 0, while rank 0 partitions: partition the pieces it is given until told to stop."""
    while True:
        share = comm.scatter(None, root=0)
        if share is None:
            return
        comm.gather(_answer(share), root=0)
