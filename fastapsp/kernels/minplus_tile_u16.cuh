// The packed 16-bit arithmetic of the min-plus products of float32 operands that hold whole
// numbers (graphs with integer weights): one instruction adds and takes the minimum of two 16-bit
// halves (on Hopper a DPX instruction; older GPUs get the same result from two SIMD instructions).
// Used by min_plus_u16.cu, grouped_min_plus_u16.cu, min_plus_smallk_u16.cu and min_plus_stats.cu; needs minplus_tile.cuh.
//
// Encoding: a finite operand d with 0 <= d <= U16_LIMIT is stored as d, +inf as
// U16_INF.  Two finite operands sum to at most 2 * U16_LIMIT < U16_INF and any
// sum with +inf is >= U16_INF, and no sum of two encoded values passes 0xFFFF,
// so a result >= U16_INF means +inf and every other result is exact.
//
// Thread (ty, tx) = (t / 16, t % 16) of the 256 keeps rows 4*ty .. 4*ty+3 and 8 columns of a
// 64 x 128 tile as 4 x 4 packed column pairs: columns 4*tx .. 4*tx+3 and 64+4*tx .. 64+4*tx+3, so
// that each 16-byte store of the 16 threads sharing a row covers 256 contiguous bytes (whole
// sectors; 8 adjacent columns a thread would store every other 16 bytes, at about half the write
// rate: benchmarks/store_pattern_bench.py measures both).  The B tile is laid out to match
// (u16_pair): the 16 bytes a thread reads at pair position 4*tx hold its four column pairs.

#define U16_INF 0x7FFFu
#define U16_LIMIT 0x3FFF
#define U16_COLS 128

// min(a + b, c) on both halves.  Each half of a and b is at most 0x7FFF, so a
// plain 32-bit add never carries from the low half into the high one; the
// default is the DPX instruction, U16_SPLIT an add and a SIMD minimum.
#ifdef U16_SPLIT
#define U16_ADDMIN(a, b, c) __vminu2((a) + (b), (c))
#else
#define U16_ADDMIN(a, b, c) __viaddmin_u16x2((a), (b), (c))
#endif

// The operands of one chunk of the wide packed products (min_plus_u16.cu, grouped_min_plus_u16.cu),
// double-buffered: one barrier a chunk.
struct MinPlusU16Smem {
    unsigned int a[2][MP_KC][MP_TILE + 4];  // A entry in both halves, k-major (padded: spread over the banks)
    unsigned int b[2][MP_KC][U16_COLS / 2];  // B column pairs, Be's order (u16_pair)
};

// The column pair of a 128-column tile kept at pair position q (0..63) of a packed B tile: position
// 4 tx + j holds pair 2 tx + j for j < 2 (columns 4 tx .. 4 tx + 3) and 32 + 2 tx + j - 2 for j >= 2
// (columns 64 + 4 tx .. 64 + 4 tx + 3).
__device__ __forceinline__ int u16_pair(int q)
{
    const int tx = q >> 2, j = q & 3;
    return j < 2 ? 2 * tx + j : 30 + 2 * tx + j;
}

// The tile column of a thread's value j (0..7, decode_pairs_u16's order).
__device__ __forceinline__ int u16_col(int tx, int j) { return j < 4 ? 4 * tx + j : 60 + 4 * tx + j; }

// Rows of K the encoded operands hold (min_plus_u16.cu's Ae and Be): K rounded up to a whole chunk.
__device__ __forceinline__ int encoded_k(int K) { return (K + MP_KC - 1) / MP_KC * MP_KC; }

// Plain conversions (F2I, I2F): converting with the 2^23 trick instead (x + 2^23 holds a whole x in
// its mantissa) made min_plus_smallk_u16.cu slower (docs/kernels.md).
__device__ __forceinline__ unsigned int encode_u16(float x, bool& bad)
{
    if (x == __int_as_float(0x7f800000)) return U16_INF;
    bad |= !(x >= 0.0f && x <= (float)U16_LIMIT && x == truncf(x));
    return (unsigned int)fminf(fmaxf(x, 0.0f), (float)U16_LIMIT);
}

__device__ __forceinline__ float decode_u16(unsigned int v)
{
    return v >= U16_INF ? __int_as_float(0x7f800000) : (float)v;
}

// A thread's 4 packed column pairs of one row as its 8 float columns.
__device__ __forceinline__ void decode_pairs_u16(const unsigned int (&pairs)[4], float (&v)[8])
{
#ifdef U16_DECODE_FMA
    // Off the integer pipe, which the packed sweep keeps busy: each half converted from its own 16 bits
    // (I2F.U16, no shift or mask), then +inf where it is U16_INF or more without a compare and select:
    // t = saturate(2 x - (2 U16_INF - 1)) is 0 for a distance and 1 above, and t * FLT_MAX + x rounded
    // up is x for t = 0 and overflows to +inf for t = 1.
    const float top = (float)(2 * U16_INF - 1), flt_max = 3.4028234663852886e38f;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        unsigned short lo, hi;
        asm("mov.b32 {%0, %1}, %2;" : "=h"(lo), "=h"(hi) : "r"(pairs[j]));
        const float x = (float)lo, y = (float)hi;
        v[2 * j] = __fmaf_ru(__saturatef(fmaf(x, 2.0f, -top)), flt_max, x);
        v[2 * j + 1] = __fmaf_ru(__saturatef(fmaf(y, 2.0f, -top)), flt_max, y);
    }
#else
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        v[2 * j] = decode_u16(pairs[j] & 0xFFFFu);
        v[2 * j + 1] = decode_u16(pairs[j] >> 16);
    }
#endif
}

// One step of K in packed form: acc[i][j] <- min(acc[i][j], a[i] + b[j]) on both halves, for the
// 4 A entries at `a` (each in both halves) and the 4 B column pairs at `b` (shared memory, 16 bytes each).
__device__ __forceinline__ void u16_step(unsigned int (&acc)[4][4], const unsigned int* a, const unsigned int* b)
{
    const uint4 a4 = *reinterpret_cast<const uint4*>(a);
    const uint4 b4 = *reinterpret_cast<const uint4*>(b);
    const unsigned int av[4] = {a4.x, a4.y, a4.z, a4.w};
    const unsigned int bv[4] = {b4.x, b4.y, b4.z, b4.w};
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = U16_ADDMIN(av[i], bv[j], acc[i][j]);
}

// The packed sweep of one 64 x 128 tile over K from operands encoded in the wide products' layout
// (min_plus_u16.cu, grouped_min_plus_u16.cu): acc <- A (x) B from +inf, chunk by chunk through
// double-buffered shared memory, one barrier a chunk.  Thread t moves words 4t .. 4t + 3 of each
// operand's chunk, 16 bytes each: ap and bp point at its first chunk's words, ra and rb hold them
// already (asked for by the caller, so their latency overlaps the caller's own start), and b_chunk
// is the step in uint4 from one chunk of B to the next (a chunk of A is one uint4 a thread).
__device__ __forceinline__ void u16_sweep(unsigned int (&acc)[4][4], const uint4* ap, const uint4* bp,
                                          long long b_chunk, uint4 ra, uint4 rb, int K, MinPlusU16Smem& sm)
{
    const int t = threadIdx.x, tx = t & 15, ty = t >> 4, sk = t >> 4, se = 4 * (t & 15);
    const int K4 = (K + 3) & ~3;
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = 0xFFFFFFFFu;
    int buf = 1;
    sweep_k(K4, [&](int k0) {  // the last chunk only as far as K (rounded up to 4)
        buf ^= 1;
        *reinterpret_cast<uint4*>(&sm.a[buf][sk][se]) = ra;
        *reinterpret_cast<uint4*>(&sm.b[buf][sk][se]) = rb;
        // The buffer written two chunks ago was read before every thread passed the last barrier.
        __syncthreads();
        if (k0 + MP_KC < K4) {
            ap += MP_THREADS;
            bp += b_chunk;
            ra = *ap;
            rb = *bp;
        }
    }, [&](int kk) { u16_step(acc, &sm.a[buf][kk][4 * ty], &sm.b[buf][kk][4 * tx]); });
}

// Ct[0:rows, 0:cols] <- [min(Ct,)] At (x) Bt in float32, 64 columns at a time (minplus_tile): what a
// 16-bit product computes instead where an operand does not fit.  Every thread of the block calls it.
__device__ __forceinline__ void float_tiles(const float* At, long long lda, const float* Bt, long long ldb, float* Ct,
                                            long long ldc, int rows, long long cols, int K, int accumulate,
                                            MinPlusSmem& sm, const long long* crow = nullptr)
{
    for (long long c0 = 0; c0 < cols; c0 += MP_TILE) {
        const int tc = (int)min((long long)MP_TILE, cols - c0);
        float facc[4][4];
        tile_load(facc, Ct + c0, ldc, rows, tc, accumulate != 0, crow);
        minplus_tile<true>(facc, At, lda, Bt + c0, ldb, rows, tc, K, sm);  // starts with a barrier
        tile_store(facc, Ct + c0, ldc, rows, tc, crow);
    }
}

#ifdef MP_ROW_MAP
// The pieces of a row shorter than a vector (1 to 3 floats at p, values q): a 4-byte store where p is
// not 8-byte aligned, an 8-byte one for a pair, a 4-byte one for what is left.  Lengths and offsets
// pick values by selects: registers indexed at run time would go to local memory.
__device__ __forceinline__ void store_piece(float* p, int len, const float (&q)[3])
{
    const int f = (len > 0 && (reinterpret_cast<unsigned long long>(p) & 4)) ? 1 : 0;
    if (f) p[0] = q[0];
    const int rem = len - f;
    if (rem >= 2) *reinterpret_cast<float2*>(p + f) = f ? make_float2(q[1], q[2]) : make_float2(q[0], q[1]);
    if (rem & 1) p[len - 1] = len == 1 ? q[0] : len == 2 ? q[1] : q[2];
}

// One full row (128 columns) of a packed tile whose row may start off a 16-byte boundary (a device
// result of n columns, n not a multiple of 4): its first S columns (0 to 3) come before the row's
// first boundary.  In each half of 64 columns, thread t of the 16 sharing the row stores the aligned
// vector of columns 4t + S .. 4t + S + 3 of the half: its own last 4 - S values and the first S of
// its right neighbour's (`next0`, `next1`: lane t + 1's values of each half by a warp shuffle; the
// neighbour of thread 15 in the first half is thread 0 in the second); thread 15 stores no vector
// in the second half.  The two pieces left, the head (columns 0 .. S - 1, thread 0) and the tail
// (124 + S .. 127, thread 15), take one store_piece each, so that a warp issues no more stores a
// row than that.
__device__ __forceinline__ void store_row_u16_shifted(const float (&v)[8], const float (&next0)[3],
                                                      const float (&next1)[3], float* row, int tx)
{
    const int S = (4 - (int)((reinterpret_cast<unsigned long long>(row) >> 2) & 3)) & 3;
    const float x0[7] = {v[0], v[1], v[2], v[3], next0[0], next0[1], next0[2]};
    const float x1[7] = {v[4], v[5], v[6], v[7], next1[0], next1[1], next1[2]};
    float w0[4], w1[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        w0[j] = S == 0 ? x0[j] : S == 1 ? x0[j + 1] : S == 2 ? x0[j + 2] : x0[j + 3];
        w1[j] = S == 0 ? x1[j] : S == 1 ? x1[j + 1] : S == 2 ? x1[j + 2] : x1[j + 3];
    }
    const int c = 4 * tx + S;
    store4(row + c, w0);
    if (tx < 15 || S == 0) store4(row + 64 + c, w1);
    const bool head = tx == 0;
    const float q[3] = {head ? v[0] : w1[0], head ? v[1] : w1[1], head ? v[2] : w1[2]};
    const int len = S == 0 ? 0 : head ? S : tx == 15 ? 4 - S : 0;
    store_piece(head ? row : row + 64 + c, len, q);
}
#endif

// Ct[0:rows, 0:cols] <- [min(Ct,)] the packed results: thread (ty, tx) holds rows 4 ty .. 4 ty + 3,
// columns u16_col(tx, 0..7) as 4 x 4 pairs.  Without accumulate, full aligned rows go out as two
// float4 stores (evict-first with MP_STREAM_STORE), and rows of a row map that start off 16-byte
// boundaries as shifted float4 stores (store_row_u16_shifted).
__device__ __forceinline__ void store_tile_u16(const unsigned int (&acc)[4][4], float* Ct, long long ldc, int rows,
                                               int cols, int accumulate, const long long* crow = nullptr)
{
    const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
#ifdef MP_ROW_MAP
    if (!accumulate && crow && !aligned16(Ct, ldc)) {
        const int right = (tx + 1) & 15;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int r = 4 * ty + i;
            float v[8], n0[3], n1[3];
            decode_pairs_u16(acc[i], v);
            // Every lane shuffles (the two rows of a warp may differ in whether they exist).
#pragma unroll
            for (int j = 0; j < 3; ++j) {
                const float a = __shfl_sync(FULL_MASK, v[j], right, 16);
                n1[j] = __shfl_sync(FULL_MASK, v[4 + j], right, 16);
                n0[j] = tx < 15 ? a : n1[j];
            }
            if (r >= rows) continue;
            float* row = Ct + row_offset(crow, r, ldc);
            if (cols == U16_COLS) {
                store_row_u16_shifted(v, n0, n1, row, tx);
            } else {  // the last columns of the matrix
#pragma unroll
                for (int j = 0; j < 8; ++j)
                    if (u16_col(tx, j) < cols) row[u16_col(tx, j)] = v[j];
            }
        }
        return;
    }
#endif
    const bool vec = !accumulate && aligned16(Ct, ldc);
    if (vec && rows == MP_TILE && cols == U16_COLS && !crow) {
        // A whole tile in rows that follow one another: one pointer a row and no test a store (the
        // compute-bound products spend a quarter of their instructions outside the sweep).
        float* row = Ct + (long long)(4 * ty) * ldc + u16_col(tx, 0);
#pragma unroll
        for (int i = 0; i < 4; ++i, row += ldc) {
            float v[8];
            decode_pairs_u16(acc[i], v);
            store4(row, {v[0], v[1], v[2], v[3]});
            store4(row + 64, {v[4], v[5], v[6], v[7]});
        }
        return;
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int r = 4 * ty + i;
        if (r >= rows) break;
        float* row = Ct + row_offset(crow, r, ldc);
        float v[8];
        decode_pairs_u16(acc[i], v);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int c = u16_col(tx, 4 * h);
            if (vec && c + 4 <= cols) {
                store4(row + c, {v[4 * h], v[4 * h + 1], v[4 * h + 2], v[4 * h + 3]});
            } else {
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    if (c + j < cols) row[c + j] = accumulate ? fminf(row[c + j], v[4 * h + j]) : v[4 * h + j];
            }
        }
    }
}
