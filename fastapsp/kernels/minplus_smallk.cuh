// The float32/float64 product of min_plus_smallk.cu for a short inner dimension
// K <= SK_MAXK, as a function of the block: min_plus_smallk.cu runs it over all
// its columns, min_plus_smallk_u16.cu over the columns its packed 16-bit sweep
// had to leave (an operand that does not fit).  Needs minplus_tile.cuh.
//
// A block keeps its 64 x K slice of A in shared memory and sweeps column tiles
// of 64 with it, double-buffering B: the next B tile is fetched into registers
// while the current one is used, one barrier per tile.  Thread (ty, tx) keeps
// the 4 x 4 outputs of rows 4 ty .. 4 ty + 3, columns 4 tx .. 4 tx + 3 of the
// current tile (as minplus_tile.cuh).  K is swept in steps of 4 (the padding
// reads +inf).

#define SK_MAXK (sizeof(REAL) == 4 ? 32 : 16)  // double: half, within 48 KB of static shared memory

struct SmallKSmem {
    REAL a[SK_MAXK][MP_TILE + 4];  // k-major: a thread's 4 rows are one vector read
    REAL b[2][SK_MAXK][MP_TILE];
};

template <int V>
struct KSteps {
    static constexpr int value = V;
};

// fn(KSteps<K4>{}) for K4 = 4, 8, ..., Last (K rounded up to 4; Last for anything above it): the
// sweeps over K are unrolled for each of them.  A sweep past its kernel's largest K is never called.
template <int Last = 56, class Fn>
__device__ __forceinline__ void by_k4(int K4, Fn&& fn)
{
    static_assert(Last % 4 == 0 && Last >= 4 && Last <= 56, "by_k4: Last a multiple of 4 from 4 to 56");
    // Cases past Last sweep Last, as the default does: they name no further sweep.
#define FASTAPSP_BY_K4(S) \
    case S: fn(KSteps<(S < Last ? S : Last)>{}); break;
    switch (K4) {
    FASTAPSP_BY_K4(4) FASTAPSP_BY_K4(8) FASTAPSP_BY_K4(12) FASTAPSP_BY_K4(16) FASTAPSP_BY_K4(20)
    FASTAPSP_BY_K4(24) FASTAPSP_BY_K4(28) FASTAPSP_BY_K4(32) FASTAPSP_BY_K4(36) FASTAPSP_BY_K4(40)
    FASTAPSP_BY_K4(44) FASTAPSP_BY_K4(48) FASTAPSP_BY_K4(52)
    default: fn(KSteps<Last>{}); break;
    }
#undef FASTAPSP_BY_K4
}

// Spare: one relaxation a step (minplus_tile's Spare).
template <int KK, bool Spare>
__device__ __forceinline__ void smallk_sweep(REAL (&acc)[4][4], const SmallKSmem& sm, int buf, int tx, int ty)
{
    if constexpr (KK <= SK_MAXK && Spare) {
#pragma unroll
        for (int kk = 0; kk < KK; ++kk) {
            REAL a[4], b[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) a[i] = sm.a[kk][4 * ty + i];
#pragma unroll
            for (int j = 0; j < 4; ++j) b[j] = sm.b[buf][kk][4 * tx + j];
            relax_one_row(acc, a, b);
        }
    } else if constexpr (KK <= SK_MAXK) {  // larger KK is never called (the host keeps K <= SK_MAXK)
#pragma unroll
        for (int kk = 0; kk < KK; kk += 2) {  // two rows of K a step (KK is a multiple of 4)
            REAL a[2][4], b[2][4];
#pragma unroll
            for (int h = 0; h < 2; ++h) {
#pragma unroll
                for (int i = 0; i < 4; ++i) a[h][i] = sm.a[kk + h][4 * ty + i];
#pragma unroll
                for (int j = 0; j < 4; ++j) b[h][j] = sm.b[buf][kk + h][4 * tx + j];
            }
            relax_two_rows(acc, a, b);
        }
    }
}

// Rows r0 .. r0 + 63 of C (fewer at the end), `tiles` column tiles of 64 from column `first` on
// (fewer at the end of N): C = [min(C,)] A (x) B (crow: rows of C scattered, minplus_tile.cuh's
// row_offset).  Every thread of the block calls it; it
// overwrites all of `sm`, so a caller that used it before must have passed a barrier since.
template <bool Spare = false>
__device__ __forceinline__ void smallk_columns(const REAL* A, long long lda, const REAL* B, long long ldb, REAL* C,
                                               long long ldc, int M, int N, int K, int accumulate, long long r0,
                                               long long first, int tiles, SmallKSmem& sm,
                                               const long long* crow = nullptr)
{
    const int t = threadIdx.x, tx = t & 15, ty = t >> 4;
    const int b_col = t & 63, b_row = t >> 6;  // this thread fetches B rows b_row + 4p, column b_col
    const int rows = (int)min((long long)MP_TILE, M - r0);
    const int K4 = (K + 3) & ~3;

    for (int e = t; e < MP_TILE * K4; e += MP_THREADS) {  // A: consecutive threads read along a row
        const int r = e / K4, k = e - r * K4;
        sm.a[k][r] = (r < rows && k < K) ? A[(r0 + r) * lda + k] : INF_R;
    }

    REAL rb[SK_MAXK / 4];
    auto fetch = [&](long long c0) {
        const long long c = c0 + b_col;
#pragma unroll
        for (int p = 0; p < SK_MAXK / 4; ++p) {
            const int k = b_row + 4 * p;
            rb[p] = (k < K && c < N) ? B[(long long)k * ldb + c] : INF_R;
        }
    };

    fetch(first);
    for (int tile = 0; tile < tiles; ++tile) {
        const long long c0 = first + (long long)tile * MP_TILE;
        if (c0 >= N) break;  // the same for the whole block
        const int buf = tile & 1;
#pragma unroll
        for (int p = 0; p < SK_MAXK / 4; ++p)
            if (b_row + 4 * p < K4) sm.b[buf][b_row + 4 * p][b_col] = rb[p];
        // One barrier a tile: buffer buf was last read two tiles ago, before the barrier of the
        // tile in between; the first one also publishes A.
        __syncthreads();
        if (tile + 1 < tiles && c0 + MP_TILE < N) fetch(c0 + MP_TILE);
        const int cols = (int)min((long long)MP_TILE, N - c0);
        REAL* tile_c = tile_origin(C, ldc, crow, r0, c0);
        const long long* trow = tile_rows(crow, r0);
        REAL acc[4][4];
        tile_load(acc, tile_c, ldc, rows, cols, accumulate != 0, trow);
        by_k4(K4, [&](auto steps) { smallk_sweep<decltype(steps)::value, Spare>(acc, sm, buf, tx, ty); });
        tile_store(acc, tile_c, ldc, rows, cols, trow);
    }
}
