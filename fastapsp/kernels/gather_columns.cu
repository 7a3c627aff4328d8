// out[r, j] = in[r, pos[j]] for r < rows, j < cols: a block of rows with its columns put in another
// order (the boundary rows of the boundary-graph method, from level order to vertex order: see
// fastapsp/stages/boundary_graph.py).  Grid: (ceil(cols / 256), ceil(rows / GC_ROWS)), 256
// threads; a thread reads pos[j] once and copies column j for GC_ROWS rows, so a warp's writes are
// consecutive and no index is divided per element.
#include "common.cuh"

#define GC_ROWS 8

extern "C" __global__ void __launch_bounds__(256)
gather_columns(const REAL* in, long long ldi, const long long* pos, REAL* out, long long ldo, int rows,
               long long cols)
{
    const long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= cols) return;
    const long long p = pos[j];
    const int r0 = blockIdx.y * GC_ROWS;
    const int r1 = min(rows, r0 + GC_ROWS);
    for (int r = r0; r < r1; ++r) out[(long long)r * ldo + j] = in[(long long)r * ldi + p];
}
