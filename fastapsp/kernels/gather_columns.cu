// The columns of a row block in another order: out[r, j] = in[r, cols[j]] for r < nrows, j < ncols
// (the boundary rows of the boundary-graph method, from level order into vertex order:
// fastapsp/stages/boundary_graph.py).  What cupy.take(in, cols, axis=1) computes, without its
// 64-bit division of every element's index.
//
// Grid: (ceil(ncols / 256), ceil(nrows / GC_ROWS)), 256 threads.  A thread reads its column's index
// once and moves that column of GC_ROWS rows, all loads before the stores.  Consecutive threads write
// consecutive elements of a row (coalesced); the reads are gathered.  Column tiles vary fastest, so
// the blocks running together read from the same GC_ROWS rows, which stay in the L2 cache while the
// several columns that map into each of their sectors read it.
#ifndef GC_ROWS
#define GC_ROWS 8
#endif

extern "C" __global__ void __launch_bounds__(256)
gather_columns(const REAL* in, long long ldi, const long long* cols, REAL* out, long long ldo, long long ncols,
               int nrows)
{
    const long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= ncols) return;
    const long long c = cols[j];
    const int r0 = blockIdx.y * GC_ROWS;
    const REAL* src = in + (long long)r0 * ldi + c;
    REAL* dst = out + (long long)r0 * ldo + j;
    REAL v[GC_ROWS];
#pragma unroll
    for (int r = 0; r < GC_ROWS; ++r)
        if (r0 + r < nrows) v[r] = __ldg(src + r * ldi);
#pragma unroll
    for (int r = 0; r < GC_ROWS; ++r)
        if (r0 + r < nrows) dst[r * ldo] = v[r];
}
