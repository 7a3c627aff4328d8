// Min-plus product carrying predecessors (fastapsp/stages/predecessors.py):
//     C[i, j] = min over t of  A[i, t] + B[t, j]   by (d, h) order (path_tile.cuh),
// and the predecessor of the winner t: PB[t, j], the vertex before j on the path
// from t, or PA[i, t] when that is none (j == t).  Entries without any finite
// path get (inf, 0, -9999).  Each operand's d, h and p arrays share one leading
// dimension (lda, ldb; ldc for C, whose h is written when HC is not null).
// Grid: (ceil(N / 32), ceil(M / 32)), blocks of 32 x 8 threads, one 32 x 32 tile
// of C a block; the inner dimension passes through shared memory 32 at a time.
#include "common.cuh"
#include "path_tile.cuh"

struct PathOperands {
    REAL ad[PT_TILE][PT_TILE + 1];
    int ah[PT_TILE][PT_TILE + 1];
    REAL bd[PT_TILE][PT_TILE + 1];
    int bh[PT_TILE][PT_TILE + 1];
};

extern "C" __global__ void __launch_bounds__(256)
min_plus_pred(const REAL* AD, const int* AH, const int* AP, long long lda, const REAL* BD, const int* BH,
              const int* BP, long long ldb, REAL* CD, int* HC, int* PC, long long ldc, int M, int N, int K)
{
    __shared__ PathOperands s;
    const int tx = threadIdx.x, ty = threadIdx.y;
    const long long r0 = (long long)blockIdx.y * PT_TILE, c0 = (long long)blockIdx.x * PT_TILE;
    const int rows = (int)min((long long)PT_TILE, M - r0), cols = (int)min((long long)PT_TILE, N - c0);
    REAL acc_d[PT_ROWS];
    int acc_h[PT_ROWS], kbest[PT_ROWS];
#pragma unroll
    for (int i = 0; i < PT_ROWS; ++i) {
        acc_d[i] = INF_R;
        acc_h[i] = 0;
        kbest[i] = -1;
    }
    for (int k0 = 0; k0 < K; k0 += PT_TILE) {
        const int kn = min(PT_TILE, K - k0);
        __syncthreads();  // the previous chunk is no longer read
        for (int r = ty; r < PT_TILE; r += 8) {
            const bool a_in = r < rows && tx < kn;  // A: row r, inner index tx
            const long long at = (r0 + r) * lda + k0 + tx;
            s.ad[r][tx] = a_in ? AD[at] : INF_R;
            s.ah[r][tx] = a_in ? AH[at] : 0;
            const bool b_in = r < kn && tx < cols;  // B: inner index r, column tx
            const long long bt = (long long)(k0 + r) * ldb + c0 + tx;
            s.bd[r][tx] = b_in ? BD[bt] : INF_R;
            s.bh[r][tx] = b_in ? BH[bt] : 0;
        }
        __syncthreads();
#pragma unroll 4
        for (int k = 0; k < PT_TILE; ++k) {
            const REAL bd = s.bd[k][tx];
            const int bh = s.bh[k][tx];
#pragma unroll
            for (int i = 0; i < PT_ROWS; ++i) {
                const int r = ty + 8 * i;
                const REAL cd = s.ad[r][k] + bd;
                const int ch = s.ah[r][k] + bh;
                if (path_less(cd, ch, acc_d[i], acc_h[i])) {
                    acc_d[i] = cd;
                    acc_h[i] = ch;
                    kbest[i] = k0 + k;
                }
            }
        }
    }
    if (tx >= cols) return;
#pragma unroll
    for (int i = 0; i < PT_ROWS; ++i) {
        const int r = ty + 8 * i;
        if (r >= rows) continue;
        int p = PT_NONE;
        if (kbest[i] >= 0) {
            p = BP[(long long)kbest[i] * ldb + c0 + tx];
            if (p == PT_NONE) p = AP[(r0 + r) * lda + kbest[i]];
        }
        const long long at = (r0 + r) * ldc + c0 + tx;
        CD[at] = acc_d[i];
        if (HC != nullptr) HC[at] = acc_h[i];
        PC[at] = p;
    }
}
