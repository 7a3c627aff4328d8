// Min-plus product C = [min(C,)] A (x) B for a short inner dimension (K <= 48) of
// float32 operands that hold whole numbers: the interior rows of unweighted road
// networks.  As min_plus_smallk.cu, a block keeps its 64 x K slice of A in shared
// memory and sweeps the columns with it, double-buffering B, one barrier a tile;
// here the relaxations run in packed 16-bit arithmetic (minplus_tile_u16.cuh: one
// DPX instruction adds and takes the minimum of two column halves), so a column
// costs K / 2 instructions a row instead of 2 K, and the product is left bound
// by its writes (stored with the evict-first hint).
//
// Thread (ty, tx) keeps rows 4 ty .. 4 ty + 3, columns 8 tx .. 8 tx + 7 of the
// current 128-column tile as 4 x 4 packed pairs.  A block sweeps SKU_CT tiles of
// 128 (512 columns, as min_plus_smallk.cu).  When an operand does not fit the
// encoding (above 16,383, negative, fractional, NaN) the block computes its
// columns from the current tile on in float32 (smallk_columns for K <= 32, else
// tile by tile with minplus_tile), so the answer is the same, only slower;
// ``fallbacks`` (may be null) counts such blocks.
// Grid: (ceil(M / 64), ceil(N / 512)), 256 threads.
#undef REAL
#define REAL float
#ifndef MP_NO_STREAM_STORE
#define MP_STREAM_STORE
#endif
// The float32 fallback writes rows off 16-byte boundaries element by element: its shifted stores
// (minplus_tile.cuh) made the packed kernel spill registers, and it runs only where an operand does
// not fit 16 bits.  The packed tiles store such rows shifted (minplus_tile_u16.cuh).
#define MP_PLAIN_FLOAT_STORES
#include "common.cuh"
#include "minplus_tile.cuh"
#include "minplus_tile_u16.cuh"
#include "minplus_smallk.cuh"
#include "minplus_smallk_u16.cuh"

union SmallKShared {
    SmallKU16Smem u;
    SmallKSmem f;  // the float32 columns of the fallback (K <= 32)
    MinPlusSmem t;  // and its tiles (K > 32)
};

#ifndef SKU_MIN_BLOCKS  // resident blocks per SM asked of the register allocator
#define SKU_MIN_BLOCKS 4
#endif

extern "C" __global__ void __launch_bounds__(MP_THREADS, SKU_MIN_BLOCKS)
min_plus_smallk_u16(const float* A, long long lda, const float* B, long long ldb, float* C, long long ldc,
                    int M, int N, int K, int accumulate, unsigned int* fallbacks, const long long* crow)
{
    __shared__ __align__(16) SmallKShared sm;
    static_assert(sizeof(SmallKShared) <= 48 * 1024, "static shared memory");
    const int t = threadIdx.x, tx = t & 15, ty = t >> 4;
    const long long r0 = (long long)blockIdx.x * MP_TILE;
    const long long first = (long long)blockIdx.y * SKU_CT * SKU_COLS;
    const int rows = (int)min((long long)MP_TILE, M - r0);
    const int K4 = (K + 3) & ~3;
    bool bad = false;

    stage_a_u16(sm.u, A, lda, r0, rows, K, bad);

    unsigned int rb[SKU_MAXK / 4];
    fetch_b_u16(rb, B, ldb, N, K, first, bad);
    for (int tile = 0; tile < SKU_CT; ++tile) {
        const long long c0 = first + (long long)tile * SKU_COLS;
        if (c0 >= N) break;  // the same for the whole block
        const int buf = tile & 1;
        store_b_u16(sm.u, buf, rb, K4);
        // One barrier a tile (see min_plus_smallk.cu); it also tells the block whether any operand
        // staged so far (A, this tile of B) did not fit.
        if (__syncthreads_or(bad)) {
            if (fallbacks != nullptr && t == 0) atomicAdd(fallbacks, 1u);
            const long long last = min(first + SKU_CT * SKU_COLS, (long long)N);
#if SKU_MAXK > 32
            if (K > SK_MAXK) {  // 64 x 64 tiles (smallk_columns holds K <= 32)
                float_tiles(A + r0 * lda, lda, B + c0, ldb, tile_origin(C, ldc, crow, r0, c0), ldc, rows, last - c0,
                            K, accumulate, sm.t, tile_rows(crow, r0));
                return;
            }
#endif
            const int tiles = (int)((last - c0 + MP_TILE - 1) / MP_TILE);
            smallk_columns(A, lda, B, ldb, C, ldc, M, N, K, accumulate, r0, c0, tiles, sm.f, crow);
            return;
        }
        if (tile + 1 < SKU_CT && c0 + SKU_COLS < N) fetch_b_u16(rb, B, ldb, N, K, c0 + SKU_COLS, bad);
        unsigned int acc[4][4];
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < 4; ++j) acc[i][j] = 0xFFFFFFFFu;
        by_k4(K4, [&](auto steps) { smallk_sweep_u16<decltype(steps)::value>(acc, sm.u, buf, tx, ty); });
        store_tile_u16(acc, tile_origin(C, ldc, crow, r0, c0), ldc, rows, (int)min((long long)SKU_COLS, N - c0),
                       accumulate, tile_rows(crow, r0));
    }
}
