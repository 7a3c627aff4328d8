// The packed 16-bit sweep of a short inner dimension (K <= SKU_MAXK), shared by
// min_plus_smallk_u16.cu (which stores the products) and min_plus_stats.cu (which reduces them):
// a block's 64 x K slice of A, each entry in both halves, and the double-buffered B tile of 128
// columns as column pairs, in shared memory; thread (ty, tx) sweeps rows 4 ty .. 4 ty + 3 and
// the pairs at positions 4 tx .. 4 tx + 3 as 4 x 4 packed pairs (minplus_tile_u16.cuh's u16_step).
// Which columns those are is the staging's choice: min_plus_smallk_u16.cu copies the encoded Be
// (u16_pair's order, the order store_tile_u16 writes), fetch_b_u16 below stages the columns in
// order (8 tx .. 8 tx + 7: min_plus_stats.cu reduces them and stores nothing).

#define SKU_COLS 128
#ifndef SKU_CT  // column tiles a block sweeps with its slice of A (512 columns)
#define SKU_CT 4
#endif
#ifndef SKU_MAXK  // largest K (a multiple of 4): 32, or 56 (43.9 KB of shared memory) for K = 33..56
#define SKU_MAXK 32  // the host asks for more only where needed: more registers (spills) slow K <= 32 (docs/kernels.md)
#endif

struct SmallKU16Smem {
    unsigned int a[SKU_MAXK][MP_TILE + 4];       // A entry in both halves, k-major
    unsigned int b[2][SKU_MAXK][SKU_COLS / 2];   // B column pairs (low and high half), in the staging's order
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


// fn(KSteps<S>{}) for the steps S that sweep K: K rounded up to 4 to K = 32 (the products there are
// bound by their writes; less code), and K itself above it (where the sweep bounds the product, a step
// past K relaxes +inf for nothing; docs/kernels.md has the measurements).
template <class Fn>
__device__ __forceinline__ void by_k_u16(int K, Fn&& fn)
{
#if SKU_MAXK > 32
    switch (K) {
    case 33: fn(KSteps<33>{}); return;
    case 34: fn(KSteps<34>{}); return;
    case 35: fn(KSteps<35>{}); return;
    case 36: fn(KSteps<36>{}); return;
    case 37: fn(KSteps<37>{}); return;
    case 38: fn(KSteps<38>{}); return;
    case 39: fn(KSteps<39>{}); return;
    case 40: fn(KSteps<40>{}); return;
    case 41: fn(KSteps<41>{}); return;
    case 42: fn(KSteps<42>{}); return;
    case 43: fn(KSteps<43>{}); return;
    case 44: fn(KSteps<44>{}); return;
    case 45: fn(KSteps<45>{}); return;
    case 46: fn(KSteps<46>{}); return;
    case 47: fn(KSteps<47>{}); return;
    case 48: fn(KSteps<48>{}); return;
    case 49: fn(KSteps<49>{}); return;
    case 50: fn(KSteps<50>{}); return;
    case 51: fn(KSteps<51>{}); return;
    case 52: fn(KSteps<52>{}); return;
    case 53: fn(KSteps<53>{}); return;
    case 54: fn(KSteps<54>{}); return;
    case 55: fn(KSteps<55>{}); return;
    case 56: fn(KSteps<56>{}); return;
    default: break;
    }
#endif
    by_k4<32>((K + 3) & ~3, fn);
}

// A's rows r0 .. r0 + rows - 1 (K columns) into sm.a, encoded in both halves; +inf past them and
// past K (rounded up to 4).  `bad` is raised for an operand the encoding cannot hold.
__device__ __forceinline__ void stage_a_u16(SmallKU16Smem& sm, const float* A, long long lda, long long r0, int rows,
                                            int K, bool& bad)
{
    const int K4 = (K + 3) & ~3;
    for (int e = threadIdx.x; e < MP_TILE * K4; e += MP_THREADS) {  // consecutive threads read along a row
        const int r = e / K4, k = e - r * K4;
        const unsigned int v = encode_u16((r < rows && k < K) ? A[(r0 + r) * lda + k] : INF_R, bad);
        sm.a[k][r] = v | (v << 16);
    }
}

// This thread's share of the B tile from column c0, into registers: rows b_row + 4 p, columns
// 2 b_pair and 2 b_pair + 1 (b_pair = t % 64, b_row = t / 64) as one packed pair each.
__device__ __forceinline__ void fetch_b_u16(unsigned int (&rb)[SKU_MAXK / 4], const float* B, long long ldb, int N,
                                            int K, long long c0, bool& bad)
{
    const int b_pair = threadIdx.x & 63, b_row = threadIdx.x >> 6;
    const long long c = c0 + 2 * b_pair;
#pragma unroll
    for (int p = 0; p < SKU_MAXK / 4; ++p) {
        const int k = b_row + 4 * p;
        const float* row = B + (long long)k * ldb;
        const unsigned int lo = encode_u16((k < K && c < N) ? row[c] : INF_R, bad);
        const unsigned int hi = encode_u16((k < K && c + 1 < N) ? row[c + 1] : INF_R, bad);
        rb[p] = lo | (hi << 16);
    }
}

// The fetched share into buffer `buf` of the tile (rows below K rounded up to 4).
__device__ __forceinline__ void store_b_u16(SmallKU16Smem& sm, int buf, const unsigned int (&rb)[SKU_MAXK / 4], int K4)
{
    const int b_pair = threadIdx.x & 63, b_row = threadIdx.x >> 6;
#pragma unroll
    for (int p = 0; p < SKU_MAXK / 4; ++p)
        if (b_row + 4 * p < K4) sm.b[buf][b_row + 4 * p][b_pair] = rb[p];
}
