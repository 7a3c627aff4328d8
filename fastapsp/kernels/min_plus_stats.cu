// Min-plus product of a component's interior rows fused with the --stats
// reduction of those rows, for undirected graphs (no column sums are needed:
// see fastapsp/reductions.py).
//
// C[0:M, 0:N] = A (x) B as in min_plus.cu; then, for the columns that are
// vertices of the component itself (local_col[col0 + j] = the vertex's position
// p in the component, -1 for the other vertices), C[a, j] = min(C[a, j], L[a, p]):
// the distances of paths inside the component, as stages/assemble.py adds them.
// The finished tile is stored (when C is not null) and reduced while it is in
// registers: per row the sum of the finite distances, their count, the sum of
// 1/d over d > 0 and the largest finite distance, and the histogram of every
// finite distance (stats_count.cuh), the numbers stats_block of reduce_stats.cu
// reads back from memory.
//
// Grid (row tiles, column groups), 256 threads, 4 x 4 outputs a thread as in
// minplus_tile.cuh.  Block (bx, by) owns the rows [64 bx, 64 bx + 64) and the
// column tiles [by * tiles_per_block, (by + 1) * tiles_per_block) of 64 columns.
// Its threads keep the row partials in registers across those tiles and write
// them once, to p_*[row * gridDim.y + by]; stats_rows (reduce_stats.cu) adds
// them in a fixed order, so the sums are the same every run.  Row tiles vary
// fastest, so blocks running together read the same column slice of B from L2.
// The histogram is counted in shared memory (shared_bins bins at the level read
// from level_hint when the block starts) and added to `hist` when it ends.
//
// Macros: REAL (float or double), STATS_INTEGER (whole-number distances, base
// bin width 1: sums in int64).
#include "common.cuh"
#include "minplus_tile.cuh"
#include "stats_count.cuh"

#ifndef MPS_MIN_BLOCKS
#define MPS_MIN_BLOCKS 3  // blocks per SM the registers must allow
#endif

extern "C" __global__ void __launch_bounds__(MP_THREADS, MPS_MIN_BLOCKS)
min_plus_stats(const REAL* A, long long lda, const REAL* B, long long ldb, REAL* C, long long ldc, int M, int N,
               int K, int tiles_per_block, const REAL* L, long long ldl, const int* local_col, long long col0,
               double inv_base, int log2bins, int shared_bins, int levels, int* level_hint,
               unsigned long long* hist, unsigned long long* overflow, sum_t* p_sum, int* p_cnt, double* p_harm,
               REAL* p_max)
{
    extern __shared__ unsigned int sh_hist[];
    __shared__ __align__(16) MinPlusSmem sm;
    __shared__ int sh_want;

    const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
    for (int i = tid; i < shared_bins; i += MP_THREADS) sh_hist[i] = 0u;
    if (tid == 0) sh_want = *reinterpret_cast<volatile int*>(level_hint);
    __syncthreads();
    const int level = sh_want;  // read by every thread before any count may raise sh_want

    const long long r0 = (long long)blockIdx.x * MP_TILE;
    const int rows = (int)min((long long)MP_TILE, M - r0);
    const int col_tiles = (N + MP_TILE - 1) / MP_TILE;
    const int t0 = blockIdx.y * tiles_per_block, t1 = min(col_tiles, t0 + tiles_per_block);

    sum_t rs[4];
    int rc[4];
    double rh[4];
    REAL rm[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        rs[i] = 0;
        rc[i] = 0;
        rh[i] = 0.0;
        rm[i] = (REAL)0;
    }

    for (int t = t0; t < t1; ++t) {
        const long long c0 = (long long)t * MP_TILE;
        const int cols = (int)min((long long)MP_TILE, N - c0);
        REAL acc[4][4];
        tile_load(acc, C, ldc, rows, cols, false);  // all +inf
        minplus_tile(acc, A + r0 * lda, lda, B + c0, ldb, rows, cols, K, sm);

        // The component's own columns: the paths that never leave it.
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int c = 4 * tx + j;
            const int p = c < cols ? local_col[col0 + c0 + c] : -1;
            if (p >= 0) {
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    const int r = 4 * ty + i;
                    if (r < rows) acc[i][j] = real_min(acc[i][j], L[(r0 + r) * ldl + p]);
                }
            }
        }
        if (C != nullptr) tile_store(acc, C + r0 * ldc + c0, ldc, rows, cols);

#pragma unroll
        for (int i = 0; i < 4; ++i) {
            if (4 * ty + i >= rows) break;
            // Neighbouring columns are often at the same distance: count runs of equal bins once.
            long long run = ST_NOT_COUNTED;
            unsigned int length = 0u;
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const REAL v = acc[i][j];
                long long f = ST_NOT_COUNTED;
                if (4 * tx + j < cols && v < INF_R) {  // finite (distances are never NaN)
#ifdef STATS_INTEGER
                    f = v < (REAL)ST_FINE_LIMIT ? (long long)v : -1ll;
                    rs[i] += f;
#else
                    const double q = (double)v * inv_base;
                    f = q < ST_FINE_LIMIT ? (long long)q : -1ll;  // truncation is floor for q >= 0
                    rs[i] += (double)v;
#endif
                    rc[i] += 1;
                    if (v > (REAL)0) rh[i] += st_inverse((double)v);
                    rm[i] = st_max(rm[i], v);
                }
                if (f == run) {
                    ++length;
                } else {
                    if (run != ST_NOT_COUNTED)
                        st_count(run, level, log2bins, shared_bins, levels, sh_hist, &sh_want, hist, overflow, length);
                    run = f;
                    length = 1u;
                }
            }
            if (run != ST_NOT_COUNTED)
                st_count(run, level, log2bins, shared_bins, levels, sh_hist, &sh_want, hist, overflow, length);
        }
    }

    // Row partials: the 16 threads of a row group are 16 neighbouring lanes of one warp.
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int o = 8; o > 0; o >>= 1) {
            rs[i] += __shfl_xor_sync(FULL_MASK, rs[i], o);
            rc[i] += __shfl_xor_sync(FULL_MASK, rc[i], o);
            rh[i] += __shfl_xor_sync(FULL_MASK, rh[i], o);
            rm[i] = st_max(rm[i], __shfl_xor_sync(FULL_MASK, rm[i], o));
        }
        const int r = 4 * ty + i;
        if (tx == 0 && r < rows) {
            const long long at = (r0 + r) * gridDim.y + blockIdx.y;
            p_sum[at] = rs[i];
            p_cnt[at] = rc[i];
            p_harm[at] = rh[i];
            p_max[at] = rm[i];
        }
    }

    __syncthreads();
    const long long bins = 1ll << log2bins;
    for (int i = tid; i < shared_bins; i += MP_THREADS) {
        const unsigned int v = sh_hist[i];
        if (v) atomicAdd(hist + (long long)level * bins + i, (unsigned long long)v);
    }
    if (tid == 0 && sh_want > level) atomicMax(level_hint, sh_want);
}
