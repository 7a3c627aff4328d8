// Grouped min-plus product, the boundary rows of the boundary-graph method
// (see fastapsp/stages/boundary_graph.py).
//
// The columns of C are the vertices of one level in level order: group q owns
// columns [starts[q], starts[q+1]).  For a column x of group q
//     C[i, x] = min over t < nb[q] of  A[i, bstart[q] + t] + L_q[t, x - starts[q]]
// where L_q (nb[q] x c_q, row-major) is stored at LB + lb_offset[q].  A group
// without boundary vertices gives +inf.  Grid: (column tiles, ceil(M / 64)); the
// column tile t covers columns tile_col[t] .. tile_col[t] + 64 MP_CW - 1 of group tile_group[t],
// never crossing into the next group, so each block reads one L_q.  256 threads a
// block, 4 x 4 MP_CW outputs a thread (minplus_tile.cuh); the host sizes its column tiles to match MP_CW.
// by_columns: C is stored by columns, C[i, x] at C + x * ldc + i (ldc >= M), for gather_transposed.cu
// to put its columns in another order reading whole sectors.
#include "common.cuh"
#include "minplus_tile.cuh"

extern "C" __global__ void __launch_bounds__(MP_THREADS, MP_GROUP_BLOCKS)
grouped_min_plus(const REAL* A, long long lda, const REAL* LB, const long long* lb_offset,
                 const long long* starts, const long long* bstart, const int* tile_group,
                 const long long* tile_col, REAL* C, long long ldc, int M, int by_columns)
{
    __shared__ __align__(16) MinPlusSmemT<MP_CW> sm;
    const int q = tile_group[blockIdx.x];
    const long long c0 = tile_col[blockIdx.x];
    const long long g0 = starts[q], g1 = starts[q + 1];
    const long long r0 = (long long)blockIdx.y * MP_TILE;
    const int rows = (int)min((long long)MP_TILE, (long long)M - r0);
    const int cols = (int)min((long long)MP_TILE * MP_CW, g1 - c0);
    const int K = (int)(bstart[q + 1] - bstart[q]);
    const long long ldb = g1 - g0;
    REAL acc[4][4 * MP_CW];
    tile_load_groups<MP_CW>(acc, C, ldc, rows, cols, false);  // +inf
    if (K > 0)
        minplus_tile<false, MP_CW>(acc, A + r0 * lda + bstart[q], lda, LB + lb_offset[q] + (c0 - g0), ldb, rows, cols,
                                   K, sm);
    if (by_columns)
        tile_store_groups_by_columns<MP_CW>(acc, C + c0 * ldc + r0, ldc, rows, cols, &sm);
    else
        tile_store_groups<MP_CW>(acc, C + r0 * ldc + c0, ldc, rows, cols);
}
