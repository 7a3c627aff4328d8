// Blocked Floyd-Warshall carrying predecessors (fastapsp/stages/predecessors.py):
// in place on D (distances), H (arcs) and P (predecessors), n x n with leading
// dimension ld, zero diagonal with H = 0 and P = -9999.  An entry (i, j) that gets
// shorter through k, by (d, h) order (path_tile.cuh), takes P[k, j], the vertex
// before j on the path from k (P[i, k] if that is none: j == k).
//
// For each diagonal tile kb of 32 x 32 the host launches (as floyd_warshall.cu does):
//   fwp_phase1  1 block:            close the pivot tile, k by k, in shared memory;
//   fwp_phase2  (nt - 1, 2) blocks: the other tiles of pivot row / column, as one
//                                   product with the closed pivot;
//   fwp_phase3  (nt - 1, nt - 1):   every other tile through its row and column
//                                   tiles of the pivot stripe.
// Every block reads its operand tiles into shared memory before it writes.
#include "common.cuh"
#include "path_tile.cuh"

// acc <- acc (+) A (x) B over one 32-wide k range of tiles in shared memory; kbest[i] = the k that won.
__device__ __forceinline__ void path_product(REAL (&acc_d)[PT_ROWS], int (&acc_h)[PT_ROWS], int (&kbest)[PT_ROWS],
                                             const PathTile& A, const PathTile& B)
{
    const int tx = threadIdx.x, ty = threadIdx.y;
#pragma unroll 4
    for (int k = 0; k < PT_TILE; ++k) {
        const REAL bd = B.d[k][tx];
        const int bh = B.h[k][tx];
#pragma unroll
        for (int i = 0; i < PT_ROWS; ++i) {
            const int r = ty + 8 * i;
            const REAL cd = A.d[r][k] + bd;
            const int ch = A.h[r][k] + bh;
            if (path_less(cd, ch, acc_d[i], acc_h[i])) {
                acc_d[i] = cd;
                acc_h[i] = ch;
                kbest[i] = k;
            }
        }
    }
}

// Write back the owned entries of the tile at (r0, c0): predecessor B.p[k, j], or A.p[i, k] when that is none.
__device__ __forceinline__ void path_store(REAL* D, int* H, int* P, long long ld, long long r0, long long c0,
                                           int rows, int cols, const REAL (&acc_d)[PT_ROWS],
                                           const int (&acc_h)[PT_ROWS], const int (&kbest)[PT_ROWS],
                                           const PathTile& A, const PathTile& B)
{
    const int tx = threadIdx.x, ty = threadIdx.y;
    if (tx >= cols) return;
#pragma unroll
    for (int i = 0; i < PT_ROWS; ++i) {
        const int r = ty + 8 * i;
        if (r >= rows || kbest[i] < 0) continue;
        const long long at = (r0 + r) * ld + c0 + tx;
        int p = B.p[kbest[i]][tx];
        if (p == PT_NONE) p = A.p[r][kbest[i]];
        D[at] = acc_d[i];
        H[at] = acc_h[i];
        P[at] = p;
    }
}

extern "C" __global__ void __launch_bounds__(256)
fwp_phase1(REAL* D, int* H, int* P, long long ld, int n, int kb)
{
    __shared__ PathTile t;
    const long long base = (long long)kb * PT_TILE;
    const int size = (int)min((long long)PT_TILE, n - base);
    const int tx = threadIdx.x, ty = threadIdx.y;
    path_tile_load(t, D, H, P, ld, base, base, size, size);
    // Row k and column k do not change in step k (zero diagonal, zero arcs), so
    // one barrier a step: what step k writes is read from step k + 1 on.
    for (int k = 0; k < size; ++k) {
        __syncthreads();
#pragma unroll
        for (int i = 0; i < PT_ROWS; ++i) {
            const int r = ty + 8 * i;
            const REAL cd = t.d[r][k] + t.d[k][tx];
            const int ch = t.h[r][k] + t.h[k][tx];
            if (path_less(cd, ch, t.d[r][tx], t.h[r][tx])) {
                const int p = t.p[k][tx];
                t.d[r][tx] = cd;
                t.h[r][tx] = ch;
                t.p[r][tx] = p != PT_NONE ? p : t.p[r][k];
            }
        }
    }
    __syncthreads();
    if (tx < size) {
        for (int r = ty; r < size; r += 8) {
            const long long at = (base + r) * ld + base + tx;
            D[at] = t.d[r][tx];
            H[at] = t.h[r][tx];
            P[at] = t.p[r][tx];
        }
    }
}

extern "C" __global__ void __launch_bounds__(256)
fwp_phase2(REAL* D, int* H, int* P, long long ld, int n, int kb)
{
    __shared__ PathTile A, B;
    const int other = blockIdx.x + (blockIdx.x >= (unsigned)kb);
    const long long p0 = (long long)kb * PT_TILE, o0 = (long long)other * PT_TILE;
    const int psize = (int)min((long long)PT_TILE, n - p0), osize = (int)min((long long)PT_TILE, n - o0);
    long long r0, c0;
    int rows, cols;
    if (blockIdx.y == 0) {  // tile (kb, other) <- pivot (x) itself
        path_tile_load(A, D, H, P, ld, p0, p0, psize, psize);
        path_tile_load(B, D, H, P, ld, p0, o0, psize, osize);
        r0 = p0, c0 = o0, rows = psize, cols = osize;
    } else {  // tile (other, kb) <- itself (x) pivot
        path_tile_load(A, D, H, P, ld, o0, p0, osize, psize);
        path_tile_load(B, D, H, P, ld, p0, p0, psize, psize);
        r0 = o0, c0 = p0, rows = osize, cols = psize;
    }
    __syncthreads();
    const PathTile& self = blockIdx.y == 0 ? B : A;
    REAL acc_d[PT_ROWS];
    int acc_h[PT_ROWS], kbest[PT_ROWS];
#pragma unroll
    for (int i = 0; i < PT_ROWS; ++i) {
        acc_d[i] = self.d[threadIdx.y + 8 * i][threadIdx.x];
        acc_h[i] = self.h[threadIdx.y + 8 * i][threadIdx.x];
        kbest[i] = -1;
    }
    path_product(acc_d, acc_h, kbest, A, B);
    path_store(D, H, P, ld, r0, c0, rows, cols, acc_d, acc_h, kbest, A, B);
}

extern "C" __global__ void __launch_bounds__(256)
fwp_phase3(REAL* D, int* H, int* P, long long ld, int n, int kb)
{
    __shared__ PathTile A, B;
    const int bi = blockIdx.y + (blockIdx.y >= (unsigned)kb);
    const int bj = blockIdx.x + (blockIdx.x >= (unsigned)kb);
    const long long p0 = (long long)kb * PT_TILE, r0 = (long long)bi * PT_TILE, c0 = (long long)bj * PT_TILE;
    const int psize = (int)min((long long)PT_TILE, n - p0);
    const int rows = (int)min((long long)PT_TILE, n - r0), cols = (int)min((long long)PT_TILE, n - c0);
    path_tile_load(A, D, H, P, ld, r0, p0, rows, psize);
    path_tile_load(B, D, H, P, ld, p0, c0, psize, cols);
    REAL acc_d[PT_ROWS];
    int acc_h[PT_ROWS], kbest[PT_ROWS];
    const int tx = threadIdx.x, ty = threadIdx.y;
#pragma unroll
    for (int i = 0; i < PT_ROWS; ++i) {
        const int r = ty + 8 * i;
        const bool in = r < rows && tx < cols;
        const long long at = (r0 + r) * ld + c0 + tx;
        acc_d[i] = in ? D[at] : INF_R;
        acc_h[i] = in ? H[at] : 0;
        kbest[i] = -1;
    }
    __syncthreads();
    path_product(acc_d, acc_h, kbest, A, B);
    path_store(D, H, P, ld, r0, c0, rows, cols, acc_d, acc_h, kbest, A, B);
}
