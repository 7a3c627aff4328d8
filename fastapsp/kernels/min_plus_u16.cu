// Min-plus product C = [min(C,)] A (x) B of float32 operands that hold whole
// numbers, in packed 16-bit arithmetic (minplus_tile_u16.cuh), with arbitrary
// leading dimensions.  Grid: (ceil(N / 128), ceil(M / 64)), 256 threads a block.
// float32 operands only, whatever distance type the loader names.
#undef REAL
#define REAL float
#include "common.cuh"
#include "minplus_tile.cuh"
#include "minplus_tile_u16.cuh"

extern "C" __global__ void __launch_bounds__(MP_THREADS)
min_plus_u16(const float* A, long long lda, const float* B, long long ldb, float* C, long long ldc,
             int M, int N, int K, int accumulate)
{
    __shared__ __align__(16) MinPlusU16Shared sm;
    const long long r0 = (long long)blockIdx.y * MP_TILE, c0 = (long long)blockIdx.x * U16_COLS;
    const int rows = (int)min((long long)MP_TILE, M - r0), cols = (int)min((long long)U16_COLS, N - c0);
    minplus_tile_u16(A + r0 * lda, lda, B + c0, ldb, C + r0 * ldc + c0, ldc, rows, cols, K, accumulate, sm);
}

// The grouped product of grouped_min_plus.cu (the boundary rows of the
// boundary-graph method) in packed 16-bit arithmetic: column tile t covers
// 128 columns from tile_col[t] of group tile_group[t], never crossing into
// the next group.  Grid: (column tiles, ceil(M / 64)).
extern "C" __global__ void __launch_bounds__(MP_THREADS)
grouped_min_plus_u16(const float* A, long long lda, const float* LB, const long long* lb_offset,
                     const long long* starts, const long long* bstart, const int* tile_group,
                     const long long* tile_col, float* C, long long ldc, int M)
{
    __shared__ __align__(16) MinPlusU16Shared sm;
    const int q = tile_group[blockIdx.x];
    const long long c0 = tile_col[blockIdx.x];
    const long long g0 = starts[q], g1 = starts[q + 1];
    const long long r0 = (long long)blockIdx.y * MP_TILE;
    const int rows = (int)min((long long)MP_TILE, (long long)M - r0);
    const int cols = (int)min((long long)U16_COLS, g1 - c0);
    const int K = (int)(bstart[q + 1] - bstart[q]);
    minplus_tile_u16(A + r0 * lda + bstart[q], lda, LB + lb_offset[q] + (c0 - g0), g1 - g0, C + r0 * ldc + c0, ldc,
                     rows, cols, K, 0, sm);
}
