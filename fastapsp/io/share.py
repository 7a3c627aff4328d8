"""One file read by several ranks: each parses a share of the arc lines, and every rank gets every arc.

Under MPI the ranks that read the file are one per node (:mod:`fastapsp.io.nodes`),
or every rank of a node that has fewer cores than ranks; here they are the
ranks of ``comm``.  Reading the bytes and decompressing them is quick; parsing the numbers and checking them is not (on
a large graph it is a good part of the read, and with several ranks on one host each parsing everything the read
took about twice as long as in one process: docs/kernels.md).  For the formats of one arc per line (``mtx``,
``fastapsp``, ``dimacs``) the lines after the header are cut, at line ends,
into ``comm.size`` consecutive slices: rank ``r`` parses and checks slice
``r``, and one broadcast per rank and column (tails, heads, weights) gives
every rank the whole table, in file order.  Every rank then builds the same
graph from it.

A file read this way fails as it would in one process, with the same message
on every rank.  The ranks meet in a fixed sequence of rounds (:meth:`Shared.agree`):
each brings its own first problem, if any, and the problem of the earliest
round, then of the lowest rank, is raised on all of them.  The slices are in
file order and each rank reports its first problem in file order, so that
problem is the one a single process would have met first.

:class:`Whole` is the one-process stand-in: the whole body, nothing to agree on.
"""

from __future__ import annotations

import numpy as np

from ..errors import GraphFormatError, RankError

__all__ = ["Whole", "Shared", "share_for"]

# Elements per broadcast: MPI counts are C ints.
_CHUNK = 1 << 28


class Whole:
    """One process reads the whole file: one slice, problems raised as they come."""

    size, rank = 1, 0

    def cut(self, data: bytes, offset: int, line: int) -> tuple[int, int | None, int]:
        """``(start, end, first line)`` of this rank's slice of ``data[offset:]``; ``end`` None: to the end."""
        return offset, None, line

    def agree(self, problem: Exception | None, info=None) -> list:
        """Raise ``problem``, if any; else every rank's ``info`` (here one)."""
        if problem is not None:
            raise problem
        return [info]

    def fail(self, problem: Exception):
        raise problem

    def gather(self, column: np.ndarray, counts: list[int], out: np.ndarray) -> np.ndarray:
        """Every rank's ``column`` one after another, in ``out`` (here: ``column`` itself)."""
        return column

    def done(self) -> None:
        """No more rounds."""


class Shared:
    """The ranks of ``comm`` read one file together (see the module's text).

    Every rank must make the same calls in the same order: :meth:`cut`, then
    rounds of :meth:`agree`, then :meth:`gather`.  A rank that meets a problem
    between two rounds takes it to the next round (:meth:`fail`), so the others
    never wait in a collective it will not join.
    """

    def __init__(self, comm, names=None):
        self.comm = comm
        self.size, self.rank = comm.size, comm.rank
        self.names = list(range(self.size)) if names is None else list(names)  # rank numbers for messages
        self._settled = False  # an agreed problem was raised, or the arcs were gathered: no more rounds

    def cut(self, data: bytes, offset: int, line: int) -> tuple[int, int | None, int]:
        """``(start, end, first line)`` of this rank's slice of ``data[offset:]``.

        The body is cut into ``size`` runs of whole lines, of about equal bytes
        (a slice may be empty); ``end`` is None for the last, which runs to the
        end of the data.  ``first line`` is the file line of ``start`` when
        ``data[offset]`` is on line ``line``.
        """
        length = len(data) - offset
        bounds = [offset]
        for r in range(1, self.size):
            at = max(offset + length * r // self.size, bounds[-1])
            newline = data.find(b"\n", at) if at < len(data) else -1
            bounds.append(len(data) if newline < 0 else newline + 1)
        start = bounds[self.rank]
        end = None if self.rank == self.size - 1 else bounds[self.rank + 1]
        return start, end, line + data.count(b"\n", offset, start)

    def agree(self, problem: Exception | None, info=None) -> list:
        """One round: every rank's ``info`` in rank order, unless a rank brings a problem.

        Then the problem of the lowest rank is raised on every rank: the rank
        it began on raises its own; the others a :class:`GraphFormatError`
        with the same message, or a :class:`RankError` naming that rank for
        any other failure.  A problem that an earlier round raised as such a
        copy keeps the rank it began on (a round among some ranks, then one
        among all of them: :mod:`fastapsp.io.nodes`).
        """
        said = None if problem is None else (type(problem).__name__, str(problem),
                                             isinstance(problem, GraphFormatError), _origin(problem))
        everyone = self.comm.allgather((said, info))
        first = next((r for r, (s, _) in enumerate(everyone) if s is not None), None)
        if first is None:
            return [i for _, i in everyone]
        self._settled = True
        name, message, format_error, origin = everyone[first][0]
        relayed = origin is not None
        origin = self.names[first] if origin is None else origin
        began = None if problem is None else _origin(problem)
        if problem is not None and (self.names[self.rank] if began is None else began) == origin:
            raise problem
        if format_error:
            copy = GraphFormatError(message)
        elif relayed:  # already names the rank it began on
            copy = RankError(message)
        else:
            copy = RankError(f"rank {origin} failed during reading the graph: {name}: {message}")
        copy.origin_rank = origin
        raise copy

    def fail(self, problem: Exception):
        """Take a problem met between rounds to the next round, where every rank raises one.

        After the last round (:meth:`done`) a problem is this rank's alone: it is
        raised as it is (the caller's :func:`fastapsp.comm.run_phase` tells the others).
        """
        if self._settled:
            raise problem
        self.agree(problem)
        raise problem  # pragma: no cover - agree raised

    def gather(self, column: np.ndarray, counts: list[int], out: np.ndarray) -> np.ndarray:
        """Every rank's ``column`` (``counts[r]`` entries on rank ``r``) one after another, in ``out``.

        ``out`` (``sum(counts)`` entries, the dtype of every rank's column) is
        made before the last round, so that no rank fails between that round and
        these collectives.  One broadcast per rank (in pieces of ``_CHUNK``
        entries: MPI counts are C ints), each rank the root of its own slice.
        """
        offset = 0
        for r, count in enumerate(counts):
            piece = out[offset : offset + count]
            if r == self.rank:
                piece[:] = column
            for at in range(0, count, _CHUNK):
                self.comm.Bcast(piece[at : at + _CHUNK], root=r)
            offset += count
        return out

    def done(self) -> None:
        """The arcs are gathered: what fails from here on fails on this rank alone."""
        self._settled = True


def _origin(problem: Exception):
    """The rank a problem began on when this rank raised it as a copy (:meth:`Shared.agree`), else None."""
    return getattr(problem, "origin_rank", None)


def share_for(comm, names=None) -> Whole | Shared:
    """:class:`Shared` for a communicator of several ranks, else :class:`Whole`.  ``names``: the number a
    message gives each rank of ``comm`` (by default its rank in ``comm``)."""
    return Shared(comm, names) if comm is not None and comm.size > 1 else Whole()
