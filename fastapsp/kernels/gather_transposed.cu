// Rows stored by columns, put in another column order as ordinary rows:
//     out[r, j] = in[cols[j] * ldi + r]      r < nrows, j < ncols
// Row r of the input is column r of a column-major block: element (r, x) lies at in + x * ldi + r.
// The boundary rows of the boundary-graph method are written so by the grouped min-plus
// (grouped_min_plus.cu) and put from level order into vertex order here
// (fastapsp/stages/boundary_graph.py).  Gathering columns of row-major rows reads one value of every
// 32-byte sector it touches, at random; stored by columns, the values of one column of 32 rows are
// 128 contiguous bytes (float32), read whole.
//
// Grid: ceil(ncols / 32) blocks of 32 x 8 threads.  A block moves 32 columns of every row, 32 rows at
// a time, through shared memory: each warp reads 32 rows of one column (contiguous) and writes 32
// columns of one row (contiguous).  A thread reads the source index of its columns once.
#define GT_EDGE 32
#define GT_STEP 8

extern "C" __global__ void __launch_bounds__(GT_EDGE * GT_STEP)
gather_transposed(const REAL* in, long long ldi, const long long* cols, REAL* out, long long ldo,
                  long long ncols, int nrows)
{
    __shared__ REAL tile[GT_EDGE][GT_EDGE + 1];
    const long long j0 = (long long)blockIdx.x * GT_EDGE;
    const int lane = threadIdx.x, step = threadIdx.y;
    long long from[GT_EDGE / GT_STEP];  // where the columns this thread reads start
#pragma unroll
    for (int s = 0; s < GT_EDGE / GT_STEP; ++s) {
        const long long j = j0 + step + GT_STEP * s;
        from[s] = j < ncols ? cols[j] * ldi : -1;
    }
    const long long j = j0 + lane;  // the column this thread writes
    for (int r0 = 0; r0 < nrows; r0 += GT_EDGE) {
        const int r = r0 + lane;
#pragma unroll
        for (int s = 0; s < GT_EDGE / GT_STEP; ++s)
            if (from[s] >= 0 && r < nrows) tile[step + GT_STEP * s][lane] = __ldg(in + from[s] + r);
        __syncthreads();
        if (j < ncols) {
#pragma unroll
            for (int k = step; k < GT_EDGE; k += GT_STEP)
                if (r0 + k < nrows) out[(long long)(r0 + k) * ldo + j] = tile[lane][k];
        }
        __syncthreads();  // the tile is written again for the next rows
    }
}
