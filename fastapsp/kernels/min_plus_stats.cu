// --stats fused with the min-plus product of a component's interior rows, for
// undirected graphs when nothing is copied to the host (--output none): each
// distance is reduced in registers where it is made and never stored, so the
// row block is neither written nor read back (see fastapsp/reductions_gpu.py).
//
// min_plus_stats, grid (ceil(M / 64), ceil(N / (64 MPS_CT))), 256 threads.
// Block (bx, by) owns rows 64 bx .. 64 bx + 63 and the MPS_CT column tiles of 64
// from column 64 MPS_CT by on.  For each tile:
//   * acc = A (x) B over the tile (minplus_tile.cuh: thread (ty, tx) keeps rows
//     4 ty .. 4 ty + 3, columns 4 tx .. 4 tx + 3);
//   * the component's own columns (local[c] >= 0, its position in the
//     component) take min(acc, L[row, local[c]]) with `minimum` (L: distances
//     inside the component, boundary-graph method), else L[row, local[c]] (L:
//     the closed component, exact: frontier method), as the assembly of the row
//     block does (assemble.cu), so the values are those of the stored block;
//   * every value is reduced as stats_block reduces a stored block: row
//     partials (sum, finite count, sum of 1/d over d > 0, max) kept in registers
//     over the block's tiles, the histogram counted in shared memory at the
//     block's level, raised between tiles when a value needs a wider bin.
// At the end the 16 threads of a row add their partials by shuffles and write
// p_*[row * gridDim.y + by]; stats_rows (reduce_stats.cu) adds the gridDim.y
// partials of each row in order.  There are no column partials: an undirected
// graph's column sums are its row sums.
//
// Macros: REAL; STATS_INTEGER as in reduce_stats.cu.
#include "common.cuh"
#include "minplus_tile.cuh"
#include "stats_common.cuh"

#define MPS_CT 8  // column tiles per block

extern "C" __global__ void __launch_bounds__(MP_THREADS, 2)
min_plus_stats(const REAL* A, long long lda, const REAL* B, long long ldb, int M, long long N, int K, const REAL* L,
               long long ldl, const int* local, int minimum, double inv_base, int log2bins, int shared_bins, int levels,
               int* level_hint, unsigned long long* hist, unsigned long long* overflow, sum_t* p_sum, int* p_cnt,
               double* p_harm, REAL* p_max)
{
    extern __shared__ unsigned int sh_hist[];
    __shared__ __align__(16) MinPlusSmem sm;
    __shared__ int sh_want;

    const int t = threadIdx.x, tx = t & 15, ty = t >> 4;
    const long long bins = 1ll << log2bins;
    for (int i = t; i < shared_bins; i += MP_THREADS) sh_hist[i] = 0u;
    if (t == 0) sh_want = *reinterpret_cast<volatile int*>(level_hint);
    __syncthreads();
    int level = sh_want;

    const long long r0 = (long long)blockIdx.x * MP_TILE;
    const int rows = (int)min((long long)MP_TILE, M - r0);
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

    for (int tile = 0; tile < MPS_CT; ++tile) {
        const long long c0 = ((long long)blockIdx.y * MPS_CT + tile) * MP_TILE;
        if (c0 >= N) break;  // the same for the whole block
        const int cols = (int)min((long long)MP_TILE, N - c0);
        REAL acc[4][4];
        tile_load(acc, nullptr, 0, 0, 0, false);  // +inf
        minplus_tile(acc, A + r0 * lda, lda, B + c0, ldb, rows, cols, K, sm);

        int loc[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) loc[j] = 4 * tx + j < cols ? local[c0 + 4 * tx + j] : -1;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int r = 4 * ty + i;
            if (r >= rows) break;
            const REAL* lrow = L + (r0 + r) * ldl;
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                if (loc[j] >= 0) acc[i][j] = minimum ? real_min(acc[i][j], lrow[loc[j]]) : lrow[loc[j]];
                const REAL v = acc[i][j];
                if (4 * tx + j < cols && v < INF_R) {  // finite (distances are never NaN)
                    sum_t s;
                    const long long f = st_value(v, inv_base, s);
                    rs[i] += s;
                    rc[i] += 1;
                    if (v > (REAL)0) rh[i] += __drcp_rn((double)v);  // as networkx's harmonic centrality
                    rm[i] = st_max(rm[i], v);
                    st_count(f, level, log2bins, shared_bins, levels, sh_hist, &sh_want, hist, overflow);
                }
            }
        }

        __syncthreads();  // every value of the tile is counted
        const int want = sh_want;
        __syncthreads();  // every thread has read sh_want before the next tile may raise it
        if (want > level) {  // a value needed a wider bin: move the shared bins to their level, go up
            for (int i = t; i < shared_bins; i += MP_THREADS) {
                const unsigned int c = sh_hist[i];
                if (c) {
                    atomicAdd(hist + (long long)level * bins + i, (unsigned long long)c);
                    sh_hist[i] = 0u;
                }
            }
            if (t == 0) atomicMax(level_hint, want);
            level = want;
            __syncthreads();
        }
    }

    __syncthreads();
    for (int i = t; i < shared_bins; i += MP_THREADS) {
        const unsigned int c = sh_hist[i];
        if (c) atomicAdd(hist + (long long)level * bins + i, (unsigned long long)c);
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int o = 8; o > 0; o >>= 1) {  // the 16 threads of a half warp share ty
            rs[i] += __shfl_xor_sync(FULL_MASK, rs[i], o);
            rc[i] += __shfl_xor_sync(FULL_MASK, rc[i], o);
            rh[i] += __shfl_xor_sync(FULL_MASK, rh[i], o);
            rm[i] = st_max(rm[i], __shfl_xor_sync(FULL_MASK, rm[i], o));
        }
        const int r = 4 * ty + i;
        if (tx == 0 && r < rows) {
            const long long p = (r0 + r) * gridDim.y + blockIdx.y;
            p_sum[p] = rs[i];
            p_cnt[p] = rc[i];
            p_harm[p] = rh[i];
            p_max[p] = rm[i];
        }
    }
}
