// Row blocks into a result kept on the device (fastapsp.sink.DeviceSink): row r of a block of `cols`
// columns (leading dimension ldb) goes to row rows[r] of `out` (leading dimension ldo) from column col0,
// converted from IN_T to OUT_T (float to double for a widened result).  Grid: (column groups, rows);
// consecutive threads move consecutive elements of one row, so reads and writes are coalesced, and no
// thread divides an index.

extern "C" __global__ void __launch_bounds__(256)
scatter_rows(const IN_T* block, long long ldb, OUT_T* out, long long ldo, const long long* rows, long long col0,
             long long cols, int nrows)
{
    const long long step = (long long)gridDim.x * blockDim.x;
    for (int r = blockIdx.y; r < nrows; r += gridDim.y) {
        const IN_T* src = block + (long long)r * ldb;
        OUT_T* dst = out + rows[r] * ldo + col0;
        for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < cols; j += step)
            dst[j] = (OUT_T)src[j];
    }
}
