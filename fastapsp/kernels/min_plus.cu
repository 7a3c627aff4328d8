// Min-plus product C = min(C, A (x) B) (or C = A (x) B) of row-major operands
// with arbitrary leading dimensions, so views (rows of a row block, column
// slices) need no copy.  Grid: (ceil(M / 64), column tiles), 256 threads a block,
// one 64 x 64 MP_CW output tile a block, 4 x 4 MP_CW outputs a thread (minplus_tile.cuh).
// crow (may be null): row r of C at C + crow[r] (rows scattered over a device result,
// minplus_tile.cuh's row_offset).
// Row tiles vary fastest, so the blocks running together share a column slice
// of B in the L2 cache: B is read from memory about once, not once per row tile
// (that matters when K is small and the product is bound by memory).
#include "common.cuh"
#include "minplus_tile.cuh"

extern "C" __global__ void __launch_bounds__(MP_THREADS, MP_GROUP_BLOCKS)
min_plus(const REAL* A, long long lda, const REAL* B, long long ldb, REAL* C, long long ldc,
         int M, int N, int K, int accumulate, const long long* crow)
{
    __shared__ __align__(16) MinPlusSmemT<MP_CW> sm;
    const long long r0 = (long long)blockIdx.x * MP_TILE, c0 = (long long)blockIdx.y * (MP_TILE * MP_CW);
    const int rows = min((long long)MP_TILE, M - r0), cols = min((long long)MP_TILE * MP_CW, N - c0);
    REAL* tile = tile_origin(C, ldc, crow, r0, c0);
    const long long* trow = tile_rows(crow, r0);
    REAL acc[4][4 * MP_CW];
    tile_load_groups<MP_CW>(acc, tile, ldc, rows, cols, accumulate != 0, trow);
    minplus_tile<false, MP_CW>(acc, A + r0 * lda, lda, B + c0, ldb, rows, cols, K, sm);
    tile_store_groups<MP_CW>(acc, tile, ldc, rows, cols, trow);
}
