"""One reader per node: the first rank of each node reads the graph, the node's other ranks receive it.

Under MPI all ranks of a run need the same graph, and the ranks of one node
(``comm.Split_type(MPI.COMM_TYPE_SHARED)``) share its memory, disks and cores.
So only the node's first rank, its *reader*, opens the file:

1. The readers (one per node) read it as one process would, through
   :func:`fastapsp.io.read_graph` on the communicator of the readers: each
   reads the binary cache when every reader finds one that matches the file;
   else each parses a share of the lines (:mod:`fastapsp.io.share`, across
   nodes) with the cores it has (:mod:`fastapsp.io.parallel`, within a node).
2. The node's other ranks read the cache where they find one, at the same
   time as the reader (they check the record and the CSR, not the arrays'
   CRC-32).  A reader that read the cache tells its node which folder: the
   others keep what they read when it is that folder (the reader has checked
   the CRC-32), else read it now.  A reader that parsed the text (no cache,
   a stale one or a damaged one) sends its CSR arrays to its node (``Bcast``
   on the node's communicator, in pieces MPI counts can hold), and the others
   drop what they read.
3. All ranks meet in one last round (:meth:`fastapsp.io.share.Shared.agree`):
   a problem on any rank (a bad file on the readers, a failed cache read or a full
   memory on another) is raised on every rank, the same format error with the
   same message, or a :class:`~fastapsp.errors.RankError` naming the rank.
   Every rank takes part in every collective whatever happened before it, so
   none waits for a rank that has given up.

Compared with every rank reading the file and parsing a share of it, the file
is read, decompressed and checked once per node instead of once per rank, the
node's other ranks never hold its text, and the CSR is built once per node.
A node whose first rank may use fewer cores than the node has ranks (``srun``
gives one core per task unless ``--cpus-per-task`` says more) would parse
slower alone than its ranks do together: there every rank reads and parses a
share.  A communicator that cannot tell nodes apart (one without
``Split_type``) counts every rank as a node of its own: every rank reads.
"""

from __future__ import annotations

import numpy as np

from ..graph import Graph
from .parallel import available_cores
from .share import Shared

__all__ = ["read_on_nodes", "split_nodes"]

# Elements per broadcast: MPI counts are C ints.
_CHUNK = 1 << 28


def split_nodes(comm):
    """``(node, readers)``: the ranks of ``comm`` on this node, and the ranks that read (None on the others).

    The readers are the first rank of every node, or every rank of a node whose first rank may run on fewer
    cores than the node has ranks (one core per rank, as ``srun`` gives by default): there the ranks parse a
    share each, as one reader's workers would.  ``node`` is None where every rank of the node reads, and when
    ``comm`` cannot tell nodes apart (it has no ``Split_type``).
    """
    if not hasattr(comm, "Split_type"):
        return None, comm
    from mpi4py import MPI

    node = comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.rank)
    everyone = node.bcast(available_cores() < node.size if node.rank == 0 else None, root=0)
    readers = comm.Split(0 if everyone or node.rank == 0 else MPI.UNDEFINED, key=comm.rank)
    if readers == MPI.COMM_NULL:
        readers = None
    if everyone:
        node.Free()
        node = None
    return node, readers


def read_on_nodes(comm, read, open_cache, guess=None):
    """The graph on every rank of ``comm``, read by one rank per node (collective; see the module's text).

    Parameters
    ----------
    comm : communicator
        All ranks that need the graph.
    read : callable
        ``read(readers, names)`` on the readers: ``(graph, cached)``, where ``cached`` is whatever
        ``open_cache`` needs to read the same cache (None when the text was parsed); ``readers`` is the
        communicator of the readers and ``names`` their ranks in ``comm`` (for messages).
    open_cache : callable
        ``open_cache(cached)`` on the node's other ranks: the graph of that cache, or None when it no
        longer matches.
    guess : callable, optional
        ``guess()`` on the node's other ranks while the reader reads: ``(cached, graph)`` of the cache
        they find themselves (``graph`` None where there is none), or None.  Kept where the reader
        then names the same ``cached``, so the node's ranks read the cache at once rather than after
        the reader.

    Returns
    -------
    (Graph, cached)
        The graph, and ``cached`` as the node's reader found it (None: the text was parsed).
    """
    node, readers = split_nodes(comm)
    try:
        graph = cached = problem = early = None
        if readers is None and guess is not None:  # a node's other rank: the cache at once, if it finds one
            try:
                early = guess()
            except Exception:  # noqa: BLE001 - only a guess: the reader's word decides
                early = None
        if readers is not None:
            try:
                names = readers.allgather(comm.rank)
                graph, cached = read(readers, names)
            except Exception as exc:  # noqa: BLE001 - raised on every rank in the last round
                problem = exc
        if node is not None and node.size > 1:
            graph, cached, problem = _share_in_node(node, graph, cached, problem, open_cache, early)
        Shared(comm).agree(problem)  # the last round: the first problem of any rank, on every rank
        return graph, cached
    finally:
        for sub in (node, readers):
            if sub is not None and sub is not comm:
                sub.Free()


def _share_in_node(node, graph, cached, problem, open_cache, early=None):
    """The reader's graph on every rank of ``node``: the cache it read, or its arrays.  ``(graph, cached,
    problem)``; every rank of ``node`` makes the same collectives whatever fails.  ``early``: what this
    rank's ``guess`` read, kept when the reader read the same cache."""
    if node.rank == 0:
        if problem is not None:
            said = None
        elif cached is not None:
            said = ("cache", cached)
        else:
            said = ("arrays", graph.indptr.size, graph.indices.size, graph.indptr.dtype.str, graph.directed,
                    graph.name)
    said = node.bcast(said if node.rank == 0 else None, root=0)
    if said is None:  # the reader failed: its problem is raised in the last round
        return graph, cached, problem
    if said[0] == "cache":
        if node.rank != 0:
            cached = said[1]
            try:
                graph = early[1] if early is not None and early[0] == cached else None
                graph = open_cache(cached) if graph is None else graph
                if graph is None:
                    raise OSError("the graph cache that the node's first rank read no longer matches the file")
            except Exception as exc:  # noqa: BLE001 - raised on every rank in the last round
                problem = exc
        return graph, cached, problem
    _, rows, arcs, index, directed, name = said
    arrays = None
    if node.rank == 0:
        arrays = [np.ascontiguousarray(a) for a in (graph.indptr, graph.indices, graph.weights)]
    else:
        try:
            arrays = [np.empty(rows, dtype=index), np.empty(arcs, dtype=index), np.empty(arcs, dtype=np.float64)]
        except MemoryError as exc:
            problem = exc
    if not all(node.allgather(problem is None)):  # no rank enters the broadcasts unless every rank can
        return (graph if node.rank == 0 else None), None, problem
    for array in arrays:
        for at in range(0, array.size, _CHUNK):
            node.Bcast(array[at : at + _CHUNK], root=0)
    if node.rank != 0:
        try:
            graph = Graph(arrays[0], arrays[1], arrays[2], directed=directed, name=name)
        except Exception as exc:  # noqa: BLE001 - raised on every rank in the last round
            problem = exc
    return graph, None, problem
