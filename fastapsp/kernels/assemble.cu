// Stage 6 (see fastapsp/stages/assemble.py): copy the interior rows of the
// closed component matrix into the component's columns of the row block.
// Grid: (ceil(c / 256), c - n_boundary) blocks of 256 threads; thread j of row r
// moves M[n_boundary + r, j] to block[n_boundary + r, vertices[j] - start] when
// vertices[j] lies in the block's columns [start, start + width); with take_min it keeps
// the smaller of the two (boundary-graph method: M holds paths inside the component only).
// rowoff (may be null): row a of the block lies at block + rowoff[a] (the component's rows of a
// result kept whole on the device, fastapsp/stages/assemble.py's assemble_in_result).
// copy_rows moves the boundary rows' columns into the block's first rows.
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(256)
assemble_interior(const REAL* M, int c, int n_boundary, const long long* vertices,
                  long long start, long long width, REAL* block, long long ld, int take_min,
                  const long long* rowoff)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= c) return;
    const long long col = vertices[j] - start;
    if (col < 0 || col >= width) return;
    const long long a = n_boundary + (long long)blockIdx.y;
    const REAL v = M[a * c + j];
    REAL* out = block + (rowoff ? rowoff[a] : a * ld) + col;
    if (!take_min || v < *out) *out = v;
}

// dst[r * ldd + j] = src[r * lds + j] for r < rows, j < cols, with 64-bit offsets (a view of the
// boundary rows of a large graph spans more than 2^31 elements).  Grid: (x, y) blocks of 256
// threads striding over the rows (y) and the columns (x), each thread moving COPY_ILP values
// 256 apart per step, all loaded before any is stored (loads in flight, as a bandwidth-bound
// copy wants).
#define COPY_ILP 4
extern "C" __global__ void __launch_bounds__(256)
copy_rows(const REAL* src, long long lds, REAL* dst, long long ldd, long long rows, long long cols)
{
    const long long step = (long long)gridDim.x * blockDim.x * COPY_ILP;
    for (long long r = blockIdx.y; r < rows; r += gridDim.y) {
        const REAL* from = src + r * lds;
        REAL* to = dst + r * ldd;
        for (long long j = (long long)blockIdx.x * blockDim.x * COPY_ILP + threadIdx.x; j < cols; j += step) {
            REAL v[COPY_ILP];
#pragma unroll
            for (int u = 0; u < COPY_ILP; ++u) {
                const long long c = j + (long long)u * blockDim.x;
                if (c < cols) v[u] = from[c];
            }
#pragma unroll
            for (int u = 0; u < COPY_ILP; ++u) {
                const long long c = j + (long long)u * blockDim.x;
                if (c < cols) to[c] = v[u];
            }
        }
    }
}
