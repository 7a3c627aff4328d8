// The statistics of a min-plus product as it is made, the product never stored: --stats of an
// undirected graph with each pair once, the interior rows of a component through its boundary
// rows, for the columns past the component's own (see fastapsp/reductions_gpu.py).
//
// The product is min_plus_smallk_u16.cu's (minplus_smallk_u16.cuh): a block keeps its 64 x K
// slice of A in shared memory and sweeps SKU_CT tiles of 128 columns in packed 16-bit arithmetic,
// K <= SKU_MAXK (32, or 48 in a build of its own).  A block whose operands do not fit the encoding (a
// distance above 16,383) computes its entries from there on in float32, each from global memory:
// exact, only slower; the host sends runs with many such distances the stored way.
//
// Instead of storing its 4 x 8 entries of a tile, a thread adds them to what reduce_stats.cu's
// stats_block keeps for a block of pairs (ST_PAIRS: every entry stands for d(u, v) and d(v, u)):
//   * row partials over the block's 512 columns (sum, finite count, sum of 1/z, max), reduced over
//     the 16 threads of a row by shuffles and written to p_*[row * gridDim.y + blockIdx.y], which
//     stats_rows adds in order (the same sums every run);
//   * column partials over the block's 64 rows, column by column: a thread's 4 rows, the two row
//     groups of a warp by a shuffle, the 8 warps in shared memory, then one atomic per column and field
//     (the harmonic sums' double atomics add in the blocks' order, so their last bits can vary by run);
//   * the histogram, each entry counted twice, at the block's level: the shared bins below
//     shared_bins, global atomics above, the level raised after a tile as stats_block does.
// Only whole-number distances (STATS_INTEGER, first bin width 1) below 2^24 come here (float32 is
// exact for them).
//
// Two entries an instruction.  The packed pairs of a tile become x = d + 1 where a path exists and 0
// where none does (one add and a signed max with 0 a pair: a sum with +inf wraps negative), so that
// sums, finite counts and maxima run on both halves at once (__dp2a_lo adds a pair's halves,
// __vminu2(x, 1) counts them, __vimax3_u16x2 takes maxima) and d = x - 1 is recovered from the
// counts at the end.  Only the reciprocals and the histogram take one entry at a time: a warp whose
// largest value of the tile falls in the shared bins (nearly always) counts straight into them, the
// others count each value as st_count_small decides (docs/kernels.md has the instruction counts).
// Benchmark variants (benchmarks/stats_kernel_bench.py --product): MS_NO_HARM and MS_NO_HIST leave those
// parts out.  Slower, and not kept: a thread's runs of equal bins counted with one atomic
// each, 1/v of distances below 1,024 read from a table in shared memory, v made a float by an add
// instead of the conversion unit (docs/kernels.md).
// Grid: (ceil(M / 64), ceil(N / 512)), 256 threads; dynamic shared memory
// sizeof(SmallKU16Smem) + sizeof(StatsColumns) + 4 * shared_bins bytes.
#undef REAL
#define REAL float
#ifndef STATS_INTEGER
#define STATS_INTEGER
#endif
#ifndef ST_PAIRS
#define ST_PAIRS
#endif
#include "common.cuh"
#include "minplus_tile.cuh"
#include "minplus_tile_u16.cuh"
#include "minplus_smallk.cuh"
#include "minplus_smallk_u16.cuh"
#include "stats_common.cuh"

#define MS_WARPS (MP_THREADS / 32)
#define MS_UNREACHED 0xFFFFFFFFu  // an entry with no path
#define MS_ONES 0x00010001u       // 1 in both halves of a packed pair

struct StatsColumns {  // one tile's column partials, per warp, of x = d + 1 (finite) or 0 (no path)
    unsigned int sum[MS_WARPS][SKU_COLS];    // sum of x
    unsigned int count[MS_WARPS][SKU_COLS];  // finite entries
    unsigned int max[MS_WARPS][SKU_COLS];    // largest x
    double harm[MS_WARPS][SKU_COLS];
};

// Entry (row r of the block's rows, column c) in float32 from global memory, for a block whose operands
// do not fit the 16-bit encoding: MS_UNREACHED past the operands or where no path exists.
__device__ __noinline__ unsigned int float_entry(const float* A, long long lda, const float* B, long long ldb,
                                                 long long r0, int rows, int r, long long c, int N, int K)
{
    if (r >= rows || c >= N) return MS_UNREACHED;
    float v = INF_R;
#pragma unroll 1
    for (int k = 0; k < K; ++k) v = fminf(v, A[(r0 + r) * lda + k] + B[(long long)k * ldb + c]);
    return v < INF_R ? (unsigned int)v : MS_UNREACHED;
}

// Halfword h (0 low, 1 high) of a packed pair.
__device__ __forceinline__ unsigned int ms_half(unsigned int w, int h) { return h ? w >> 16 : w & 0xFFFFu; }

// 1/(x - 1) for x > 1, added to the row's and the column's harmonic sums (x <= 1: a zero distance or none).
__device__ __forceinline__ void ms_harm(unsigned int x, double& row, double& col)
{
#ifndef MS_NO_HARM
    const unsigned int v = x - 1u;
    const double inv = st_recip_small((float)v, v);
    if (x > 1u) {
        row += inv;
        col += inv;
    }
#endif
}

// A column's partials over the warp's two row groups (lanes l and l ^ 16), into the shared tile (lanes < 16).
__device__ __forceinline__ void ms_column_out(StatsColumns& cols_sm, int warp, int lane, int col, unsigned int s,
                                              unsigned int c, unsigned int m, double h)
{
    s += __shfl_xor_sync(FULL_MASK, s, 16);
    c += __shfl_xor_sync(FULL_MASK, c, 16);
    m = max(m, __shfl_xor_sync(FULL_MASK, m, 16));
    h += __shfl_xor_sync(FULL_MASK, h, 16);
    if (lane < 16) {
        cols_sm.sum[warp][col] = s;
        cols_sm.count[warp][col] = c;
        cols_sm.max[warp][col] = m;
        cols_sm.harm[warp][col] = h;
    }
}

#ifndef MS_MIN_BLOCKS  // resident blocks per SM asked of the register allocator (docs/kernels.md)
#define MS_MIN_BLOCKS 3
#endif

extern "C" __global__ void __launch_bounds__(MP_THREADS, MS_MIN_BLOCKS)
min_plus_stats(const float* A, long long lda, const float* B, long long ldb, int M, int N, int K, int log2bins,
               int shared_bins, int levels, int* level_hint, unsigned long long* hist, unsigned long long* overflow,
               long long* p_sum, int* p_cnt, double* p_harm, float* p_max, long long col0, long long* col_sum,
               unsigned long long* col_reach, double* col_harm, double* col_max, unsigned int* fallbacks)
{
    extern __shared__ __align__(16) unsigned char ms_shared[];
    SmallKU16Smem& sm = *reinterpret_cast<SmallKU16Smem*>(ms_shared);
    StatsColumns& cols_sm = *reinterpret_cast<StatsColumns*>(ms_shared + sizeof(SmallKU16Smem));
    unsigned int* sh_hist = reinterpret_cast<unsigned int*>(ms_shared + sizeof(SmallKU16Smem) + sizeof(StatsColumns));
    __shared__ int sh_want;

    const int t = threadIdx.x, tx = t & 15, ty = t >> 4, lane = t & 31, warp = t >> 5;
    const long long r0 = (long long)blockIdx.x * MP_TILE;
    const long long first = (long long)blockIdx.y * SKU_CT * SKU_COLS;
    const int rows = (int)min((long long)MP_TILE, M - r0);
    const int K4 = (K + 3) & ~3;
    const long long bins = 1ll << log2bins;
    bool bad = false;

    for (int i = t; i < shared_bins; i += MP_THREADS) sh_hist[i] = 0u;
    if (t == 0) sh_want = *reinterpret_cast<volatile int*>(level_hint);
    stage_a_u16(sm, A, lda, r0, rows, K, bad);
    unsigned int rb[SKU_MAXK / 4];
    fetch_b_u16(rb, B, ldb, N, K, first, bad);
    __syncthreads();  // sh_want and the cleared bins
    int level = sh_want;
    int shift = min(level, 31);

    // A thread's row partials over its columns of every tile, of x = d + 1 (finite) or 0: sum of x (at
    // most 32 entries below 2^24 + 1: 32 bits), finite count (two halves, added at the end), largest x.
    unsigned int rsum[4], rfin[4], rmax[4];
    double rharm[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        rsum[i] = rfin[i] = rmax[i] = 0u;
        rharm[i] = 0.0;
    }
    bool fallback = false;

    for (int tile = 0; tile < SKU_CT; ++tile) {
        const long long c0 = first + (long long)tile * SKU_COLS;
        if (c0 >= N) break;  // the same for the whole block
        const int buf = tile & 1;
        if (!fallback) store_b_u16(sm, buf, rb, K4);
        // One barrier a tile (min_plus_smallk_u16.cu); it also says whether an operand staged so far did not fit.
        if (__syncthreads_or(bad) && !fallback) {
            fallback = true;
            if (fallbacks != nullptr && t == 0) atomicAdd(fallbacks, 1u);
        }
        if (!fallback) {
            if (tile + 1 < SKU_CT && c0 + SKU_COLS < N) fetch_b_u16(rb, B, ldb, N, K, c0 + SKU_COLS, bad);
            unsigned int acc[4][4];
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int p = 0; p < 4; ++p) acc[i][p] = 0xFFFFFFFFu;
            by_k4(K4, [&](auto steps) { smallk_sweep_u16<decltype(steps)::value>(acc, sm, buf, tx, ty); });
            // Pair (i, p): row 4 ty + i, columns c0 + 8 tx + 2 p (low half) and + 1 (high half).  Each half
            // becomes x = d + 1, or 0 where there is no path (d >= U16_INF): one add and a signed max with 0
            // (a sum of +inf wraps negative), so that sums, counts and maxima take two entries an instruction.
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int p = 0; p < 4; ++p) acc[i][p] = __viaddmax_s16x2_relu(acc[i][p], MS_ONES, 0u);
            unsigned int top = 0u;  // the thread's largest x of the tile
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const unsigned int m2 = __vmaxu2(__vimax3_u16x2(acc[i][0], acc[i][1], acc[i][2]), acc[i][3]);
                const unsigned int m = max(m2 & 0xFFFFu, m2 >> 16);
                rmax[i] = max(rmax[i], m);
                top = max(top, m);
#pragma unroll
                for (int p = 0; p < 4; ++p) {
                    rsum[i] = __dp2a_lo(acc[i][p], 0x0101u, rsum[i]);  // x of both halves
                    rfin[i] += __vminu2(acc[i][p], MS_ONES);           // 1 in a half with a path
                }
            }
#ifndef MS_NO_HIST
            // Every x > 0 is counted as d = x - 1: straight into the shared bins where the warp's largest value
            // falls in them (nearly always: in the loop below), else each value as st_count_small decides.
            const bool near = top == 0u || ((top - 1u) >> shift) < (unsigned int)shared_bins;
            const bool fast = __all_sync(FULL_MASK, near);
            if (!fast) {
#pragma unroll 1
                for (int j = 0; j < 8; ++j) {
#pragma unroll
                    for (int i = 0; i < 4; ++i) {
                        const int p = j >> 1;
                        const unsigned int w = p == 0 ? acc[i][0] : p == 1 ? acc[i][1] : p == 2 ? acc[i][2] : acc[i][3];
                        const unsigned int x = ms_half(w, j & 1);
                        if (x)
                            st_count_small(x - 1u, shift, level, log2bins, shared_bins, levels, sh_hist, &sh_want,
                                           hist, overflow);
                    }
                }
            }
#endif
            // Column partials over the thread's 4 rows, pair by pair: halves of two rows add without carry
            // (x <= 2^15), then the low and the high halves of both sums are added apart.
#pragma unroll
            for (int p = 0; p < 4; ++p) {
                const unsigned int a = acc[0][p] + acc[1][p], b = acc[2][p] + acc[3][p];
                const unsigned int fin = __vminu2(acc[0][p], MS_ONES) + __vminu2(acc[1][p], MS_ONES)
                                         + __vminu2(acc[2][p], MS_ONES) + __vminu2(acc[3][p], MS_ONES);
                const unsigned int m2 = __vmaxu2(__vimax3_u16x2(acc[0][p], acc[1][p], acc[2][p]), acc[3][p]);
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    double charm = 0.0;
#pragma unroll
                    for (int i = 0; i < 4; ++i) {
                        const unsigned int x = ms_half(acc[i][p], h);
                        ms_harm(x, rharm[i], charm);
#ifndef MS_NO_HIST
                        if (fast && x) atomicAdd(sh_hist + ((x - 1u) >> shift), ST_WEIGHT);
#endif
                    }
                    const unsigned int s = __dp2a_lo(__byte_perm(a, b, h ? 0x7632 : 0x5410), 0x0101u, 0u);
                    ms_column_out(cols_sm, warp, lane, 8 * tx + 2 * p + h, s, ms_half(fin, h), ms_half(m2, h), charm);
                }
            }
        } else {
            // Entries from global memory in float32 (distances up to 2^24): the same partials, one at a time.
#pragma unroll 1
            for (int j = 0; j < 8; ++j) {
                unsigned int cs = 0u, cc = 0u, cm = 0u;
                double charm = 0.0;
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    const unsigned int z = float_entry(A, lda, B, ldb, r0, rows, 4 * ty + i, c0 + 8 * tx + j, N, K);
                    const bool finite = z != MS_UNREACHED;
                    const unsigned int x = finite ? z + 1u : 0u;
                    rsum[i] += x;
                    rfin[i] += finite;
                    rmax[i] = max(rmax[i], x);
                    cs += x;
                    cc += finite;
                    cm = max(cm, x);
                    ms_harm(x, rharm[i], charm);
#ifndef MS_NO_HIST
                    if (finite)
                        st_count_small(z, shift, level, log2bins, shared_bins, levels, sh_hist, &sh_want, hist, overflow);
#endif
                }
                ms_column_out(cols_sm, warp, lane, 8 * tx + j, cs, cc, cm, charm);
            }
        }
        __syncthreads();  // the warps' column partials are written; no value is being counted
        if (t < SKU_COLS && c0 + t < N) {
            unsigned long long s = 0ull;
            unsigned int c = 0u, m = 0u;
            double h = 0.0;
#pragma unroll
            for (int w = 0; w < MS_WARPS; ++w) {
                s += cols_sm.sum[w][t];
                c += cols_sm.count[w][t];
                m = max(m, cols_sm.max[w][t]);
                h += cols_sm.harm[w][t];
            }
            if (c) {  // s holds d + 1 for each of the c entries, m the largest d + 1
                const long long col = col0 + c0 + t;
                atomic_add_sum(col_sum + col, (long long)(s - c));
                atomicAdd(col_reach + col, (unsigned long long)c);
                if (h != 0.0) atomicAdd(col_harm + col, h);
                // Non-negative doubles order as their bit patterns read as unsigned integers.
                atomicMax(reinterpret_cast<unsigned long long*>(col_max + col),
                          (unsigned long long)__double_as_longlong((double)(m - 1u)));
            }
        }
        const int want = sh_want;
        __syncthreads();  // every thread has read the column partials and sh_want before they change
        if (want > level)  // a value needed a wider bin: move the shared bins to their level, go up
            st_raise_level<MP_THREADS>(sh_hist, shared_bins, hist, bins, level_hint, want, level, shift);
    }

    st_flush_bins<MP_THREADS>(sh_hist, shared_bins, hist, bins, level, false);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        unsigned int c = (rfin[i] & 0xFFFFu) + (rfin[i] >> 16);
        unsigned long long s = rsum[i] - c;  // the x of the c finite entries are their d + 1
        unsigned int m = rmax[i] ? rmax[i] - 1u : 0u;
        double h = rharm[i];
#pragma unroll
        for (int o = 8; o > 0; o >>= 1) {  // the 16 threads of a row group
            s += __shfl_xor_sync(FULL_MASK, s, o);
            c += __shfl_xor_sync(FULL_MASK, c, o);
            m = max(m, __shfl_xor_sync(FULL_MASK, m, o));
            h += __shfl_xor_sync(FULL_MASK, h, o);
        }
        const int r = 4 * ty + i;
        if (tx == 0 && r < rows) {
            const long long p = (r0 + r) * gridDim.y + blockIdx.y;
            p_sum[p] = (long long)s;
            p_cnt[p] = (int)c;
            p_harm[p] = h;
            p_max[p] = (float)m;
        }
    }
}
