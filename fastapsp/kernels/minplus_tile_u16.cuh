// One 64 x 128 tile of a min-plus product of float32 operands that hold whole
// numbers (graphs with integer weights), in packed 16-bit arithmetic: one
// instruction adds and takes the minimum of two 16-bit halves (on Hopper a DPX
// instruction; older GPUs get the same result from two SIMD instructions).
// Used by min_plus_u16.cu; needs minplus_tile.cuh.
//
// Encoding: a finite operand d with 0 <= d <= U16_LIMIT is stored as d, +inf as
// U16_INF.  Two finite operands sum to at most 2 * U16_LIMIT < U16_INF and any
// sum with +inf is >= U16_INF, and no sum of two encoded values passes 0xFFFF,
// so a result >= U16_INF means +inf and every other result is exact.
//
// Thread (ty, tx) = (t / 16, t % 16) of the 256 keeps rows 4*ty .. 4*ty+3 and
// columns 8*tx .. 8*tx+7 as 4 x 4 packed column pairs.  Operands are converted
// while they are staged in shared memory.  When a block meets an operand that
// does not fit (too large, negative, fractional, NaN) it computes its tile
// again in float32 with minplus_tile: the answer is the same, only slower.

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

struct MinPlusU16Smem {
    unsigned int a[MP_KC][MP_TILE + 4];  // A entry in both halves
    unsigned int b[MP_KC][U16_COLS / 2];  // B columns 2j (low half) and 2j+1 (high half)
};

union MinPlusU16Shared {
    MinPlusU16Smem p;
    MinPlusSmem f;  // the float32 tile of the fallback
};

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
        minplus_tile(facc, At, lda, Bt + c0, ldb, rows, tc, K, sm);  // starts with a barrier
        tile_store(facc, Ct + c0, ldc, rows, tc, crow);
    }
}

// Ct[0:rows, 0:cols] <- [min(Ct,)] the packed results: thread (ty, tx) holds rows 4 ty .. 4 ty + 3,
// columns 8 tx .. 8 tx + 7 as 4 x 4 pairs.  Without accumulate, full aligned rows go out as two
// float4 stores (evict-first with MP_STREAM_STORE).
__device__ __forceinline__ void store_tile_u16(const unsigned int (&acc)[4][4], float* Ct, long long ldc, int rows,
                                               int cols, int accumulate, const long long* crow = nullptr)
{
    const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
    const bool vec = !accumulate && aligned16(Ct, ldc) && 8 * tx + 8 <= cols;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int r = 4 * ty + i;
        if (r >= rows) break;
        float* row = Ct + row_offset(crow, r, ldc) + 8 * tx;
        float v[8];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            v[2 * j] = decode_u16(acc[i][j] & 0xFFFFu);
            v[2 * j + 1] = decode_u16(acc[i][j] >> 16);
        }
        if (vec) {
#ifdef MP_STREAM_STORE
            __stcs(reinterpret_cast<float4*>(row), make_float4(v[0], v[1], v[2], v[3]));
            __stcs(reinterpret_cast<float4*>(row) + 1, make_float4(v[4], v[5], v[6], v[7]));
#else
            reinterpret_cast<float4*>(row)[0] = make_float4(v[0], v[1], v[2], v[3]);
            reinterpret_cast<float4*>(row)[1] = make_float4(v[4], v[5], v[6], v[7]);
#endif
        } else {
#pragma unroll
            for (int j = 0; j < 8; ++j)
                if (8 * tx + j < cols) row[j] = accumulate ? fminf(row[j], v[j]) : v[j];
        }
    }
}

// Ct[0:rows, 0:cols] <- [min(Ct,)] At (x) Bt for one 64 x 128 tile: At points at
// row 0 of the tile's rows (rows x K, leading dimension lda), Bt at column 0 of
// its columns (K x cols, ldb); crow: rows of Ct scattered (minplus_tile.cuh's row_offset).  Every
// thread of the block must call this.
__device__ __forceinline__ void minplus_tile_u16(const float* At, long long lda, const float* Bt, long long ldb,
                                                 float* Ct, long long ldc, int rows, int cols, int K,
                                                 int accumulate, MinPlusU16Shared& sm,
                                                 unsigned int* fallbacks = nullptr, const long long* crow = nullptr)
{
    const int t = threadIdx.x, tx = t & 15, ty = t >> 4;
    const int a_col = t & 15, a_row = t >> 4;   // fetches A rows a_row + 16p, column a_col
    const int b_pair = t & 63, b_row = t >> 6;  // fetches B rows b_row + 4p, columns 2*b_pair, 2*b_pair + 1

    unsigned int acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = 0xFFFFFFFFu;

    unsigned int ra[4], rb[4];
    bool bad = false;
    auto fetch = [&](int k0) {
#pragma unroll
        for (int p = 0; p < 4; ++p) {
            const int r = a_row + 16 * p, k = k0 + a_col;
            const unsigned int v = encode_u16((r < rows && k < K) ? At[(long long)r * lda + k] : INF_R, bad);
            ra[p] = v | (v << 16);
        }
#pragma unroll
        for (int p = 0; p < 4; ++p) {
            const int k = k0 + b_row + 4 * p, c = 2 * b_pair;
            const float* row = Bt + (long long)k * ldb;
            const unsigned int lo = encode_u16((k < K && c < cols) ? row[c] : INF_R, bad);
            const unsigned int hi = encode_u16((k < K && c + 1 < cols) ? row[c + 1] : INF_R, bad);
            rb[p] = lo | (hi << 16);
        }
    };

    bool fallback = false;
    fetch(0);
    for (int k0 = 0; k0 < K; k0 += MP_KC) {
        __syncthreads();  // the previous chunk is no longer read
#pragma unroll
        for (int p = 0; p < 4; ++p) {
            sm.p.a[a_col][a_row + 16 * p] = ra[p];
            sm.p.b[b_row + 4 * p][b_pair] = rb[p];
        }
        if (__syncthreads_or(bad)) {  // also the barrier before the chunk is read
            fallback = true;
            break;
        }
        if (k0 + MP_KC < K) fetch(k0 + MP_KC);
        auto step = [&](int kk) { u16_step(acc, &sm.p.a[kk][4 * ty], &sm.p.b[kk][4 * tx]); };
        sweep_chunk(step, K - k0);
    }

    if (fallback) {  // the whole tile in float32, as two 64-column tiles
        if (fallbacks != nullptr && threadIdx.x == 0) atomicAdd(fallbacks, 1u);
        float_tiles(At, lda, Bt, ldb, Ct, ldc, rows, cols, K, accumulate, sm.f, crow);
        return;
    }
    store_tile_u16(acc, Ct, ldc, rows, cols, accumulate, crow);
}
