// Min-plus product C = [min(C,)] A (x) B for a short inner dimension (K <= 56) of
// float32 operands that hold whole numbers: the interior rows of unweighted road
// networks.  As min_plus_smallk.cu, a block keeps its 64 x K slice of A in shared
// memory and sweeps the columns with it, double-buffering B, one barrier a tile;
// here the relaxations run in packed 16-bit arithmetic (minplus_tile_u16.cuh: one
// DPX instruction adds and takes the minimum of two column halves), so a column
// costs K / 2 instructions a row instead of 2 K, and the product is left bound
// by its writes (stored with the evict-first hint).
//
// The operands come encoded once for the product, with their tiles' flags (min_plus_u16.cu's
// encode_u16_a and encode_u16_b and its layouts Ae, Be): a block copies its slice of Ae and each
// tile of Be with 16-byte moves and converts nothing.  A block whose row tile or any of whose
// column tiles is flagged (an operand above 16,383, negative, fractional, NaN) computes its columns
// in float32 from A and B instead (smallk_columns for K <= 32, else tile by tile with
// minplus_tile): the same answer, only slower; ``fallbacks`` (may be null) counts such blocks.
//
// Thread (ty, tx) keeps rows 4 ty .. 4 ty + 3, columns 4 tx .. 4 tx + 3 and 64 + 4 tx .. 67 + 4 tx of the
// current 128-column tile as 4 x 4 packed pairs (minplus_tile_u16.cuh's u16_col).  A block sweeps SKU_CT tiles of
// 128 (512 columns, as min_plus_smallk.cu).  ct0: the launch's first column tile of 128 (launches
// split the columns at the grid's y limit); B, C and N are the launch's columns.
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
// Above K = 32 the sweep keeps the integer pipe busy (its DPX instructions): the results are turned
// into floats on the FMA pipe (minplus_tile_u16.cuh's decode_pairs_u16).  -DU16_DECODE_INT: on the
// integer pipe, as min_plus_u16.cu does (there the FMA pipe's way was 1-2% slower at K = 60-80).
#ifndef U16_DECODE_INT
#define U16_DECODE_FMA
#endif
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

// 16-byte words of a tile of Be a thread moves, at most: a tile is K4 x 16 words, K4 <= SKU_MAXK
#define SKU_VECS ((SKU_MAXK * 16 + MP_THREADS - 1) / MP_THREADS)

// This thread's share of the tile of Be from column tile ct (rows below K4): 16-byte words
// t + 256 p, word e holding row e / 16, column pairs 4 (e % 16) .. 4 (e % 16) + 3.
__device__ __forceinline__ void fetch_be(uint4 (&rb)[SKU_VECS], const unsigned int* Be, long long ldbe,
                                         long long ct, int K4)
{
#pragma unroll
    for (int p = 0; p < SKU_VECS; ++p) {
        const int e = threadIdx.x + p * MP_THREADS;
        if (e < K4 * 16)
            rb[p] = *reinterpret_cast<const uint4*>(Be + (long long)(e >> 4) * ldbe + ct * (SKU_COLS / 2) + 4 * (e & 15));
    }
}

__device__ __forceinline__ void store_be(SmallKU16Smem& sm, int buf, const uint4 (&rb)[SKU_VECS], int K4)
{
#pragma unroll
    for (int p = 0; p < SKU_VECS; ++p) {
        const int e = threadIdx.x + p * MP_THREADS;
        if (e < K4 * 16) *reinterpret_cast<uint4*>(&sm.b[buf][e >> 4][4 * (e & 15)]) = rb[p];
    }
}

extern "C" __global__ void __launch_bounds__(MP_THREADS, SKU_MIN_BLOCKS)
min_plus_smallk_u16(const unsigned int* Ae, const unsigned int* Be, long long ldbe, const unsigned int* bad_a,
                    const unsigned int* bad_b, long long ct0, const float* A, long long lda, const float* B,
                    long long ldb, float* C, long long ldc, int M, int N, int K, int accumulate,
                    unsigned int* fallbacks, const long long* crow)
{
    __shared__ __align__(16) SmallKShared sm;
    static_assert(sizeof(SmallKShared) <= 48 * 1024, "static shared memory");
    const int t = threadIdx.x, tx = t & 15, ty = t >> 4;
    const long long r0 = (long long)blockIdx.x * MP_TILE;
    const long long first = (long long)blockIdx.y * SKU_CT * SKU_COLS;
    const long long ct_first = ct0 + (long long)blockIdx.y * SKU_CT;
    const int rows = (int)min((long long)MP_TILE, M - r0);
    const int K4 = (K + 3) & ~3, K16 = encoded_k(K);

    // The block's first operands are asked for with its flags, before they are known (every address
    // is valid either way): one memory latency at the block's start, not three in a row.
    unsigned int flagged = bad_a[blockIdx.x];
#pragma unroll
    for (int tile = 0; tile < SKU_CT; ++tile)
        if (first + (long long)tile * SKU_COLS < N) flagged |= bad_b[ct_first + tile];
    uint4 rb[SKU_VECS];
    fetch_be(rb, Be, ldbe, ct_first, K4);
    // The block's slice of Ae, rows k < K4: 16-byte words e = k * 16 + r / 4.
    const uint4* ae = reinterpret_cast<const uint4*>(Ae + (long long)blockIdx.x * K16 * MP_TILE);
    for (int e = t; e < K4 * 16; e += MP_THREADS)
        *reinterpret_cast<uint4*>(&sm.u.a[e >> 4][4 * (e & 15)]) = ae[e];

    if (flagged) {  // the same for the whole block: its columns in float32
        __syncthreads();  // the slice of Ae just staged shares its memory with the float32 path's
        if (fallbacks != nullptr && t == 0) atomicAdd(fallbacks, 1u);
        const long long last = min(first + SKU_CT * SKU_COLS, (long long)N);
#if SKU_MAXK > 32
        if (K > SK_MAXK) {  // 64 x 64 tiles (smallk_columns holds K <= 32)
            float_tiles(A + r0 * lda, lda, B + first, ldb, tile_origin(C, ldc, crow, r0, first), ldc, rows,
                        last - first, K, accumulate, sm.t, tile_rows(crow, r0));
            return;
        }
#endif
        const int tiles = (int)((last - first + MP_TILE - 1) / MP_TILE);
        smallk_columns<true>(A, lda, B, ldb, C, ldc, M, N, K, accumulate, r0, first, tiles, sm.f, crow);
        return;
    }

    for (int tile = 0; tile < SKU_CT; ++tile) {
        const long long c0 = first + (long long)tile * SKU_COLS;
        if (c0 >= N) break;  // the same for the whole block
        const int buf = tile & 1;
        store_be(sm.u, buf, rb, K4);
        __syncthreads();  // one barrier a tile (see min_plus_smallk.cu)
        if (tile + 1 < SKU_CT && c0 + SKU_COLS < N) fetch_be(rb, Be, ldbe, ct_first + tile + 1, K4);
        unsigned int acc[4][4];
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < 4; ++j) acc[i][j] = 0xFFFFFFFFu;
        by_k_u16(K, [&](auto steps) { smallk_sweep_u16<decltype(steps)::value>(acc, sm.u, buf, tx, ty); });
        store_tile_u16(acc, tile_origin(C, ldc, crow, r0, c0), ldc, rows, (int)min((long long)SKU_COLS, N - c0),
                       accumulate, tile_rows(crow, r0));
    }
}
