"""Where finished row blocks go: a shared ``.npy`` file, host memory, or nowhere.

A sink receives host (NumPy) row blocks: ``write(vertices, column_start, block)``
puts ``block[a, j]`` at row ``vertices[a]``, column ``column_start + j``.
"""

from __future__ import annotations

import os

import numpy as np

from .comm import run_phase

__all__ = ["NullSink", "MemorySink", "NpySink", "make_sink"]

_POOL = None
_ROWS_PER_TASK = 64


def _scatter_rows(dest, vertices, column_start, block) -> None:
    """``dest[vertices, start:start + w] = block``, rows split over a few threads.

    The copy is bound by memory and, on a fresh array, by page faults; NumPy
    releases the GIL while it copies, so threads overlap both.
    """
    global _POOL
    rows, width = block.shape
    cols = slice(column_start, column_start + width)
    if rows < 2 * _ROWS_PER_TASK:
        dest[vertices, cols] = block
        return
    if _POOL is None:
        from concurrent.futures import ThreadPoolExecutor

        _POOL = ThreadPoolExecutor(max_workers=min(16, os.cpu_count() or 1), thread_name_prefix="fastapsp-sink")

    def part(r0):
        dest[vertices[r0 : r0 + _ROWS_PER_TASK], cols] = block[r0 : r0 + _ROWS_PER_TASK]

    for future in [_POOL.submit(part, r0) for r0 in range(0, rows, _ROWS_PER_TASK)]:
        future.result()


class NullSink:
    """Discards every block; the GPU path does not even copy them to the host."""

    needs_host = False
    path = None

    def write(self, vertices, column_start, block) -> None:
        return None

    def commit(self) -> None:
        return None

    def abort(self) -> None:
        return None


class MemorySink:
    """Keeps the rows of this rank in one host array of shape (n, n) (``(rows, n)`` when given).

    With one rank this is the whole answer.  The array is not initialised (an
    n x n fill would cost as much as the copy itself); ``rows_written`` tells
    which rows this rank has filled.
    """

    needs_host = True
    path = None

    def __init__(self, n: int, dtype, *, rows: int | None = None) -> None:
        rows = n if rows is None else rows
        self.result = np.empty((rows, n), dtype=dtype)
        self.rows_written = np.zeros(rows, dtype=bool)

    def write(self, vertices, column_start, block) -> None:
        _scatter_rows(self.result, vertices, column_start, block)
        self.rows_written[vertices] = True

    def commit(self) -> None:
        return None

    def abort(self) -> None:
        return None


class NpySink:
    """One ``.npy`` file of shape (n, n) (``(rows, n)`` when given) that every rank writes its own rows into.

    Rank 0 creates the file (header and full size) under a temporary name; every
    rank then maps it and writes its rows; :meth:`commit` renames it to ``path``
    once all ranks are done, so a failed run leaves no partial result behind.
    Works past 2 GiB: the file is memory-mapped, never held in memory.
    """

    needs_host = True

    def __init__(self, path: str, n: int, dtype, *, comm, rows: int | None = None) -> None:
        self.path = os.fspath(path)
        self.comm = comm
        self.dtype = np.dtype(dtype)
        self.n = n
        self.rows = n if rows is None else rows
        self.tmp = comm.bcast(f"{self.path}.tmp{os.getpid()}" if comm.rank == 0 else None)
        offset = run_phase(comm, "creating the output file", self._create if comm.rank == 0 else lambda: None)
        offset = comm.bcast(offset)
        self.array = run_phase(comm, "opening the output file", self._open, offset)

    def _create(self) -> int:
        try:
            mm = np.lib.format.open_memmap(self.tmp, mode="w+", dtype=self.dtype, shape=(self.rows, self.n))
        except OSError as exc:
            raise OSError(f"output {self.path}: cannot create {self.tmp}: {exc.strerror or exc}") from None
        offset = mm.offset
        del mm
        return offset

    def _open(self, offset: int):
        if self.n == 0 or self.rows == 0:
            return np.empty((self.rows, self.n), dtype=self.dtype)
        return np.memmap(self.tmp, mode="r+", dtype=self.dtype, offset=offset, shape=(self.rows, self.n))

    def write(self, vertices, column_start, block) -> None:
        _scatter_rows(self.array, vertices, column_start, block)

    def commit(self) -> None:
        """Flush on every rank, then rename on rank 0 (collective)."""
        run_phase(self.comm, "writing the output file", self._flush)
        rename = (lambda: os.replace(self.tmp, self.path)) if self.comm.rank == 0 else (lambda: None)
        run_phase(self.comm, "renaming the output file", rename)

    def _flush(self) -> None:
        if isinstance(self.array, np.memmap):
            self.array.flush()
        self.array = None

    def abort(self) -> None:
        """Drop the temporary file (called on every rank after a failure)."""
        self.array = None
        if self.comm.rank == 0:
            try:
                os.remove(self.tmp)
            except OSError:
                pass


def make_sink(output, n: int, dtype, *, comm, rows: int | None = None):
    """Sink for the ``--output`` value: ``none``, ``memory`` or a ``.npy`` path; ``rows`` x n (default n x n)."""
    if output is None or str(output) == "none":
        return NullSink()
    if str(output) == "memory":
        return MemorySink(n, dtype, rows=rows)
    if not str(output).endswith(".npy"):
        raise ValueError(f"--output: {output!r} is not 'none', 'memory' or a path ending in .npy")
    return NpySink(output, n, dtype, comm=comm, rows=rows)
