// Min-plus product C = [min(C,)] A (x) B of float32 operands that hold whole
// numbers, in packed 16-bit arithmetic (minplus_tile_u16.cuh), with arbitrary
// leading dimensions.  Grid: (ceil(M / 64), column tiles of 128), 256 threads a
// block; row tiles vary fastest, as in min_plus.cu.  ``fallbacks`` (may be null)
// counts the tiles that had to be computed in float32; crow (may be null): rows of C scattered
// (minplus_tile.cuh's row_offset).
// float32 operands only, whatever distance type the loader names.
#undef REAL
#define REAL float
// The float32 fallback writes rows off 16-byte boundaries element by element: its shifted stores
// (minplus_tile.cuh) made the packed kernel spill registers, and it runs only where an operand does
// not fit 16 bits.  The packed tiles store such rows shifted (minplus_tile_u16.cuh).
#define MP_PLAIN_FLOAT_STORES
#include "common.cuh"
#include "minplus_tile.cuh"
#include "minplus_tile_u16.cuh"

extern "C" __global__ void __launch_bounds__(MP_THREADS)
min_plus_u16(const float* A, long long lda, const float* B, long long ldb, float* C, long long ldc,
             int M, int N, int K, int accumulate, unsigned int* fallbacks, const long long* crow)
{
    __shared__ __align__(16) MinPlusU16Shared sm;
    const long long r0 = (long long)blockIdx.x * MP_TILE, c0 = (long long)blockIdx.y * U16_COLS;
    const int rows = (int)min((long long)MP_TILE, M - r0), cols = (int)min((long long)U16_COLS, N - c0);
    minplus_tile_u16(A + r0 * lda, lda, B + c0, ldb, tile_origin(C, ldc, crow, r0, c0), ldc, rows, cols, K,
                     accumulate, sm, fallbacks, tile_rows(crow, r0));
}

