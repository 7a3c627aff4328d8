"""The CuPy path of :class:`fastapsp.reductions.StatsAccumulator`: one fused kernel per row block.

``kernels/reduce_stats.cu`` reads a row block once and adds its row, column and
histogram parts to the accumulators on the device; nothing is copied back and
nothing waits for the GPU until :meth:`GpuStats.collapse` at the end of the run.
The histogram is kept at several widths at once (``levels`` x ``bins``, see the
kernel's header) and merged to the final width there, giving the counts of the
NumPy path, whose width doubles while a distance falls past the last bin.

The kernels run on a stream of their own (high priority), so the reduction of
block p overlaps the min-plus product of block p + 1: the reduction is bound by
memory bandwidth, the product mostly by arithmetic.  The block is kept alive
until the next update, which makes the compute stream wait for the reduction
before the block's memory can be handed out again.  ``GpuStats(overlap=False)``
runs the kernels on the compute stream instead (for comparison).
"""

from __future__ import annotations

import math

import numpy as np

from .kernels import get_kernel

__all__ = ["GpuStats", "kernel_supports", "product_supports", "PRODUCT_MAX_K"]

_TILE_COLS = 2048  # columns per block of stats_block (ST_TILE_COLS)
_THREADS = 256
_SHARED_BYTES = 44 * 1024  # shared-memory bins per block (the rest of 48 KiB holds row partials)
_FINE_BITS = 62  # fine indices below 2**62 are counted (ST_FINE_LIMIT)
_MIN_SLAB_ROWS = 64  # rows per block at least: the shared bins are cleared and flushed once per block


def kernel_supports(acc, block) -> bool:
    """Whether the kernel handles this accumulator and block (float32/float64; base width 1 for whole numbers)."""
    return block.dtype in (np.float32, np.float64) and (not acc.integer or acc.base_width == 1.0)


def _options(integer: bool, directed: bool, *, pairs: bool) -> tuple:
    """Compiler options of ``reduce_stats.cu`` for these distances and blocks."""
    if pairs:  # entries stand for both orders (update(pairs=True)): column sums and maxima kept
        return (("-DSTATS_INTEGER",) if integer else ()) + ("-DST_PAIRS",)
    # Undirected graphs: a column's sums are its row's (StatsAccumulator.finalize), so none are kept.
    return (("-DSTATS_INTEGER",) if integer else ()) + (() if directed else ("-DST_NO_COLS",))


def kernel_variants() -> list[tuple]:
    """The kernel modules of the fused statistics (:func:`fastapsp.stages._cuda.kernel_variants`' form)."""
    blocks = [("reduce_stats.cu", "stats_block", real, "int32", _options(integer, directed, pairs=pairs))
              for real in ("float32", "float64") for integer in (False, True)
              for directed, pairs in ((False, False), (True, False), (False, True))]
    return blocks + [("min_plus_stats.cu", "min_plus_stats", "float32", "int32", wide) for wide in ((), _WIDE)]


# The statistics of a product made and reduced in one kernel (min_plus_stats.cu), for inner dimensions up to
# PRODUCT_MAX_K (from 33 on with the build for 48, as min_plus_smallk_u16.cu): on one H100 it took 10-20%
# less time than the product stored and then reduced on roadFLA balls, 33-58% on roadNY, at K = 8 to 48
# (docs/kernels.md; benchmarks/stats_kernel_bench.py --product).
PRODUCT_MAX_K = 48
_WIDE = ("-DSKU_MAXK=48",)
_PRODUCT_COLS = 512  # columns a block of min_plus_stats.cu covers (SKU_CT tiles of SKU_COLS)
_PRODUCT_ROWS = 64  # rows a block covers (MP_TILE)
_PRODUCT_SHARED_BINS = 4096  # the histogram bins a block counts in shared memory
_PARTIAL_BYTES = 1 << 26  # row partials of one launch at most (24 bytes a row and block of columns)


def product_supports(acc, a, b) -> bool:
    """Whether :meth:`GpuStats.update_product` reduces ``a (x) b`` in one kernel: whole-number float32
    distances with a first bin width of 1, and an inner dimension from 1 to :data:`PRODUCT_MAX_K`."""
    return (acc.integer and acc.base_width == 1.0 and not acc.directed and a.dtype == np.float32
            and b.dtype == np.float32 and 1 <= a.shape[1] <= PRODUCT_MAX_K and a.shape[1] == b.shape[0])


def _levels(bins: int, base: float, max_distance: float | None) -> int:
    """Histogram levels needed for distances up to ``max_distance`` (all fine indices below 2**62 when unknown)."""
    log2bins = bins.bit_length() - 1
    top = _FINE_BITS - log2bins + 1
    if max_distance is None or not math.isfinite(max_distance):
        return top
    fine = max(1.0, float(max_distance) / base)
    if fine >= 2.0**_FINE_BITS:
        return top
    highest = math.floor(math.log2(fine))
    return int(min(top, max(1, highest - log2bins + 1) + 2))  # one level of margin for rounded sums


class GpuStats:
    """Device state of the fused kernel: the histogram levels, the level reached and the overflow count.

    Parameters
    ----------
    acc : StatsAccumulator
        The accumulator whose per-vertex arrays (CuPy) the kernel adds to.
    max_distance : float, optional
        An upper bound on the distances (sizes the histogram levels).
    overlap : bool
        Run the kernels on a stream of their own, overlapping the next block's
        work (default), or on the compute stream.
    """

    def __init__(self, acc, max_distance: float | None = None, *, overlap: bool = True) -> None:
        import cupy as cp

        self.acc = acc
        self.cp = cp
        self.log2bins = acc.bins.bit_length() - 1
        self.levels = _levels(acc.bins, acc.base_width, max_distance)
        self.hist = cp.zeros((self.levels, acc.bins), dtype=cp.uint64)
        self.level = cp.zeros(1, dtype=cp.int32)
        self.overflow = cp.zeros(1, dtype=cp.uint64)
        self.shared_bins = int(min(acc.bins, _SHARED_BYTES // 4))
        self.options = _options(acc.integer, acc.directed, pairs=False)
        self.pair_options = _options(acc.integer, acc.directed, pairs=True)
        self.sms = cp.cuda.Device().attributes["MultiProcessorCount"]
        self._rows = (None, None)
        self.stream = None
        if overlap:
            # CUDA clamps a priority past the device's range to its highest (-5 on current GPUs).
            self.stream = cp.cuda.Stream(non_blocking=True, priority=-100)
        self._held = None  # (block, event): the last block, until its reduction is ordered before reuse

    def device_rows(self, rows, rows_host: np.ndarray):
        """The row ids on the device: a run of consecutive ids made there, other ids copied; the last host
        array's device form is reused (a component's column chunks)."""
        if type(rows).__module__.startswith("cupy"):
            return rows.astype(self.cp.int64, copy=False)
        if self._rows[0] is rows:
            return self._rows[1]
        n = rows_host.size
        if n > 1 and rows_host[-1] - rows_host[0] == n - 1 and bool(np.all(np.diff(rows_host) == 1)):
            # Consecutive ids (each pair once: a component's rows are a run): made on the device, not copied.
            dev = self.cp.arange(int(rows_host[0]), int(rows_host[0]) + n, dtype=self.cp.int64)
        else:
            dev = self.cp.asarray(rows_host)
        self._rows = (rows, dev)
        return dev

    def update(self, rows, rows_host, column_start: int, block, *, pairs: bool = False) -> None:
        """Add ``block[a, j] = d(rows[a], column_start + j)`` (launches only; the host does not wait);
        with ``pairs`` each entry stands for both orders (StatsAccumulator.update)."""
        if self.stream is None:
            self._launch(self.device_rows(rows, rows_host), column_start, block, pairs)
            return
        compute = self.cp.cuda.get_current_stream()
        self.stream.wait_event(compute.record())  # the block is complete
        with self.stream:
            self._launch(self.device_rows(rows, rows_host), column_start, block, pairs)
        done = self.stream.record()
        self.release()
        self._held = (block, done)

    def release(self) -> None:
        """Order the compute stream after the reduction of the held block, then let the block go."""
        if self._held is not None:
            self.cp.cuda.get_current_stream().wait_event(self._held[1])
            self._held = None

    def after_kernels(self) -> None:
        """Order the compute stream after every reduction launched so far."""
        self.release()
        if self.stream is not None:
            self.cp.cuda.get_current_stream().wait_event(self.stream.record())

    def _launch(self, rows_dev, column_start: int, block, pairs: bool = False) -> None:
        cp, acc = self.cp, self.acc
        r, w = block.shape
        item = block.itemsize
        if not (w <= 1 or block.strides[1] == item) or block.strides[0] < 0 or block.strides[0] % item:
            block = cp.ascontiguousarray(block)
        ld = block.strides[0] // item if r > 1 else max(w, 1)
        gx = -(-w // _TILE_COLS)
        gy = max(1, min(-(-r // _MIN_SLAB_ROWS), -(-4 * self.sms // gx), 65535))
        slab = -(-r // gy)
        gy = -(-r // slab)
        sum_type = cp.int64 if acc.integer else cp.float64
        p_sum = cp.empty((r, gx), dtype=sum_type)
        p_cnt = cp.empty((r, gx), dtype=cp.int32)
        p_harm = cp.empty((r, gx), dtype=cp.float64)
        p_max = cp.empty((r, gx), dtype=block.dtype)
        main = get_kernel("reduce_stats.cu", "stats_block", block.dtype,
                          options=self.pair_options if pairs else self.options)
        main((gx, gy), (_THREADS,),
             (block, np.int64(ld), np.int32(r), np.int64(w), np.int64(column_start), np.int32(slab),
              np.float64(1.0 / acc.base_width), np.int32(self.log2bins), np.int32(self.shared_bins),
              np.int32(self.levels), self.level, self.hist, self.overflow, p_sum, p_cnt, p_harm, p_max,
              acc.col_sum, acc.col_reach, acc.col_harm, acc.col_max),
             shared_mem=4 * self.shared_bins)
        rows_kernel = get_kernel("reduce_stats.cu", "stats_rows", block.dtype, options=self.options)
        rows_kernel((-(-r // (_THREADS // 32)),), (_THREADS,),
                    (rows_dev, np.int32(r), np.int32(gx), p_sum, p_cnt, p_harm, p_max, acc.row_sum, acc.row_reach,
                     acc.row_harm, acc.row_max))

    def update_product(self, rows, rows_host, column_start: int, a, b) -> None:
        """Add ``min_k a[i, k] + b[k, j] = d(rows[i], column_start + j)``, each entry for both orders (an
        undirected graph's pairs, :meth:`update` with ``pairs``), made and reduced by one kernel
        (``min_plus_stats.cu``) with no block stored: :func:`product_supports` must hold.

        Launched on the compute stream after every reduction launched so far (they add to the same
        rows); the host does not wait.
        """
        cp, acc = self.cp, self.acc
        from .stages._cuda import MAX_GRID_Y, row_major

        r, k = a.shape
        w = b.shape[1]
        if r == 0 or w == 0:
            return
        self.after_kernels()
        a_, lda = row_major(a, np.float32)
        b_, ldb = row_major(b, np.float32)
        rows_dev = self.device_rows(rows, rows_host)
        wide = k > 32
        main = get_kernel("min_plus_stats.cu", "min_plus_stats", np.float32, options=_WIDE if wide else ())
        collect = get_kernel("reduce_stats.cu", "stats_rows", np.float32, options=self.pair_options)
        shared_bins = int(min(acc.bins, _PRODUCT_SHARED_BINS))
        smem = _product_shared_bytes(wide) + 4 * shared_bins
        if main.max_dynamic_shared_size_bytes < smem:
            main.max_dynamic_shared_size_bytes = smem
        span = MAX_GRID_Y * _PRODUCT_COLS
        for c0 in range(0, w, span):
            c1 = min(w, c0 + span)
            gy = -(-(c1 - c0) // _PRODUCT_COLS)
            step = max(_PRODUCT_ROWS, _PARTIAL_BYTES // (24 * gy) // _PRODUCT_ROWS * _PRODUCT_ROWS)
            for a0 in range(0, r, step):
                a1 = min(r, a0 + step)
                m = a1 - a0
                p_sum = cp.empty((m, gy), dtype=cp.int64)
                p_cnt = cp.empty((m, gy), dtype=cp.int32)
                p_harm = cp.empty((m, gy), dtype=cp.float64)
                p_max = cp.empty((m, gy), dtype=cp.float32)
                main((-(-m // _PRODUCT_ROWS), gy), (_THREADS,),
                     (a_[a0:a1], np.int64(lda), b_[:, c0:c1], np.int64(ldb), np.int32(m), np.int32(c1 - c0),
                      np.int32(k), np.int32(self.log2bins), np.int32(shared_bins), np.int32(self.levels), self.level,
                      self.hist, self.overflow, p_sum, p_cnt, p_harm, p_max, np.int64(column_start + c0),
                      acc.col_sum, acc.col_reach, acc.col_harm, acc.col_max, np.uint64(0)),
                     shared_mem=smem)
                collect((-(-m // (_THREADS // 32)),), (_THREADS,),
                        (rows_dev[a0:a1], np.int32(m), np.int32(gy), p_sum, p_cnt, p_harm, p_max, acc.row_sum,
                         acc.row_reach, acc.row_harm, acc.row_max))

    def level_reached(self) -> int:
        """The widest level any counted distance needed (waits for the GPU)."""
        self.release()
        if self.stream is not None:
            self.stream.synchronize()
        if int(self.overflow.get()[0]):
            raise ValueError(f"stats: {int(self.overflow.get()[0])} distances are at least 2**62 histogram bins "
                             f"of width {self.acc.base_width}; the histogram cannot hold them")
        return int(self.level.get()[0])

    def collapse(self, level: int):
        """The histogram at ``level``: bin i holds the levels' bins that lie inside it (int64, on the device)."""
        cp = self.cp
        bins = self.acc.bins
        out = cp.zeros(bins, dtype=cp.int64)
        for L in range(min(level, self.levels - 1) + 1):
            shift = level - L
            part = self.hist[L].astype(cp.int64)
            if shift >= self.log2bins:
                out[0] += part.sum()
            else:
                out[: bins >> shift] += part.reshape(bins >> shift, 1 << shift).sum(axis=1)
        return out


def _product_shared_bytes(wide: bool) -> int:
    """Dynamic shared memory of min_plus_stats.cu less its bins: the packed operands
    (``SmallKU16Smem``: A's 64 + 4 columns and two B tiles of 64 column pairs, SKU_MAXK = 32 or 48 rows
    each) and a tile's column partials per warp (``StatsColumns``: three 32-bit fields and a double)."""
    maxk = 48 if wide else 32
    operands = 4 * maxk * (_PRODUCT_ROWS + 4) + 4 * 2 * maxk * 64
    columns = (_THREADS // 32) * 128 * (3 * 4 + 8)
    return operands + columns
