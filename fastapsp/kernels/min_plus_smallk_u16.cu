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
// Packed products run on 16-byte aligned rows only (fastapsp/components.py): no shifted stores.
#define MP_ALIGNED_ROWS
#include "common.cuh"
#include "minplus_tile.cuh"
#include "minplus_tile_u16.cuh"
#include "minplus_smallk.cuh"

#define SKU_COLS 128
#define SKU_CT 4
#ifndef SKU_MAXK  // largest K (a multiple of 4): 32, or 48 (37.6 KB of shared memory) for K = 33..48
#define SKU_MAXK 32  // the host asks for 48 only where needed: more registers (spills) slow K <= 32 (docs/kernels.md)
#endif

struct SmallKU16Smem {
    unsigned int a[SKU_MAXK][MP_TILE + 4];       // A entry in both halves, k-major
    unsigned int b[2][SKU_MAXK][SKU_COLS / 2];   // B columns 2j (low half) and 2j + 1 (high half)
};

union SmallKShared {
    SmallKU16Smem u;
    SmallKSmem f;  // the float32 columns of the fallback (K <= 32)
    MinPlusSmem t;  // and its tiles (K > 32)
};

template <int KK>
__device__ __forceinline__ void smallk_sweep_u16(unsigned int (&acc)[4][4], const SmallKU16Smem& sm, int buf,
                                                 int tx, int ty)
{
    if constexpr (KK <= SKU_MAXK) {  // larger KK is never called (the host passes K <= SKU_MAXK)
#pragma unroll
        for (int kk = 0; kk < KK; ++kk) u16_step(acc, &sm.a[kk][4 * ty], &sm.b[buf][kk][4 * tx]);
    }
}

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
    const int b_pair = t & 63, b_row = t >> 6;  // fetches B rows b_row + 4p, columns 2 b_pair and 2 b_pair + 1
    const long long r0 = (long long)blockIdx.x * MP_TILE;
    const long long first = (long long)blockIdx.y * SKU_CT * SKU_COLS;
    const int rows = (int)min((long long)MP_TILE, M - r0);
    const int K4 = (K + 3) & ~3;
    bool bad = false;

    for (int e = t; e < MP_TILE * K4; e += MP_THREADS) {  // A: consecutive threads read along a row
        const int r = e / K4, k = e - r * K4;
        const unsigned int v = encode_u16((r < rows && k < K) ? A[(r0 + r) * lda + k] : INF_R, bad);
        sm.u.a[k][r] = v | (v << 16);
    }

    unsigned int rb[SKU_MAXK / 4];
    auto fetch = [&](long long c0) {
        const long long c = c0 + 2 * b_pair;
#pragma unroll
        for (int p = 0; p < SKU_MAXK / 4; ++p) {
            const int k = b_row + 4 * p;
            const float* row = B + (long long)k * ldb;
            const unsigned int lo = encode_u16((k < K && c < N) ? row[c] : INF_R, bad);
            const unsigned int hi = encode_u16((k < K && c + 1 < N) ? row[c + 1] : INF_R, bad);
            rb[p] = lo | (hi << 16);
        }
    };

    fetch(first);
    for (int tile = 0; tile < SKU_CT; ++tile) {
        const long long c0 = first + (long long)tile * SKU_COLS;
        if (c0 >= N) break;  // the same for the whole block
        const int buf = tile & 1;
#pragma unroll
        for (int p = 0; p < SKU_MAXK / 4; ++p)
            if (b_row + 4 * p < K4) sm.u.b[buf][b_row + 4 * p][b_pair] = rb[p];
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
        if (tile + 1 < SKU_CT && c0 + SKU_COLS < N) fetch(c0 + SKU_COLS);
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
