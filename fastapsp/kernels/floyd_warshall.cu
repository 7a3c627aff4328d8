// Blocked Floyd-Warshall (Katz and Kider), in place on an n x n matrix with
// leading dimension ld, zero diagonal, +inf for "no arc".  For each diagonal
// tile kb of 64 x 64 the host launches:
//   fw_phase1  1 block:             close the pivot tile in shared memory;
//   fw_phase2  (nt - 1, 2) blocks:  the other tiles of pivot row / column
//                                   through the closed pivot;
//   fw_phase3  (nt - 1, nt - 1):    every other tile through its row and
//                                   column tiles of the pivot stripe.
// 256 threads a block, 4 x 4 entries a thread held in registers (Lund and Smith).
// The *_batch kernels do the same for many matrices in one launch (grid z).
// Phases 2 and 3 are min-plus tile products (minplus_tile.cuh): since the pivot
// tile is closed, one product with it equals the sequential k loop.
#include "common.cuh"
#include "minplus_tile.cuh"

#define FW_TILE MP_TILE

__device__ __forceinline__ void fw_phase1_tile(REAL* D, long long ld, int n, int kb)
{
    __shared__ __align__(16) REAL t[FW_TILE][FW_TILE];
    const long long base = (long long)kb * FW_TILE;
    const int size = min((long long)FW_TILE, n - base);
    const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
    REAL* tile = D + base * ld + base;
    REAL acc[4][4];
    tile_load(acc, tile, ld, size, size, true);
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) t[4 * ty + i][4 * tx + j] = acc[i][j];
    // Row k and column k do not change in step k (zero diagonal), so each step
    // needs one barrier: entries written in step k are read only in step k + 1.
    for (int k = 0; k < size; ++k) {
        __syncthreads();
        REAL a[4], b[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) a[i] = t[4 * ty + i][k];
#pragma unroll
        for (int j = 0; j < 4; ++j) b[j] = t[k][4 * tx + j];
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const REAL v = a[i] + b[j];
                if (v < acc[i][j]) {
                    acc[i][j] = v;
                    t[4 * ty + i][4 * tx + j] = v;
                }
            }
    }
    tile_store(acc, tile, ld, size, size);
}

__device__ __forceinline__ void fw_phase2_tile(REAL* D, long long ld, int n, int kb, int bx, int by)
{
    __shared__ __align__(16) MinPlusSmem sm;
    const int other = bx + (bx >= kb);
    const long long p = (long long)kb * FW_TILE, o = (long long)other * FW_TILE;
    const int psize = min((long long)FW_TILE, n - p), osize = min((long long)FW_TILE, n - o);
    const REAL* pivot = D + p * ld + p;
    REAL* tile;
    const REAL *A, *B;
    int rows, cols;
    if (by == 0) {  // tile (kb, other) <- pivot (x) itself
        tile = D + p * ld + o;
        A = pivot;
        B = tile;
        rows = psize;
        cols = osize;
    } else {  // tile (other, kb) <- itself (x) pivot
        tile = D + o * ld + p;
        A = tile;
        B = pivot;
        rows = osize;
        cols = psize;
    }
    // The tile is read whole (as acc and as an operand) before it is written.
    REAL acc[4][4];
    tile_load(acc, tile, ld, rows, cols, true);
    minplus_tile(acc, A, ld, B, ld, rows, cols, psize, sm);
    tile_store(acc, tile, ld, rows, cols);
}

__device__ __forceinline__ void fw_phase3_tile(REAL* D, long long ld, int n, int kb, int bx, int by)
{
    __shared__ __align__(16) MinPlusSmem sm;
    const int bi = by + (by >= kb);
    const int bj = bx + (bx >= kb);
    const long long p = (long long)kb * FW_TILE, r0 = (long long)bi * FW_TILE, c0 = (long long)bj * FW_TILE;
    const int psize = min((long long)FW_TILE, n - p);
    const int rows = min((long long)FW_TILE, n - r0), cols = min((long long)FW_TILE, n - c0);
    REAL* tile = D + r0 * ld + c0;
    REAL acc[4][4];
    tile_load(acc, tile, ld, rows, cols, true);
    minplus_tile(acc, D + r0 * ld + p, ld, D + p * ld + c0, ld, rows, cols, psize, sm);
    tile_store(acc, tile, ld, rows, cols);
}

// One matrix: the host launches these for kb = 0 .. nt - 1.
extern "C" __global__ void __launch_bounds__(MP_THREADS, MP_MIN_BLOCKS) fw_phase1(REAL* D, long long ld, int n, int kb)
{
    fw_phase1_tile(D, ld, n, kb);
}

// 2 (nt - 1) blocks a pivot: too few for the occupancy hint to matter, and held to it this one spills.
extern "C" __global__ void __launch_bounds__(MP_THREADS) fw_phase2(REAL* D, long long ld, int n, int kb)
{
    fw_phase2_tile(D, ld, n, kb, blockIdx.x, blockIdx.y);
}

extern "C" __global__ void __launch_bounds__(MP_THREADS, MP_MIN_BLOCKS) fw_phase3(REAL* D, long long ld, int n, int kb)
{
    fw_phase3_tile(D, ld, n, kb, blockIdx.x, blockIdx.y);
}

// Many matrices at once, matrix z = blockIdx.z (D[z], ld[z], n[z]): the grid is
// sized for the largest, and the blocks past a smaller matrix's tiles return
// (the whole block, before any barrier).  One launch per phase and pivot for the
// batch instead of one per matrix: a component of ~1,000 vertices takes 48
// launches to close, and a million-vertex graph has ~1,000 components.
extern "C" __global__ void __launch_bounds__(MP_THREADS, MP_MIN_BLOCKS)
fw_phase1_batch(REAL* const* D, const long long* ld, const int* n, int kb)
{
    const int z = blockIdx.z;
    if ((long long)kb * FW_TILE >= n[z]) return;
    fw_phase1_tile(D[z], ld[z], n[z], kb);
}

extern "C" __global__ void __launch_bounds__(MP_THREADS, MP_MIN_BLOCKS)
fw_phase2_batch(REAL* const* D, const long long* ld, const int* n, int kb)
{
    const int z = blockIdx.z, nt = (n[z] + FW_TILE - 1) / FW_TILE;
    if (kb >= nt || (int)blockIdx.x >= nt - 1) return;
    fw_phase2_tile(D[z], ld[z], n[z], kb, blockIdx.x, blockIdx.y);
}

extern "C" __global__ void __launch_bounds__(MP_THREADS, MP_MIN_BLOCKS)
fw_phase3_batch(REAL* const* D, const long long* ld, const int* n, int kb)
{
    const int z = blockIdx.z, nt = (n[z] + FW_TILE - 1) / FW_TILE;
    if (kb >= nt || (int)blockIdx.x >= nt - 1 || (int)blockIdx.y >= nt - 1) return;
    fw_phase3_tile(D[z], ld[z], n[z], kb, blockIdx.x, blockIdx.y);
}
