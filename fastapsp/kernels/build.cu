// The |C| x |C| matrix of one component (see fastapsp/stages/build.py).
// Grid: one block of 256 threads per matrix row a.  Boundary rows gather the
// SSSP distances of the component's vertices; interior rows are +inf except the
// arcs that stay inside the component (local[] maps a vertex to its local index,
// -1 outside); every row gets its zero on the diagonal last.
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(256)
build_component_matrix(const index_t* indptr, const index_t* indices, const double* weights,
                       const index_t* vertices, const int* local, const REAL* brows, long long ldb,
                       int n_boundary, int gather, int c, REAL* M)
{
    const int a = blockIdx.x;
    REAL* row = M + (long long)a * c;
    if (a < n_boundary) {
        if (gather) {
            const REAL* src = brows + (long long)a * ldb;
            for (int j = threadIdx.x; j < c; j += blockDim.x) row[j] = src[vertices[j]];
        }
    } else {
        for (int j = threadIdx.x; j < c; j += blockDim.x) row[j] = INF_R;
        __syncthreads();
        const index_t u = vertices[a];
        const index_t end = indptr[u + 1];
        for (index_t e = indptr[u] + threadIdx.x; e < end; e += blockDim.x) {
            const int h = local[indices[e]];
            if (h >= 0) row[h] = (REAL)weights[e];
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) row[a] = (REAL)0;
}
