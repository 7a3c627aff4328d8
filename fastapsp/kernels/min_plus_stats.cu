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
//     groups of a warp by a shuffle, the 8 warps in shared memory, then one atomic per column and field;
//   * the histogram, each entry counted twice, at the block's level: the shared bins below
//     shared_bins, global atomics above, the level raised after a tile as stats_block does.
// Only whole-number distances (STATS_INTEGER, first bin width 1) below 2^24 come here (float32 is
// exact for them): an entry is a 32-bit integer z, its row sum over a tile fits 32 bits.
// Benchmark variants (benchmarks/stats_kernel_bench.py --product): MS_NO_HARM and MS_NO_HIST leave those
// parts out (on roadFLA and roadNY balls the histogram took about a quarter of the time, the
// reciprocals a sixth).  Slower, and not kept: a thread's runs of equal bins counted with one atomic
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

struct StatsColumns {  // one tile's column partials, per warp
    unsigned int sum[MS_WARPS][SKU_COLS];
    unsigned int count[MS_WARPS][SKU_COLS];
    unsigned int max[MS_WARPS][SKU_COLS];
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

#ifndef MS_MIN_BLOCKS  // resident blocks per SM asked of the register allocator: 3 (80 registers a thread,
#define MS_MIN_BLOCKS 3  // a few spilled) ran 6-15% faster than 2 (108, none) on one H100; 4 (64) with half
#endif                   // the shared bins was 4-5% faster to K = 32, slower at 48 (docs/kernels.md)

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

    unsigned long long rsum[4];
    unsigned int rcount[4], rmax[4];
    double rharm[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        rsum[i] = 0ull;
        rcount[i] = rmax[i] = 0u;
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
        if (!fallback && tile + 1 < SKU_CT && c0 + SKU_COLS < N) fetch_b_u16(rb, B, ldb, N, K, c0 + SKU_COLS, bad);

        unsigned int acc[4][4];
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < 4; ++j) acc[i][j] = 0xFFFFFFFFu;
        if (!fallback)
            by_k4(K4, [&](auto steps) { smallk_sweep_u16<decltype(steps)::value>(acc, sm, buf, tx, ty); });
        // Entry (i, j): row 4 ty + i, column c0 + 8 tx + j.  Column by column, so that a column's partials
        // are complete after its 4 rows and leave the registers at once.
        unsigned int tile_sum[4] = {0u, 0u, 0u, 0u};  // a row's sum over the tile fits 32 bits
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            unsigned int csum = 0u, ccount = 0u, cmax = 0u;
            double charm = 0.0;
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                unsigned int z;
                if (!fallback) {
                    const unsigned int half = (j & 1) ? acc[i][j >> 1] >> 16 : acc[i][j >> 1] & 0xFFFFu;
                    z = half >= U16_INF ? MS_UNREACHED : half;
                } else {
                    z = float_entry(A, lda, B, ldb, r0, rows, 4 * ty + i, c0 + 8 * tx + j, N, K);
                }
                const bool finite = z != MS_UNREACHED;
                const unsigned int v = finite ? z : 0u;
                tile_sum[i] += v;
                rcount[i] += finite;
                rmax[i] = max(rmax[i], v);
                csum += v;
                ccount += finite;
                cmax = max(cmax, v);
#ifndef MS_NO_HARM
                const double inv = v ? st_recip_small((float)v, v) : 0.0;
                rharm[i] += inv;
                charm += inv;
#endif
#ifndef MS_NO_HIST
                if (finite)
                    st_count_small(v, shift, level, log2bins, shared_bins, levels, sh_hist, &sh_want, hist, overflow);
#endif
            }
            // The column's partials over the two row groups of the warp, then to shared memory.
            csum += __shfl_xor_sync(FULL_MASK, csum, 16);
            ccount += __shfl_xor_sync(FULL_MASK, ccount, 16);
            cmax = max(cmax, __shfl_xor_sync(FULL_MASK, cmax, 16));
            charm += __shfl_xor_sync(FULL_MASK, charm, 16);
            if (lane < 16) {
                cols_sm.sum[warp][8 * tx + j] = csum;
                cols_sm.count[warp][8 * tx + j] = ccount;
                cols_sm.max[warp][8 * tx + j] = cmax;
                cols_sm.harm[warp][8 * tx + j] = charm;
            }
        }
#pragma unroll
        for (int i = 0; i < 4; ++i) rsum[i] += tile_sum[i];
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
            if (c) {
                const long long col = col0 + c0 + t;
                atomic_add_sum(col_sum + col, (long long)s);
                atomicAdd(col_reach + col, (unsigned long long)c);
                if (h != 0.0) atomicAdd(col_harm + col, h);
                // Non-negative doubles order as their bit patterns read as unsigned integers.
                atomicMax(reinterpret_cast<unsigned long long*>(col_max + col),
                          (unsigned long long)__double_as_longlong((double)m));
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
        unsigned long long s = rsum[i];
        unsigned int c = rcount[i], m = rmax[i];
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
