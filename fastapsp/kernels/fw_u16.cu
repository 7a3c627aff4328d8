// Phase 3 of the blocked Floyd-Warshall (floyd_warshall.cu) in packed 16-bit arithmetic, for
// batches of float32 matrices whose entries are whole numbers (minplus_tile_u16.cuh's encoding):
// the local closures of components of graphs with whole-number weights, where every finite
// distance inside a component fits (fastapsp/stages/min_plus.py decides).  Phase 3 is nearly all
// of a closure's work; phases 1 and 2 stay in floyd_warshall.cu.
//
// Block (x, y, z): rows of tile y of matrix z (the pivot's row of tiles skipped), columns
// 128 x .. 128 x + 127, every tile of that row through the pivot stripe: C <- min(C, A (x) B)
// with A the row's tile in the pivot column and B the pivot row's tiles.  Thread (ty, tx) keeps
// rows 4 ty .. 4 ty + 3 and columns 8 tx .. 8 tx + 7 as packed pairs, starting from C itself.
// The pivot column's own tile, when it lies in the block's columns, is computed but not stored:
// other blocks read it as their A, and it is already final (phase 2).  Where an entry of C, A
// or B does not fit the encoding the block computes its tiles in float32 (minplus_tile), with the
// same result.
#undef REAL
#define REAL float
#define MP_ALIGNED_ROWS
#include "common.cuh"
#include "minplus_tile.cuh"
#include "minplus_tile_u16.cuh"

#define FW_TILE MP_TILE

// The block's tiles in float32 (an entry does not fit the encoding), but the `skip` half (-1: none).
__device__ __forceinline__ void fw_float_tiles(const float* At, const float* Bt, float* Ct, long long ld, int rows,
                                            int cols, int K, int skip, MinPlusSmem& sm)
{
    for (int half = 0; half < 2; ++half) {
        const int hc = half * FW_TILE;
        if (half == skip || hc >= cols) continue;  // the same for the whole block
        const int tc = min(FW_TILE, cols - hc);
        float facc[4][4];
        tile_load(facc, Ct + hc, ld, rows, tc, true);
        minplus_tile(facc, At, ld, Bt + hc, ld, rows, tc, K, sm);  // starts with a barrier
        tile_store(facc, Ct + hc, ld, rows, tc);
    }
}

__device__ __forceinline__ void fw_phase3_u16_tile(float* D, long long ld, int n, int kb, int bx, int by,
                                                   MinPlusU16Shared& sm, unsigned int* fallbacks)
{
    const int t = threadIdx.x, tx = t & 15, ty = t >> 4;
    const int bi = by + (by >= kb);
    const long long p = (long long)kb * FW_TILE, r0 = (long long)bi * FW_TILE, c0 = (long long)bx * U16_COLS;
    const int K = (int)min((long long)FW_TILE, n - p);
    const int rows = (int)min((long long)FW_TILE, n - r0), cols = (int)min((long long)U16_COLS, n - c0);
    const float* At = D + r0 * ld + p;
    const float* Bt = D + p * ld + c0;
    float* Ct = D + r0 * ld + c0;
    const int skip = p == c0 ? 0 : (p == c0 + FW_TILE ? 1 : -1);  // the half of the columns in the pivot column
    const int a_col = t & 15, a_row = t >> 4;
    const int b_pair = t & 63, b_row = t >> 6;

    bool bad = false;
    unsigned int acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int r = 4 * ty + i;
        const float* row = Ct + (long long)r * ld + 8 * tx;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int c = 8 * tx + 2 * j;
            const unsigned int lo = encode_u16((r < rows && c < cols) ? row[2 * j] : INF_R, bad);
            const unsigned int hi = encode_u16((r < rows && c + 1 < cols) ? row[2 * j + 1] : INF_R, bad);
            acc[i][j] = lo | (hi << 16);
        }
    }

    unsigned int ra[4], rb[4];
    auto fetch = [&](int k0) {
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            const int r = a_row + 16 * q, k = k0 + a_col;
            const unsigned int v = encode_u16((r < rows && k < K) ? At[(long long)r * ld + k] : INF_R, bad);
            ra[q] = v | (v << 16);
        }
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            const int k = k0 + b_row + 4 * q, c = 2 * b_pair;
            const float* row = Bt + (long long)k * ld;
            const unsigned int lo = encode_u16((k < K && c < cols) ? row[c] : INF_R, bad);
            const unsigned int hi = encode_u16((k < K && c + 1 < cols) ? row[c + 1] : INF_R, bad);
            rb[q] = lo | (hi << 16);
        }
    };

    bool fallback = false;
    fetch(0);
    for (int k0 = 0; k0 < K; k0 += MP_KC) {
        __syncthreads();  // the previous chunk is no longer read
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            sm.p.a[a_col][a_row + 16 * q] = ra[q];
            sm.p.b[b_row + 4 * q][b_pair] = rb[q];
        }
        if (__syncthreads_or(bad)) {  // also the barrier before the chunk is read
            fallback = true;
            break;
        }
        if (k0 + MP_KC < K) fetch(k0 + MP_KC);
        auto step = [&](int kk) { u16_step(acc, &sm.p.a[kk][4 * ty], &sm.p.b[kk][4 * tx]); };
        sweep_chunk(step, K - k0);
    }

    if (fallback) {  // float32, tile by tile, the pivot column's tile left alone
        if (fallbacks != nullptr && t == 0) atomicAdd(fallbacks, 1u);
        fw_float_tiles(At, Bt, Ct, ld, rows, cols, K, skip, sm.f);
        return;
    }
    if ((tx >> 3) == skip) return;  // this thread's columns are the pivot column's tile
    const bool vec = aligned16(Ct, ld) && 8 * tx + 8 <= cols;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int r = 4 * ty + i;
        if (r >= rows) break;
        float* row = Ct + (long long)r * ld + 8 * tx;
        float v[8];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            v[2 * j] = decode_u16(acc[i][j] & 0xFFFFu);
            v[2 * j + 1] = decode_u16(acc[i][j] >> 16);
        }
        if (vec) {
            reinterpret_cast<float4*>(row)[0] = make_float4(v[0], v[1], v[2], v[3]);
            reinterpret_cast<float4*>(row)[1] = make_float4(v[4], v[5], v[6], v[7]);
        } else {
#pragma unroll
            for (int j = 0; j < 8; ++j)
                if (8 * tx + j < cols) row[j] = v[j];
        }
    }
}

// Many matrices at once, matrix z = blockIdx.z (as fw_phase3_batch): grid (ceil(n_max / 128),
// n_max / 64 tiles - 1, matrices); `fallbacks` (may be null) counts the blocks computed in float32.
extern "C" __global__ void __launch_bounds__(MP_THREADS)
fw_phase3_u16_batch(float* const* D, const long long* ld, const int* n, int kb, unsigned int* fallbacks)
{
    __shared__ __align__(16) MinPlusU16Shared sm;
    const int z = blockIdx.z, nz = n[z], nt = (nz + FW_TILE - 1) / FW_TILE;
    if (kb >= nt || (int)blockIdx.y >= nt - 1 || (long long)blockIdx.x * U16_COLS >= nz) return;
    fw_phase3_u16_tile(D[z], ld[z], nz, kb, blockIdx.x, blockIdx.y, sm, fallbacks);
}
