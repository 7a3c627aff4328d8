// --stats on the GPU: everything fastapsp/reductions.py keeps of one row block,
// from one read of the block (see fastapsp/reductions_gpu.py for the launches).
//
// stats_block, grid (gx, gy), 256 threads.  Block (bx, by) owns the columns
// [2048 bx, 2048 bx + 2048) of the row block and the rows of slab by.  Warp w,
// lane l own the columns 2048 bx + 256 w + l + 32 j, j < 8: each load of a warp
// reads 32 consecutive entries of a row.  Per entry x (inf: unreachable; z = x
// when finite, 0 otherwise):
//   * row partials over the block's 2048 columns (sum of z, finite count, sum of
//     1/z over z > 0, max z), reduced over the warp by shuffles and over the
//     8 warps in shared memory, written to p_*[a * gx + bx]: stats_rows adds the
//     gx partials of a row in a fixed order (no atomics, the same sums every run);
//   * column partials in registers down all rows of the slab, one atomic per
//     column per block;
//   * the histogram of every finite z (the diagonal zeros too: the host removes
//     them, as on the NumPy path).
//
// Histogram.  base is the first bin width (a power of two), f = floor(z / base)
// the fine index.  hist holds `levels` histograms of 2^log2bins bins: level L
// counts f >> L and holds the values with f < 2^log2bins << L.  A value may be
// counted at any level from the smallest that holds it up to the final one: the
// host merges the levels by adding runs of 2^(final - L) bins, exact because
// widths are powers of two, and the counts are those of the NumPy path, whose
// width doubles while a distance falls past the last bin.  A block counts at its
// level (level_hint when it starts, raised when a value needs more), in shared
// memory for the bins below shared_bins, with global atomics for the others.
// level_hint ends as the largest level any value needed.  f >= 2^62 is not
// counted: `overflow` says so and the host refuses the result.
//
// Macros: REAL (float or double, the block's type); STATS_INTEGER when the
// distances are whole numbers and base is 1: sums in int64, f = z; ST_NO_COLS
// for undirected graphs, whose column sums are the row sums (no column partials);
// ST_PAIRS for an undirected graph's block whose entries stand for both orders
// (each pair fed once, StatsAccumulator.update(pairs=True)): column partials and
// column maxima kept, every value counted twice in the histogram; ST_NO_HIST and
// ST_NO_HARM leave those parts out, ST_EXACT_RCP takes the correctly rounded
// reciprocal for float blocks too (benchmarks/stats_kernel_bench.py).  Counting
// the shared bins once per warp and bin (__match_any_sync) was measured slower
// (docs/kernels.md).
//
// Small whole numbers.  With STATS_INTEGER, float distances below 2^23 (nearly all of them where
// float32 is exact, below 2^24, the default dtype rule) are summed and binned as 32-bit integers,
// converted by float and integer adds rather than by the conversion unit (a quarter of the issue
// rate, and four of its instructions an entry on the general path: the 64-bit conversion, the
// reciprocal and two conversions to double); the general path's 64-bit compares and shifts made up
// much of the ~85 instructions an entry took there (Nsight Compute, roadFLA; docs/kernels.md).
// ST_GENERAL_ONLY keeps the general path for every entry (benchmarks/stats_kernel_bench.py).
//
// Harmonic sums.  1/d of a float distance is the single-precision approximation
// refined by one Newton step in double: relative error below 2^-45, a few
// instructions instead of the correctly rounded double reciprocal, which cost more
// than the rest of the entry's work.  Double blocks keep the rounded reciprocal.
#include "common.cuh"

#define ST_THREADS 256
#define ST_WARPS (ST_THREADS / 32)
#define ST_CPT 8                            // columns per thread
#define ST_TILE_COLS (ST_THREADS * ST_CPT)  // columns per block
#define ST_BATCH 8                          // rows whose partials are reduced together
#include "stats_common.cuh"

// (Naming a block count in the launch bounds, even 1, let the compiler take 120 registers instead of
// 78: two blocks an SM instead of three, 20% slower; a cap of 64 registers for four was slower too.)
extern "C" __global__ void __launch_bounds__(ST_THREADS)
stats_block(const REAL* X, long long ld, int r, long long w, long long col0, int rows_per_slab, double inv_base,
            int log2bins, int shared_bins, int levels, int* level_hint, unsigned long long* hist,
            unsigned long long* overflow, sum_t* p_sum, int* p_cnt, double* p_harm, REAL* p_max, sum_t* col_sum,
            unsigned long long* col_reach, double* col_harm, double* col_max)
{
    extern __shared__ unsigned int sh_hist[];
    __shared__ sum_t sh_rs[2][ST_BATCH][ST_WARPS];
    __shared__ int sh_rc[2][ST_BATCH][ST_WARPS];
    __shared__ double sh_rh[2][ST_BATCH][ST_WARPS];
    __shared__ REAL sh_rm[2][ST_BATCH][ST_WARPS];
    __shared__ int sh_want;

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const long long bins = 1ll << log2bins;
    for (int i = tid; i < shared_bins; i += ST_THREADS) sh_hist[i] = 0u;
    if (tid == 0) sh_want = *reinterpret_cast<volatile int*>(level_hint);
    __syncthreads();
    int level = sh_want;
    int shift = min(level, 31);  // of the small-number path (z < 2^23: 31 is as good as any larger one)
    const bool whole = ((long long)blockIdx.x + 1) * ST_TILE_COLS <= w;  // no column past w: no checks

    const long long cbase = (long long)blockIdx.x * ST_TILE_COLS + warp * (32 * ST_CPT) + lane;
    const int a0 = blockIdx.y * rows_per_slab;
    const int a1 = min(r, a0 + rows_per_slab);
    sum_t csum[ST_CPT];
    int ccnt[ST_CPT];
    double charm[ST_CPT];
#ifdef ST_PAIRS
    REAL cmax[ST_CPT];
#endif
#pragma unroll
    for (int j = 0; j < ST_CPT; ++j) {
        csum[j] = 0;
        ccnt[j] = 0;
        charm[j] = 0.0;
#ifdef ST_PAIRS
        cmax[j] = (REAL)0;
#endif
    }

    for (int a = a0; a < a1; ++a) {
        const REAL* row = X + (long long)a * ld;
        REAL x[ST_CPT];
        if (whole) {
#pragma unroll
            for (int j = 0; j < ST_CPT; ++j) x[j] = row[cbase + 32 * j];
        } else {
#pragma unroll
            for (int j = 0; j < ST_CPT; ++j) {
                const long long c = cbase + 32 * j;
                x[j] = c < w ? row[c] : INF_R;
            }
        }
        sum_t rs = 0;
        int rc = 0;
        double rh = 0.0;
        REAL rm = (REAL)0;
        bool general = true;
#if defined(STATS_INTEGER) && !defined(ST_GENERAL_ONLY)
        // Whole-number float distances below 2^23 (nearly every distance of an exact float32 run): an entry's
        // sums and bin in 32-bit integers, with no 64-bit conversion or compare (see "Small whole
        // numbers" above).  A thread whose 8 entries of the row hold a larger finite value takes the
        // general path for them.
        if (sizeof(REAL) == 4) {
            REAL top = (REAL)0;
#pragma unroll
            for (int j = 0; j < ST_CPT; ++j) top = x[j] < INF_R ? st_max(top, x[j]) : top;
            if (top < (REAL)ST_SMALL_LIMIT) {
                general = false;
                rm = top;
                unsigned int s32 = 0u;  // at most 8 (2^23 - 1)
                double h[2] = {0.0, 0.0};  // two chains of additions instead of one
#pragma unroll
                for (int j = 0; j < ST_CPT; ++j) {
                    const REAL v = x[j];
                    const bool finite = v < INF_R;
                    // v + 2^23 holds v in its low mantissa bits (exact below 2^23): no conversion unit
                    const unsigned int z = finite ? __float_as_uint((float)v + 8388608.0f) - 0x4B000000u : 0u;
                    s32 += z;
                    rc += finite;
#ifndef ST_NO_COLS
                    csum[j] += z;
                    ccnt[j] += finite;
#endif
#ifndef ST_NO_HARM
                    if (z) {
                        const double inv = st_recip_small((float)v, z);
                        h[j & 1] += inv;
#ifndef ST_NO_COLS
                        charm[j] += inv;
#endif
                    }
#endif
#ifdef ST_PAIRS
                    cmax[j] = finite ? st_max(cmax[j], v) : cmax[j];
#endif
#ifndef ST_NO_HIST
                    if (finite)
                        st_count_small(z, shift, level, log2bins, shared_bins, levels, sh_hist, &sh_want, hist,
                                       overflow);
#endif
                }
                rs = (sum_t)s32;
                rh = h[0] + h[1];
            }
        }
#endif
        if (general) {
#pragma unroll
        for (int j = 0; j < ST_CPT; ++j) {
            const REAL v = x[j];
            long long f = ST_NOT_COUNTED;
            if (v < INF_R) {  // finite (distances are never NaN)
                sum_t s;
#ifdef STATS_INTEGER
                f = v < (REAL)ST_FINE_LIMIT ? (long long)v : -1ll;
                s = f;
#else
                const double zd = (double)v;
                const double q = zd * inv_base;
                f = q < ST_FINE_LIMIT ? (long long)q : -1ll;  // truncation is floor for q >= 0
                s = zd;
#endif
                rs += s;
                rc += 1;
#ifndef ST_NO_COLS
                csum[j] += s;
                ccnt[j] += 1;
#endif
#ifndef ST_NO_HARM
                if (v > (REAL)0) {  // 1/d over positive distances, as networkx's harmonic centrality
                    const double inv = st_recip(v);
                    rh += inv;
#ifndef ST_NO_COLS
                    charm[j] += inv;
#endif
                }
#endif
                rm = st_max(rm, v);
#ifdef ST_PAIRS
                cmax[j] = st_max(cmax[j], v);
#endif
            }
#ifndef ST_NO_HIST
            if (f != ST_NOT_COUNTED)
                st_count(f, level, log2bins, shared_bins, levels, sh_hist, &sh_want, hist, overflow, ST_WEIGHT);
#endif
        }
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            rs += __shfl_xor_sync(FULL_MASK, rs, o);
            rc += __shfl_xor_sync(FULL_MASK, rc, o);
            rh += __shfl_xor_sync(FULL_MASK, rh, o);
            rm = st_max(rm, __shfl_xor_sync(FULL_MASK, rm, o));
        }
        const int k = a - a0;
        const int slot = k % ST_BATCH, buf = (k / ST_BATCH) & 1;
        if (lane == 0) {
            sh_rs[buf][slot][warp] = rs;
            sh_rc[buf][slot][warp] = rc;
            sh_rh[buf][slot][warp] = rh;
            sh_rm[buf][slot][warp] = rm;
        }
        if (slot == ST_BATCH - 1 || a == a1 - 1) {  // the same for every thread of the block
            __syncthreads();  // the batch's warp partials are written; no value is being counted
            const int want = sh_want;
            __syncthreads();  // every thread has read sh_want before the next batch may raise it
            if (tid <= slot) {
                // Buffer `buf` is written again two batches later, after two more barriers.
                sum_t s = 0;
                int c = 0;
                double h = 0.0;
                REAL m = (REAL)0;
#pragma unroll
                for (int u = 0; u < ST_WARPS; ++u) {
                    s += sh_rs[buf][tid][u];
                    c += sh_rc[buf][tid][u];
                    h += sh_rh[buf][tid][u];
                    m = st_max(m, sh_rm[buf][tid][u]);
                }
                const long long p = (long long)(a - slot + tid) * gridDim.x + blockIdx.x;
                p_sum[p] = s;
                p_cnt[p] = c;
                p_harm[p] = h;
                p_max[p] = m;
            }
            if (want > level)  // a value needed a wider bin: move the shared bins to their level, go up
                st_raise_level<ST_THREADS>(sh_hist, shared_bins, hist, bins, level_hint, want, level, shift);
        }
    }

    __syncthreads();
    st_flush_bins<ST_THREADS>(sh_hist, shared_bins, hist, bins, level, false);
#pragma unroll
    for (int j = 0; j < ST_CPT; ++j) {
        const long long c = cbase + 32 * j;
        if (c < w && ccnt[j] > 0) {
            atomic_add_sum(col_sum + col0 + c, csum[j]);
            atomicAdd(col_reach + col0 + c, (unsigned long long)ccnt[j]);
            if (charm[j] != 0.0) atomicAdd(col_harm + col0 + c, charm[j]);
#ifdef ST_PAIRS
            // Non-negative doubles order as their bit patterns read as unsigned integers.
            atomicMax(reinterpret_cast<unsigned long long*>(col_max + col0 + c),
                      (unsigned long long)__double_as_longlong((double)cmax[j]));
#endif
        }
    }
}

// Adds the gx partials of every row, in order, to the accumulators of its vertex.
// Grid: ceil(r / 8) blocks of 256 threads, one warp a row.  The rows of one
// block of the distance matrix are distinct vertices, so no two warps share one.
extern "C" __global__ void __launch_bounds__(ST_THREADS)
stats_rows(const long long* rows, int r, int gx, const sum_t* p_sum, const int* p_cnt, const double* p_harm,
           const REAL* p_max, sum_t* row_sum, long long* row_reach, double* row_harm, double* row_max)
{
    const int a = blockIdx.x * ST_WARPS + (threadIdx.x >> 5);
    const int lane = threadIdx.x & 31;
    if (a >= r) return;
    sum_t s = 0;
    long long c = 0;
    double h = 0.0;
    REAL m = (REAL)0;
    for (int t = lane; t < gx; t += 32) {
        const long long p = (long long)a * gx + t;
        s += p_sum[p];
        c += p_cnt[p];
        h += p_harm[p];
        m = st_max(m, p_max[p]);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        s += __shfl_xor_sync(FULL_MASK, s, o);
        c += __shfl_xor_sync(FULL_MASK, c, o);
        h += __shfl_xor_sync(FULL_MASK, h, o);
        m = st_max(m, __shfl_xor_sync(FULL_MASK, m, o));
    }
    if (lane == 0) {
        const long long v = rows[a];
        row_sum[v] += s;
        row_reach[v] += c;
        row_harm[v] += h;
        row_max[v] = fmax(row_max[v], (double)m);
    }
}
