"""Row blocks from the GPU to a host sink, overlapped with the next block's work (:class:`HostWriter`)."""

from __future__ import annotations

import numpy as np

__all__ = ["HostWriter"]


class HostWriter:
    """Brings device blocks to the sink while the GPU goes on with the next block.

    Two pinned host buffers of at most ``CHUNK_BYTES`` (or one row) each: a
    block is copied in chunks of whole rows, each into a free buffer on a copy
    stream, and a background thread waits for that copy and hands the buffer
    to the sink, while the next chunk is copied into the other buffer.  So a
    large block (the 1,000 rows of ``--sources``: 4 GB) needs no pinned buffer
    of its size, whose page-locking alone would cost more than the copy.  The
    device block is kept alive until its last chunk is copied.  On the host
    path, and for a sink on the device (:class:`fastapsp.sink.DeviceSink`),
    the block goes to the sink directly.
    """

    CHUNK_BYTES = 64 << 20

    def __init__(self, xp, sink, dtype) -> None:
        self.xp, self.sink, self.dtype = xp, sink, np.dtype(dtype)
        self.slots: list = []
        if xp is not np and sink.needs_host:
            from concurrent.futures import ThreadPoolExecutor

            self.stream = xp.cuda.Stream(non_blocking=True)
            self.thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fastapsp-d2h")
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
        if self.xp is np or self.sink.on_device:  # the sink takes the block where it is
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
                slot["buffer"] = self._empty_pinned(
                    self.buffer_elements(last - first, chunk.shape[1], chunk.dtype.itemsize))
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

    def _empty_pinned(self, size: int) -> np.ndarray:
        """A NumPy array of ``size`` elements in page-locked memory (``cupyx.empty_pinned`` without
        importing ``cupyx``, whose package imports SciPy's sparse module)."""
        memory = self.xp.cuda.alloc_pinned_memory(size * self.dtype.itemsize)
        return np.ndarray((size,), dtype=self.dtype, buffer=memory)

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

