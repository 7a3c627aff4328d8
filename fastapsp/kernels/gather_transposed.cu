// Rows stored by columns, put in another column order as ordinary rows:
//     out[r, j] = in[cols[j] * ldi + r]      r < nrows, j < ncols
// Row r of the input is column r of a column-major block: element (r, x) lies at in + x * ldi + r.
// The boundary rows of the boundary-graph method are written so by the grouped min-plus
// (grouped_min_plus.cu) and put from level order into vertex order here
// (fastapsp/stages/boundary_graph.py).  Gathering columns of row-major rows reads one value of every
// 32-byte sector it touches, at random; stored by columns, the values of one column of 32 rows are
// 128 contiguous bytes (float32), read whole.
//
// Grid: (ceil(ncols / 32), ceil(nrows / 32)), 32 x 8 threads.  A block moves 32 columns of 32 rows
// through shared memory: each warp reads 32 rows of one column (contiguous) and writes 32 columns of
// one row (contiguous).
#define GT_EDGE 32
#define GT_STEP 8

extern "C" __global__ void __launch_bounds__(GT_EDGE * GT_STEP)
gather_transposed(const REAL* in, long long ldi, const long long* cols, REAL* out, long long ldo,
                  long long ncols, int nrows)
{
    __shared__ REAL tile[GT_EDGE][GT_EDGE + 1];
    const long long j0 = (long long)blockIdx.x * GT_EDGE;
    const int r0 = blockIdx.y * GT_EDGE;
    const int lane = threadIdx.x, step = threadIdx.y;
    const int r = r0 + lane;
#pragma unroll
    for (int k = step; k < GT_EDGE; k += GT_STEP) {
        const long long j = j0 + k;
        if (j < ncols && r < nrows) tile[k][lane] = __ldg(in + cols[j] * ldi + r);
    }
    __syncthreads();
    const long long j = j0 + lane;
    if (j >= ncols) return;
#pragma unroll
    for (int k = step; k < GT_EDGE; k += GT_STEP)
        if (r0 + k < nrows) out[(long long)(r0 + k) * ldo + j] = tile[lane][k];
}
