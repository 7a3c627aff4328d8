"""Device arrays between the GPUs of one node, copied GPU to GPU (CUDA IPC) instead of through the host.

Under MPI the boundary-graph method moves closures between ranks: the rows
``L_q[B_q, :]`` of the local closures, and once per upper level the rows of
the super-groups a rank did not close.  Through the host each distance is
copied to host memory, sent by MPI and copied back to the GPU
(:data:`fastapsp.cost.SHARE_RATE`, 0.7 GB/s measured on two H200s of one
host), which makes closing everything on every rank cheaper than sharing.
The ranks of one node can instead map each other's device memory (CUDA
IPC) and copy what they need straight from the GPU that holds it, over
NVLink where the GPUs have it.

:func:`peer_rate` (collective) says whether every rank of a communicator can
do so and how fast: all ranks on one node, each copying :data:`PROBE_BYTES`
from its neighbour the way :func:`share_on_device` copies, the slowest rank's
bytes per second (None where any rank cannot: the host path).  The
cost model weighs sharing against closing at that rate
(:func:`fastapsp.cost.receive_relaxations`, :func:`fastapsp.cost.close_everywhere`).

:func:`share_on_device` moves the arrays: each rank writes what it sends into
one device buffer it exposes, every rank copies its segments of the others', and
nobody frees its buffer before every rank has copied (one allgather of whether
each rank's copies succeeded: where any failed, every rank sends that exchange
through the host instead).
"""

from __future__ import annotations

import time

import numpy as np

__all__ = ["peer_rate", "share_on_device", "PROBE_BYTES"]

# Bytes of the probe copy: large enough that the copy, not the mapping, is timed on NVLink (tens of
# microseconds), small enough to cost a few milliseconds where the copy goes through the host.
PROBE_BYTES = 64 << 20
_MEMCPY_DEFAULT = 4  # cudaMemcpyDefault: the direction from the pointers (unified addressing)


def _one_node(comm) -> bool:
    """Whether every rank of ``comm`` is on one node (collective)."""
    if not hasattr(comm, "Split_type"):
        return False
    from mpi4py import MPI

    node = comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.rank)
    try:
        alone = node.size == comm.size
    finally:
        node.Free()
    return all(comm.allgather(alone))


class _Exposed:
    """A device buffer of its own allocation (so that its IPC handle maps it from offset 0), freed by
    :meth:`free`."""

    def __init__(self, nbytes: int):
        import cupy

        self.nbytes = max(int(nbytes), 1)
        try:
            self.ptr = cupy.cuda.runtime.malloc(self.nbytes)
        except cupy.cuda.runtime.CUDARuntimeError:  # the pool may hold what is free: give it back, once
            cupy.get_default_memory_pool().free_all_blocks()
            self.ptr = cupy.cuda.runtime.malloc(self.nbytes)
        try:
            self.handle = cupy.cuda.runtime.ipcGetMemHandle(self.ptr)
        except Exception:
            self.free()
            raise

    def view(self, size: int, dtype):
        import cupy

        memory = cupy.cuda.UnownedMemory(self.ptr, self.nbytes, self)
        return cupy.ndarray((int(size),), dtype=dtype, memptr=cupy.cuda.MemoryPointer(memory, 0))

    def free(self) -> None:
        import cupy

        if self.ptr:
            cupy.cuda.runtime.free(self.ptr)
            self.ptr = 0


def _copy_from(handle: bytes, offset: int, out) -> None:
    """Copy ``out.nbytes`` bytes from ``offset`` of another process's exposed buffer into ``out``."""
    import cupy

    runtime = cupy.cuda.runtime
    ptr = runtime.ipcOpenMemHandle(handle)
    try:
        stream = cupy.cuda.get_current_stream()
        runtime.memcpyAsync(out.data.ptr, ptr + int(offset), out.nbytes, _MEMCPY_DEFAULT, stream.ptr)
        stream.synchronize()
    finally:
        runtime.ipcCloseMemHandle(ptr)


def peer_rate(comm, probe: int = PROBE_BYTES) -> float | None:
    """Bytes per second of a rank copying from another rank's GPU, the slowest of ``comm``'s ranks, or
    None where the ranks cannot copy GPU to GPU (several nodes, no CUDA IPC, or one rank).

    Collective.  Every rank sends ``probe`` bytes to its left neighbour by :func:`share_on_device`
    (rank ``r`` copies from ``r + 1``), and the time counts all that it pays: the exposed buffer, the
    mapping, the copy and the ranks' agreements.
    """
    if comm is None or comm.size < 2 or not _one_node(comm):
        return None
    try:
        import cupy

        piece = cupy.empty(probe, dtype=np.uint8)  # what it holds does not matter: only the copy is timed
    except Exception:  # noqa: BLE001 - no room (or no CuPy) on this rank: every rank takes the host path
        piece = None
    if not all(comm.allgather(piece is not None)):
        return None
    left, right = (comm.rank - 1) % comm.size, (comm.rank + 1) % comm.size
    start = time.perf_counter()
    got = share_on_device(comm, [piece], [(0, probe if d == left else 0) for d in range(comm.size)],
                          [probe if o == right else 0 for o in range(comm.size)], np.uint8)
    seconds = time.perf_counter() - start
    if got is None:  # (None on every rank alike)
        return None
    return probe / max(max(comm.allgather(seconds)), 1e-9)


def share_on_device(comm, pieces, segments, counts, dtype) -> list | None:
    """What every other rank sends this one, copied from its GPU: ``[o]`` a device array of
    ``counts[o]`` elements from rank ``o`` (an empty one for this rank); None on every rank where a
    rank could not expose its buffer (no room on its GPU for the copy) or a copy failed: the caller
    then sends through the host.

    Collective over ``comm`` (one node, :func:`peer_rate` not None).  ``pieces``: this rank's device
    arrays of everything it sends, written one after another into the one buffer it exposes;
    ``segments[d] = (offset, count)``: the elements of that buffer for rank ``d``, whose ``counts[me]``
    equals ``count`` (both sides derive them from the same plan).  Every rank makes the same
    collectives whatever fails.
    """
    import cupy

    dtype = np.dtype(dtype)
    me = comm.rank
    exposed = mine = None
    try:
        total = sum(int(piece.size) for piece in pieces)
        exposed = _Exposed(total * dtype.itemsize)
        buffer, at = exposed.view(total, dtype), 0
        for piece in pieces:
            buffer[at : at + piece.size] = piece.ravel()
            at += int(piece.size)
        cupy.cuda.get_current_stream().synchronize()
        mine = (exposed.handle, [int(segment[0]) * dtype.itemsize for segment in segments])
    except Exception:  # noqa: BLE001 - no room for the copy: every rank hears it and goes through the host
        if exposed is not None:
            exposed.free()
        exposed = None
    table = comm.allgather(mine)
    if any(entry is None for entry in table):
        if exposed is not None:
            exposed.free()
        return None
    received = []
    try:
        for o in range(comm.size):
            out = cupy.empty(0 if o == me else int(counts[o]), dtype=dtype)
            if out.size:
                _copy_from(table[o][0], table[o][1][me], out)
            received.append(out)
    except Exception:  # noqa: BLE001 - a copy that fails sends every rank through the host instead
        received = None
    copied = all(comm.allgather(received is not None))  # (also: every rank has copied before any frees)
    exposed.free()
    return received if copied else None
