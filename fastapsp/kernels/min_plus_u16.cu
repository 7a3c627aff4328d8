// Min-plus product C = [min(C,)] A (x) B of float32 operands that hold whole numbers, in packed
// 16-bit arithmetic (minplus_tile_u16.cuh), from operands encoded once before the product.
//
// Converting the operands inside the product cost more instructions than the relaxations
// themselves: every 64-row tile converted its slice of B again (a bounds check, a range check and
// two conversions per value), and Nsight Compute counted 3.3 instructions per DPX instruction at
// K = 100 (docs/kernels.md).  Here encode_u16_a and encode_u16_b write both operands once in the
// layout the product stages, padded with +inf to whole tiles and to K rounded up to 16, and flag
// every row tile of A and column tile of B that holds an operand the encoding cannot hold (above
// U16_LIMIT, negative, fractional, NaN).  The product then moves each chunk of K with one 16-byte
// load and one 16-byte shared store a thread per operand, with no checks; a block whose row or
// column tile is flagged computes its tile in float32 from A and B instead (the same answer, slower).
//
//   Ae: (row tiles, K16, 64) words, Ae[t][k][r] = A[64 t + r][k] in both halves;
//   Be: (K16, ldbe) words, ldbe = 64 x column tiles, Be[k][64 t + q] = B[k][c] | B[k][c + 1] << 16
//       with c = 128 t + 2 u16_pair(q) (a tile's pairs in the order its threads store them);
//   bad: row tiles' flags, then column tiles' flags (zero-filled by the caller).
//
// Grid of min_plus_u16: (ceil(M / 64), column tiles of 128 of this launch), 256 threads; row tiles
// vary fastest, so the blocks running together share a column slice of Be in the L2 cache.
// ct0: the launch's first column tile (launches split the columns at the grid's y limit); B, C and
// N are the launch's columns.  crow (may be null): rows of C scattered (minplus_tile.cuh's
// row_offset).  fallbacks (may be null) counts the tiles computed in float32.
#undef REAL
#define REAL float
// The float32 fallback writes rows off 16-byte boundaries element by element: its shifted stores
// (minplus_tile.cuh) made the packed kernel spill registers, and it runs only where an operand does
// not fit 16 bits.  The packed tiles store such rows shifted (minplus_tile_u16.cuh).
#define MP_PLAIN_FLOAT_STORES
#include "common.cuh"
#include "minplus_tile.cuh"
#include "minplus_tile_u16.cuh"

union MinPlusU16Shared {
    MinPlusU16Smem p;
    MinPlusSmem f;  // the float32 tile of the fallback
};

// Flags the tile `tile` in bad when any lane of the (whole) warp met an operand it cannot encode.
__device__ __forceinline__ void flag_tile(unsigned int* bad, long long tile, bool b)
{
    const unsigned int any = __ballot_sync(FULL_MASK, b);
    if (any && (threadIdx.x & 31) == __ffs(any) - 1) atomicOr(bad + tile, 1u);
}

// Ae from A (M x K, leading dimension lda).  Grid-stride over the (row tiles x K16 x 64) words;
// 32 consecutive words share one row tile, so a warp flags one tile.
extern "C" __global__ void encode_u16_a(const float* A, long long lda, int M, int K, unsigned int* Ae,
                                        unsigned int* bad)
{
    const int K16 = encoded_k(K);
    const long long total = (long long)((M + MP_TILE - 1) / MP_TILE) * K16 * MP_TILE;
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += (long long)gridDim.x * blockDim.x) {
        const int r = (int)(e % MP_TILE);
        const long long tk = e / MP_TILE;
        const int k = (int)(tk % K16);
        const long long tile = tk / K16, row = tile * MP_TILE + r;
        bool b = false;
        const unsigned int v = encode_u16((row < M && k < K) ? A[row * lda + k] : INF_R, b);
        Ae[e] = v | (v << 16);
        flag_tile(bad, tile, b);
    }
}

// Be from B (K x N, leading dimension ldb); its column tiles' flags at bad[0..].  Grid-stride over
// the K16 x ldbe words; ldbe is a multiple of 64, so a warp's 32 words lie in one column tile.
extern "C" __global__ void encode_u16_b(const float* B, long long ldb, int K, long long N, unsigned int* Be,
                                        long long ldbe, unsigned int* bad)
{
    const int K16 = encoded_k(K);
    const long long total = (long long)K16 * ldbe;
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += (long long)gridDim.x * blockDim.x) {
        const long long p = e % ldbe, c = 2 * (p - (p & 63) + u16_pair((int)(p & 63)));
        const int k = (int)(e / ldbe);
        const float* row = B + (long long)k * ldb;
        bool b = false;
        const unsigned int lo = encode_u16((k < K && c < N) ? row[c] : INF_R, b);
        const unsigned int hi = encode_u16((k < K && c + 1 < N) ? row[c + 1] : INF_R, b);
        Be[e] = lo | (hi << 16);
        flag_tile(bad, p / (U16_COLS / 2), b);
    }
}

extern "C" __global__ void __launch_bounds__(MP_THREADS)
min_plus_u16(const unsigned int* Ae, const unsigned int* Be, long long ldbe, const unsigned int* bad_a,
             const unsigned int* bad_b, long long ct0, const float* A, long long lda, const float* B, long long ldb,
             float* C, long long ldc, int M, int N, int K, int accumulate, unsigned int* fallbacks,
             const long long* crow)
{
    __shared__ __align__(16) MinPlusU16Shared sm;
    const int t = threadIdx.x;
    const long long r0 = (long long)blockIdx.x * MP_TILE, c0 = (long long)blockIdx.y * U16_COLS;
    const long long ct = ct0 + blockIdx.y;
    const int rows = (int)min((long long)MP_TILE, M - r0), cols = (int)min((long long)U16_COLS, N - c0);
    float* Ct = tile_origin(C, ldc, crow, r0, c0);
    const long long* trow = tile_rows(crow, r0);
    const int K16 = encoded_k(K);
    // Thread t moves words 4t .. 4t + 3 of each operand's chunk: row t / 16 of the chunk, entries
    // (A: rows of the tile; B: column pairs) 4 (t % 16) .. 4 (t % 16) + 3.
    const int sk = t >> 4, se = 4 * (t & 15);
    const uint4* ap = reinterpret_cast<const uint4*>(Ae + (long long)blockIdx.x * K16 * MP_TILE) + t;
    const uint4* bp = reinterpret_cast<const uint4*>(Be + (long long)sk * ldbe + ct * (U16_COLS / 2) + se);
    const long long b_chunk = MP_KC * ldbe / 4;  // uint4 steps from one chunk of Be to the next
    // The first chunk is asked for with the flags, before they are known (its addresses are valid
    // either way): one memory latency at the block's start, not two in a row.
    uint4 ra = ap[0], rb = bp[0];
    if (bad_a[blockIdx.x] | bad_b[ct]) {  // the same for the whole block: the tile in float32
        if (fallbacks != nullptr && t == 0) atomicAdd(fallbacks, 1u);
        float_tiles(A + r0 * lda, lda, B + c0, ldb, Ct, ldc, rows, cols, K, accumulate, sm.f, trow);
        return;
    }

    unsigned int acc[4][4];
    u16_sweep(acc, ap, bp, b_chunk, ra, rb, K, sm.p);
    store_tile_u16(acc, Ct, ldc, rows, cols, accumulate, trow);
}
