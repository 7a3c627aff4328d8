// Grouped min-plus product (grouped_min_plus.cu) of float32 operands that hold whole numbers, in
// packed 16-bit arithmetic (minplus_tile_u16.cuh), from operands encoded once before the product as
// min_plus_u16.cu does for one group.  For a column x of group q
//     C[i, x] = min over t < nb[q] of  A[i, bstart[q] + t] + L_q[t, x - starts[q]]
// with L_q (nb[q] x c_q, row-major) at LB + lb_offset[q].
//
// Encoded layouts (K16(q): nb[q] rounded up to a whole chunk of MP_KC; koff[q]: the sum of K16 of the
// groups before q, sumk16 of all; kgroup[kk]: the group of encoded row kk):
//   Ae: (row tiles, sumk16, 64) words, Ae[t][koff[q] + k][r] = A[64 t + r][bstart[q] + k] in both halves
//       (+inf from k = nb[q] on): each group's K16 x 64 words of a row tile are one block, read as
//       min_plus_u16.cu reads its Ae;
//   Be: group q's (K16(q), ldbe(q)) words at be_off[q], ldbe(q) = 64 x its column tiles of 128, in
//       min_plus_u16.cu's Be order; made once a level;
//   bad_a: a flag a row tile (any group's operand there does not fit); bad_b: a flag a column tile, in
//       the grid's numbering (tile_group, tile_col).
// A block whose row or column tile is flagged computes its tile in float32 from A and LB (the same
// answer, slower).  The tile is stored row-major or, by_columns, as grouped_min_plus.cu stores it.
#undef REAL
#define REAL float
// Rows of C off 16-byte boundaries stored element by element (min_plus_u16.cu's reason: registers).
#define MP_PLAIN_FLOAT_STORES
#include "common.cuh"
#include "minplus_tile.cuh"
#include "minplus_tile_u16.cuh"

union GroupedU16Shared {
    MinPlusU16Smem p;
    MinPlusSmem f;          // the float32 tile of the fallback
    MinPlusSmemT<2> stage;  // tile_store_groups_by_columns's stage (its size)
};

// Ae from A (M x total boundary, leading dimension lda), row tiles rt0 .. rt0 + gridDim.y - 1.  A block
// moves 32 encoded rows of one row tile through shared memory: each warp reads 32 consecutive columns
// of a row of A, and writes whole 256-byte rows of Ae.
extern "C" __global__ void __launch_bounds__(MP_THREADS)
encode_u16_a_grouped(const float* A, long long lda, int M, const int* kgroup, const long long* koff,
                     const long long* bstart, long long sumk16, int rt0, unsigned int* Ae, unsigned int* bad)
{
    __shared__ unsigned int s[32][MP_TILE + 1];
    const long long kk0 = (long long)blockIdx.x * 32;
    const int rt = rt0 + blockIdx.y;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const long long kk = kk0 + lane;
    long long col = -1;  // this lane's column of A, or -1 for a row of padding
    if (kk < sumk16) {
        const int q = kgroup[kk];
        const long long k = kk - koff[q];
        if (k < bstart[q + 1] - bstart[q]) col = bstart[q] + k;
    }
    bool b = false;
    for (int r = warp; r < MP_TILE; r += MP_THREADS / 32) {
        const long long row = (long long)rt * MP_TILE + r;
        const unsigned int v = encode_u16((row < M && col >= 0) ? A[row * lda + col] : INF_R, b);
        s[lane][r] = v | (v << 16);
    }
    if (__syncthreads_or(b) && threadIdx.x == 0) bad[rt] = 1u;
    for (int i = threadIdx.x; i < 32 * MP_TILE; i += MP_THREADS) {
        const int kl = i / MP_TILE, r = i % MP_TILE;
        if (kk0 + kl < sumk16) Ae[((long long)rt * sumk16 + kk0 + kl) * MP_TILE + r] = s[kl][r];
    }
}

// Be from the level's blocks L_q, one encoded row kk a block (grid: sumk16 blocks).
extern "C" __global__ void __launch_bounds__(MP_THREADS)
encode_u16_b_grouped(const float* LB, const long long* lb_offset, const long long* starts, const long long* bstart,
                     const int* kgroup, const long long* koff, const long long* be_off, const long long* tile_off,
                     unsigned int* Be, unsigned int* bad)
{
    const long long kk = blockIdx.x;
    const int q = kgroup[kk];
    const long long k = kk - koff[q];
    const bool live = k < bstart[q + 1] - bstart[q];
    const long long c = starts[q + 1] - starts[q];
    const long long ldbe = (c + U16_COLS - 1) / U16_COLS * (U16_COLS / 2);
    const float* src = LB + lb_offset[q] + (live ? k * c : 0);
    unsigned int* row = Be + be_off[q] + k * ldbe;
    for (long long p = threadIdx.x; p < ldbe; p += blockDim.x) {
        const long long cc = 2 * (p - (p & 63) + u16_pair((int)(p & 63)));
        bool b = false;
        const unsigned int lo = encode_u16((live && cc < c) ? src[cc] : INF_R, b);
        const unsigned int hi = encode_u16((live && cc + 1 < c) ? src[cc + 1] : INF_R, b);
        row[p] = lo | (hi << 16);
        if (b) bad[tile_off[q] + p / (U16_COLS / 2)] = 1u;
    }
}

// Grid: (column tiles of 128, never crossing into the next group; row tiles rt0 .. rt0 + gridDim.y - 1).
extern "C" __global__ void __launch_bounds__(MP_THREADS)
grouped_min_plus_u16(const unsigned int* Ae, long long sumk16, const long long* koff, const unsigned int* Be,
                     const long long* be_off, const unsigned int* bad_a, const unsigned int* bad_b, const float* A,
                     long long lda, const float* LB, const long long* lb_offset, const long long* starts,
                     const long long* bstart, const int* tile_group, const long long* tile_col, float* C,
                     long long ldc, int M, int rt0, int by_columns)
{
    __shared__ __align__(16) GroupedU16Shared sm;
    const int t = threadIdx.x;
    const int q = tile_group[blockIdx.x];
    const long long c0 = tile_col[blockIdx.x];
    const long long g0 = starts[q], g1 = starts[q + 1];
    const int rt = rt0 + blockIdx.y;
    const long long r0 = (long long)rt * MP_TILE;
    const int rows = (int)min((long long)MP_TILE, (long long)M - r0);
    const int cols = (int)min((long long)U16_COLS, g1 - c0);
    const int K = (int)(bstart[q + 1] - bstart[q]);
    const long long ldb = g1 - g0;
    float acc[4][8];  // minplus_tile's layout of two column groups: acc[i][4 g + j] is column 64 g + 4 tx + j
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = INF_R;
    if (K > 0 && (bad_a[rt] | bad_b[blockIdx.x])) {  // the same for the whole block: the tile in float32
#pragma unroll
        for (int g = 0; g < 2; ++g) {
            const int tc = cols - MP_TILE * g;
            if (tc <= 0) break;
            float part[4][4];
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j) part[i][j] = INF_R;
            minplus_tile<true>(part, A + r0 * lda + bstart[q], lda, LB + lb_offset[q] + (c0 - g0) + MP_TILE * g, ldb,
                               rows, min(tc, MP_TILE), K, sm.f);
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j) acc[i][4 * g + j] = part[i][j];
        }
    } else if (K > 0) {
        const long long ldbe = (ldb + U16_COLS - 1) / U16_COLS * (U16_COLS / 2);
        // As min_plus_u16: thread t moves words 4t .. 4t + 3 of each operand's chunk.
        const int sk = t >> 4, se = 4 * (t & 15);
        const uint4* ap = reinterpret_cast<const uint4*>(Ae + ((long long)rt * sumk16 + koff[q]) * MP_TILE) + t;
        const uint4* bp = reinterpret_cast<const uint4*>(Be + be_off[q] + (long long)sk * ldbe
                                                         + (c0 - g0) / U16_COLS * (U16_COLS / 2) + se);
        const long long b_chunk = MP_KC * ldbe / 4;
        uint4 ra = ap[0], rb = bp[0];
        unsigned int pacc[4][4];
        u16_sweep(pacc, ap, bp, b_chunk, ra, rb, K, sm.p);
#pragma unroll
        for (int i = 0; i < 4; ++i) decode_pairs_u16(pacc[i], acc[i]);
    }
    if (by_columns)
        tile_store_groups_by_columns<2>(acc, C + c0 * ldc + r0, ldc, rows, cols, &sm);
    else
        tile_store_groups<2>(acc, C + r0 * ldc + c0, ldc, rows, cols);
}
