// Column gather out[r, j] = src[r, cols[j]] of row-major matrices (leading
// dimensions lds and ldo), e.g. rows made in the boundary graph's level order
// put back in vertex order.  Grid: (ceil(n_out / 256), rows); blocks of one
// row run together, so the row being read stays in the L2 cache and the
// scattered reads cost little beside the coalesced writes.
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(256)
take_columns(const REAL* src, long long lds, const long long* cols, REAL* out, long long ldo, long long n_out)
{
    const long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n_out) return;
    const long long r = blockIdx.y;
    out[r * ldo + j] = src[r * lds + cols[j]];
}
